"""Fast reads on SQLite: the latest head checkpoint, on a kept autocommit connection.

An agent resuming, a live view polling and the desktop's workers all ask for a task's head
checkpoint; through `Store.read()` each ask pays a pool checkout, BEGIN/COMMIT and Core's
per-call work, and the plain query (non-superseded, newest seq first) reads and sorts every
checkpoint of the task, as the table has no index on seq. Here:

- The head is found through the events index. The newest `checkpoint.written` event of a
  task names its head: a checkpoint's seq is the boundary just before its own event, so
  checkpoints are numbered in the order they were written, and only a later checkpoint
  supersedes one, so the newest written is always a head, the one with the highest seq,
  which is what the plain query returns. `ix_events_task_type` holds a task's checkpoint
  events in rowid order, so the newest is its last entry.
- The row found is checked to be a head all the same; if it is missing or superseded (a
  record changed by hand, say), the plain query answers.
- One connection is kept for the store's life, shared by its threads under a lock, and
  closed when the store disposes of its engine. Every statement on it is autocommit: no
  read transaction stays open between calls to pin a WAL snapshot.
- While nothing has been committed since the last read, the row read then is decoded
  again instead of queried (see `HeadReader`).
"""

from __future__ import annotations

import json
import threading
import weakref
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from . import db
from . import schema as t

if TYPE_CHECKING:
    from .store import Store

_ck = t.checkpoints
_ev = t.events

_NEWEST_WRITTEN = (
    sa.select(sa.func.json_extract(_ev.c.payload, sa.literal_column("'$.checkpoint_id'")))
    .where(
        _ev.c.task_id == sa.bindparam("task_id"),
        _ev.c.type == sa.literal_column("'checkpoint.written'"),
    )
    .order_by(_ev.c.id.desc())
    .limit(sa.literal_column("1"))
    .offset(sa.literal_column("0"))
    .scalar_subquery()
)
_HEAD_BY_EVENT = db.Prepared(
    sa.select(*_ck.c).where(
        _ck.c.task_id == sa.bindparam("task_id"),
        _ck.c.checkpoint_id == _NEWEST_WRITTEN,
        _ck.c.superseded.is_(False),
    )
)
# The plain query, as Store.head_checkpoint asks it of other databases.
_HEAD_BY_SCAN = db.Prepared(
    sa.select(*_ck.c)
    .where(_ck.c.task_id == sa.bindparam("task_id"), _ck.c.superseded.is_(False))
    .order_by(_ck.c.seq.desc(), _ck.c.at.desc())
    .limit(sa.literal_column("1"))
    .offset(sa.literal_column("0"))
)


_NAMES = tuple(col.name for col in _ck.c)
# What Core's result processing does for these types on SQLite: the driver returns a JSON
# column as text, and a boolean as 0 or 1.
_JSON = tuple(col.name for col in _ck.c if isinstance(col.type, sa.JSON))
_BOOL = tuple(col.name for col in _ck.c if isinstance(col.type, sa.Boolean))


def _as_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    out = dict(zip(_NAMES, row, strict=True))
    texts = [out[name] for name in _JSON]
    if None in texts:
        for name, text in zip(_JSON, texts, strict=True):
            if text is not None:
                out[name] = json.loads(text)
    else:
        # Each is a whole JSON text, so together they are one array: one decoder call, as
        # the state is a few hundred bytes and the call's own cost counts at that size.
        out.update(zip(_JSON, json.loads("[" + ",".join(texts) + "]"), strict=True))
    for name in _BOOL:
        if out[name] is not None:
            out[name] = bool(out[name])
    return out


_DATA_VERSION = db.Prepared(sa.text("PRAGMA data_version"))
_UNREAD = object()
_KEEP = 256  # heads kept between commits, at most


class HeadReader:
    """One kept connection for head reads, shared by the store's threads under a lock.

    A head read while nothing was committed is answered from the row read last time:
    `PRAGMA data_version` on this connection (which never writes) changes whenever any
    other connection, in any process, has committed since its previous call.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._version: int | None = None
        self._rows: dict[str, Any] = {}  # task id -> its head's row (None: no head)
        # Store.close() disposes of the engine; the kept connection goes with it.
        event.listen(engine, "engine_disposed", self._on_dispose)

    def head_checkpoint(self, task_id: str) -> dict[str, Any] | None:
        with self._lock:
            conn = self._conn
            if conn is None or conn.closed or conn.invalidated:
                conn = self._conn = self._engine.connect()
            try:
                ((version,),) = _DATA_VERSION.run(conn)
                if version != self._version:
                    self._rows.clear()
                    self._version = version
                row = self._rows.get(task_id, _UNREAD)
                if row is _UNREAD:
                    params = {"task_id": task_id}
                    rows = _HEAD_BY_EVENT.run(conn, params) or _HEAD_BY_SCAN.run(conn, params)
                    row = rows[0] if rows else None
                    if len(self._rows) >= _KEEP:
                        self._rows.clear()
                    self._rows[task_id] = row
            except BaseException:
                self._drop()
                raise
        # Decoded on every call: each caller gets its own dict to keep or change.
        return None if row is None else _as_dict(row)

    def forget(self) -> None:
        """Drop the kept rows: the next read of each head queries (for measuring)."""
        with self._lock:
            self._rows.clear()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        # A new connection counts its data versions afresh.
        self._version = None
        self._rows.clear()
        if conn is not None and not conn.closed:
            # Closed now, not handed back: its pool may be the one just disposed of.
            conn.invalidate()
            conn.close()

    def _on_dispose(self, _engine: Engine) -> None:
        with self._lock:
            self._drop()


_readers: weakref.WeakKeyDictionary[Store, HeadReader] = weakref.WeakKeyDictionary()
_readers_lock = threading.Lock()


def head_reader(store: Store) -> HeadReader:
    """The store's head reader, made on first use (SQLite stores only)."""
    reader = _readers.get(store)
    if reader is None:
        with _readers_lock:
            reader = _readers.get(store)
            if reader is None:
                reader = _readers[store] = HeadReader(store.engine)
    return reader
