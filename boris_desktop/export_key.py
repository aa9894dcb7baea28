"""File › Export My Public Key…: the reviewer's public key as a line of a keys file.

The line is the one `boris keys export` prints (`KEY_ID person:ID PUBLIC_KEY`), made by the
store (store.signing.export) on a worker: the reviewer's key is created there on first use.
They save it to a file or copy it, and hand it to whoever adds keys to a store
(`boris keys add`) or verifies a package offline (`boris verify-package --keys FILE`).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from boris_desktop.runtime import jobs
from boris_desktop.runtime.job_results import PublicKey
from boris_desktop.runtime.loader import Loader
from boris_desktop.ui.text import failure
from boris_desktop.ui.widgets import error_label, plain_label


class ExportKeyDialog(QDialog):
    def __init__(
        self, parent: QWidget | None, loader: Loader, store: Any, reviewer: tuple[str, str]
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export My Public Key")
        self.setMinimumWidth(560)
        self.loader = loader
        self.reviewer = reviewer
        self.line = ""
        name, rid = reviewer
        self.intro = plain_label(
            f"The public key that signs {name}'s decisions (person:{rid}), as a line of a keys "
            "file. Give it to whoever adds keys to a store (boris keys add) or verifies a "
            "task offline (boris verify-package --keys FILE). It holds no secret."
        )
        self.key = QLineEdit("Reading your key…")
        self.key.setReadOnly(True)
        self.key.setAccessibleName("Your public key as a keys-file line")
        self.trust = plain_label(name="Whether this store trusts your key")
        self.error = error_label("Export problem")
        self.save = QPushButton("&Save to File…")
        self.copy = QPushButton("&Copy")
        for b in (self.save, self.copy):
            b.setEnabled(False)
            b.setAutoDefault(False)
        self.save.clicked.connect(self.save_to_file)
        self.copy.clicked.connect(self.copy_line)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.buttons.addButton(self.save, QDialogButtonBox.ButtonRole.ActionRole)
        self.buttons.addButton(self.copy, QDialogButtonBox.ButtonRole.ActionRole)
        self.buttons.rejected.connect(self.reject)
        col = QVBoxLayout(self)
        col.addWidget(self.intro)
        col.addWidget(self.key)
        col.addWidget(self.trust)
        col.addWidget(self.error)
        col.addWidget(self.buttons)
        self.saved_to: str | None = None
        loader.submit(
            "export-key", lambda: jobs.my_public_key(store, rid), self._arrived, self._failed
        )

    def _arrived(self, result: PublicKey) -> None:
        self.line = result.line
        self.key.setText(self.line)
        self.key.setCursorPosition(0)
        # Wide enough to show the whole line where the screen allows.
        want = self.key.fontMetrics().horizontalAdvance(self.line) + 60
        self.setMinimumWidth(min(max(want, self.minimumWidth()), 900))
        self.trust.setText(trust_words(result, self.reviewer[1]))
        self.trust.setToolTip(f"Your private key stays in {result.path}")
        for b in (self.save, self.copy):
            b.setEnabled(True)

    def _failed(self, error: Exception) -> None:
        self.key.setText("")
        self.error.setText(f"Could not read or create your key: {failure(error)}")

    def copy_line(self) -> None:
        QGuiApplication.clipboard().setText(self.line + "\n")
        self.error.setText("")
        self.trust.setText("Copied to the clipboard.")

    def save_to_file(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        path, _ = QFileDialog.getSaveFileName(
            self,
            "Save your public key",
            f"{self.reviewer[1]}.keys",
            "Keys files (*.keys);;All files (*)",
        )
        if not path:
            return
        self.loader.submit(
            "export-key-save",
            lambda: jobs.write_text(path, self.line + "\n"),
            self._saved,
            lambda error: self.error.setText(f"Could not save the key: {failure(error)}"),
        )

    def _saved(self, path: str) -> None:
        self.saved_to = path
        self.error.setText("")
        self.trust.setText(f"Saved to {path}.")


def trust_words(result: PublicKey, reviewer_id: str) -> str:
    """Whether the open store trusts the key, and what makes it trusted."""
    add = f"boris keys add PUBLIC_KEY --for person:{reviewer_id}"
    if result.store_signed is None:
        return ""
    if not result.store_signed:
        return (
            "The open store does not sign its records. A signed store trusts this key once "
            f"a person it trusts adds it ({add})."
        )
    if result.trusted:
        return "The open store's keyring trusts this key for you: your decisions are signed."
    return f"The open store does not trust this key yet: a person it trusts adds it ({add})."
