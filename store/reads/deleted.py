"""A task that is gone because a person deleted it (store.services.deletion).

Asked wherever a task's row is missing, so that every read (show, the inbox's row, a
decision view, the MCP tools, an export) says "deleted on <date> by <who>" instead of only
"no task with id".
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import schema as t
from ..errors import TaskDeleted, UnknownTask


def deleted_error(conn: Connection, task_id: str) -> TaskDeleted | None:
    """`TaskDeleted` from the task's newest deletion receipt, or None when it has none."""
    r = t.deletion_receipts
    row = conn.execute(
        sa.select(r.c.deleted_at, r.c.actor_kind, r.c.actor_id)
        .where(r.c.task_id == task_id)
        .order_by(r.c.receipt_id.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    return TaskDeleted(task_id, str(row.deleted_at), f"{row.actor_kind}:{row.actor_id}")


def absent(conn: Connection, task_id: str) -> UnknownTask:
    """The error for a task with no row: deleted (when and by whom) or simply unknown."""
    return deleted_error(conn, task_id) or UnknownTask(task_id)
