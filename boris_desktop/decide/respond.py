"""Answer as the tool (issue 42) in the Approve dialog: the reviewer writes the call's result.

Offered only where the store's decision view lists `respond` among the verdicts (the request
carries a result schema, or says it accepts an answer). The panel shows the schema the store
will check the result against and takes the result as JSON, or, where the store says the
result is a string (`answer_as_text`: Claude Code's, LangGraph's and the OpenAI Agents SDK's
calls), as plain text sent as that string, no quotes to type; the store checks it and records
it as answered by the reviewer, never run (`store.api.RespondToApproval`, based on the digest
shown). The window checks nothing itself: a result that does not fit is the store's refusal,
shown in the dialog.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from boris_desktop.decide.base import no_default
from boris_desktop.decide.following import note_edit
from boris_desktop.ui.widgets import plain_label
from store import api

if TYPE_CHECKING:
    from store.api import ApprovalDecision


class RespondPanel(QWidget):
    """The result a reviewer gives in the tool's place, and the schema it must fit."""

    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.schema_label = plain_label("", name="The tool's result schema")
        layout.addWidget(self.schema_label)
        self.schema = QPlainTextEdit()
        self.schema.setReadOnly(True)
        self.schema.setAccessibleName("Result schema")
        self.schema.setMaximumHeight(120)
        layout.addWidget(self.schema)
        self.result_label = plain_label("The tool's result, as JSON (it is never run):")
        layout.addWidget(self.result_label)
        self.result = note_edit('{"…": …}', "Result")
        #: Plain text: the result is the text as typed (the store says it is a string).
        self.as_text = False
        layout.addWidget(self.result)
        # Never the default button: only a click (or its mnemonic) gives the answer.
        self.answer_button = no_default(QPushButton("&Give this answer"))
        self.answer_button.setAccessibleName("Give this answer")
        layout.addWidget(self.answer_button)

    def show_view(self, d: ApprovalDecision) -> None:
        self.as_text = d.answer_as_text
        if self.as_text:
            self.result_label.setText(
                "The tool's result, as plain text — what the agent reads in its place "
                "(the call is never run):"
            )
            self.result.setPlaceholderText("Write the tool's output here…")
            self.result.setMaximumHeight(220)
        else:
            self.result_label.setText("The tool's result, as JSON (it is never run):")
            self.result.setPlaceholderText('{"…": …}')
        if d.result_schema_json is None:
            self.schema_label.setText("The request declares no result schema: any JSON answers.")
            self.schema.hide()
            return
        self.schema_label.setText("The store checks your result against the tool's schema:")
        self.schema.setPlainText(d.result_schema_json)
        self.schema.show()

    def result_value(self) -> Any:
        """The result as typed; ValueError (the dialog's refusal) when it is not JSON. Plain
        text is the string as written (the store checks it against the schema)."""
        if self.as_text:
            return self.result.toPlainText()
        text = self.result.toPlainText().strip()
        if not text:
            raise ValueError("write the tool's result (JSON) first")
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the result is not JSON: {exc.msg} (line {exc.lineno})") from None

    def command(self, d: ApprovalDecision, note: str) -> api.RespondToApproval:
        return api.RespondToApproval(
            task_id=d.task_id,
            approval_id=d.approval_id,
            result=self.result_value(),
            note=note,
            based_on=d.payload_digest,
        )
