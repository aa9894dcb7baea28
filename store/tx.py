"""A write transaction: the only place events are appended.

`Tx.emit` numbers the event, chains its hash, inserts it and applies its projection, all on
the transaction's connection; the caller commits once. Nothing is visible to other
connections until then, and a rejected command rolls the whole transaction back.

On PostgreSQL the task's row is read once per write with everything the write needs from
the server before it can decide: the row lock, the head, the task's lease (the fence,
store.commands.core) and the server's clock after the lock was granted, in one statement.
The keyring's head rides in the same statement (db.seed: the signature policy's check at
the end of the write needs no read of its own). The event and its projections' changes are
queued (`db.Prepared.send`) and sent with the COMMIT, so a note appended by an agent waits
for the server twice instead of eleven times (issue 36; docs/BENCHMARKS.md). A process's
next write to a task it wrote waits once: it is built on the row its last write left
(`Guesses`) and the server checks that row, under the lock, first in the same exchange.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from . import clock, db, projections
from . import schema as t
from .canonical import (
    GENESIS_HASH,
    canonical_json,
    canonical_text_object,
    chain_hash_of_parts,
)
from .errors import CommandRejected
from .events import Additive, Payload, TaskCreated
from .model import Actor, actor_json
from .projections.core import _APPLY as _PROJECTED
from .projections.state_parts import WRITES, carried, stale_parts
from .reads import leases
from .record import Event
from .signing.seal import KEYRING_HEAD

if TYPE_CHECKING:
    from .blobs import BlobStore

_EVENT_COLUMNS = [c.name for c in t.events.columns if c.name not in t.SERVER_FILLED_EVENT_COLUMNS]
_INSERT_EVENT = db.Prepared(t.events.insert().values({n: sa.bindparam(n) for n in _EVENT_COLUMNS}))
_UNSET = ""


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


# On SQLite, the task's row with its lease (the columns reads.leases.current reads) and the
# keyring's head, in one statement: what an agent's write needs to decide (the fence) and
# to seal (the signature policy's check), where it was three statements (issue 44). Joined
# flat, the keyring's head by two scalar subqueries (a reverse rowid lookup each): a
# subquery joined is materialized first, which cost more than the statements it saved.
# BEGIN IMMEDIATE already serialized us: no row lock, nothing to version. The server's
# form, with its lock and the rows' versions, is below (_SELECT_TASK_ON_SERVER).
_HEARTBEAT = t.lease_heartbeats
_LEASE_HERE = (
    *t.leases.c,
    _HEARTBEAT.c.token.label("heartbeat_token"),
    _HEARTBEAT.c.last_heartbeat_at,
    _HEARTBEAT.c.expires_at.label("heartbeat_expires_at"),
)
_RING_HEAD = sa.select(t.keyring.c.seq, t.keyring.c.hash).order_by(t.keyring.c.seq.desc()).limit(1)
_SELECT_TASK = db.Prepared(
    sa.select(
        *(t.tasks.c[f.removesuffix("_stored")] for f in TaskRow._fields),
        *_LEASE_HERE,
        _RING_HEAD.with_only_columns(t.keyring.c.seq).scalar_subquery(),
        _RING_HEAD.with_only_columns(t.keyring.c.hash).scalar_subquery(),
    )
    .select_from(
        t.tasks.outerjoin(t.leases, t.leases.c.task_id == t.tasks.c.task_id).outerjoin(
            _HEARTBEAT, _HEARTBEAT.c.task_id == t.leases.c.task_id
        )
    )
    .where(t.tasks.c.task_id == sa.bindparam("task_id"))
)


# On a server, the same row with the task's lease (as reads.leases.current reads it) and the
# server's clock once the lock is ours: one round trip for all a write needs to decide.
# The statement reads.leases.current runs, as a subquery (the same columns, LeaseRow), with
# the versions of its two rows (below).
_LEASE = (
    leases.current_statement()
    .add_columns(
        sa.literal_column("leases.xmin").label("lease_version"),
        sa.literal_column("lease_heartbeats.xmin").label("heartbeat_version"),
    )
    .subquery()
)
_LEASE_ROW = tuple(_LEASE.c)[:-2]  # LeaseRow's columns: the versions are the last two
_LEASE_COLUMNS = len(_LEASE_ROW)
# Both engines' reads give LeaseRow's columns, in its order.
assert [c.name for c in _LEASE_HERE] == list(leases.LeaseRow._fields)
# The keyring's head, read once per statement (a lateral join, not a subplan per column).
_RING = (
    sa.select(t.keyring.c.seq, t.keyring.c.hash)
    .order_by(t.keyring.c.seq.desc())
    .limit(1)
    .lateral("ring")
)


def _as_known(field: str) -> Any:
    """The task's column for `field`; a JSON column as its text (as SQLite gives it): the
    driver parses nothing, and a guessed row is shared without a copy (`Guesses.get`), its
    JSON decoded only where a command asks for it (TaskRow.scope)."""
    column = t.tasks.c[field.removesuffix("_stored")]
    return sa.cast(column, sa.Text) if field.endswith("_stored") else column


_KNOWN = (
    *(_as_known(f) for f in TaskRow._fields),
    *_LEASE_ROW,
    _RING.c.seq,
    _RING.c.hash,
)
# All of the above as one value, computed by the server both where a process learns the row
# (here) and where its next write checks it (_GUARD): equal fingerprints, equal rows. It is
# the rows' versions as the server keeps them, not their contents: every change to a row
# (an UPDATE, even one that writes the same values) makes a new version with the changing
# transaction's id as its xmin, and the task's row, its lease's and its heartbeat's are the
# only rows read, with the keyring's head named by its seq and hash. Hashing the joined row's
# 30 columns as text, twice a write, was a fifth of a write's server CPU (issue 44). The
# task's last_seq rides along: a transaction id repeats only after 2^32 of them.
_FINGERPRINT = sa.func.concat_ws(
    sa.literal_column("':'"),
    *(
        sa.func.coalesce(sa.cast(part, sa.Text), sa.literal_column("''"))
        for part in (
            sa.literal_column("tasks.xmin"),
            t.tasks.c.last_seq,
            _LEASE.c.lease_version,
            _LEASE.c.heartbeat_version,
            _RING.c.seq,
            _RING.c.hash,
        )
    ),
)
_TASK_AND_LEASE = t.tasks.outerjoin(_LEASE, _LEASE.c.task_id == t.tasks.c.task_id).outerjoin(
    _RING, sa.true()
)
_TASK_AND_LEASE_ROW = (
    sa.select(
        *_KNOWN,
        _FINGERPRINT,
        sa.literal_column(db.now_expression("postgresql").removeprefix("SELECT ")),
    )
    .select_from(_TASK_AND_LEASE)
    .where(t.tasks.c.task_id == sa.bindparam("task_id"))
)
_SELECT_TASK_ON_SERVER = db.Prepared(_TASK_AND_LEASE_ROW.with_for_update(of=t.tasks))
# The same row read back with the COMMIT (`Tx.read_back`): the transaction holds the task's
# row lock already (or made the row), so no lock is asked again: a LockRows node less for the
# server to set up on every write (issue 44).
_READ_BACK = db.Prepared(_TASK_AND_LEASE_ROW)
# The task's row alone, with its version, read back where the write changed neither its lease
# nor its heartbeat: the rest of the fingerprint is what the write was built on, and checked
# (`Guesses.relearn`). An index lookup instead of the three joins and the keyring's head.
_READ_BACK_TASK = db.Prepared(
    sa.select(
        *(_as_known(f) for f in TaskRow._fields),
        sa.cast(sa.literal_column("tasks.xmin"), sa.Text),
    ).where(t.tasks.c.task_id == sa.bindparam("task_id"))
)
# A write built on what the process knew of the task (`Guesses`): the row lock, and the
# fingerprint and the events' time checked under it by migration 0018's function, which
# aborts the transaction when either is off. It is queued, never waited for on its own: it
# goes first in the exchange that carries the write (db.Prepared.send).
_GUARD = db.Prepared(
    sa.select(
        sa.func.boris_write_guard(
            sa.select(_FINGERPRINT)
            .select_from(_TASK_AND_LEASE)
            .where(t.tasks.c.task_id == sa.bindparam("task_id"))
            .with_for_update(of=t.tasks)
            .scalar_subquery(),
            sa.bindparam("fingerprint", type_=sa.Text),
            sa.bindparam("at", type_=sa.Text),
            sa.bindparam("slack_ms", type_=sa.Integer),
        )
    )
)
#: How far before the database's clock a guessed write's time may be (the process's estimate
#: of that clock lags it by at least the time the write takes to reach the server).
GUESS_SLACK_MS = 1_000
_N = len(TaskRow._fields)


@dataclass(frozen=True)
class Guess:
    """A task's row as this process's last write to it left it, with its lease, the keyring's
    head and the server's fingerprint of all three."""

    row: TaskRow
    lease: Any
    ring: tuple[int, str] | None
    fingerprint: str


