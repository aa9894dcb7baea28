"""The Rules dialog: a table of the standing rules, a revocation, and a grant form."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from boris_desktop.decide.base import no_default, run_command
from boris_desktop.host import Host
from boris_desktop.ui import text as t
from boris_desktop.ui.widgets import error_label, heading, plain_label
from store import api

COLUMNS = ("Rule", "Now", "Decides", "Covers", "Tool", "Target", "Payload", "By", "Until", "Calls")
#: How long a new rule stands: the choices offered, in seconds.
EXPIRIES = (
    ("1 hour", 3600.0),
    ("8 hours", 8 * 3600.0),
    ("1 day", 86400.0),
    ("7 days", 7 * 86400.0),
)


def cells(r: api.StandingRule) -> tuple[str, ...]:
    """A rule's row, in the reviewer's words."""
    until = f"revoked {r.revoked_at} by {r.revoked_by}" if r.revoked_at else r.expires_at
    decides = r.verdict.label + ("" if r.proved else f" — not proved: {r.why_unproved}")
    return (
        r.id,
        r.standing.label,
        decides,
        r.covers,
        r.tool,
        r.target,
        json.dumps(r.payload, sort_keys=True) if r.payload else "any",
        r.granted_by.id,
        until,
        str(r.decided),
    )


class GrantForm(QWidget):
    """What a new rule covers, as the person types it."""

    def __init__(self) -> None:
        super().__init__()
        form = QFormLayout(self)
        self.task = self._field(form, "Task", "the task it is granted on (its id)")
        self.scope = QComboBox()
        self.scope.setAccessibleName("Scope")
        for s in api.RuleScope:
            self.scope.addItem(s.label, s)
        form.addRow("Whose calls", self.scope)
        self.agent = self._field(form, "Agent", "agent scope: agent:ID")
        self.session = self._field(form, "Session", "session scope: the session's id")
        self.tool = self._field(form, "Tool", "a glob over the tool's name", "*")
        self.target = self._field(form, "Target", "a glob over the target", "*")
        self.payload = self._field(form, "Payload", 'fields to match, JSON: {"command": "git *"}')
        self.expiry = QComboBox()
        self.expiry.setAccessibleName("Expires in")
        for words, seconds in EXPIRIES:
            self.expiry.addItem(words, seconds)
        self.expiry.setCurrentIndex(1)
        form.addRow("Expires in", self.expiry)
        self.verdict = QComboBox()
        self.verdict.setAccessibleName("Verdict")
        for v in api.RuleVerdict:
            self.verdict.addItem(v.label, v)
        form.addRow("Decide them", self.verdict)
        self.note = self._field(form, "Note", "why, for whoever reads the rule")
        #: Where the rule came from (a framework's offered answer), kept with it.
        self.origin = ""

    def offer(self, rule: api.OfferedRule) -> None:
        """Filled in from a framework's offered "always" answer (the store's reading of it)."""
        self.scope.setCurrentIndex(self.scope.findData(rule.scope))
        self.verdict.setCurrentIndex(self.verdict.findData(rule.verdict))
        self.payload.setText(rule.payload_json or "")
        self.origin = f"{rule.host}'s suggestion: {rule.words}"[:120]

    def fill(self, draft: api.RuleDraft) -> None:
        """A rule answering one pending call: its task, tool and target exactly, its agent
        and session for those scopes; which payload fields must match is the person's."""
        self.task.setText(draft.task_id)
        self.tool.setText(draft.tool)
        self.target.setText(draft.target)
        if draft.requester.startswith("agent:"):
            self.agent.setText(draft.requester)
        self.session.setText(draft.session_id or "")
        fields = ", ".join(sorted(draft.payload)) or "none"
        self.payload.setPlaceholderText(f"fields to match, JSON (this call's: {fields})")

    @staticmethod
    def _field(form: QFormLayout, label: str, placeholder: str, text: str = "") -> QLineEdit:
        field = QLineEdit(text)
        field.setAccessibleName(label)
        field.setPlaceholderText(placeholder)
        form.addRow(label, field)
        return field

    def command(self, answered: str | None = None) -> Any:
        """The grant as typed (a ValueError for a payload that is no JSON object); `answered`:
        the pending request it answers."""
        payload = json.loads(self.payload.text()) if self.payload.text().strip() else None
        if payload is not None and not isinstance(payload, dict):
            raise ValueError('the payload is a JSON object of fields: {"command": "git *"}')
        scope = self.scope.currentData()
        return api.GrantStandingRule(
            task_id=self.task.text().strip(),
            scope=scope,
            # Only the scope's own field: a draft fills both in, the person picks the scope.
            agent=(self.agent.text().strip() or None) if scope == api.RuleScope.AGENT else None,
            session_id=(self.session.text().strip() or None)
            if scope == api.RuleScope.SESSION
            else None,
            answered=answered,
            tool=self.tool.text().strip() or "*",
            target=self.target.text().strip() or "*",
            payload=payload,
            expires_in_seconds=float(self.expiry.currentData()),
            verdict=self.verdict.currentData(),
            note=self.note.text().strip(),
            origin=self.origin,
        )


