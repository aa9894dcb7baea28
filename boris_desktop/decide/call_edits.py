"""The reviewer's own arguments for a framework's tool call before approving it (issue 42:
an item approved, rejected, edited or sent back; the five agents' calls are tool calls, not
messages).

Offered only where the store's decision view says the request is a tool call whose arguments
a person may replace (`ApprovalDecision.edits_call`); the text is the prepared object as the
store shows it (`prepared_json`), and what the reviewer writes is sent as DecideApproval's
`edited` (what `boris approve --edited-json` sends). The store records it as the person's
revision and the framework's adapter hands the tool exactly those arguments (or, where the
graph's schema refuses them, asks again)."""

from __future__ import annotations

import json

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QPlainTextEdit, QVBoxLayout, QWidget

from boris_desktop.ui.widgets import plain_label
from store.api import ApprovalDecision


class CallEdits(QWidget):
    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(plain_label("Your arguments for the call (a JSON object):"))
        self.text = QPlainTextEdit()
        self.text.setAccessibleName("Edited arguments (JSON)")
        self.text.setTabChangesFocus(True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        layout.addWidget(self.text)
        self._original: str | None = None

    def offer(self, d: ApprovalDecision) -> None:
        """Fill the text from the call as asked, once: a later re-read of the same request
        never overwrites what the reviewer typed."""
        if not d.edits_call or d.prepared_json == self._original:
            return
        self._original = d.prepared_json
        self.text.setPlainText(d.prepared_json)

    def changed(self) -> object | None:
        """The reviewer's arguments (DecideApproval's `edited`), or None when they left them
        as asked. ValueError (the dialog's refusal) when the text is no JSON object."""
        try:
            now = json.loads(self.text.toPlainText())
        except json.JSONDecodeError as exc:
            raise ValueError(f"your arguments are not JSON: {exc.msg} (line {exc.lineno})") from exc
        if not isinstance(now, dict):
            raise ValueError("your arguments must be a JSON object, as the call's are")
        was = json.loads(self._original) if self._original is not None else None
        return None if now == was else now