class Guesses:
    """What this process knows of the tasks it wrote on a server, for its next write.

    A write to a task this process wrote last is sent in one exchange, built on the row its
    last write left (`_GUARD` checks it under the lock), instead of reading the row first and
    then sending the write: one wait for the server instead of two (issue 36). A guess that
    turns out wrong costs the write one attempt more (store.Store retries it the ordinary
    way), and the task is not guessed again for `_COLD_S`: writers taking turns on one task
    would miss every time. The events' time is the database's clock as this process
    estimates it: the server's clock when it last answered, minus nothing for the way back
    (a lower bound), plus the time since; never before the task's last event.
    """

    _KEEP = 1024
    _COLD_S = 1.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, Guess] = {}
        self._cold: dict[str, float] = {}
        self._offset_us: int | None = None  # the server's clock minus ours, at most

    def get(self, task_id: str) -> Guess | None:
        with self._lock:
            if self._offset_us is None:
                return None
            cold = self._cold.get(task_id)
            if cold is not None:
                if time.monotonic() < cold:
                    return None
                del self._cold[task_id]
            guess = self._known.get(task_id)
        # Its JSON columns are text (`_as_known`): nothing a command could change is shared.
        return guess

    def learn(self, task_id: str, rows: list[Any]) -> None:
        """`_SELECT_TASK_ON_SERVER`'s answer for the task, read under its lock."""
        if not rows:
            self.forget([task_id])
            return
        got = rows[0]
        lease = got[_N : _N + _LEASE_COLUMNS]
        ring_seq, ring_hash = got[_N + _LEASE_COLUMNS : _N + _LEASE_COLUMNS + 2]
        guess = Guess(
            TaskRow(*got[:_N]),
            None if lease[0] is None else leases.LeaseRow(*lease),
            None if ring_seq is None else (ring_seq, ring_hash),
            str(got[-2]),
        )
        with self._lock:
            if len(self._known) >= self._KEEP:
                self._known.clear()
            self._known[task_id] = guess

    def known(self, task_id: str) -> Guess | None:
        """What this process knows of the task (cold or not)."""
        with self._lock:
            return self._known.get(task_id)

    def relearn(self, task_id: str, prior: Guess, rows: list[Any]) -> None:
        """`_READ_BACK_TASK`'s answer for a task whose lease, heartbeat and keyring head the
        write left as `prior` knew them: the new row and its version, the rest as before.
        The fingerprint's parts are the server's (`_FINGERPRINT`): the row's version and
        last_seq, then the lease's, the heartbeat's and the keyring head's, which `prior`
        read together with the lease and head it holds. Were any of them changed since, the
        server's fingerprint differs and the next write is a miss, never a wrong guess."""
        if not rows:
            self.forget([task_id])
            return
        got = rows[0]
        row = TaskRow(*got[:_N])
        rest = prior.fingerprint.split(":", 2)[2]
        guess = Guess(row, prior.lease, prior.ring, f"{got[_N]}:{row.last_seq}:{rest}")
        with self._lock:
            self._known[task_id] = guess

    def forget(self, task_ids: Iterable[str], *, missed: bool = False) -> None:
        with self._lock:
            for task_id in task_ids:
                self._known.pop(task_id, None)
                if missed:
                    self._cold[task_id] = time.monotonic() + self._COLD_S

    def observe_clock(self, server_now: str, received_us: int) -> None:
        """The server's clock as it answered, and when the answer arrived here."""
        with self._lock:
            self._offset_us = clock.micros_of(server_now) - received_us

    def now(self, not_before: str) -> str:
        with self._lock:
            offset = self._offset_us or 0
        return max(clock.format_micros(time.time_ns() // 1000 + offset), not_before)


class Tx:
    """One write transaction: its connection and blob store, the events it emitted, what it
    read of each task's row (and lease, on a server) and the checkpoint states it learned.
    A plain class with slots: one is made per write, where a dataclass's generated
    __init__ and default factories cost more than the rest of its setup (issue 44)."""

    __slots__ = (
        "_heads",
        "_leases",
        "_now",
        "_rows",
        "_server",
        "_waited",
        "blobs",
        "checkpoint_rows",
        "conn",
        "emitted",
        "guessed",
        "guesses",
        "learned",
        "memo",
    )

    def __init__(
        self, conn: Connection, blobs: BlobStore, *, memo: StateMemo | None = None
    ) -> None:
        self.conn = conn
        self.blobs = blobs
        self.emitted: list[Event] = []
        self._heads: dict[str, tuple[int, str]] = {}
        # Task rows read in this transaction, until an event for the task changes them: a
        # command asks for its task several times (writable? scope? its checkpoint's state?).
        self._rows: dict[str, TaskRow] = {}
        # Checkpoint states known at a head (store.checkpoint_state): the store's memo, and
        # what this transaction adds to it once it commits.
        self.memo = memo
        self.learned: dict[str, KnownState] = {}
        #: Per task, its last checkpoint.written event here and the checkpoints row it made.
        self.checkpoint_rows: dict[str, tuple[Event, dict[str, Any]]] = {}
        #: Per task, its lease as read with its row on a server (None: never leased).
        self._leases: dict[str, Any] = {}
        #: On a server, what this process knows of the tasks it wrote (None: read every row).
        self.guesses: Guesses | None = None
        #: The tasks whose row this transaction took from `guesses` (checked at the server).
        self.guessed: list[str] = []
        # Only a server makes us wait for a task's row lock; SQLite waited at BEGIN, and its
        # clock is this process's (db.database_now): read once, now.
        self._server = conn.dialect.name == "postgresql"
        self._waited = not self._server
        self._now = _UNSET if self._server else db.database_now(conn)

    @property
    def now(self) -> str:
        """The transaction's time on the database's clock. On a server it is read with the
        first task row (after its lock), or on first use when no task row was read yet."""
        if self._now == _UNSET:
            self._now = db.database_now(self.conn)
        return self._now

    @now.setter
    def now(self, value: str) -> None:
        self._now = value

    def _task_row(self, task_id: str) -> TaskRow | None:
        row = self._rows.get(task_id)
        if row is not None:
            return row
        if self._server:
            return self._task_row_on_server(task_id)
        rows = _SELECT_TASK.run(self.conn, {"task_id": task_id})
        if not rows:
            return None
        return self._keep_with_lease(task_id, rows[0])

    def _task_row_on_server(self, task_id: str) -> TaskRow | None:
        if not self._waited and self.guesses is not None:
            guess = self.guesses.get(task_id)
            if guess is not None:
                return self._guessed_row(task_id, guess)
        rows = _SELECT_TASK_ON_SERVER.run(self.conn, {"task_id": task_id})
        if self.guesses is not None:
            if rows:
                self.guesses.observe_clock(str(rows[0][-1]), time.time_ns() // 1000)
            self.guesses.learn(task_id, rows)
        if not self._waited:
            # We may have queued behind other writers for the lock: our events are later than
            # theirs, and their times should say so. The clock was read after the lock.
            self._waited = True
            self._now = str(rows[0][-1]) if rows else db.database_now(self.conn)
        if not rows:
            return None
        return self._keep_with_lease(task_id, rows[0])

    def _keep_with_lease(self, task_id: str, got: Sequence[Any]) -> TaskRow:
        """The task's row read with its lease and the keyring's head (either engine's read)."""
        n, ring = _N, _N + _LEASE_COLUMNS
        self._leases[task_id] = None if got[n] is None else leases.LeaseRow._make(got[n:ring])
        # The keyring's head as of this read, for the signature policy's check at the end of
        # the write (store.signing.seal), unless a statement in between may change it.
        ring_seq = got[ring]
        db.seed(self.conn, KEYRING_HEAD, [] if ring_seq is None else [(ring_seq, got[ring + 1])])
        return self._keep(TaskRow._make(got[:n]))

    def _guessed_row(self, task_id: str, guess: Guess) -> TaskRow:
        """The row as this process's last write left it, checked by the server, under the
        lock, when the write arrives (`_GUARD`, sent first); our events' time is our estimate
        of the server's clock, which the guard checks too."""
        assert self.guesses is not None
        self._waited = True
        self._now = self.guesses.now(not_before=guess.row.updated_at)
        _GUARD.send(
            self.conn,
            {
                "task_id": task_id,
                "fingerprint": guess.fingerprint,
                "at": self._now,
                "slack_ms": GUESS_SLACK_MS,
            },
        )
        self.guessed.append(task_id)
        self._leases[task_id] = guess.lease
        db.seed(self.conn, KEYRING_HEAD, [] if guess.ring is None else [guess.ring])
        return self._keep(guess.row)

    def read_back(self) -> None:
        """On a server, ask with the COMMIT for the row of each task this transaction read or
        wrote, as it leaves it (a lease's heartbeat changes it without an event), for this
        process's next write to it (`Guesses`): no wait of its own. Where this transaction
        appended to the task and touched neither its lease nor its heartbeat, only the task's
        row is read (`_READ_BACK_TASK`, `Guesses.relearn`)."""
        if self.guesses is None:
            return
        kept = self._lease_kept()
        for task_id in self.touched():
            prior = self.guesses.known(task_id) if task_id in kept else None
            if prior is not None:
                db.read_with_commit(
                    self.conn,
                    _READ_BACK_TASK,
                    {"task_id": task_id},
                    functools.partial(self.guesses.relearn, task_id, prior),
                )
                continue
            db.read_with_commit(
                self.conn,
                _READ_BACK,
                {"task_id": task_id},
                functools.partial(self.guesses.learn, task_id),
            )

    def _lease_kept(self) -> set[str]:
        """The tasks this transaction appended to with events whose projections are known to
        leave the task's lease and heartbeat as they were (projections.state_parts.WRITES)."""
        kept: set[str] = set()
        changed: set[str] = set()
        for e in self.emitted:
            (kept if _keeps_lease(e.type) else changed).add(e.task_id)
        return kept - changed

    def touched(self) -> list[str]:
        """The tasks whose rows this transaction read or wrote."""
        return list(dict.fromkeys([*self._heads, *self._rows, *self.guessed]))

    def forget_lease(self, task_id: str) -> None:
        """A statement of this transaction changed the task's lease without an event (a
        heartbeat): the lease read with its row is no longer the lease."""
        self._leases.pop(task_id, None)

    def lease(self, task_id: str) -> Any:
        """The task's lease row as `reads.leases.current` gives it (None: never leased),
        read with the task's row where the server allows (after its lock)."""
        self.task(task_id)
        if task_id in self._leases:
            return self._leases[task_id]
        return leases.current(self.conn, task_id)

    def _keep(self, row: TaskRow) -> TaskRow:
        task_id = row.task_id
        self._rows[task_id] = row
        # The row read inside this write transaction is the chain's head until we emit.
        self._heads.setdefault(task_id, (int(row.last_seq), str(row.head_hash)))
        return row

    def task(self, task_id: str) -> TaskRow:
        row = self._task_row(task_id)
        if row is None:
            from .reads.deleted import absent  # a person deleted it: say when and by whom

            raise absent(self.conn, task_id)
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
        payload_text = payload_json or _payload_json(payload)
        now, type_name, fmt = self.now, payload.TYPE, payload.FORMAT
        digest = chain_hash_of_parts(
            prev,
            actor_json=actor_json(actor),
            at=now,
            fmt=fmt,
            payload_json=payload_text,
            seq=seq,
            task_id=task_id,
            type_name=type_name,
        )
        # Its answer is not read: on a server it goes with the next read or the COMMIT.
        _INSERT_EVENT.send(
            self.conn,
            {
                "task_id": task_id,
                "seq": seq,
                "type": type_name,
                "format": fmt,
                "payload": payload_text,
                "actor_kind": actor.kind,
                "actor_id": actor.id,
                "actor_name": actor.name,
                "at": now,
                "prev_hash": prev,
                "hash": digest,
            },
        )
        event = Event(task_id, seq, type_name, payload, actor, now, prev, digest)
        row = self._rows.pop(task_id, None)
        self._leases.pop(task_id, None)  # the event may change the lease (an acquire)
        # The row read in this transaction is the task's as the event finds it.
        made = projections.apply(
            self.conn, event, None if row is None else row.checkpoint_heads_stored
        )
        if made is not None:
            self.checkpoint_rows[task_id] = (event, made)
        self._heads[task_id] = (seq, digest)
        self.emitted.append(event)
        return event


@functools.cache
def _keeps_lease(type_name: str) -> bool:
    """Whether an event of this type is known to write neither a lease nor a heartbeat."""
    if type_name == "task.created":
        return False
    tables = WRITES.get(type_name)
    if tables is None:
        return type_name not in _PROJECTED  # no projection at all; an undeclared one may
    return "leases" not in tables and "lease_heartbeats" not in tables


def _payload_json(payload: Payload) -> str:
    """The payload's canonical JSON, as stored and hashed: `canonical_json` of its
    `model_dump`, or, for a payload of text only whose type dumps its fields as they are
    (`_dumps_fields`), written from its fields in one orjson call (a note's, a message's:
    model_dump and the look for numbers were a tenth of an append's Python, issue 44)."""
    values = payload.__dict__
    if _dumps_fields(type(payload)) and all(type(v) is str for v in values.values()):
        return canonical_text_object(values)
    return canonical_json(payload.model_dump(mode="json"))


@functools.cache
def _dumps_fields(kind: type[Payload]) -> bool:
    """Whether `model_dump` of this payload type is its fields by name, as they are: no
    serializer (an `Additive` leaves unused fields out), computed field, alias or exclusion."""
    found = kind.__pydantic_decorators__
    if issubclass(kind, Additive) or found.model_serializers or found.field_serializers:
        return False
    if found.computed_fields or kind.model_config.get("extra") != "forbid":
        return False
    return all(
        f.alias is None and f.serialization_alias is None and not f.exclude
        for f in kind.model_fields.values()
    )


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
    #: Parts of `state` events since it was read may have changed (store.projections.
    #: state_parts): to be read again before it is the state at `head`.
    stale: frozenset[str] = frozenset()

    def holds(self, head: tuple[int, str], now: str) -> bool:
        return (
            head == self.head
            and not self.stale
            and (self.valid_until is None or now < self.valid_until)
        )

    def after(self, events: Iterable[Event]) -> KnownState | None:
        """This state carried over the task's `events` (in order; those up to its head are
        passed over), the parts they may change marked stale; None when they do not continue
        the chain from its head (another writer's events came between)."""
        seq, digest = self.head
        stale, state = self.stale, self.state
        for e in events:
            if e.seq < seq:
                continue
            if e.seq == seq:
                if e.hash != digest:
                    return None
                continue
            if e.seq != seq + 1 or e.prev_hash != digest:
                return None
            seq, digest = e.seq, e.hash
            # A part the event's own values say is carried (a charge, a new version); the
            # others it may change are read again (store.projections.state_parts).
            now, marks = carried(e, state, stale) if stale_parts(e.type) else (None, frozenset())
            if now is not None:
                state = now
            stale = stale | marks
        if (seq, digest) == self.head:
            return self
        return KnownState(
            (seq, digest), state, self.state_json, self.digest, self.valid_until, stale
        )


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

    def publish(self, learned: dict[str, KnownState], emitted: Iterable[Event] = ()) -> None:
        """What a committed transaction learned (never a rolled-back one's), and each known
        state carried over the events it committed (`KnownState.after`): kept current as the
        events are written, so a checkpoint after a note reads nothing again (issue 44)."""
        if not learned and not self._known:
            # Nothing to carry or keep (appends to tasks with no checkpoint state known). Read
            # without the lock: only `publish` changes what is known, and a store's writes,
            # with their publishing, are one at a time (store.writing's lock).
            return
        by_task: dict[str, list[Event]] = {}
        for e in emitted:
            by_task.setdefault(e.task_id, []).append(e)
        with self._lock:
            if len(self._known) + len(learned) > self._KEEP:
                self._known.clear()
            for task_id, events in by_task.items():
                base = learned.get(task_id) or self._known.get(task_id)
                carried = None if base is None else base.after(events)
                if carried is not None:
                    self._known[task_id] = carried
                else:
                    self._known.pop(task_id, None)
            for task_id, known in learned.items():
                if task_id not in by_task:
                    self._known[task_id] = known