class RulesDialog(QDialog):
    """The standing rules: read on a worker, revoked and granted as the reviewer."""

    def __init__(self, host: Host) -> None:
        super().__init__(host if isinstance(host, QWidget) else None)
        self.host = host
        self.setWindowTitle("Standing Rules")
        self.rules: list[api.StandingRule] = []
        self.running = False
        self.reading = False
        self.last_error: Exception | None = None
        layout = QVBoxLayout(self)
        self.summary = plain_label("Reading the rules…", name="Rules summary")
        layout.addWidget(self.summary)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setAccessibleName("Standing rules")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.itemSelectionChanged.connect(self.refresh_buttons)
        layout.addWidget(self.table, 1)
        row = QHBoxLayout()
        self.reason = QLineEdit()
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("Why the selected rule ends (required)")
        self.reason.textChanged.connect(self.refresh_buttons)
        row.addWidget(self.reason, 1)
        self.revoke_button = no_default(QPushButton("&Revoke"))
        self.revoke_button.setAccessibleName("Revoke")
        self.revoke_button.clicked.connect(self.revoke)
        row.addWidget(self.revoke_button)
        # Another reviewer's grant, or a rule's calls decided meanwhile: read them again.
        self.reload_button = no_default(QPushButton("Re&ad again"))
        self.reload_button.setAccessibleName("Read again")
        self.reload_button.clicked.connect(self.read)
        row.addWidget(self.reload_button)
        layout.addLayout(row)
        layout.addWidget(heading("Grant a rule: calls like these are decided without asking"))
        self.form = GrantForm()
        layout.addWidget(self.form)
        self.draft: api.RuleDraft | None = None
        self.offered: api.OfferedRule | None = None
        self.also = QCheckBox()
        self.also.setAccessibleName("Also decide the request answered")
        self.also.hide()
        layout.addWidget(self.also)
        self.grant_button = no_default(QPushButton("&Grant"))
        self.grant_button.setAccessibleName("Grant")
        self.grant_button.clicked.connect(self.grant)
        self.form.task.textChanged.connect(self.refresh_buttons)
        layout.addWidget(self.grant_button, 0, Qt.AlignmentFlag.AlignRight)
        self.error = error_label("Why the store refused")
        self.error.hide()
        layout.addWidget(self.error)
        self.resize(980, 640)
        self.refresh_buttons()
        self.read()

    # --- reading -------------------------------------------------------------------------

    def read(self) -> None:
        store = self.host.store
        if store is None:
            return
        self.reading = True
        self.host.loader.submit(
            f"rules:{id(self)}",
            lambda: api.list_standing_rules(store),
            self.show_rules,
            self.read_failed,
        )

    def read_failed(self, error: Exception) -> None:
        self.reading = False
        self.summary.setText(f"The rules could not be read: {error}")

    def show_rules(self, found: api.StandingRules) -> None:
        self.reading = False
        chosen = self.selected()
        self.rules = list(found.rules)
        self.table.setRowCount(len(self.rules))
        for n, rule in enumerate(self.rules):
            for col, text in enumerate(cells(rule)):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.table.setItem(n, col, item)
            if chosen is not None and rule.id == chosen.id:
                self.table.selectRow(n)
        active = sum(1 for r in self.rules if r.standing == api.RuleStanding.ACTIVE)
        self.summary.setText(
            f"{t.count(len(self.rules), 'rule', 'rules')} on record, {active} deciding now "
            f"(as of {found.now})"
            if self.rules
            else "No standing rules: every call is decided by a person."
        )
        self.refresh_buttons()

    def selected(self) -> api.StandingRule | None:
        rows = self.table.selectionModel().selectedRows()
        if not rows or rows[0].row() >= len(self.rules):
            return None
        return self.rules[rows[0].row()]

    def select_rule(self, rule_id: str) -> None:
        for n, rule in enumerate(self.rules):
            if rule.id == rule_id:
                self.table.selectRow(n)

    # --- writing -------------------------------------------------------------------------

    def refresh_buttons(self) -> None:
        chosen = self.selected()
        self.revoke_button.setEnabled(
            not self.running
            and chosen is not None
            and chosen.standing != api.RuleStanding.REVOKED
            and bool(self.reason.text().strip())
        )
        self.grant_button.setEnabled(not self.running and bool(self.form.task.text().strip()))

    def revoke(self) -> None:
        chosen = self.selected()
        if chosen is None:
            return
        reason, version = self.reason.text().strip(), chosen.version
        self._run(
            lambda: api.RevokeStandingRule(rule_id=chosen.id, reason=reason, based_on=version)
        )

    def answer(
        self, task_id: str, approval_id: str, offered: api.OfferedRule | None = None
    ) -> None:
        """Offer a rule answering this pending request: "allow calls like this"; `offered`:
        as the framework's offered answer has it."""
        self.offered = offered
        store = self.host.store
        if store is None:
            return
        self.host.loader.submit(
            f"rules-draft:{id(self)}",
            lambda: api.rule_draft(store, task_id, approval_id),
            self.show_draft,
            self.failed,
        )

    def show_draft(self, draft: api.RuleDraft) -> None:
        self.draft = draft
        self.form.fill(draft)
        if self.offered is not None:
            self.form.offer(self.offered)
        self.also.setText(f"Also decide {draft.approval_id} now, as the rule does")
        self.also.setChecked(True)
        self.also.show()
        self.refresh_buttons()

    def grant(self) -> None:
        draft = self.draft
        if draft is None:
            self._run(self.form.command)
            return

        def answered() -> Any:
            grant = self.form.command(answered=draft.approval_id)
            if not self.also.isChecked():
                return grant
            decide = api.DecideApproval(
                task_id=draft.task_id,
                approval_id=draft.approval_id,
                decision=self.form.verdict.currentData(),
                note=self.form.note.text().strip(),
            )
            return [decide, grant]

        self._run(answered)

    def _run(self, make: Any) -> None:
        self.error.hide()
        self.last_error = None
        self.running = True
        self.refresh_buttons()
        if not run_command(self.host, make, self.done, self.failed):
            self.running = False
            self.refresh_buttons()

    def done(self, _result: Any) -> None:
        self.running = False
        self.reason.clear()
        self.read()

    def failed(self, error: Exception) -> None:
        self.running = self.reading = False
        self.last_error = error
        if isinstance(error, api.Conflict):
            text = f"Not revoked: {error} The list shows the rule as it is now."
        else:
            text = str(error)
        self.error.setText(text)
        self.error.show()
        self.read()
        self.refresh_buttons()
