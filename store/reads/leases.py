"""Who works on a task now: its lease as the task read, the inbox, the brief and the lease
commands see it.

`standing` is judged now, on the database's clock (rules.lease_standing): `alive`, `expired`
(no heartbeat in time: nobody is working on it), `ended` (released or taken over); the expiry
counts the newest heartbeat of the same token (rules.lease_expiry), which lives outside the
chain (store.schema.lease_heartbeats).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import db, rules
from .. import schema as t
from .inbox import Lease
from .inbox import decoded as _json
from .inbox import lease_fields as answer


def current_statement() -> sa.Select[Any]:
    h, le = t.lease_heartbeats, t.leases
    return (
        sa.select(
            le,
            h.c.token.label("heartbeat_token"),
            h.c.last_heartbeat_at,
            h.c.expires_at.label("heartbeat_expires_at"),
        )
        .select_from(le.outerjoin(h, h.c.task_id == le.c.task_id))
        .where(le.c.task_id == sa.bindparam("task_id"))
    )


# Every fenced write (an agent's) reads the lease: compiled once and run on the driver, as
# the append's own statements are (db.Prepared), instead of built and compiled per write.
# Its JSON columns come back as the driver gives them (`decoded` reads both forms).
_CURRENT = current_statement()
_SELECT_CURRENT = db.Prepared(_CURRENT)
# The row's names are the statement's columns, so the type is built from them (mypy cannot
# type a namedtuple whose fields are computed: hence the ignore).
LeaseRow = namedtuple("LeaseRow", [c.name for c in _CURRENT.selected_columns])  # type: ignore[misc]


def current(conn: Connection, task_id: str) -> Any:
    """The task's lease row joined with its newest heartbeat, or None (never leased)."""
    rows = _SELECT_CURRENT.run(conn, {"task_id": task_id})
    return LeaseRow(*rows[0]) if rows else None


def expires_at_of(row: Any) -> str | None:
    """A lease row's expiry now, its newest heartbeat counted."""
    return rules.lease_expiry(
        row.expires_at, int(row.token), row.heartbeat_token, row.heartbeat_expires_at
    )


def lease_view(row: Any, now: str) -> rules.LeaseView:
    """What the rules need of a lease row (rules.fence_refusal)."""
    holder = _json(row.holder)
    return rules.LeaseView(
        token=int(row.token),
        holder_kind=str(holder["kind"]),
        holder_id=str(holder["id"]),
        session_id=str(row.session_id),
        standing=rules.lease_standing(row.ended_at, expires_at_of(row), now),
    )


def lease_answer(row: Any, now: str) -> Lease:
    """`answer` of a row `current` read."""
    return Lease.of(lease_fields(row, now))


def lease_fields(row: Any, now: str) -> dict[str, Any]:
    """The lease's fields as JSON-ready data, of a row `current` read."""
    return answer(
        token=int(row.token),
        holder=row.holder,
        session_id=row.session_id,
        granted_at=row.granted_at,
        ttl_seconds=row.ttl_seconds,
        expires_at=row.expires_at,
        ended_at=row.ended_at,
        ended_by=row.ended_by,
        end_reason=row.end_reason,
        reason=row.reason,
        heartbeat_token=row.heartbeat_token,
        last_heartbeat_at=row.last_heartbeat_at,
        heartbeat_expires_at=row.heartbeat_expires_at,
        now=now,
    )


def lease_of(conn: Connection, task_id: str, now: str) -> Lease | None:
    """The task's current (or last) lease, or None when it never had one."""
    row = current(conn, task_id)
    return None if row is None else lease_answer(row, now)
