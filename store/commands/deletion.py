"""A task's rows, counted and removed inside the transaction of a person's deletion.

Which tables hold a task is read from the schema, not listed here: every table with a
`task_id` column (the log, every projection, signatures, heartbeats, the head verify last
found clean, and any table a later revision adds) but the receipts themselves. So a table
added later is removed with the rest without anyone remembering to add it here.

Blobs are content-addressed and may be shared by tasks: a blob goes only when no event of
another task names its digest (`shared_elsewhere`), and only after the commit
(store.services.deletion).
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import schema as t
from ..blobs import PREFIX

#: Tables that outlive a deleted task: the receipt of its deletion.
_KEPT = frozenset({t.deletion_receipts.name})


def task_tables() -> list[sa.Table]:
    """Every table holding rows of a task, children before the tables they refer to."""
    return [
        table
        for table in reversed(t.metadata.sorted_tables)
        if "task_id" in table.c and table.name not in _KEPT
    ]


def count_rows(conn: Connection, task_id: str) -> dict[str, int]:
    """Per table, how many rows of the task it holds (tables with none left out)."""
    out: dict[str, int] = {}
    for table in task_tables():
        n = int(
            conn.execute(
                sa.select(sa.func.count()).select_from(table).where(table.c.task_id == task_id)
            ).scalar_one()
        )
        if n:
            out[table.name] = n
    return out


def remove_rows(conn: Connection, task_id: str) -> dict[str, int]:
    """Delete every row of the task; per table, how many went."""
    out: dict[str, int] = {}
    for table in task_tables():
        n = conn.execute(table.delete().where(table.c.task_id == task_id)).rowcount
        if n:
            out[table.name] = int(n)
    return out


def shared_elsewhere(conn: Connection, task_id: str, digests: Iterable[str]) -> set[str]:
    """The digests an event of another task names. Matched on the payload's text, whatever
    the event type (a later one included): a false match only keeps a blob, never loses
    one another task needs."""
    ev = t.events
    out: set[str] = set()
    for digest in digests:
        hexpart = digest[len(PREFIX) :] if digest.startswith(PREFIX) else digest
        hit = conn.execute(
            sa.select(ev.c.id)
            .where(ev.c.task_id != task_id, ev.c.payload.contains(hexpart, autoescape=True))
            .limit(1)
        ).first()
        if hit is not None:
            out.add(digest)
    return out
