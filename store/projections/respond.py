"""The projection of a person's answer in the tool's place (`approval.answered`, issue 42):
the approval is `answered`, decided by that person, its note theirs. Made from the event
alone, so a replay of the task's log gives the same rows; the result stays in the event."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from .. import events as ev
from .. import schema as t
from ..record import Event
from .core import _actor, applies


@applies("approval.answered")
def _approval_answered(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ApprovalAnswered)
    conn.execute(
        t.approvals.update()
        .where(t.approvals.c.task_id == event.task_id, t.approvals.c.approval_id == p.approval_id)
        .values(state="answered", decided_by=_actor(event), decided_at=event.at, note=p.note)
    )
