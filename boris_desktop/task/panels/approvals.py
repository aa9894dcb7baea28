"""Approvals: the exact prepared object, its digest, consequence, policy, requester, expiry
counting down, state."""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFormLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from boris_desktop.runtime.loader import Loader
from boris_desktop.signers import signer_words
from boris_desktop.task.bundle import TaskBundle
from boris_desktop.task.panels.base import TreePanel
from boris_desktop.task.panels.next_steps import approval_next
from boris_desktop.ui import text as t
from boris_desktop.ui.records import Node
from boris_desktop.ui.widgets import elided_label, plain_label, pretty_json
from store import api

if TYPE_CHECKING:
    from store.api import Approval, Signer, TaskState

LIVE = api.EXPIRING  # whose expiry is counted down
SIGNER = 6  # the column that says who signed the decision


@dataclass(frozen=True)
class ApprovalFields:
    """The selected approval's form, a line each (named as the form shows it)."""

    next: QLabel
    state: QLabel
    expiry: QLabel
    consequence: QLabel
    policy: QLabel
    requester: QLabel
    decision: QLabel
    signed: QLabel
    digest: QLabel

    def labels(self) -> list[QLabel]:
        """In the form's order."""
        return [getattr(self, f.name) for f in fields(self)]


class ApprovalsPanel(TreePanel):
    title = "Approvals"
    headers = (
        "Approval",
        "State",
        "Expires",
        "Consequence",
        "Requested by",
        "What you can do",
        "Decision signed by",
    )
    expand_all = False

    def __init__(self, loader: Loader) -> None:
        super().__init__(loader)
        self._approvals: list[Approval] = []
        #: Who signed each decision (approval id -> the store's signer words).
        self._signers: dict[str, Signer] = {}
        self._clock: tuple[float, float] | None = None  # (database now, local monotonic)
        self._current: Approval | None = None
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 4)
        self.fields = ApprovalFields(
            next=plain_label(name="What you can do"),
            state=plain_label(name="State"),
            expiry=plain_label(name="Expiry"),
            consequence=plain_label(name="Consequence"),
            policy=plain_label(name="Policy"),
            requester=plain_label(name="Requested by"),
            decision=plain_label(name="Decision"),
            signed=plain_label(name="Decision signed by"),
            # The digest, one unbroken word, is elided (whole in its tooltip and when copied).
            digest=elided_label(name="Prepared object digest"),
        )
        for label in self.fields.labels():
            form.addRow(label.accessibleName() + ":", label)
        side = QWidget()
        col = QVBoxLayout(side)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(form)
        col.addWidget(plain_label("The exact prepared object the approval is bound to:"))
        col.addWidget(self.detail, 1)
        self.detail.setMinimumHeight(120)
        # Scrolled when the window is short: the form's height must not squeeze the inbox.
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(side)
        self.split.insertWidget(1, scroll)
        self.detail.setAccessibleName("Prepared object (JSON)")
        self.timer = QTimer(self)
        self.timer.setInterval(1000)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def now(self) -> float:
        if self._clock is None:
            return time.time()
        db_now, at = self._clock
        return db_now + (time.monotonic() - at)

    def remaining(self, a: Approval) -> float:
        return t.parse(a.expires_at).timestamp() - self.now()

    def expiry_text(self, a: Approval) -> str:
        left = self.remaining(a)
        if a.state == api.ApprovalState.APPROVED and left > 0:
            # Approved: the expiry now only bounds when the dispatch may start.
            return f"approved: to be used within {t.duration(left)}"
        if a.consumed_by:
            return f"no longer matters: used by {a.consumed_by}"
        if a.state in LIVE and left > 0:
            return f"in {t.duration(left)}"
        if a.state in LIVE or a.state == api.ApprovalState.EXPIRED:
            return f"expired {t.duration(left)} ago"
        return f"— ({a.state.label})"

    def tab_note(self, task: TaskState) -> str:
        n = sum(a.state == api.ApprovalState.PENDING for a in task.approvals)  # expiry judged
        return f"{n} pending" if n else ""

    def summary(self, bundle: TaskBundle) -> str:
        aps = bundle.task.approvals
        pending = sum(a.state == api.ApprovalState.PENDING for a in aps)
        if not aps:
            return "No approvals requested."
        return f"{t.count(len(aps), 'approval', 'approvals')}, {pending} waiting for a decision."

    def show_clock(self, bundle: TaskBundle) -> None:
        self._clock = (t.parse(bundle.task.now).timestamp(), time.monotonic())

    def show_task(self, bundle: TaskBundle) -> None:
        self.show_clock(bundle)
        self._approvals = bundle.task.approvals
        self._signers = bundle.signing.approvals
        super().show_task(bundle)

    def nodes(self, bundle: TaskBundle) -> list[Node]:
        return self._nodes()

    def _nodes(self) -> list[Node]:
        return [self._node(a) for a in self._approvals]

    def _node(self, a: Approval) -> Node:
        signed, mark, why = signer_words(self._signers.get(a.approval_id))
        return Node(
            key=a.approval_id,
            cells=(
                a.approval_id,
                a.state.label,
                self.expiry_text(a),
                a.consequence,
                t.actor_short(a.requester),
                self.next_step(a) or "—",
                signed,
            ),
            status=a.state,
            cell_icons=((SIGNER, mark),) if mark else (),
            cell_tips=((SIGNER, why),) if why else (),
            detail=a,
        )

    def next_step(self, a: Approval) -> str:
        return approval_next(a, expired=self.remaining(a) <= 0)

    def _tick(self) -> None:
        if self._approvals and self.isVisible():
            self.tree.set_nodes(self._nodes())
            if self._current is not None:
                self.fields.expiry.setText(self._expiry_line(self._current))
                self.fields.next.setText(self.next_step(self._current) or "nothing")

    def _expiry_line(self, a: Approval) -> str:
        if a.consumed_by:
            return f"{self.expiry_text(a)} (was due {t.when(a.expires_at)})"
        if a.state not in LIVE and a.state != api.ApprovalState.EXPIRED:
            return f"was due {t.when(a.expires_at)}; no longer counts: {a.state.label}"
        return f"{self.expiry_text(a)} — at {t.when(a.expires_at)} (database clock)"

    def clear_detail(self) -> None:
        super().clear_detail()
        self._current = None
        for label in self.fields.labels():
            label.setText("")

    def show_detail(self, node: Node) -> None:
        a: Approval = node.detail
        self._current = a
        f = self.fields
        f.next.setText(self.next_step(a) or "nothing")
        f.state.setText(a.state.label)
        f.expiry.setText(self._expiry_line(a))
        f.consequence.setText(a.consequence)
        f.policy.setText(a.policy)
        f.requester.setText(
            f"{t.actor(a.requester)} at {t.when(a.requested_at)}"
            + (f" for effect {a.effect_id}" if a.effect_id else "")
        )
        decision = "not decided"
        if a.decided_by:
            decision = f"by {t.actor(a.decided_by)} at {t.when(a.decided_at)}"
            if a.note:
                decision += f": {a.note}"
        if a.consumed_at:
            decision += f"; used by {a.consumed_by} at {t.when(a.consumed_at)}"
        f.decision.setText(decision)
        mark = self._signers.get(a.approval_id)
        signed, _, why = signer_words(mark)
        f.signed.setText(f"{signed} — {why}" if mark else "not decided")
        f.digest.setText(a.payload_digest)
        self.detail.show_text(pretty_json(a.payload), "json")
