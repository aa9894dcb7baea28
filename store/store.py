"""The store: open a durable record, write to it through commands, read its projections."""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from . import commands as cmds
from . import db, migrate, open_lock, projections, queries
from . import schema as t
from .blobs import BlobStore
from .checkpoint_state import StateMemo
from .errors import CommandRejected, StoreBusy, StoreCorrupt, StoreError, WriteConflict
from .events import decode
from .location import Location, resolve
from .model import Actor
from .record import Event
from .tx import Tx

# Writers colliding on a server (store.db.write_conflict) retry after a jittered, growing
# pause, so that they do not collide again in step, for up to _RETRY_FOR_S: a busy server can
# break several deadlocks in a row (each found only after its deadlock_timeout).
_RETRY_FOR_S = 15.0
_BACKOFF_S = 0.004
_BACKOFF_CAP_S = 0.5


def _environment_error(exc: sa.exc.DBAPIError) -> StoreError | None:
    text = str(exc.orig).lower()
    if "locked" in text or "busy" in text:
        return StoreBusy("the store is busy: another process held its write lock too long")
    if "disk" in text and "full" in text:
        return StoreError("the disk holding the store is full; nothing was written")
    if "malformed" in text or "not a database" in text:
        return StoreCorrupt(f"the store's database is damaged: {exc.orig}")
    if "readonly" in text or "read-only" in text:
        return StoreError("the store is read-only here; nothing was written")
    return None


