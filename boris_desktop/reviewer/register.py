"""Register a passkey on the phone: the one-time link of a `boris serve` the dialog runs.

A registration link lives in the server process that made it (store.services.reviewer), so
the panel runs that very command, as the person would in a terminal, and shows the link it
prints. The server stops when the panel does (the dialog closes, or Stop is pressed).
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QProcess, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from boris_desktop.decide.base import no_default
from boris_desktop.ui.widgets import error_label, plain_label
from store import api

EXPLAIN = (
    "The one-time link comes from boris serve, the decision page's server: it works only "
    "while that server runs — here, while this dialog is open. It listens on this computer "
    "only; your phone reaches it through a reverse proxy or a private network (see "
    "docs/phone.md). The link registers one passkey, within 15 minutes; the registration is "
    "signed by your desktop key."
)


class RegisterPanel(QWidget):
    """Start `boris serve` for the reviewer, show its one-time link; stop it again."""

    #: The person asked for a link: the dialog, which knows the store and the reviewer,
    #: answers with `start(argv)`.
    start_asked = Signal()

    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(plain_label(EXPLAIN, name="How registration works"))
        form = QFormLayout()
        self.port = QSpinBox()
        self.port.setRange(1024, 65535)
        self.port.setValue(8765)  # boris serve's own default
        self.port.setAccessibleName("Port")
        self.port.setMaximumWidth(110)
        form.addRow("Port:", self.port)
        layout.addLayout(form)
        row = QHBoxLayout()
        self.start_button = no_default(QPushButton("Register a passkey on your &phone…"))
        self.start_button.setAccessibleName("Register a passkey on your phone")
        self.start_button.clicked.connect(self._toggle)
        row.addWidget(self.start_button)
        row.addStretch(1)
        layout.addLayout(row)
        self.status = plain_label("", name="Server")
        layout.addWidget(self.status)
        links = QHBoxLayout()
        self.link = QLineEdit()
        self.link.setReadOnly(True)
        self.link.setAccessibleName("One-time registration link")
        self.link.setPlaceholderText("the one-time link appears here")
        links.addWidget(self.link, 1)
        self.copy_button = no_default(QPushButton("&Copy"))
        self.copy_button.setAccessibleName("Copy the link")
        self.copy_button.clicked.connect(
            lambda: QGuiApplication.clipboard().setText(self.link.text())
        )
        links.addWidget(self.copy_button)
        layout.addLayout(links)
        self.error = error_label("Why the server stopped")
        self.error.hide()
        layout.addWidget(self.error)
        self.process: QProcess | None = None
        self.stderr = ""
        # The window quits with the dialog open: the server stops with it, never left behind.
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.stop)
        self.refresh()

    def running(self) -> bool:
        return self.process is not None and self.process.state() != QProcess.ProcessState.NotRunning

    def refresh(self) -> None:
        self.start_button.setText(
            "&Stop the server" if self.running() else "Register a passkey on your &phone…"
        )
        self.copy_button.setEnabled(bool(self.link.text()))
        self.port.setEnabled(not self.running())

    def _toggle(self) -> None:
        if self.running():
            self.stop()
        else:
            self.error.hide()
            self.start_asked.emit()

    def start(self, argv: list[str]) -> None:
        self.stop()
        self.link.clear()
        self.stderr = ""
        proc = QProcess(self)
        proc.setProgram(argv[0])
        proc.setArguments(argv[1:])
        proc.readyReadStandardOutput.connect(self._read)
        proc.readyReadStandardError.connect(self._read_errors)
        proc.finished.connect(self._ended)
        self.process = proc
        self.status.setText("Starting boris serve…")
        proc.start()
        self.refresh()

    def _read(self) -> None:
        proc = self.process
        if proc is None:
            return
        while proc.canReadLine():
            said = api.serve_line(bytes(proc.readLine().data()).decode(errors="replace"))
            if said.page is not None:
                self.status.setText(
                    f"boris serve runs at {said.page} — until you close this dialog or stop it."
                )
            if said.link is not None:
                self.link.setText(said.link)
                self.link.setCursorPosition(0)
        self.refresh()

    def _read_errors(self) -> None:
        if self.process is not None:
            self.stderr += bytes(self.process.readAllStandardError().data()).decode(
                errors="replace"
            )

    def _ended(self, code: int, _status: QProcess.ExitStatus) -> None:
        self._read_errors()
        said = [line for line in self.stderr.splitlines() if line.strip()]
        if code != 0 and said:
            self.error.setText(f"boris serve stopped: {said[-1]}")
            self.error.show()
        self.status.setText("The server is not running: the link, if any, no longer works.")
        self.link.clear()
        self.refresh()

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.state() != QProcess.ProcessState.NotRunning:
            proc.finished.disconnect()
            proc.terminate()
            if not proc.waitForFinished(3000):
                proc.kill()
                proc.waitForFinished(3000)
            self.status.setText("The server is stopped: the link no longer works.")
            self.link.clear()
        self.refresh()
