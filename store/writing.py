"""Writing to a store: this process's write transactions, one at a time.

On SQLite one writer connection is kept for the store's life (db.keeps_writer_open) and the
write lock serializes this process's writers on it; on a server each transaction checks a
connection out of the pool. Either way a failed write takes back the blobs it created, and
a database's refusal is raised in the store's words (store.errors). `Store` owns one
`Writer` and says how its writes are sealed (store.signing)."""

from __future__ import annotations

import contextlib
import threading
import time
import types
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, NoReturn

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import db, notify
from .blobs import BlobStore
from .errors import RoleRefused, StoreError, StoreReadOnly, WriteConflict
from .reads import heads
from .tx import Guesses, StateMemo, Tx

if TYPE_CHECKING:
    from .reads.checkpoints import Checkpoint


class GuessMissed(Exception):
    """A team store's write built on what this process knew of a task was not written: the
    task changed meanwhile, or the write failed for a reason that knowledge may explain.
    The command runs again at once, reading the task first (Store._execute_all)."""


class Writer:
    """The write side of one store: its write lock, its kept writer connection (SQLite),
    what its writes learned of checkpoint states (`states`) and of tasks (`guesses`)."""

    def __init__(
        self,
        owner: heads.HasEngine,
        blobs: BlobStore,
        *,
        seal: Callable[[Tx], None],
        read_only: str | None,
        states: StateMemo,
        guesses: Guesses,
    ) -> None:
        #: The store whose head reader hears of each commit (store.reads.heads).
        self._owner = owner
        self.engine = owner.engine
        self.blobs = blobs
        self._seal = seal
        # Why every write is refused (a read-only store), or None.
        self._read_only = read_only
        self.states = states
        self.guesses = guesses
        self._writer = db.writer(self.engine)
        self._sqlite = db.keeps_writer_open(self.engine)
        # One writer connection for the store's life where the database allows it (see
        # db.keeps_writer_open); the lock also serializes this process's writers.
        self.lock = threading.Lock()
        self._conn: Connection | None = None
        self._used = 0.0  # when the kept server connection was last used (monotonic)

    def close(self) -> None:
        with self.lock:
            if self._conn is not None:
                db.release_kept_writer(self._conn)
                self._conn.close()
                self._conn = None

    def transaction(self, *, guess: bool = False) -> contextlib.AbstractContextManager[Tx]:
        """One write transaction (see `Store.transaction`); on return its events are durably
        on disk, sealed by the store's `seal`. On SQLite a `_SqliteWrite` (the append's
        path: no generator context manager per write), on a server `_server_write`."""
        if self._sqlite:
            return _SqliteWrite(self)
        return self._server_write(guess)

    @contextlib.contextmanager
    def _server_write(self, guess: bool) -> Iterator[Tx]:
        if self._read_only is not None:
            raise StoreReadOnly(self._read_only)
        try:
            with self.lock:
                with self._server_transaction(guess) as tx:
                    yield tx
                # Committed: what it learned of checkpoint states is now true for others, and
                # what was known before is carried over its events.
                if tx.learned or tx.emitted:
                    self.states.publish(tx.learned, tx.emitted)
        except sa.exc.DBAPIError as exc:
            refusal = _write_refusal(exc)
            if refusal is None:
                raise
            raise refusal from exc
        except sa.exc.PendingRollbackError as exc:  # pragma: no cover - _drop prevents it
            raise StoreError(f"the store's connection failed: {exc}") from exc

    @contextlib.contextmanager
    def _server_transaction(self, guess: bool) -> Iterator[Tx]:
        """A write on a server, on a pooled connection: its blobs are stored in the
        transaction itself (`ServerBlobStore.within`), which takes them back if it fails.
        With `guess`, a task this process wrote last is written in one exchange
        (tx.Guesses); a wrong guess, or any failure, raises `GuessMissed`."""
        began: Tx | None = None
        conn = self._server_connection()
        try:
            with db.write_transaction(conn), self.blobs.creating():
                tx = began = Tx(conn, self.blobs.within(conn), memo=self.states)
                if guess:
                    tx.guesses = self.guesses
                yield tx
                self._seal(tx)
                notify.announce(conn, (e.task_id for e in tx.emitted))
                tx.read_back()
        except Exception as exc:
            self._used = time.monotonic()
            if conn.invalidated or db.driver_broken(conn):
                self._drop()
            if began is not None and began.guesses is not None:
                # Whatever went wrong, what we knew of these tasks may be why.
                self.guesses.forget(began.touched(), missed=bool(began.guessed))
                if began.guessed:
                    raise GuessMissed(str(exc)) from exc
            raise
        self._used = time.monotonic()

    def _server_connection(self) -> Connection:
        """The connection this store writes on, kept between writes as on SQLite: a pool
        checkout and checkin per write were a sixth of an append's client CPU (issue 44).
        One idle longer than a second is pinged first, as the pool pings one it hands out
        after that long (db.ping_if_idle), and one that broke is replaced."""
        conn = self._conn
        if conn is not None and (conn.invalidated or db.driver_broken(conn)):
            self._drop()
            conn = None
        if conn is not None and not db.ping_if_idle(conn, time.monotonic() - self._used):
            self._drop()
            conn = None
        if conn is None:
            conn = self._conn = self._writer.connect()
            conn.info[db.KEPT_WRITER] = True  # it stays in autocommit between writes
        return conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.invalidate()
            db.release_kept_writer(conn)
            with contextlib.suppress(Exception):
                conn.close()

    def head_checkpoint(self, task_id: str) -> Checkpoint | None:
        """The task's newest head checkpoint on an SQLite store, read on the kept head
        reader (store.reads.heads), or on the writer connection when it is idle: never
        waiting for a write."""
        reader = heads.head_reader(self._owner)
        try:
            if self.lock.acquire(blocking=False):
                try:
                    conn = self._conn
                    if conn is not None and not (conn.closed or conn.invalidated):
                        return reader.head_on_writer(conn, task_id)
                finally:
                    self.lock.release()
            return reader.head_checkpoint(task_id)
        except sa.exc.DBAPIError as exc:
            env = db.environment_error(exc)
            if env is not None:
                raise env from exc
            raise


