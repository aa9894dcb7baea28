"""The hash chain, checked row by row as the log streams: every event's hash recomputed
from its stored row, every `prev_hash` linked to the event before (the first to the genesis
hash), seqs from 1 with no gap; then the task's head (`tasks.last_seq` / `head_hash` are the
log's last event) and the head verify last found clean (still there, with the same hash)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ... import schema as t
from ...canonical import GENESIS_HASH, canonical_json, chain_hash
from ...model import Actor, actor_json
from ...record import stored_body
from ..verified_heads import VerifiedHead
from .findings import TaskFindings

#: The columns of a stored event, in the order a streamed row holds them.
LOG_COLUMNS = (
    t.events.c.seq,
    t.events.c.type,
    t.events.c.format,
    t.events.c.payload,
    t.events.c.actor_kind,
    t.events.c.actor_id,
    t.events.c.actor_name,
    t.events.c.at,
    t.events.c.prev_hash,
    t.events.c.hash,
)
#: Rows fetched at a time while the log streams (a server-side cursor on PostgreSQL).
BATCH = 2000


def stream_log(conn: Connection, task_id: str) -> Iterator[Sequence[Any]]:
    """The task's stored events (`LOG_COLUMNS`) in seq order, streamed."""
    q = sa.select(*LOG_COLUMNS).where(t.events.c.task_id == task_id).order_by(t.events.c.seq)
    return stream(conn, q)


def stream(conn: Connection, stmt: sa.Select[Any]) -> Iterator[Sequence[Any]]:
    """The rows of `stmt`, fetched a batch at a time, inside the snapshot's transaction. On
    SQLite straight from the driver's cursor on the snapshot's own connection (plain tuples:
    SQLAlchemy's rows cost as much as hashing them); elsewhere through a server-side cursor
    (`yield_per`), so a long log is never held whole in memory on either side."""
    if conn.dialect.name != "sqlite":
        yield from conn.execution_options(yield_per=BATCH).execute(stmt)
        return
    compiled = stmt.compile(dialect=conn.dialect)
    args = [compiled.params[name] for name in compiled.positiontup or ()]
    raw: Any = conn.connection.driver_connection
    cursor = raw.cursor()
    try:
        try:
            cursor.execute(compiled.string, args)
            batch = cursor.fetchmany(BATCH)
            while batch:
                yield from batch
                batch = cursor.fetchmany(BATCH)
        except sqlite3.Error as exc:  # the same wrapped errors as Core raises
            raise sa.exc.DBAPIError.instance(
                compiled.string, args, exc, sqlite3.Error, dialect=conn.dialect
            ) from exc
    finally:
        cursor.close()


