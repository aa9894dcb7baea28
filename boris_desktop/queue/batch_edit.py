"""A row of the batch table approved with the reviewer's own words (issue 42: each item of a
batch approved, rejected, edited or sent back).

Offered for a row whose decision view lists message fields as `editable`, exactly what the
Approve dialog's Edit offers (the same `MessageEdits`): the reviewer changes the subject or
the body, Use these words, and the row is set to Approve with them; the store makes the edited
object and records it as the person's revision when the batch is applied (`BatchItem`
`edited_message`, DecideApproval's). Nothing is decided here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from boris_desktop.decide.base import no_default
from boris_desktop.decide.message_edits import MessageEdits
from boris_desktop.ui.widgets import plain_label

if TYPE_CHECKING:
    from store.api import ApprovalDecision


class MessageEditDialog(QDialog):
    """The message of one row, to edit; `changed()` is what the reviewer changed (None: as
    asked). The table keeps one per row, so opening it again shows the words typed before."""

    def __init__(self, parent: QWidget, view: ApprovalDecision) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Edit the message of {view.approval_id}")
        layout = QVBoxLayout(self)
        layout.addWidget(
            plain_label(
                "Approve this message with your words: your version is recorded as yours and "
                "the agent's is kept. Nothing is decided until the batch is applied.",
                name="What editing does",
            )
        )
        self.edits = MessageEdits()
        self.edits.offer(view)
        layout.addWidget(self.edits)
        row = QHBoxLayout()
        row.addStretch(1)
        self.use_button = no_default(QPushButton("&Use these words"))
        self.use_button.clicked.connect(self.accept)
        cancel = no_default(QPushButton("&Cancel"))
        cancel.clicked.connect(self.reject)
        row.addWidget(self.use_button)
        row.addWidget(cancel)
        layout.addLayout(row)
        self.resize(640, 420)

    def changed(self) -> dict[str, str] | None:
        return self.edits.changed()
