"""The projection of an escalation on expiry (`approval.escalated` with a new `expires_at`):
the request may be decided until then (issue 42, routing). An escalation of an unanswered
request changes no row: who may decide is read from the log (store.reads.routing)."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from .. import events as ev
from .. import schema as t
from ..record import Event
from .core import applies


@applies("approval.escalated")
def _approval_escalated(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ApprovalEscalated)
    if p.expires_at is None:
        return
    conn.execute(
        t.approvals.update()
        .where(t.approvals.c.task_id == event.task_id, t.approvals.c.approval_id == p.approval_id)
        .values(expires_at=p.expires_at)
    )
