"""Fast reads on SQLite: the latest head checkpoint, on a kept autocommit connection.

An agent resuming, a live view polling and the desktop's workers all ask for a task's head
checkpoint; through `Store.read()` each ask pays a pool checkout, BEGIN/COMMIT and Core's
per-call work, and two queries (the heads, then the newest head with its event). Here:

- One statement finds the newest head on the task's row (`tasks.checkpoint_heads`, newest
  last) and joins its checkpoint row and the event that holds its state: three lookups by
  key.
- One connection is kept for the store's life, shared by its threads under a lock, and
  closed when the store disposes of its engine. Every statement on it is autocommit: no
  read transaction stays open between calls to pin a WAL snapshot.
- While nothing has been committed since the last read, the row read then is decoded
  again instead of queried (see `HeadReader`).
- In a process that writes, the read runs on the store's writer connection while it is
  idle: its page cache holds what was just written (`HeadReader.head_on_writer`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from .. import db
from .. import schema as t
from .checkpoints import ROW_COLUMNS, Checkpoint, as_reader_row


class HasEngine(Protocol):
    """What a head reader is made from: a store's engine (the `Store` is one)."""

    @property
    def engine(self) -> Engine: ...


_ck, _ev, _tk = t.checkpoints, t.events, t.tasks

_HEAD = db.Prepared(
    sa.select(
        *(_ck.c[n] for n in ROW_COLUMNS),
        # Only the state of the event's payload, as JSON text (SQLite's json_extract).
        sa.func.json_extract(_ev.c.payload, sa.literal_column("'$.state'")),
    )
    .select_from(
        _tk.join(
            _ck,
            sa.and_(
                _ck.c.task_id == _tk.c.task_id,
                _ck.c.checkpoint_id
                == sa.func.json_extract(_tk.c.checkpoint_heads, sa.literal_column("'$[#-1]'")),
            ),
        ).join(_ev, sa.and_(_ev.c.task_id == _ck.c.task_id, _ev.c.seq == _ck.c.event_seq))
    )
    .where(_tk.c.task_id == sa.bindparam("task_id"))
)


_DATA_VERSION = db.Prepared(sa.text("PRAGMA data_version"))

#: A head a commit made: the checkpoint's row as stored (by column name) and its state's JSON.
Primed = tuple[Mapping[str, Any], str]
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
        # The same, read on the store's writer connection (see head_on_writer).
        self._writer_version: tuple[int, int] | None = None
        self._writer_rows: dict[str, Any] = {}
        # Store.close() disposes of the engine; the kept connection goes with it.
        event.listen(engine, "engine_disposed", self._on_dispose)

    def head_checkpoint(self, task_id: str) -> Checkpoint | None:
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
                    rows = _HEAD.run(conn, {"task_id": task_id})
                    row = rows[0] if rows else None
                    if len(self._rows) >= _KEEP:
                        self._rows.clear()
                    self._rows[task_id] = row
            except BaseException:
                self._drop()
                raise
        # Decoded on every call: a frozen checkpoint each caller may keep.
        return None if row is None else as_reader_row(row, False, state_only=True)

    def head_on_writer(self, writer: Connection, task_id: str) -> Checkpoint | None:
        """The same read on the store's writer connection, which the caller holds idle.

        Right after this process wrote, the writer's page cache holds the pages it just
        wrote, while the kept connection must learn of the commit and read them again
        (a head read after a checkpoint write took 83 µs there, 1.7x LangGraph's
        `get_tuple`). `PRAGMA data_version` on the writer changes only for other
        connections' commits; this process's own are told by `wrote`."""
        with self._lock:
            try:
                ((version,),) = _DATA_VERSION.run(writer)
                if (id(writer), version) != self._writer_version:
                    self._writer_rows.clear()
                    self._writer_version = (id(writer), version)
                row = self._writer_rows.get(task_id, _UNREAD)
                if row is _UNREAD:
                    rows = _HEAD.run(writer, {"task_id": task_id})
                    row = rows[0] if rows else None
                    if len(self._writer_rows) >= _KEEP:
                        self._writer_rows.clear()
                    self._writer_rows[task_id] = row
            except BaseException:
                self._writer_rows.clear()
                self._writer_version = None
                raise
        return None if row is None else as_reader_row(row, False, state_only=True)

    def wrote(self, primed: Mapping[str, Primed]) -> None:
        """This process committed on its writer connection (which `PRAGMA data_version`
        does not count): what was kept is dropped, and the heads the commit made are kept
        instead (`primed`: task id -> the checkpoint's row and its state's JSON), so the read
        right after a checkpoint queries nothing."""
        with self._lock:
            self._writer_rows.clear()
            for task_id, (columns, state_json) in primed.items():
                self._writer_rows[task_id] = (*(columns[n] for n in ROW_COLUMNS), state_json)

    def forget(self) -> None:
        """Drop the kept rows: the next read of each head queries (for measuring)."""
        with self._lock:
            self._rows.clear()
            self._writer_rows.clear()

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


_readers: weakref.WeakKeyDictionary[HasEngine, HeadReader] = weakref.WeakKeyDictionary()
_readers_lock = threading.Lock()


def wrote(store: HasEngine, primed: Mapping[str, Primed]) -> None:
    """Tell the store's head reader, if it has one, that this process just committed."""
    reader = _readers.get(store)
    if reader is not None:
        reader.wrote(primed)


def head_reader(store: HasEngine) -> HeadReader:
    """The store's head reader, made on first use (SQLite stores only)."""
    reader = _readers.get(store)
    if reader is None:
        with _readers_lock:
            reader = _readers.get(store)
            if reader is None:
                reader = _readers[store] = HeadReader(store.engine)
    return reader
