"""Projection of retention: one row per item given a class, and its tombstone once retired.

Reads only the event and the projection rows, never the clock: whether an item is due is
judged when it is read (store.reads.retention), on the database's clock.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import events as ev
from .. import schema as t
from ..record import Event
from .core import _actor, applies

_R = t.retention


def _key(task_id: str, kind: str, item_id: str) -> sa.ColumnElement[bool]:
    return sa.and_(_R.c.task_id == task_id, _R.c.item_kind == kind, _R.c.item_id == item_id)


@applies("retention.set")
def _retention_set(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.RetentionSet)
    values = {
        "retain": p.retain,
        "due_at": p.due_at,
        "set_by": _actor(event),
        "set_at": event.at,
        "seq": event.seq,
    }
    done = conn.execute(
        _R.update().where(_key(event.task_id, p.item_kind, p.item_id)).values(**values)
    )
    if done.rowcount == 0:
        conn.execute(
            _R.insert().values(
                task_id=event.task_id,
                item_kind=p.item_kind,
                item_id=p.item_id,
                digest=p.digest,
                size=p.size,
                media_type=p.media_type,
                written_by=p.written_by.model_dump(mode="json"),
                **values,
            )
        )


@applies("content.retired")
def _content_retired(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ContentRetired)
    conn.execute(
        _R.update()
        .where(_key(event.task_id, p.item_kind, p.item_id))
        .values(
            retired_at=event.at,
            retired_by=_actor(event),
            proved=list(p.proved),
            seq=event.seq,
        )
    )
