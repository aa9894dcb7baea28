"""Reviewer actions: every command runs through `store.execute` on a worker, as the reviewer.

`ActionDialog` is the shape every action dialog shares: what will happen, the fields the
reviewer fills in, a red line for the store's refusal, and buttons that are disabled while the
command runs. A refusal (`CommandRejected`) is shown in the dialog, and the window reloads so
the reviewer sees why; success closes the dialog and reloads.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPushButton, QVBoxLayout, QWidget

from . import settings
from .widgets import error_label

if TYPE_CHECKING:
    from .main_window import MainWindow

_serial = itertools.count(1)


def reviewer_actor() -> Any:
    """The reviewer as the store's Actor, or None before they have said who they are."""
    from store import Actor

    who = settings.reviewer()
    if who is None:
        return None
    name, rid = who
    return Actor(kind="person", id=rid, name=name)


def message_of(error: str) -> str:
    """The store's words for a refusal, without the exception's class name or traceback."""
    first = error.splitlines()[0] if error else "failed"
    for prefix in ("CommandRejected: ", "ScopeViolation: ", "UnknownTask: ", "StoreBusy: "):
        if first.startswith(prefix):
            return first[len(prefix) :]
    return first


def run_command(
    window: MainWindow,
    make: Callable[[], Any],
    on_done: Callable[[Any], None],
    on_error: Callable[[str], None],
) -> bool:
    """Build the command (a validation error is a refusal too) and execute it on a worker.

    Returns False when nothing ran (no reviewer yet, or the command did not validate).
    """
    from pydantic import ValidationError

    store = window.store
    actor = reviewer_actor()
    if store is None:
        on_error("no store is open")
        return False
    if actor is None:
        on_error("say who you are first (File → Reviewer…): decisions are attributed to you")
        window.ask_reviewer()
        return False
    try:
        command = make()
    except ValidationError as exc:
        errs = exc.errors()
        on_error("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errs))
        return False
    except ValueError as exc:
        on_error(str(exc))
        return False

    def done(result: Any) -> None:
        on_done(result)
        window.reload()

    def failed(error: str) -> None:
        on_error(message_of(error))
        window.reload()

    window.loader.submit(
        f"act:{next(_serial)}", lambda: store.execute(command, actor), done, failed
    )
    return True


class ActionDialog(QDialog):
    """A non-modal dialog for one action; `act()` runs it, the store's refusal stays visible."""

    def __init__(self, window: MainWindow, title: str, ok_text: str) -> None:
        super().__init__(window)
        self.window_ = window
        self.setWindowTitle(title)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.result_value: Any = None
        self.running = False
        self.error = error_label("Why the store refused")
        self.error.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.ok = QPushButton(ok_text)
        self.ok.setAccessibleName(ok_text)
        self.ok.setDefault(True)
        self.buttons.addButton(self.ok, QDialogButtonBox.ButtonRole.AcceptRole)
        self.ok.clicked.connect(self.act)
        self.buttons.rejected.connect(self.reject)
        self.body = QVBoxLayout()
        layout = QVBoxLayout(self)
        layout.addLayout(self.body, 1)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)

    def add(self, widget: QWidget, stretch: int = 0) -> QWidget:
        self.body.addWidget(widget, stretch)
        return widget

    def showEvent(self, event: Any) -> None:
        # A dialog of labels and one-line fields keeps them together at the top when made
        # taller, rather than spreading them down the window.
        if not any(self.body.stretch(i) for i in range(self.body.count())):
            self.body.addStretch(1)
        super().showEvent(event)

    # --- to override ---------------------------------------------------------------------

    def command(self) -> Any:
        """The store command this dialog's fields describe. Every dialog defines it (a test
        checks); the base class has no command of its own to send."""
        raise NotImplementedError(f"{type(self).__name__} does not say which command it sends")

    def ready(self) -> bool:
        return True

    # --- running -------------------------------------------------------------------------

    def refresh_buttons(self) -> None:
        self.ok.setEnabled(not self.running and self.ready())

    def refuse(self, message: str) -> None:
        self.error.setText(message)
        self.error.show()

    def act(self) -> None:
        self.run(self.command)

    def run(self, make: Callable[[], Any]) -> None:
        if self.running:
            return
        self.running = True
        self.refresh_buttons()
        self.error.hide()
        if not run_command(self.window_, make, self._done, self._failed):
            self.running = False
            self.refresh_buttons()

    def _done(self, result: Any) -> None:
        self.running = False
        self.result_value = result
        self.window_.statusBar().showMessage(f"{self.windowTitle()}: done", 5000)
        self.accept()

    def _failed(self, message: str) -> None:
        self.running = False
        self.refuse(message)
        self.refresh_buttons()
        self.window_.statusBar().showMessage(f"{self.windowTitle()}: refused — {message}", 10000)
