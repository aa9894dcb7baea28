"""A write transaction: the only place events are appended.

`Tx.emit` numbers the event, chains its hash, inserts it and applies its projection, all on
the transaction's connection; the caller commits once. Nothing is visible to other
connections until then, and a rejected command rolls the whole transaction back.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from . import db, projections
from . import schema as t
from .canonical import GENESIS_HASH, canonical_json, chain_hash_of_parts
from .errors import CommandRejected, UnknownTask
from .events import Payload, TaskCreated
from .model import Actor, actor_json
from .record import Event

if TYPE_CHECKING:
    from .blobs import BlobStore

_EVENT_COLUMNS = [c.name for c in t.events.columns if c.name not in t.SERVER_FILLED_EVENT_COLUMNS]
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
    checkpoint_heads_stored: Any  # JSON, like scope

    # Decoded on use: most commands only need to know the task exists.
    @property
    def scope(self) -> dict[str, Any]:
        decoded: dict[str, Any] = _decoded(self.scope_stored)
        return decoded

    @property
    def checkpoint_heads(self) -> list[str]:
        decoded: list[str] = _decoded(self.checkpoint_heads_stored)
        return decoded


def _decoded(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


# FOR UPDATE: on a server, concurrent writers to one task queue on its row, so each reads the
# head the previous one committed and takes the next seq (READ COMMITTED re-reads a row it
# waited for). SQLite has no row locks and needs none: BEGIN IMMEDIATE already serialized us,
# and its compiler leaves the clause out.
_SELECT_TASK = db.Prepared(
    sa.select(*(t.tasks.c[f.removesuffix("_stored")] for f in TaskRow._fields))
    .where(t.tasks.c.task_id == sa.bindparam("task_id"))
    .with_for_update()
)


@dataclass
class Tx:
    conn: Connection
    blobs: BlobStore
    now: str = ""
    emitted: list[Event] = field(default_factory=list)
    _heads: dict[str, tuple[int, str]] = field(default_factory=dict)
    # Task rows read in this transaction, until an event for the task changes them: a
    # command asks for its task several times (writable? scope? its checkpoint's state?).
    _rows: dict[str, TaskRow] = field(default_factory=dict)
    # Checkpoint states known at a head (store.checkpoint_state): the store's memo, and what
    # this transaction adds to it once it commits.
    memo: StateMemo | None = None
    learned: dict[str, KnownState] = field(default_factory=dict)
    _waited: bool = False
    #: Per task, its last checkpoint.written event here and the checkpoints row it made.
    checkpoint_rows: dict[str, tuple[Event, dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.now = db.database_now(self.conn)
        # Only a server makes us wait for a task's row lock; SQLite waited at BEGIN.
        self._waited = self.conn.dialect.name == "sqlite"

    def _task_row(self, task_id: str) -> TaskRow | None:
        row = self._rows.get(task_id)
        if row is not None:
            return row
        rows = _SELECT_TASK.run(self.conn, {"task_id": task_id})
        if not self._waited:
            # We may have queued behind other writers for the lock: our events are later than
            # theirs, and their times should say so.
            self._waited = True
            self.now = db.database_now(self.conn)
        if not rows:
            return None
        row = self._rows[task_id] = TaskRow(*rows[0])
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

    def emit(
        self, task_id: str, payload: Payload, actor: Actor, payload_json: str | None = None
    ) -> Event:
        """Append `payload` as the task's next event. `payload_json`, when given, is its
        canonical JSON as the caller already has it (checked equal by the tests)."""
        if isinstance(payload, TaskCreated):
            if self.task_exists(task_id):
                raise CommandRejected(f"a task with id {task_id!r} already exists")
            seq, prev = 1, GENESIS_HASH
        else:
            last, prev = self._head(task_id)
            seq = last + 1
        payload_text = payload_json or canonical_json(payload.model_dump(mode="json"))
        digest = chain_hash_of_parts(
            prev,
            actor_json=actor_json(actor),
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
        row = self._rows.pop(task_id, None)
        # The row read in this transaction is the task's as the event finds it.
        made = projections.apply(
            self.conn, event, None if row is None else row.checkpoint_heads_stored
        )
        if made is not None:
            self.checkpoint_rows[task_id] = (event, made)
        self._heads[task_id] = (seq, digest)
        self.emitted.append(event)
        return event


def payload_json(event_row: Row[Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(event_row.payload)
    return data


# --- the checkpoint state a transaction learned, kept per store -------------------------------


@dataclass(frozen=True)
class KnownState:
    """A task's checkpoint state as of one head of its log.

    Every change to what the state is built from is an event, and every event moves the
    head; so while the head is the same, so is the state, but for open approvals turning
    expired with time: it holds until `valid_until`, the first of their expiries.
    """

    head: tuple[int, str]
    state: dict[str, Any]
    state_json: str  # its canonical JSON, as the event stores it
    digest: str
    valid_until: str | None

    def holds(self, head: tuple[int, str], now: str) -> bool:
        return head == self.head and (self.valid_until is None or now < self.valid_until)


class StateMemo:
    """The state each task's last committed checkpoint was written with, per store.

    A checkpoint's own event changes nothing the state is built from, so the state it
    recorded is still the state at the head it made. A checkpoint written next, with no
    other event between (a loop checkpointing while it waits, a handoff after a milestone,
    a stop with nothing to revoke), reuses it instead of querying every part again. The head
    is compared inside the write transaction, under the write lock, so another process's
    events are never missed: they moved the head.
    """

    _KEEP = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, KnownState] = {}

    def get(self, task_id: str) -> KnownState | None:
        with self._lock:
            return self._known.get(task_id)

    def publish(self, learned: dict[str, KnownState]) -> None:
        """What a committed transaction learned (never a rolled-back one's)."""
        with self._lock:
            if len(self._known) + len(learned) > self._KEEP:
                self._known.clear()
            self._known.update(learned)