class ChainCheck:
    """The chain of one task's log, one row at a time (`link`), then its head (`task_head`,
    `remembered`). Keeps only the row before, so memory does not grow with the log."""

    def __init__(self, found: TaskFindings, remembered: VerifiedHead | None) -> None:
        self.found = found
        self.mem = remembered
        self.fast_hash = RowHasher(found.task_id)
        self.expected_prev = GENESIS_HASH
        self.expected_seq = 1
        self.prev_seq = 0
        #: How many events the log holds.
        self.count = 0
        #: The hash the log has now at the seq verify last found clean, if it has that seq.
        self.hash_at_remembered: str | None = None

    @property
    def head(self) -> tuple[int, str] | None:
        """The log's last event (seq, hash) as streamed so far; None for an empty log."""
        return (self.prev_seq, self.expected_prev) if self.count else None

    def link(self, row: Sequence[Any]) -> None:
        """One row's place in the chain: the seq after the one before, the first a task's
        creation, its prev_hash the hash before it, and its hash its content's."""
        seq, type_, fmt, payload, akind, aid, aname, at, prev, digest = row
        self.count += 1
        expected_seq, expected_prev, prev_seq = self.expected_seq, self.expected_prev, self.prev_seq
        if seq != expected_seq:
            self._seq_gap(seq, expected_seq, prev_seq)
        if seq == 1 and type_ != "task.created":
            self.found.problem("event_hash", f"seq 1 is {type_}, not task.created", seq)
        if prev != expected_prev:
            before = f"seq {prev_seq}'s hash {expected_prev}" if prev_seq else "the genesis hash"
            self.found.problem("chain_link", f"seq {seq}: prev_hash {prev} is not {before}", seq)
        # The hash of the stored bytes as they are: what the writer hashed. Only when that
        # differs is the payload parsed and hashed in canonical form (the slow way), so a
        # payload stored in another but equal form is not taken for a changed one.
        if self.fast_hash(prev, akind, aid, aname, at, fmt, payload, seq, type_) != digest:
            tid = self.found.task_id
            recomputed = recompute(tid, seq, type_, fmt, payload, akind, aid, aname, at, prev)
            if recomputed != digest:
                self.found.problem(
                    "event_hash",
                    f"seq {seq} ({type_}): stored hash {digest} does not match its content "
                    f"(recomputed {recomputed}): the event was changed after it was written",
                    seq,
                )
        if self.mem is not None and seq == self.mem.seq:
            self.hash_at_remembered = digest
        self.expected_prev, self.expected_seq, self.prev_seq = digest, seq + 1, seq

    def _seq_gap(self, seq: int, expected_seq: int, prev_seq: int) -> None:
        if seq < 1:
            self.found.problem("seq_gap", f"seq {seq}: seqs start at 1", seq)
            return
        missing = (
            f"seq {expected_seq}" if seq == expected_seq + 1 else f"seqs {expected_seq}..{seq - 1}"
        )
        after = f"seq {prev_seq}" if prev_seq else "the start"
        self.found.problem(
            "seq_gap", f"{missing} missing: the log jumps from {after} to seq {seq}", seq
        )

    def task_head(self, task: Any) -> None:
        """The tasks row (or None) against the log's last event."""
        head = self.head
        if task is None and head is not None:
            self.found.problem(
                "task_head",
                f"the log has {self.count} events up to seq {head[0]} but no tasks row",
            )
        elif task is not None and head is None:
            self.found.problem("task_head", "the tasks row exists but the log has no events")
        elif task is not None and head is not None:
            seq, h = head
            if (task.last_seq, task.head_hash) != (seq, h):
                self.found.problem(
                    "task_head",
                    f"tasks row says the head is seq {task.last_seq} ({task.head_hash}); "
                    f"the log ends at seq {seq} ({h})",
                )

    def remembered(self) -> None:
        """The head verify last found clean is still in the log, with the same hash."""
        mem = self.mem
        if mem is None:
            return
        seq, h = mem.seq, mem.hash
        head = self.head
        said = f"verify found this task clean at seq {seq} ({h}) on {mem.verified_at}"
        if self.hash_at_remembered is None:
            if head is None:
                now = f"the log has no events for it now: {_seqs(1, seq)} went missing"
            elif head[0] < seq:
                now = (
                    f"the log now ends at seq {head[0]}: {_seqs(head[0] + 1, seq)} "
                    "went missing; the store was truncated or rolled back (or an older copy "
                    "of it restored)"
                )
            else:
                now = f"the event at seq {seq} is gone"
            self.found.problem("head_rolled_back", f"{said}; {now}", seq)
        elif self.hash_at_remembered != h:
            self.found.problem(
                "head_rewritten",
                f"{said}; the event at seq {seq} now has hash {self.hash_at_remembered}: the "
                "log was rolled back and rewritten",
                seq,
            )


class RowHasher:
    """`canonical.chain_hash_of_parts` of a stored row, built from its stored texts with the
    parts that repeat along a task's log (task id, type names, actors, the time shared by
    one transaction's events) encoded once. Verify only trusts a match: a mismatch is
    checked again the slow way (`recompute`)."""

    def __init__(self, task_id: str) -> None:
        self.tail = f',"task_id":{canonical_json(task_id)},"type":'
        self.types: dict[str, str] = {}
        self.actors: dict[tuple[str, str, str], str] = {}
        self.last_at = ("", "")

    def __call__(
        self,
        prev: str,
        kind: str,
        actor_id: str,
        name: str,
        at: str,
        fmt: int,
        payload: str,
        seq: int,
        type_: str,
    ) -> str:
        key = (kind, actor_id, name)
        actor = self.actors.get(key)
        if actor is None:
            text = actor_json(Actor.model_construct(kind=kind, id=actor_id, name=name))
            actor = self.actors[key] = f'{{"actor":{text},"at":'
        type_text = self.types.get(type_)
        if type_text is None:
            type_text = self.types[type_] = canonical_json(type_) + "}"
        if self.last_at[0] != at:
            self.last_at = (at, canonical_json(at))
        body = (
            f"{prev}\n{actor}{self.last_at[1]},"
            f'"format":{fmt},"payload":{payload},"seq":{seq}{self.tail}{type_text}'
        )
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


def recompute(
    task_id: str,
    seq: int,
    type_: str,
    fmt: int,
    payload_text: str,
    kind: str,
    actor_id: str,
    name: str,
    at: str,
    prev: str,
) -> str:
    try:
        payload = json.loads(payload_text)
    except ValueError:
        return "(the stored payload is not JSON)"
    # model_construct: the hash covers what is stored, valid or not.
    actor = Actor.model_construct(kind=kind, id=actor_id, name=name)
    body = stored_body(task_id, int(seq), type_, int(fmt), payload, actor, at)
    try:
        return chain_hash(str(prev), body)
    except UnicodeEncodeError:
        return "(the stored prev_hash is not ASCII)"


def _seqs(first: int, last: int) -> str:
    return f"seq {last}" if first == last else f"seqs {first}..{last}"