class Store:
    def __init__(self, location: Location, engine: Engine) -> None:
        self.location = location
        self.engine = engine
        self._writer = db.writer(engine)
        # One writer connection for the store's life where the database allows it (see
        # db.keeps_writer_open); the lock also serializes this process's writers.
        self._write_lock = threading.Lock()
        self._write_conn: Connection | None = None
        self._states = StateMemo()
        self.blobs = BlobStore(location.blobs)
        self.migrated_from_backup: str | None = None

    # --- opening -------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        store: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        create: bool = True,
    ) -> Store:
        location = resolve(store, url)
        db_file = location.sqlite_file
        guard: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        if db_file is not None:
            if not db_file.exists():
                if not create:
                    raise StoreError(f"no store at {db_file}")
                location.directory.mkdir(parents=True, exist_ok=True)
            elif db_file.stat().st_size and not _looks_like_sqlite(db_file):
                raise StoreCorrupt(f"{db_file} is not a Boris store (not an SQLite database)")
            else:
                migrate.refuse_if_newer_sqlite(db_file)
            guard = open_lock.opening(db_file)
        with guard:
            engine = db.create_engine(location.url)
            try:
                backup = migrate.ensure_current(engine, location.backups)
            except BaseException:
                engine.dispose()
                raise
        store_ = cls(location, engine)
        store_.migrated_from_backup = backup
        store_.blobs.ensure()
        return store_

    def close(self) -> None:
        with self._write_lock:
            if self._write_conn is not None:
                self._write_conn.close()
                self._write_conn = None
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing -------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Tx]:
        """One write transaction; on return its events are durably on disk."""
        try:
            with self._write_lock:
                if db.keeps_writer_open(self.engine):
                    conn = self._write_conn
                    if conn is None or conn.invalidated:
                        conn = self._write_conn = self._writer.connect()
                    with db.write_transaction(conn):
                        tx = Tx(conn, self.blobs, memo=self._states)
                        yield tx
                else:
                    with self._writer.connect() as conn, db.write_transaction(conn):
                        tx = Tx(conn, self.blobs, memo=self._states)
                        yield tx
                # Committed: what it learned of checkpoint states is now true for others.
                if tx.learned:
                    self._states.publish(tx.learned)
        except sa.exc.DBAPIError as exc:
            kind = db.write_conflict(exc)
            if kind is not None:
                raise WriteConflict(kind, str(exc.orig)) from exc
            env = _environment_error(exc)
            if env is not None:
                raise env from exc
            raise

    def execute(self, command: cmds.Command, actor: Actor) -> Any:
        return self.execute_all([command], actor)[0]

    def execute_all(self, commands: Sequence[cmds.Command], actor: Actor) -> list[Any]:
        """All commands in one transaction: every one is written, or none is."""
        give_up = time.monotonic() + _RETRY_FOR_S
        attempt = 0
        while True:
            try:
                with self.transaction() as tx:
                    return [cmds.execute(tx, c, actor) for c in commands]
            except WriteConflict:
                if time.monotonic() >= give_up:
                    raise
            except sa.exc.IntegrityError as exc:
                raise CommandRejected(f"the store refused the write: {exc.orig}") from exc
            time.sleep(random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_S * 2**attempt)))
            attempt += 1

    # --- reading -------------------------------------------------------------------------

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A consistent snapshot for several reads."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except sa.exc.DBAPIError as exc:
            env = _environment_error(exc)
            if env is not None:
                raise env from exc
            raise

    def now(self) -> str:
        with self.read() as conn:
            return db.database_now(conn)

    def tasks(self) -> list[dict[str, Any]]:
        with self.read() as conn:
            return queries.list_tasks(conn, db.database_now(conn), self.blobs.has)

    def task(self, task_id: str) -> dict[str, Any]:
        from .state import task_state

        with self.read() as conn:
            return task_state(conn, self.blobs, task_id, db.database_now(conn))

    def events(self, task_id: str, **kw: Any) -> list[dict[str, Any]]:
        with self.read() as conn:
            queries.task_row(conn, task_id)
            return queries.events(conn, task_id, **kw)

    def event_type_counts(self, task_id: str, after_seq: int = 0) -> dict[str, int]:
        with self.read() as conn:
            return queries.event_type_counts(conn, task_id, after_seq)

    def event_facets(self, task_id: str) -> dict[str, Any]:
        with self.read() as conn:
            return queries.event_facets(conn, task_id)

    def data_version(self) -> int:
        """Grows with every committed event, from any process: what live views poll."""
        with self.read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.coalesce(sa.func.max(t.events.c.id), 0))
                ).scalar_one()
            )

    def head_checkpoint(self, task_id: str) -> dict[str, Any] | None:
        """The newest head checkpoint of a task (None before the first); with a fork, the
        newest of the heads: `checkpoints()` tells whether there is a fork."""
        if db.is_sqlite(self.engine):
            # Asked often (resuming, polling views): a kept connection and the events index,
            # see store.reads.
            from .reads import head_reader

            try:
                return head_reader(self).head_checkpoint(task_id)
            except sa.exc.DBAPIError as exc:
                env = _environment_error(exc)
                if env is not None:
                    raise env from exc
                raise
        from .checkpoint_reads import head_checkpoint

        with self.read() as conn:
            return head_checkpoint(conn, task_id)

    def task_ids(self) -> list[str]:
        with self.read() as conn:
            return [
                r[0] for r in conn.execute(sa.select(t.tasks.c.task_id).order_by(t.tasks.c.task_id))
            ]

    # --- replay --------------------------------------------------------------------------

    def load_events(self, conn: Connection, task_id: str) -> Iterable[Event]:
        """The task's events decoded (and upcast) from the log, in order."""
        q = sa.select(t.events).where(t.events.c.task_id == task_id).order_by(t.events.c.seq)
        import json

        for r in conn.execute(q):
            payload = decode(r.type, r.format, json.loads(r.payload))
            actor = Actor(kind=r.actor_kind, id=r.actor_id, name=r.actor_name)
            yield Event(r.task_id, r.seq, r.type, payload, actor, r.at, r.prev_hash, r.hash)

    def rebuild(self, task_id: str) -> None:
        """Throw the task's projections away and fold them again from its events."""
        with self.transaction() as tx:
            evts = list(self.load_events(tx.conn, task_id))
            projections.clear(tx.conn, task_id)
            for e in evts:
                projections.apply(tx.conn, e)

    def projection_dump(self, task_id: str) -> dict[str, list[tuple[Any, ...]]]:
        with self.read() as conn:
            return projections.dump(conn, task_id)


def _looks_like_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False
