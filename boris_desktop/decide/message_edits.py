"""The reviewer's own words for a message before approving it: its subject and body.

Offered only where the store's decision view says the request's message may be edited
(`ApprovalDecision.editable`); what the edit makes of the object is the store's business
(DecideApproval `edited_message`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from PySide6.QtWidgets import QFormLayout, QLineEdit, QPlainTextEdit, QWidget

from store.api import ApprovalDecision, Send


@dataclass(frozen=True)
class Words:
    """A message's words as a person reads and edits them."""

    subject: str
    body: str


class MessageEdits(QWidget):
    def __init__(self) -> None:
        super().__init__()
        self.subject = QLineEdit()
        self.subject.setAccessibleName("Edited subject")
        self.body = QPlainTextEdit()
        self.body.setAccessibleName("Edited body")
        self.body.setTabChangesFocus(True)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Your subject:", self.subject)
        form.addRow("Your body:", self.body)
        self._original: Words | None = None

    def offer(self, d: ApprovalDecision) -> None:
        """Fill the fields from the message as asked, once: a later re-read of the same
        request never overwrites what the reviewer typed."""
        if not isinstance(d.change, Send):
            return
        original = Words(d.change.subject, d.change.body)
        if original == self._original:
            return
        self._original = original
        self.subject.setText(original.subject)
        self.body.setPlainText(original.body)
        # Only what the store offers for editing is editable here.
        self.subject.setReadOnly("subject" not in d.editable)
        self.body.setReadOnly("body" not in d.editable)

    def changed(self) -> dict[str, str] | None:
        """The fields the reviewer changed (DecideApproval's `edited_message`), or None when
        they left the words as asked."""
        now = asdict(Words(self.subject.text(), self.body.toPlainText()))
        was = asdict(self._original) if self._original is not None else {}
        edits = {k: v for k, v in now.items() if v != was.get(k)}
        return edits or None
