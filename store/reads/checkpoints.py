"""Checkpoints as readers see them: the lineage row joined with the state in its event.

The state is stored once, in the `checkpoint.written` event; the checkpoints row holds the
lineage and where that event is, and `tasks.checkpoint_heads` says which checkpoints are
heads. Readers get one `Checkpoint` per checkpoint with the row's columns, its `state` and
whether it is `superseded`: the shape `boris checkpoints --json`, archives and the desktop have
always used.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import db
from .. import schema as t
from ..canonical import parse_json
from .actors import ActorRef
from .read_model import ReadModel

_ck, _ev = t.checkpoints, t.events
#: The row's own columns as readers see them (where its event is, is ours to know).
ROW_COLUMNS = tuple(c.name for c in _ck.c if c.name != "event_seq")
_JSON_COLUMNS = frozenset(c.name for c in _ck.c if isinstance(c.type, sa.JSON))

_HEADS = db.Prepared(
    sa.select(t.tasks.c.checkpoint_heads).where(t.tasks.c.task_id == sa.bindparam("task_id"))
)
_WITH_STATE = sa.select(*(_ck.c[n] for n in ROW_COLUMNS), _ev.c.payload).select_from(
    _ck.join(_ev, sa.and_(_ev.c.task_id == _ck.c.task_id, _ev.c.seq == _ck.c.event_seq))
)
_ONE = db.Prepared(
    _WITH_STATE.where(
        _ck.c.task_id == sa.bindparam("task_id"),
        _ck.c.checkpoint_id == sa.bindparam("checkpoint_id"),
    )
)


class Checkpoint(ReadModel):
    """A checkpoint: its lineage row and the state its `checkpoint.written` event holds.

    `state` stays the document the writer recorded (store.commands.checkpoint_state): its
    shape is the one of the store version that wrote it, so it is read as JSON, not a
    model."""

    task_id: str
    checkpoint_id: str
    #: The stable name every read uses; `checkpoint_id` stays for existing readers.
    id: str
    reason: str
    supersedes: list[str]
    merged: list[str]
    seq: int
    chain_hash: str
    state_digest: str
    author: ActorRef
    note: str
    at: str
    state: dict[str, Any]
    superseded: bool


class Checkpoints(ReadModel):
    """A task's checkpoints in the order they were written, its heads (oldest first) and its
    forks (the heads, when more than one is open)."""

    checkpoints: list[Checkpoint]
    heads: list[str]
    forks: list[list[str]]


def decode_json(value: Any) -> Any:
    """A JSON column as read on the driver: text on SQLite, decoded already on PostgreSQL."""
    return parse_json(value) if isinstance(value, str) else value


def as_reader_row(
    values: tuple[Any, ...], superseded: bool, *, state_only: bool = False
) -> Checkpoint:
    """A row of `_WITH_STATE` (columns, then the event's payload) as a reader's checkpoint;
    `state_only`: the last value is the state's JSON alone (store.reads extracts it)."""
    *columns, last = values
    row = dict(zip(ROW_COLUMNS, columns, strict=True))
    for name in _JSON_COLUMNS:
        row[name] = decode_json(row[name])
    row["id"] = row["checkpoint_id"]
    row["state"] = decode_json(last) if state_only else decode_json(last)["state"]
    row["superseded"] = superseded
    return Checkpoint.model_validate(row)


def heads(conn: Connection, task_id: str) -> list[str]:
    """The task's heads, oldest first (empty for an unknown task or before any checkpoint)."""
    rows = _HEADS.run(conn, {"task_id": task_id})
    return list(decode_json(rows[0][0])) if rows else []


def checkpoint_rows(conn: Connection, task_id: str) -> list[Checkpoint]:
    """Every checkpoint of the task with its state, in the order they were written."""
    current = set(heads(conn, task_id))
    q = _WITH_STATE.where(_ck.c.task_id == task_id).order_by(
        _ck.c.seq, _ck.c.at, _ck.c.checkpoint_id
    )
    return [as_reader_row(tuple(r), r.checkpoint_id not in current) for r in conn.execute(q)]


def head_checkpoint(conn: Connection, task_id: str) -> Checkpoint | None:
    """The newest head with its state; with a fork, the newest of the heads."""
    current = heads(conn, task_id)
    if not current:
        return None
    rows = _ONE.run(conn, {"task_id": task_id, "checkpoint_id": current[-1]})
    return as_reader_row(rows[0], False) if rows else None


def checkpoints(conn: Connection, task_id: str) -> Checkpoints:
    """The task's checkpoints, heads and forks (`boris checkpoints`, the task's state)."""
    rows = checkpoint_rows(conn, task_id)
    heads = [r.checkpoint_id for r in rows if not r.superseded]
    return Checkpoints(checkpoints=rows, heads=heads, forks=[heads] if len(heads) > 1 else [])
