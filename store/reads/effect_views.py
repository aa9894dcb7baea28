"""A planned effect as a person cancels it: what it would have done, and what goes with it.

`cancel_effect_view` is the Cancel dialog's whole picture, built by the store: the effect's
consequence, its prepared object as the change it makes (`store.reads.changes`, the same view
an approval shows), the approvals a cancel revokes with it (CancelEffect revokes every one
still open: pending, or approved and unused), whether it can be cancelled now and why not
(`rules.why_not_cancellable`), and the run's status afterwards by the store's rule
(`rules.ledger_status`). The window renders it and adds no rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from ..blobs import BlobStore
from ..errors import CommandRejected
from .changes import Change, Facts, change_of, pretty_json

#: Stored approval states a cancel revokes (CancelEffect: `open_approvals`).
REVOKED_BY_CANCEL = (rules.ApprovalState.PENDING.value, rules.ApprovalState.APPROVED.value)


@dataclass(frozen=True)
class RevokedApproval:
    """An approval the cancel revokes: its id, its state now (expiry judged now), and what
    it asked (its consequence)."""

    approval_id: str
    state: rules.ApprovalState
    consequence: str


@dataclass(frozen=True)
class CancelEffectView:
    """One effect as a person cancels it. `why_not`: why it cannot be cancelled now (None:
    it can). `status_after`: the run's status once it is cancelled (and its approvals
    revoked). `task_seq`: the task's last event when read; `now`: the database clock."""

    task_id: str
    effect_id: str
    kind: str
    target: str
    stage: str
    outcome: str | None
    consequence: str
    requires_approval: bool
    attempts: int
    prepared_digest: str
    prepared_json: str
    change: Change
    revoked: tuple[RevokedApproval, ...]
    why_not: str | None
    status: str
    status_after: str
    status_after_why: str
    task_seq: int
    now: str

    @property
    def cancellable(self) -> bool:
        return self.why_not is None


def read_cancel_effect_view(
    conn: Connection, blobs: BlobStore, task_id: str, effect_id: str, now: str
) -> CancelEffectView:
    """The cancel view of one effect. UnknownTask when there is no task; an unknown effect is
    refused as CancelEffect refuses it."""
    task = conn.execute(
        sa.select(t.tasks.c.status, t.tasks.c.last_seq).where(t.tasks.c.task_id == task_id)
    ).first()
    if task is None:
        from .deleted import absent  # deleted by a person: when and by whom

        raise absent(conn, task_id)
    row = conn.execute(
        sa.select(t.effects).where(
            t.effects.c.task_id == task_id, t.effects.c.effect_id == effect_id
        )
    ).first()
    if row is None:
        raise CommandRejected(f"task {task_id} has no effect {effect_id!r}")
    intent = dict(row.intent or {})
    prepared = dict(intent.get("prepared") or {})
    facts = Facts(str(row.kind), str(row.target), intent.get("intended"), intent.get("pre_state"))
    attempts = conn.execute(
        sa.select(sa.func.count()).where(
            t.attempts.c.task_id == task_id, t.attempts.c.effect_id == effect_id
        )
    ).scalar_one()
    revoked = tuple(
        RevokedApproval(
            str(a.approval_id),
            rules.approval_state(str(a.state), a.expires_at, now),
            str(a.consequence),
        )
        for a in conn.execute(
            sa.select(
                t.approvals.c.approval_id,
                t.approvals.c.state,
                t.approvals.c.expires_at,
                t.approvals.c.consequence,
            )
            .where(
                t.approvals.c.task_id == task_id,
                t.approvals.c.effect_id == effect_id,
                t.approvals.c.state.in_(REVOKED_BY_CANCEL),
            )
            .order_by(t.approvals.c.requested_at)
        )
    )
    status = str(task.status)
    status_after, why_after = _status_after(conn, task_id, effect_id, status, now)
    return CancelEffectView(
        task_id=task_id,
        effect_id=effect_id,
        kind=str(row.kind),
        target=str(row.target),
        stage=str(row.stage),
        outcome=row.outcome,
        consequence=str(row.consequence),
        requires_approval=bool(row.requires_approval),
        attempts=int(attempts),
        prepared_digest=str(intent.get("prepared_digest") or ""),
        prepared_json=pretty_json(prepared),
        change=change_of(prepared, facts, blobs),
        revoked=revoked,
        why_not=rules.why_not_cancellable(str(row.stage), row.outcome),
        status=status,
        status_after=status_after,
        status_after_why=why_after,
        task_seq=int(task.last_seq),
        now=now,
    )


#: Statuses the store moves by the ledger after a write (`settle_status`); others stay.
_SETTLED_BY_LEDGER = frozenset(
    {rules.RunStatus.RUNNING, rules.RunStatus.AWAITING_APPROVAL, rules.RunStatus.OUTCOME_UNKNOWN}
)


def _status_after(
    conn: Connection, task_id: str, effect_id: str, status: str, now: str
) -> tuple[str, str]:
    """The run's status once this effect is cancelled and its approvals revoked."""
    if status not in _SETTLED_BY_LEDGER:
        return status, "a cancel leaves a run that is " + status.replace("_", " ") + " as it is"
    uncertain = conn.execute(
        sa.select(t.effects.c.effect_id).where(
            t.effects.c.task_id == task_id,
            t.effects.c.effect_id != effect_id,
            t.effects.c.stage.in_(sorted(rules.RECONCILABLE)),
            t.effects.c.outcome.in_((rules.Outcome.UNKNOWN.value, rules.Outcome.PARTIAL.value)),
        )
    ).first()
    pending = conn.execute(
        sa.select(t.approvals.c.approval_id).where(
            t.approvals.c.task_id == task_id,
            sa.or_(t.approvals.c.effect_id.is_(None), t.approvals.c.effect_id != effect_id),
            t.approvals.c.state == rules.ApprovalState.PENDING.value,
            t.approvals.c.expires_at > now,
        )
    ).first()
    return rules.ledger_status(
        None if uncertain is None else str(uncertain.effect_id),
        None if pending is None else str(pending.approval_id),
    )


def cancel_effect_view(store: Any, task_id: str, effect_id: str) -> CancelEffectView:
    """On a worker: `read_cancel_effect_view` at the database clock now."""
    from .. import db

    with store.read() as conn:
        now = db.database_now(conn)
        return read_cancel_effect_view(conn, store.blobs, task_id, effect_id, now)
