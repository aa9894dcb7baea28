"""Projection of scheduled waits: one row per wait, folded from its three events.

Like every projection it reads only the event and projection rows, never the clock: whether
a wait is due, or retired by its condition, is judged when it is read (store.reads.waits).
The reservation a wait holds is the budget's own projection (`budget.reserved` and
`budget.released` written beside these events), so the budget says it once.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import events as ev
from .. import rules
from .. import schema as t
from ..record import Event
from .core import _actor, _next_position, applies

_W = t.waits


def _key(task_id: str, wait_id: str) -> sa.ColumnElement[bool]:
    return sa.and_(_W.c.task_id == task_id, _W.c.wait_id == wait_id)


@applies("wait.recorded")
def _wait_recorded(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.WaitRecorded)
    conn.execute(
        _W.insert().values(
            task_id=event.task_id,
            wait_id=p.wait_id,
            position=_next_position(conn, _W, event.task_id),
            kind=p.kind,
            ref=p.ref,
            not_before=p.not_before,
            clock=p.clock,
            reserve_counter=p.reserve.counter if p.reserve else None,
            reserve_amount=p.reserve.amount if p.reserve else None,
            cancel_if=p.cancel_if.model_dump(mode="json") if p.cancel_if else None,
            note=p.note,
            state=rules.WaitState.OPEN.value,
            recorded_by=_actor(event),
            recorded_at=event.at,
            considered=0,
            seq=event.seq,
        )
    )


@applies("wait.rescheduled")
def _wait_rescheduled(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.WaitRescheduled)
    conn.execute(
        _W.update()
        .where(_key(event.task_id, p.wait_id))
        .values(not_before=p.not_before, considered=_W.c.considered + 1, seq=event.seq)
    )


@applies("wait.ended")
def _wait_ended(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.WaitEnded)
    conn.execute(
        _W.update()
        .where(_key(event.task_id, p.wait_id))
        .values(
            state=p.state,
            ended_at=event.at,
            ended_by=_actor(event),
            end_reason=p.reason,
            seq=event.seq,
        )
    )
