"""A write transaction: the only place events are appended.

`Tx.emit` numbers the event, chains its hash, inserts it and applies its projection, all on
the transaction's connection; the caller commits once. Nothing is visible to other
connections until then, and a rejected command rolls the whole transaction back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from . import db, projections
from . import schema as t
from .canonical import GENESIS_HASH, canonical_json, chain_hash_of_parts
from .errors import CommandRejected, UnknownTask
from .events import Payload, TaskCreated
from .model import Actor
from .record import Event

if TYPE_CHECKING:
    from .blobs import BlobStore

_EVENT_COLUMNS = [c.name for c in t.events.columns if c.name != "id"]
_INSERT_EVENT = db.Prepared(t.events.insert().values({n: sa.bindparam(n) for n in _EVENT_COLUMNS}))


class TaskRow(NamedTuple):
    """The task's projection row as handlers see it (read on the driver: the hot path)."""

    task_id: str
    title: str
    owner: str
    status: str
    status_reason: str
    objective_rev: int
    scope_stored: Any  # the JSON column as the driver returns it (text on SQLite)
    created_at: str
    updated_at: str
    last_seq: int
    head_hash: str

    @property
    def scope(self) -> dict[str, Any]:
        # Decoded on use: most commands only need to know the task exists.
        value = self.scope_stored
        decoded: dict[str, Any] = json.loads(value) if isinstance(value, str) else value
        return decoded


_SELECT_TASK = db.Prepared(
    sa.select(*(t.tasks.c["scope" if f == "scope_stored" else f] for f in TaskRow._fields)).where(
        t.tasks.c.task_id == sa.bindparam("task_id")
    )
)


@dataclass
class Tx:
    conn: Connection
    blobs: BlobStore
    now: str = ""
    emitted: list[Event] = field(default_factory=list)
    _heads: dict[str, tuple[int, str]] = field(default_factory=dict)
    _actors: dict[Actor, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.now = db.database_now(self.conn)

    def _task_row(self, task_id: str) -> TaskRow | None:
        rows = _SELECT_TASK.run(self.conn, {"task_id": task_id})
        if not rows:
            return None
        row = TaskRow(*rows[0])
        # The row read inside this write transaction is the chain's head until we emit.
        self._heads.setdefault(task_id, (int(row.last_seq), str(row.head_hash)))
        return row

    def task(self, task_id: str) -> TaskRow:
        row = self._task_row(task_id)
        if row is None:
            raise UnknownTask(task_id)
        return row

    def task_exists(self, task_id: str) -> bool:
        return task_id in self._heads or self._task_row(task_id) is not None

    def _head(self, task_id: str) -> tuple[int, str]:
        head = self._heads.get(task_id)
        if head is None:
            self.task(task_id)
            head = self._heads[task_id]
        return head

    def _actor_json(self, actor: Actor) -> str:
        text = self._actors.get(actor)
        if text is None:
            text = self._actors[actor] = canonical_json(actor.model_dump(mode="json"))
        return text

    def emit(self, task_id: str, payload: Payload, actor: Actor) -> Event:
        if isinstance(payload, TaskCreated):
            if self.task_exists(task_id):
                raise CommandRejected(f"a task with id {task_id!r} already exists")
            seq, prev = 1, GENESIS_HASH
        else:
            last, prev = self._head(task_id)
            seq = last + 1
        payload_text = canonical_json(payload.model_dump(mode="json"))
        digest = chain_hash_of_parts(
            prev,
            actor_json=self._actor_json(actor),
            at=self.now,
            fmt=payload.FORMAT,
            payload_json=payload_text,
            seq=seq,
            task_id=task_id,
            type_name=payload.TYPE,
        )
        _INSERT_EVENT.run(
            self.conn,
            {
                "task_id": task_id,
                "seq": seq,
                "type": payload.TYPE,
                "format": payload.FORMAT,
                "payload": payload_text,
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
