"""A write transaction: the only place events are appended.

`Tx.emit` numbers the event, chains its hash, inserts it and applies its projection, all on
the transaction's connection; the caller commits once. Nothing is visible to other
connections until then, and a rejected command rolls the whole transaction back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from . import db, projections
from . import schema as t
from .canonical import GENESIS_HASH, canonical_json, chain_hash
from .errors import CommandRejected, UnknownTask
from .events import Payload, TaskCreated
from .model import Actor
from .record import Event, event_body

if TYPE_CHECKING:
    from .blobs import BlobStore

_INSERT_EVENT = t.events.insert()


@dataclass
class Tx:
    conn: Connection
    blobs: BlobStore
    now: str = ""
    emitted: list[Event] = field(default_factory=list)
    _heads: dict[str, tuple[int, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.now = db.database_now(self.conn)

    def task(self, task_id: str) -> Row[Any]:
        row = self.conn.execute(sa.select(t.tasks).where(t.tasks.c.task_id == task_id)).first()
        if row is None:
            raise UnknownTask(task_id)
        return row

    def task_exists(self, task_id: str) -> bool:
        q = sa.select(t.tasks.c.task_id).where(t.tasks.c.task_id == task_id)
        return self.conn.execute(q).first() is not None

    def _head(self, task_id: str) -> tuple[int, str]:
        head = self._heads.get(task_id)
        if head is None:
            q = sa.select(t.tasks.c.last_seq, t.tasks.c.head_hash).where(
                t.tasks.c.task_id == task_id
            )
            row = self.conn.execute(q).first()
            if row is None:
                raise UnknownTask(task_id)
            head = (int(row[0]), str(row[1]))
        return head

    def emit(self, task_id: str, payload: Payload, actor: Actor) -> Event:
        if isinstance(payload, TaskCreated):
            if self.task_exists(task_id):
                raise CommandRejected(f"a task with id {task_id!r} already exists")
            seq, prev = 1, GENESIS_HASH
        else:
            last, prev = self._head(task_id)
            seq = last + 1
        body = event_body(task_id, seq, payload.TYPE, payload, actor, self.now)
        digest = chain_hash(prev, body)
        self.conn.execute(
            _INSERT_EVENT,
            {
                "task_id": task_id,
                "seq": seq,
                "type": payload.TYPE,
                "format": payload.FORMAT,
                "payload": canonical_json(body["payload"]),
                "actor_kind": actor.kind,
                "actor_id": actor.id,
                "actor_name": actor.name,
                "at": self.now,
                "prev_hash": prev,
                "hash": digest,
            },
        )
        event = Event(task_id, seq, payload.TYPE, payload, actor, self.now, prev, digest)
        projections.apply(self.conn, event)
        self._heads[task_id] = (seq, digest)
        self.emitted.append(event)
        return event


def payload_json(event_row: Row[Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(event_row.payload)
    return data