class _SqliteWrite:
    """A write transaction on SQLite, on the writer connection kept for the store's life
    (db.keeps_writer_open), under the writer's lock: BEGIN IMMEDIATE, the caller's block,
    the seal, the COMMIT; the blobs the block created are removed again if it fails, while
    the write lock is still held. A class rather than a generator context manager: the
    append path paid for two of those per write (issue 36, 44). No notice to announce: an
    SQLite store has no listeners (store.notify).

    A failure anywhere, the block's included, is raised as `Writer.transaction` says
    (`_write_refusal`); a failed statement, COMMIT or ROLLBACK (a full disk) can leave the
    kept connection needing a rollback that never comes, so it is dropped and made afresh
    next time."""

    __slots__ = ("_conn", "_created", "_outer", "_tx", "_writer")

    def __init__(self, writer: Writer) -> None:
        self._writer = writer

    def __enter__(self) -> Tx:
        w = self._writer
        if w._read_only is not None:
            raise StoreReadOnly(w._read_only)
        w.lock.acquire()
        try:
            conn = w._conn
            if conn is None or conn.invalidated:
                conn = w._conn = w._writer.connect()
            self._conn = conn
            self._outer, self._created = w.blobs.start_creating()
            try:
                db.sqlite_begin(conn)
                try:
                    self._tx = tx = Tx(conn, w.blobs, memo=w.states)
                except BaseException:
                    db.sqlite_rollback(conn)
                    raise
            except BaseException as exc:
                w.blobs.end_creating(self._outer, self._created)
                if isinstance(exc, sa.exc.SQLAlchemyError):
                    w._drop()
                raise
        except BaseException as exc:
            self._failed(exc)  # releases the lock; raises
        return tx

    def __exit__(self, _type: object, exc: BaseException | None, _tb: object) -> None:
        w, conn, tx = self._writer, self._conn, self._tx
        try:
            try:
                try:
                    if exc is not None:
                        raise exc
                    w._seal(tx)
                except BaseException:
                    w.blobs.discard(self._created)
                    db.sqlite_rollback(conn)
                    raise
                finally:
                    w.blobs.end_creating(self._outer, self._created)
                db.sqlite_commit(conn)
            except sa.exc.SQLAlchemyError:
                w._drop()
                raise
            # Committed, and still under the write lock: no head read on the writer can
            # come between and take what it kept for a head we moved.
            if tx.emitted:
                heads.wrote(w._owner, _new_heads(tx) if tx.checkpoint_rows else _NO_HEADS)
            # What it learned of checkpoint states is now true for others, and what was
            # known before is carried over its events.
            if tx.learned or tx.emitted:
                w.states.publish(tx.learned, tx.emitted)
        except BaseException as failure:
            if failure is exc:
                w.lock.release()
                _refused(exc)
                return  # the block's own exception, raised on by the with statement
            self._failed(failure)
        w.lock.release()

    def _failed(self, exc: BaseException) -> NoReturn:
        """Let the lock go and raise `exc` in the store's words (`_refused`)."""
        self._writer.lock.release()
        _refused(exc)
        raise exc


def _refused(exc: BaseException) -> None:
    """Raise a failed write's DBAPIError in the store's words (`_write_refusal`) where it has
    some; return for anything else, which the caller raises as it came."""
    if isinstance(exc, sa.exc.DBAPIError):
        refusal = _write_refusal(exc)
        if refusal is not None:
            raise refusal from exc
    elif isinstance(exc, sa.exc.PendingRollbackError):  # pragma: no cover - _drop prevents it
        raise StoreError(f"the store's connection failed: {exc}") from exc


_NO_HEADS: Mapping[str, heads.Primed] = types.MappingProxyType({})


def _write_refusal(exc: sa.exc.DBAPIError) -> StoreError | None:
    """A failed write in the store's words: writers colliding, a role refused, the machine
    failing; None for anything else (raised as it came)."""
    kind = db.write_conflict(exc)
    if kind is not None:
        return WriteConflict(kind, str(exc.orig))
    refused = db.role_refusal(exc)
    if refused is not None:
        rule, role, message = refused
        return RoleRefused(rule, message, role)
    return db.environment_error(exc)


def _new_heads(tx: Tx) -> dict[str, heads.Primed]:
    """The head checkpoints a committed transaction made, as the head query reads them: per
    task, the row its last `checkpoint.written` made (only those events move heads) with the
    state the write computed at that event (tx.learned), where it did."""
    made: dict[str, heads.Primed] = {}
    for task_id, (e, row) in tx.checkpoint_rows.items():
        known = tx.learned.get(task_id)
        if known is not None and known.head == (e.seq, e.hash):
            made[task_id] = (row, known.state_json)
    return made
