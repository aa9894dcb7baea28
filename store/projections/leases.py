"""The `leases` projection: each task's current (or last) lease, folded from `lease.acquired`,
`lease.released` and `lease.taken_over`.

One row per task that ever had a lease; a new lease replaces the row (the log keeps every
one). Heartbeats are not events and are not folded here: they live in `lease_heartbeats`,
which a rebuild leaves alone. So a rebuild restores each lease with the expiry its
acquisition granted, and a read pushes it out by the newest heartbeat of the same token
(rules.lease_expiry): rebuilt or not, a lease reads the same.

Insert or update, never delete: on a team store an agents' role may not delete a projection
row (store.team).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from .. import events as ev
from .. import schema as t
from ..record import Event
from .core import applies

_L = t.leases


def _put(conn: Connection, task_id: str, values: dict[str, Any]) -> None:
    done = conn.execute(_L.update().where(_L.c.task_id == task_id).values(**values))
    if done.rowcount == 0:
        conn.execute(_L.insert().values(task_id=task_id, **values))


def _new_lease(event: Event, token: int, **values: Any) -> dict[str, Any]:
    return {
        "token": token,
        "holder": event.actor.model_dump(mode="json"),
        "granted_at": event.at,
        "ended_at": None,
        "ended_by": None,
        "end_reason": None,
        "seq": event.seq,
        **values,
    }


@applies("lease.acquired")
def _acquired(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.LeaseAcquired)
    _put(
        conn,
        event.task_id,
        _new_lease(
            event,
            p.token,
            session_id=p.session_id,
            ttl_seconds=p.ttl_seconds,
            expires_at=p.expires_at,
            reason="",
        ),
    )


@applies("lease.released")
def _released(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.LeaseReleased)
    conn.execute(
        _L.update()
        .where(_L.c.task_id == event.task_id, _L.c.token == p.token)
        .values(
            ended_at=event.at,
            ended_by=event.actor.model_dump(mode="json"),
            end_reason="released",
        )
    )


@applies("lease.taken_over")
def _taken_over(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.LeaseTakenOver)
    _put(
        conn,
        event.task_id,
        _new_lease(
            event, p.token, session_id="", ttl_seconds=None, expires_at=None, reason=p.reason
        ),
    )
