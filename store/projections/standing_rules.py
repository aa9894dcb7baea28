"""The projection of a request decided by a standing rule (`approval.ruled`): the approval
is decided as the rule says, by the rule's person, its note naming the rule; an approved
one moves its effect to `approved`, as a person's approval does (store.projections.ledger).
Made from the event alone, so a replay of the task's log gives the same rows."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from .. import events as ev
from .. import schema as t
from ..record import Event
from .core import applies


@applies("approval.ruled")
def _approval_ruled(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ApprovalRuled)
    person = {"kind": "person", "id": p.granted_by, "name": ""}
    key = (t.approvals.c.task_id == event.task_id) & (t.approvals.c.approval_id == p.approval_id)
    conn.execute(
        t.approvals.update()
        .where(key)
        .values(
            state=p.decision,
            decided_by=person,
            decided_at=event.at,
            note=f"by standing rule {p.rule_id}",
            approved_by=[person] if p.decision == "approved" else [],
        )
    )
    if p.decision != "approved":
        return
    effect_id = conn.execute(
        t.approvals.select().with_only_columns(t.approvals.c.effect_id).where(key)
    ).scalar()
    if effect_id is not None:
        conn.execute(
            t.effects.update()
            .where(
                t.effects.c.task_id == event.task_id,
                t.effects.c.effect_id == effect_id,
                t.effects.c.stage == "planned",
            )
            .values(stage="approved", updated_at=event.at)
        )
