"""A row of the batch table approved with the reviewer's own edit (issue 42: each item of a
batch approved, rejected, edited or sent back).

Offered for a row the store's decision view offers for editing, exactly what the Approve
dialog's Edit offers: a message's words (`editable`, the same `MessageEdits`) or a framework's
tool call's arguments (`edits_call`, the same `CallEdits`). The reviewer edits, Use this, and
the row is set to Approve with the edit; the store records it as the person's revision when
the batch is applied (`BatchItem` `edited_message` / `edited`, DecideApproval's). Nothing is
decided here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from boris_desktop.decide.base import no_default
from boris_desktop.decide.call_edits import CallEdits
from boris_desktop.decide.message_edits import MessageEdits
from boris_desktop.ui.widgets import error_label, plain_label

if TYPE_CHECKING:
    from store.api import ApprovalDecision


@dataclass(frozen=True)
class RowEdit:
    """What a row is approved with: a message's changed words, or a call's arguments."""

    message: dict[str, str] | None = None
    call: object | None = None

    def what(self) -> str:
        """In words, for the row ("your subject and body", "your arguments")."""
        if self.message:
            return "your " + " and ".join(sorted(self.message))
        return "your arguments"


class EditDialog(QDialog):
    """The request of one row, to edit; `edit()` is what the reviewer changed (None: as
    asked). The table keeps one per row, so opening it again shows what was typed before."""

    def __init__(self, parent: QWidget, view: ApprovalDecision) -> None:
        super().__init__(parent)
        # A tool call's arguments are the whole of it: edited as such, else a message's words.
        self.words = bool(view.editable) and not view.edits_call
        self.setWindowTitle(f"Edit {view.approval_id} before approving it")
        layout = QVBoxLayout(self)
        layout.addWidget(
            plain_label(
                "Approve it with your edit: your version is recorded as yours and the agent's "
                "is kept. Nothing is decided until the batch is applied.",
                name="What editing does",
            )
        )
        self.edits = MessageEdits()
        self.call_edits = CallEdits()
        if self.words:
            self.edits.offer(view)
            layout.addWidget(self.edits)
        else:
            self.call_edits.offer(view)
            layout.addWidget(self.call_edits)
        self.error = error_label("Why the edit was not taken")
        self.error.hide()
        layout.addWidget(self.error)
        row = QHBoxLayout()
        row.addStretch(1)
        self.use_button = no_default(QPushButton("&Use this"))
        self.use_button.clicked.connect(self.use)
        cancel = no_default(QPushButton("&Cancel"))
        cancel.clicked.connect(self.reject)
        row.addWidget(self.use_button)
        row.addWidget(cancel)
        layout.addLayout(row)
        self.resize(640, 420)

    def use(self) -> None:
        """Use this: taken when it is a valid edit (a call's arguments a JSON object)."""
        try:
            self.edit()
        except ValueError as problem:
            self.error.setText(f"Not taken: {problem}.")
            self.error.show()
            return
        self.error.hide()
        self.accept()

    def edit(self) -> RowEdit | None:
        if self.words:
            changed = self.edits.changed()
            return RowEdit(message=changed) if changed else None
        call = self.call_edits.changed()
        return RowEdit(call=call) if call is not None else None
