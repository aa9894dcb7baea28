"""Everything that depends on the database engine lives here.

SQLite is the embedded default (one file, WAL, synchronous=FULL, write transactions started
with BEGIN IMMEDIATE as PLATFORM.md requires); a team store uses PostgreSQL through the same
Core statements. Code elsewhere asks this module for the engine, the clock and the
append-only guard, and never tests the dialect itself.

Round trips on PostgreSQL (issue 36): a write's latency on a network is its number of waits
for the server, so the write path waits as little as it can. Statements whose answer nobody
reads (the event insert, the head's move, a checkpoint row, NOTIFY: `Prepared.send`) are not
sent on their own: they are queued on the connection and go out in one exchange with the
next statement that must be answered (a read) or with the COMMIT (`write_transaction`), and
the BEGIN rides in the first of them. An exchange is one simple query (issue 44): each
statement runs as EXECUTE of a statement the connection prepared once (the server keeps its
plan), its values quoted in as literals (`_exchange`). Through psycopg's pipeline each
statement cost a call with its own flush and reads, about half a write's client CPU; one
simple query with the values quoted into the statements themselves cost less CPU but the
server planned every statement again (1.7 against 0.9 ms a write). A pooled connection is
pinged only when it sat idle (`_IDLE_PING_S`), not before every write. A process's first
write to a task waits for the task's row (lock, head, lease, the keyring head and the
server's clock, one statement: store.tx, which `seed`s the keyring's answer for
store.signing.seal), then for the COMMIT with everything queued; its next writes to the task
wait once: they are built on the row the last one left (read with its COMMIT:
`read_with_commit`) and checked by the server under the lock (store.tx.Guesses).
benchmarks/bench_pg_ledger.py counts the waits through benchmarks/pg_delay_proxy.py.
"""

from __future__ import annotations

import contextlib
import operator
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

from .clock import system_now
from .errors import StoreBusy, StoreCorrupt, StoreError, StoreFull, StoreReadOnly

BUSY_TIMEOUT_MS = 15_000

# Events are append-only: the database itself refuses to change or remove one.
SQLITE_EVENT_GUARDS = (
    """CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
       BEGIN SELECT RAISE(ABORT, 'events are append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
       BEGIN SELECT RAISE(ABORT, 'events are append-only'); END""",
)
POSTGRES_EVENT_GUARDS = (
    """CREATE OR REPLACE FUNCTION boris_events_append_only() RETURNS trigger AS $$
       BEGIN RAISE EXCEPTION 'events are append-only'; END; $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
       FOR EACH ROW EXECUTE FUNCTION boris_events_append_only()""",
)


def event_guards(dialect_name: str) -> tuple[str, ...]:
    return POSTGRES_EVENT_GUARDS if dialect_name == "postgresql" else SQLITE_EVENT_GUARDS


def sqlite_url(path: Path) -> str:
    return f"sqlite+pysqlite:///{path}"


def create_engine(url: str, *, read_only: str = "") -> Engine:
    """An engine for `url`. `read_only` opens an SQLite file without ever writing to it:
    "ro" (SQLite's mode=ro, which still shares the WAL index with writers) or "immutable"
    (no WAL index: for a directory nobody can write, where the -shm file cannot be made)."""
    if url.startswith("sqlite"):
        return _sqlite_engine(url, read_only)
    try:
        engine = sa.create_engine(url)
    except (ModuleNotFoundError, sa.exc.NoSuchModuleError) as exc:
        from .errors import StoreLocationInvalid

        raise StoreLocationInvalid(
            f"this database needs a driver that is not installed ({exc}); for PostgreSQL "
            "install psycopg: pip install 'psycopg[binary]'"
        ) from None
    if engine.dialect.name == "postgresql":
        _server_hooks(engine)
    return engine


#: A pooled server connection idle longer than this is pinged before use (a dropped one is
#: replaced by the pool); one used just before is not: pinging each checkout, as
#: pool_pre_ping does, is one more round trip on every write.
_IDLE_PING_S = 1.0


def ping_if_idle(conn: Connection, idle_s: float) -> bool:
    """Whether a server connection idle for `idle_s` still answers: pinged only when idle
    longer than _IDLE_PING_S (store.writing's kept writer, as the pool's checkout does); one
    that does not answer is invalidated."""
    if idle_s < _IDLE_PING_S:
        return True
    raw: Any = conn.connection.driver_connection
    try:
        raw.execute("SELECT 1")
        raw.rollback()
    except conn.dialect.loaded_dbapi.Error:
        conn.invalidate()
        return False
    return True


def driver_broken(conn: Connection) -> bool:
    """Whether the driver knows its connection is closed or broken (a server gone)."""
    raw: Any = conn.connection.driver_connection
    return bool(raw is None or raw.closed or getattr(raw, "broken", False))


def _server_hooks(engine: Engine) -> None:
    import time

    event.listen(engine, "connect", _track_deallocations)

    @event.listens_for(engine, "checkin")
    def _idle_since(_dbapi_conn: Any, record: Any) -> None:
        record.info["boris_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("boris_idle_since")
        if since is not None and time.monotonic() - since < _IDLE_PING_S:
            return
        try:
            dbapi_conn.execute("SELECT 1")
            dbapi_conn.rollback()
        except engine.dialect.loaded_dbapi.Error as exc:
            raise sa.exc.DisconnectionError(str(exc)) from exc

    @event.listens_for(engine, "before_cursor_execute")
    def _send_queued(conn: Connection, *_args: Any) -> None:
        # A Core statement sees what the queued ones wrote: they go first. It may change
        # what a seeded answer said: those are read again.
        conn.info.pop(_SEEDS, None)
        if conn.info.get(_QUEUE):
            _exchange(conn, None, ())


def _sqlite_engine(url: str, read_only: str = "") -> Engine:
    timeout = BUSY_TIMEOUT_MS / 1000
    if read_only:
        import sqlite3
        from urllib.parse import quote

        path = Path(url.split(":///", 1)[1])
        flag = "immutable=1" if read_only == "immutable" else "mode=ro"
        uri = f"file:{quote(str(path))}?{flag}"
        engine = sa.create_engine(
            "sqlite+pysqlite://",
            creator=lambda: sqlite3.connect(
                uri, uri=True, check_same_thread=False, timeout=timeout
            ),
            poolclass=sa.pool.QueuePool,
            pool_size=4,
            max_overflow=8,
        )
    else:
        engine = sa.create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": timeout},
            pool_size=4,
            max_overflow=8,
        )

    engine.update_execution_options(compiled_cache=_COMPILED)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control from the sqlite3 module so BEGIN is ours to choose.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if not read_only:  # the journal mode is the writer's to set, and is kept in the file
            cur.execute("PRAGMA journal_mode=WAL")
            # FULL: when a write call returns its events are on disk, even on power loss.
            cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "before_cursor_execute")
    def _forget_seeds(conn: Connection, *_args: Any) -> None:
        # A Core statement may change what a seeded answer said (the keyring's head read
        # with a task's row, store.tx): those are read again, as on a server.
        conn.info.pop(_SEEDS, None)

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # A read-then-write transaction started with a plain BEGIN fails with "database is
        # locked" despite busy_timeout; writers take the lock up front. Issued on the driver
        # connection: this runs once per write and is on the append hot path.
        if conn.connection.driver_connection.in_transaction:  # type: ignore[union-attr]
            return  # inside write_transaction: the driver transaction is already open
        sql = "BEGIN IMMEDIATE" if conn.get_execution_options().get("boris_write") else "BEGIN"
        _run_driver(conn, sql, ())

    return engine


class SharedCompiled:
    """SQLAlchemy's compiled-statement cache, one for every SQLite engine this process makes
    (`_sqlite_engine`, given as the engines' `compiled_cache` execution option).

    Each engine has a cache of its own by default, and its keys hold the engine's dialect
    instance: a new engine (a `Store` opened anew, each command of the resident `boris`:
    store.cli.resident) compiled every Core statement again, though the rehearsal before
    the fork had compiled them (16 of a recorded hook's, 5-7 ms of its ~19 ms of CPU, issue
    44). SQLAlchemy leaves a cache shared across engines to its user, who must make sure
    the engines' dialects are alike (sqlalchemy issue 5002). Here they are: made by one
    function with the same arguments, in one process, on one SQLite library. So the key's
    dialect is replaced by its class and the SQLite version it reads; a key of any other
    shape (another SQLAlchemy) is kept as it is, which only shares nothing."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[Any, Any] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(key: Any) -> Any:
        if type(key) is tuple and key and isinstance(key[0], sa.Dialect):
            dialect = key[0]
            return (type(dialect), dialect.server_version_info, *key[1:])
        return key

    def get(self, key: Any, default: Any = None) -> Any:
        return self._entries.get(self._key(key), default)

    def __setitem__(self, key: Any, value: Any) -> None:
        entries = self._entries
        with self._lock:
            if len(entries) >= self._size:  # the oldest half goes (dicts keep their order)
                for old in list(entries)[: self._size // 2]:
                    del entries[old]
            entries[self._key(key)] = value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


#: As large as SQLAlchemy's own per-engine cache (query_cache_size).
_COMPILED = SharedCompiled(500)


def writer(engine: Engine) -> Engine:
    """The same engine, but its transactions take the write lock when they begin."""
    return engine.execution_options(boris_write=True)


def now_expression(dialect_name: str) -> str:
    """SQL for the database's clock as an ISO-8601 UTC string with microseconds.

    Expiry is judged by the database's clock so that two machines sharing a store agree.
    """
    if dialect_name == "postgresql":
        return "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    return "SELECT strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')"


def database_now(conn: Connection) -> str:
    if conn.dialect.name == "sqlite":
        # SQLite's 'now' is this process's own system clock (the VFS asks the OS), so
        # reading it here is the same clock without a round trip on the append path.
        return system_now()
    rows = _run_driver(conn, now_expression(conn.dialect.name), ())
    return str(rows[0][0])


@contextlib.contextmanager
def write_transaction(conn: Connection) -> Iterator[None]:
    """One write transaction on `conn`; committed (durably) when the block ends.

    On SQLite the transaction is driven on the driver connection itself: BEGIN IMMEDIATE,
    then COMMIT or ROLLBACK. Core statements run inside it make SQLAlchemy autobegin its
    own transaction object, whose begin hook sees the driver already in a transaction and
    issues nothing; that object then commits or rolls back the same transaction. This
    keeps SQLAlchemy's transaction bookkeeping off the common append, which uses only
    `Prepared` statements. On a server the same holds (issue 44): the BEGIN is ours
    (`_own_begin`), and the COMMIT goes with what is queued; a Core statement inside makes
    SQLAlchemy autobegin its transaction object, which then ends with ours.
    """
    if conn.dialect.name != "sqlite":
        with _own_begin(conn):
            try:
                yield
                _commit_with_queued(conn)
            except BaseException:
                conn.info[_QUEUE] = []  # never sent: the transaction is rolled back
                conn.info.pop(_AT_COMMIT, None)
                _server_rollback(conn)
                raise
            if conn.in_transaction():
                conn.commit()  # SQLAlchemy's object only: the driver's transaction is over
        return
    sqlite_begin(conn)
    try:
        yield
    except BaseException:
        sqlite_rollback(conn)
        raise
    sqlite_commit(conn)


def _server_rollback(conn: Connection) -> None:
    """End a failed server write transaction: SQLAlchemy's object if a Core statement began
    one, else the driver's (it sends ROLLBACK only if the server has a transaction open)."""
    if conn.in_transaction():
        conn.rollback()
        return
    try:
        conn.connection.driver_connection.rollback()  # type: ignore[union-attr]
    except conn.dialect.loaded_dbapi.Error:
        conn.invalidate()  # a connection that cannot roll back is not handed out again


def sqlite_begin(conn: Connection) -> None:
    """`write_transaction`'s three steps on SQLite, for the append path (Store.transaction),
    which spells them out rather than pay for a generator context manager per write."""
    _run_sqlite(conn.info, conn, "BEGIN IMMEDIATE", ())


def sqlite_rollback(conn: Connection) -> None:
    conn.info.pop(_SEEDS, None)
    if conn.in_transaction():
        conn.rollback()
    else:
        _run_sqlite(conn.info, conn, "ROLLBACK", ())


def sqlite_commit(conn: Connection) -> None:
    conn.info.pop(_SEEDS, None)
    if conn.in_transaction():
        conn.commit()
    else:
        _run_sqlite(conn.info, conn, "COMMIT", ())


def keeps_writer_open(engine: Engine) -> bool:
    """Whether the store may hold one writer connection for its lifetime.

    SQLite serializes writers anyway and a file connection never goes stale, so reusing it
    saves a pool checkout and reset per append. A server's writer keeps its connection too,
    pinging it after _IDLE_PING_S idle and replacing it once broken (store.writing).
    """
    return is_sqlite(engine)


#: A call's parameters (by name, or None) -> the driver's (a tuple, or a mapping).
_ArgsOf = Callable[[Any], Any]


class Prepared:
    """A Core statement compiled once per dialect and run straight on the driver's cursor.

    The append path runs a handful of fixed statements per event; SQLAlchemy's per-call
    work (coercion, cache lookup, result wrapping) costs several times SQLite's own.
    Parameters are always given by name; results come back as plain tuples.
    """

    def __init__(self, stmt: ClauseElement) -> None:
        self._stmt = stmt
        self._compiled: dict[str, tuple[str, tuple[str, ...] | None, dict[str, Any]]] = {}
        self.unanswered = False
        #: On SQLite (where nothing is seeded or queued): the text and how its parameters
        #: are taken from a call's, made at its first run there (`_sqlite_args`).
        self._sqlite: tuple[str, _ArgsOf] | None = None

    def _for(self, dialect: sa.Dialect) -> tuple[str, tuple[str, ...] | None, dict[str, Any]]:
        got = self._compiled.get(dialect.name)
        if got is None:
            c = self._stmt.compile(dialect=dialect)
            assert isinstance(c, SQLCompiler)
            if "POSTCOMPILE" in c.string:
                raise TypeError("a Prepared statement cannot hold an expanding IN (...)")
            names = tuple(c.positiontup or ()) if c.positional else None
            # A change whose answer is never read (no RETURNING): on a server it is queued.
            self.unanswered = bool((c.isinsert or c.isupdate or c.isdelete) and not c.returning)
            # Values the statement carries itself (a LIMIT, a literal in a WHERE).
            fixed = {
                name: bind.value
                for name, bind in c.binds.items()
                if not bind.required and bind.value is not None
            }
            got = self._compiled[dialect.name] = (c.string, names, fixed)
        return got

    def _on_sqlite(self, dialect: sa.Dialect) -> tuple[str, _ArgsOf]:
        sql, names, fixed = self._for(dialect)
        self._sqlite = got = (sql, _sqlite_args(names, fixed))
        return got

    def run(self, conn: Connection, params: Mapping[str, Any] | None = None) -> list[Any]:
        # An answer read along with another statement (`seed`) is taken as it is.
        info = conn.info
        seeds = info.get(_SEEDS)
        if seeds:
            answer = seeds.pop(id(self), None)
            if answer is not None:
                return list(answer)
        dialect = conn.dialect
        if dialect.name == "sqlite":
            # The append path on SQLite, where nothing is queued (a server's way): straight to
            # the driver's cursor, the parameters taken in one call (issue 36, 44).
            sql, args_of = self._sqlite or self._on_sqlite(dialect)
            return _run_sqlite(info, conn, sql, args_of(params))
        sql, names, fixed = self._for(dialect)
        values = {**fixed, **params} if params and fixed else (params or fixed)
        args: Sequence[Any] | Mapping[str, Any] = (
            values if names is None else [values[n] for n in names]
        )
        if self.unanswered and info.get(_QUEUE) is not None:
            queue(conn, sql, args)  # sent with the next read or the COMMIT (`send`)
            return []
        return _run_driver(conn, sql, args)

    def send(self, conn: Connection, params: Mapping[str, Any] | None = None) -> None:
        """Run a statement whose answer is not read: on a server it is queued and sent with
        the next statement that is answered, or the COMMIT (one round trip for all)."""
        dialect = conn.dialect
        if dialect.name == "sqlite":  # nothing is queued on SQLite
            sql, args_of = self._sqlite or self._on_sqlite(dialect)
            _run_sqlite(conn.info, conn, sql, args_of(params))
            return
        sql, names, fixed = self._for(dialect)
        values = {**fixed, **params} if params and fixed else (params or fixed)
        args = values if names is None else [values[n] for n in names]
        queue(conn, sql, args)


def _sqlite_args(names: tuple[str, ...] | None, fixed: dict[str, Any]) -> _ArgsOf:
    """How a statement's parameters for the driver are taken from a call's (by name): its
    positional values by one `itemgetter` (a tuple, made in C), the values the statement
    carries itself (`fixed`) first where it has any."""
    if names is None:  # named parameters: the mapping as it is
        return lambda params: {**fixed, **params} if params and fixed else (params or fixed)
    if not names:
        return lambda _params: ()
    get = operator.itemgetter(*names)
    if fixed:
        take = (lambda v: (get(v),)) if len(names) == 1 else get
        return lambda params: take({**fixed, **params} if params else fixed)
    if len(names) == 1:
        return lambda params: (get(params),)
    return get


#: Statements queued on a server connection (conn.info), sent with the next answered one.
_QUEUE = "boris_queued"
#: Answers to reads known already in this transaction (`seed`), per Prepared statement.
_SEEDS = "boris_seeds"
#: Reads sent with the COMMIT, answered once it is done (`read_with_commit`).
_AT_COMMIT = "boris_at_commit"


def seed(conn: Connection, statement: Prepared, rows: Sequence[Any]) -> None:
    """`statement`'s answer in this transaction, read along with another statement: its next
    run returns it without asking the server. Any Core statement run afterwards (which may
    change what it reads) forgets every seed; so does the transaction's end."""
    conn.info.setdefault(_SEEDS, {})[id(statement)] = list(rows)


def queue(conn: Connection, sql: str, args: Sequence[Any] | Mapping[str, Any]) -> None:
    """Queue a statement whose answer is not read (see `Prepared.send`). Only a server write
    transaction (`write_transaction`) queues: anywhere else, whose COMMIT would not carry
    the queue, the statement runs at once."""
    pending = conn.info.get(_QUEUE)
    if pending is None:
        _run_driver(conn, sql, args)
        return
    pending.append((sql, args))


def _exchange(
    conn: Connection, sql: str | None, args: Sequence[Any] | Mapping[str, Any]
) -> list[Any]:
    """The queued statements and then `sql` (if any) in one exchange: one wait for the
    server. Returns `sql`'s rows ([] for none); the reads queued with the COMMIT
    (`read_with_commit`) get theirs once the whole exchange succeeded.

    Sent as one simple query (`_ServerStatements`): each statement with parameters runs as
    `EXECUTE` of a statement this connection prepared (the server keeps its plan, as for
    psycopg's own prepared statements), its values quoted in as literals; a statement's
    first use on a connection sends its `PREPARE` ahead, in the same query. Through
    psycopg's pipeline each statement was a call of its own, with its own flush and reads:
    about half a write's client CPU (issue 44). An exchange carrying bytes (a blob's chunk)
    still goes through the pipeline, which sends them as they are."""
    raw: Any = conn.connection.driver_connection
    queued = conn.info.get(_QUEUE) or []
    if queued:
        conn.info[_QUEUE] = []  # still queueing: the write transaction goes on
    statements = _server_statements(conn)
    error = conn.dialect.loaded_dbapi.Error
    texts: list[str] = []
    for attempt in (1, 2):
        try:
            try:
                texts, answers, wanted = _texts(statements, raw, queued, sql, args)
            except _Unquoted:
                statements.failed()
                return _exchange_pipelined(conn, queued, sql, args)
            prepares = statements.take_prepares()
            results = _simple_query(raw, ";\n".join([*prepares, *texts]))
            break
        except error as exc:
            state = getattr(exc, "sqlstate", None)
            statements.failed(state)
            if attempt == 1 and state == _NO_SUCH_STATEMENT and texts[:1] == ["BEGIN"]:
                # Something other than psycopg deallocated our statements (DISCARD ALL): the
                # exchange opened the transaction, so it is sent again, prepared anew.
                _simple_query(raw, "ROLLBACK")
                continue
            failed = sql if sql is not None else "; ".join(q[0] for q in queued)
            raise sa.exc.DBAPIError.instance(
                failed, args, exc, conn.dialect.loaded_dbapi.Error, dialect=conn.dialect
            ) from exc
    statements.succeeded()
    if not answers and wanted < 0:
        return []
    rows: dict[int, list[Any]] = {}
    offset = len(prepares)  # each statement has one result, in order; the PREPAREs' first
    for i in {i for i, _ in answers} | ({wanted} if wanted >= 0 else set()):
        rows[i] = _rows(conn, results[offset + i])
    for i, answer in answers:
        answer(rows[i])
    return rows.get(wanted, [])


def _simple_query(raw: Any, text: str) -> list[Any]:
    """`text` (one or more statements, no parameters) as one simple query on the driver's
    connection: its results, one a statement; the first refusal raised as psycopg raises it.
    The driver's cursor would also count, describe and cache the text it ran: a tenth of a
    write's CPU, for nothing it is asked here."""
    from psycopg import errors, generators

    pgconn = raw.pgconn
    pgconn.send_query(text.encode(raw.info.encoding))
    results: list[Any] = raw.wait(generators.execute(pgconn))
    for result in results:
        if result.status == _FAILED:
            raise errors.error_from_result(result, encoding=raw.info.encoding)
    return results


def _rows(conn: Connection, result: Any) -> list[Any]:
    """A result's rows as tuples, each value loaded as the driver loads it."""
    if result.status != _ROWS:
        return []
    info = conn.info
    transformer = info.get("boris_transformer")
    if transformer is None:
        from psycopg.adapt import Transformer

        transformer = info["boris_transformer"] = Transformer(conn.connection.driver_connection)
    transformer.set_pgresult(result)
    rows: list[Any] = transformer.load_rows(0, result.ntuples, tuple)
    return rows


def _texts(
    statements: _ServerStatements,
    raw: Any,
    queued: list[Any],
    sql: str | None,
    args: Sequence[Any] | Mapping[str, Any],
) -> tuple[list[str], list[tuple[int, Callable[[list[Any]], None]]], int]:
    """The exchange's statements as text, the reads answered with it (their index) and the
    index of `sql` (-1: none)."""
    texts: list[str] = []
    answers: list[tuple[int, Callable[[list[Any]], None]]] = []
    for q_sql, q_args, *on in queued:
        if on:
            answers.append((len(texts), on[0]))
        texts.append(statements.execute(q_sql, q_args, raw))
    wanted = -1
    if sql is not None:
        wanted = len(texts)
        texts.append(statements.execute(sql, args, raw))
    return texts, answers, wanted


def _exchange_pipelined(
    conn: Connection,
    queued: list[Any],
    sql: str | None,
    args: Sequence[Any] | Mapping[str, Any],
) -> list[Any]:
    """`_exchange` through psycopg's pipeline, each statement's values sent apart."""
    raw: Any = conn.connection.driver_connection
    cursor = _cursor(conn)
    failure: Exception | None = None
    error = conn.dialect.loaded_dbapi.Error
    answers: list[tuple[Any, Callable[[list[Any]], None]]] = []
    try:
        with raw.pipeline():
            # A refusal raised inside the block is kept, and the block ends cleanly: psycopg
            # logs an "error ignored" warning when its own closing sync fails beside one.
            try:
                for q_sql, q_args, *on in queued:
                    if on:  # a read with the COMMIT (`read_with_commit`): a cursor of its own
                        answers.append((raw.cursor(), on[0]))
                        answers[-1][0].execute(q_sql, q_args)
                    else:
                        cursor.execute(q_sql, q_args)
                if sql is not None:
                    cursor.execute(sql, args)
            except error as exc:
                failure = exc
    except error as exc:
        failure = failure or exc  # the first refusal says why; "pipeline aborted" does not
    if failure is not None:
        failed = sql if sql is not None else "; ".join(q[0] for q in queued)
        raise sa.exc.DBAPIError.instance(
            failed, args, failure, conn.dialect.loaded_dbapi.Error, dialect=conn.dialect
        ) from failure
    for read, answer in answers:
        answer(read.fetchall())
        read.close()
    if sql is None:
        return []
    return cursor.fetchall() if cursor.pgresult.status == _ROWS else []


_ROWS = 2  # libpq's PGRES_TUPLES_OK: the statement returned rows
_FAILED = 7  # libpq's PGRES_FATAL_ERROR
#: A psycopg placeholder: a name's (`%(name)s`), a position's (`%s`), or an escaped `%`.
_PLACEHOLDER = re.compile(r"%%|%\(([^)]+)\)s|%s")
#: The statements PREPARE takes; any other statement's values are quoted into its text.
_PREPARABLE = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "VALUES")
_PLACEHOLDER_N = re.compile(r"\$(\d+)")
#: SQLSTATE invalid_sql_statement_name: a prepared statement the server no longer has.
_NO_SUCH_STATEMENT = "26000"


class _Converted(NamedTuple):
    text: str  # the statement with $1, $2 … in place of psycopg's placeholders
    keys: tuple[str | int, ...]  # the argument each $n takes: a name, or a position
    preparable: bool


_CONVERTED: dict[str, _Converted] = {}


def _convert(sql: str) -> _Converted:
    got = _CONVERTED.get(sql)
    if got is not None:
        return got
    keys: list[str | int] = []
    number: dict[str | int, int] = {}
    position = 0

    def placeholder(m: re.Match[str]) -> str:
        nonlocal position
        whole = m.group(0)
        if whole == "%%":
            return "%"
        key: str | int
        if whole == "%s":
            key, position = position, position + 1
        else:
            key = m.group(1)
        if key not in number:
            keys.append(key)
            number[key] = len(keys)
        return f"${number[key]}"

    text = _PLACEHOLDER.sub(placeholder, sql)
    preparable = bool(keys) and text.lstrip().upper().startswith(_PREPARABLE)
    got = _CONVERTED[sql] = _Converted(text, tuple(keys), preparable)
    return got


class _Unquoted(Exception):
    """A value not sent as a literal (bytes: a blob's chunk goes as it is)."""


class _ServerStatements:
    """The statements one server connection has prepared, SQL text -> name: kept in its
    pool record's info, which goes with the connection. psycopg deallocates every prepared
    statement of the connection when it clears its own (after a rollback): `forget` is
    called then (`_track_deallocations`), and the statements are prepared anew."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self._serial = 0
        self._new: list[tuple[str, str, str]] = []  # (sql, name, PREPARE …) not yet sent

    def execute(self, sql: str, args: Sequence[Any] | Mapping[str, Any], raw: Any) -> str:
        """The text that runs `sql` with `args` in this connection's next exchange."""
        converted = _convert(sql)
        if not converted.keys:
            return converted.text
        values = [_literal(args[k], raw) for k in converted.keys]  # type: ignore[index]
        if not converted.preparable:
            return _PLACEHOLDER_N.sub(lambda m: values[int(m.group(1)) - 1], converted.text)
        name = self.names.get(sql)
        if name is None:
            for new_sql, new_name, _ in self._new:
                if new_sql == sql:
                    name = new_name
                    break
            else:
                self._serial += 1
                name = f"boris_{self._serial}"
                self._new.append((sql, name, f"PREPARE {name} AS {converted.text}"))
        return f"EXECUTE {name}({', '.join(values)})"

    def take_prepares(self) -> list[str]:
        return [p for _, _, p in self._new]

    def succeeded(self) -> None:
        for sql, name, _ in self._new:
            self.names[sql] = name
        self._new = []

    def failed(self, sqlstate: str | None = None) -> None:
        # Which of its PREPAREs ran is unknown: their names are never used again (a new
        # serial each), and the statements are prepared anew when next used.
        self._new = []
        if sqlstate == _NO_SUCH_STATEMENT:
            self.forget()

    def forget(self) -> None:
        self.names = {}


def _server_statements(conn: Connection) -> _ServerStatements:
    info = conn.info
    got = info.get(_STATEMENTS)
    if got is None:
        got = info[_STATEMENTS] = _ServerStatements()
    assert isinstance(got, _ServerStatements)
    return got


_STATEMENTS = "boris_statements"


def _track_deallocations(dbapi_conn: Any, record: Any) -> None:
    """Forget this connection's prepared statements whenever psycopg clears its own: it
    then sends DEALLOCATE ALL, which takes ours too."""
    statements = record.info[_STATEMENTS] = _ServerStatements()
    manager: Any = getattr(dbapi_conn, "_prepared", None)
    clear = getattr(manager, "clear", None)
    if clear is None:  # pragma: no cover - another psycopg: forget at every rollback instead
        return

    def cleared() -> bool:
        statements.forget()
        return bool(clear())

    manager.clear = cleared


def _literal(value: Any, raw: Any) -> str:
    """`value` as an SQL literal of unknown type, which the server converts to the type the
    statement gives its parameter (as it does a parameter sent apart)."""
    kind = type(value)
    if value is None:
        return "NULL"
    if kind is str:
        text: str = value
        if "\x00" not in text:
            return "E'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
    elif kind is bool:
        return "'true'" if value else "'false'"
    elif kind is int:
        return f"'{value}'"
    elif kind in (bytes, bytearray, memoryview):
        raise _Unquoted
    # Anything else (JSON wrappers, times, a NUL character psycopg refuses): as psycopg
    # quotes it.
    from psycopg import sql as psql

    quoted: str = psql.Literal(value).as_string(raw)
    return quoted


@contextlib.contextmanager
def _own_begin(conn: Connection) -> Iterator[None]:
    """A server write transaction whose BEGIN we send, queued with its first statement:
    psycopg's own implicit BEGIN waits for its answer, one round trip more per write. The
    driver is in autocommit meanwhile (so it adds no BEGIN of its own); its commit() and
    rollback() still end a transaction the server has open, and send nothing otherwise."""
    raw: Any = conn.connection.driver_connection
    info = conn.info
    if not raw.autocommit:
        raw.autocommit = True
    info[_QUEUE] = [("BEGIN", ())]  # the queue exists only inside a write transaction
    try:
        yield
    finally:
        info.pop(_QUEUE, None)
        info.pop(_SEEDS, None)
        info.pop(_AT_COMMIT, None)
        if not info.get(KEPT_WRITER):
            # Back to the pool as it came: reads rely on the driver's implicit BEGIN.
            with contextlib.suppress(Exception):
                raw.autocommit = False


#: Set in the conn.info of a server connection store.writing keeps for its writes only: it
#: stays in autocommit between them (each write sends its own BEGIN), and is put back as it
#: came when the writer lets it go (`release_kept_writer`).
KEPT_WRITER = "boris_kept_writer"


def release_kept_writer(conn: Connection) -> None:
    """A kept writer connection made fit for the pool again: its reads begin transactions.
    An invalidated one is left as it is: its driver connection is discarded, not pooled, and
    one invalidated inside a transaction refuses even a look at its `info` until rolled back
    (a full disk's failed COMMIT)."""
    if conn.invalidated:
        return
    if conn.info.pop(KEPT_WRITER, None):
        with contextlib.suppress(Exception):
            conn.connection.driver_connection.autocommit = False  # type: ignore[union-attr]


def read_with_commit(
    conn: Connection,
    statement: Prepared,
    params: Mapping[str, Any],
    answer: Callable[[list[Any]], None],
) -> None:
    """Run `statement` last before the COMMIT, in the same exchange, and give `answer` its
    rows once the transaction committed (never if it did not). Only in a server write
    transaction; elsewhere nothing is read."""
    if conn.info.get(_QUEUE) is None:
        return
    sql, names, fixed = statement._for(conn.dialect)
    values = {**fixed, **params}
    args = values if names is None else [values[n] for n in names]
    conn.info.setdefault(_AT_COMMIT, []).append((sql, args, answer))


def _commit_with_queued(conn: Connection) -> None:
    """COMMIT on the driver, in the same exchange as what is still queued and the reads asked
    for with it; SQLAlchemy's own commit that follows finds the driver's transaction closed
    and sends nothing."""
    raw: Any = conn.connection.driver_connection
    reads = conn.info.pop(_AT_COMMIT, None) or []
    if conn.info.get(_QUEUE) == [("BEGIN", ())] and raw.info.transaction_status == 0:
        conn.info[_QUEUE] = []  # nothing was written or read: nothing to send
        return
    pending = conn.info[_QUEUE]
    pending.extend(reads)  # (sql, args, answer): answered once the exchange succeeded
    pending.append(("COMMIT", ()))
    _exchange(conn, None, ())


def _cursor(conn: Connection) -> Any:
    # The cursor lives in the pooled connection's info, which the pool clears when it
    # replaces a broken connection.
    info = conn.info
    cursor = info.get("boris_cursor")
    if cursor is None:
        cursor = info["boris_cursor"] = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    return cursor


def _run_sqlite(
    info: dict[Any, Any], conn: Connection, sql: str, args: Sequence[Any] | Mapping[str, Any]
) -> list[Any]:
    """`_run_driver` on SQLite, given the connection's info (which holds its cursor)."""
    cursor = info.get("boris_cursor") or _cursor(conn)
    try:
        cursor.execute(sql, args)
        return cursor.fetchall() if cursor.description else []
    except conn.dialect.loaded_dbapi.Error as exc:
        # The same wrapped errors as Core raises, so callers handle one family.
        raise sa.exc.DBAPIError.instance(
            sql, args, exc, conn.dialect.loaded_dbapi.Error, dialect=conn.dialect
        ) from exc


def _run_driver(conn: Connection, sql: str, args: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    if conn.dialect.name == "postgresql":
        # In one exchange: the BEGIN and anything queued ride with it.
        return _exchange(conn, sql, args)
    return _run_sqlite(conn.info, conn, sql, args)


def backup_sqlite(engine: Engine, dest: Path) -> None:
    """A consistent copy of a live database, as one self-contained file at `dest`.

    Never a file copy, which would miss the pages still in the WAL: VACUUM INTO writes a
    snapshot as an ordinary rollback-journal database that needs no -wal beside it. VACUUM
    cannot run inside a transaction, and SQLAlchemy's connection would begin one (our
    `begin` listener issues BEGIN), so it runs on the driver connection, which the `connect`
    listener put in autocommit. The copy is written under a temporary name, fsynced and then
    renamed into place, so `dest` is either absent or a whole database.
    """
    import os
    import tempfile

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".partial")
    os.close(fd)  # VACUUM INTO accepts an empty file
    tmp = Path(tmp_name)
    try:
        with engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            raw.execute("VACUUM INTO ?", (str(tmp),))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if os.name == "posix":
        dir_fd = os.open(dest.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


#: SQLSTATEs of collisions between concurrent writers on a server: retrying can succeed.
_CONFLICT_STATES = {"40P01": "deadlock", "40001": "serialization failure"}
SEQ_CONSTRAINT = "uq_events_task_seq"


def write_conflict(exc: sa.exc.DBAPIError) -> str | None:
    """What kind of writers' collision `exc` is ("deadlock", …), or None: read from the
    driver's SQLSTATE and constraint name, never from the message text."""
    state = getattr(exc.orig, "sqlstate", None)
    if state in _CONFLICT_STATES:
        return _CONFLICT_STATES[state]
    if state == "23505":  # unique_violation: another writer appended this seq first
        diag = getattr(exc.orig, "diag", None)
        if getattr(diag, "constraint_name", None) == SEQ_CONSTRAINT:
            return "seq taken"
    return None


#: PostgreSQL's insufficient_privilege: a team role's trigger refusal (store.team) or a table
#: the role was not granted.
_PRIVILEGE_STATE = "42501"


def role_refusal(exc: sa.exc.DBAPIError) -> tuple[str, str, str] | None:
    """(rule, role, message) when the server refused the write for the connection's role,
    else None: read from the driver's SQLSTATE and diagnostics (the trigger names its rule
    as the constraint and the role as the detail), never from the message text."""
    if getattr(exc.orig, "sqlstate", None) != _PRIVILEGE_STATE:
        return None
    diag = getattr(exc.orig, "diag", None)
    rule = getattr(diag, "constraint_name", None) or "insufficient_privilege"
    role = getattr(diag, "message_detail", None) or ""
    message = getattr(diag, "message_primary", None) or str(exc.orig)
    return str(rule), str(role), str(message)


def environment_error(exc: sa.exc.DBAPIError) -> StoreError | None:
    """The store's words for a failure of the machine around the database (a lock held too
    long, a full disk, a damaged or read-only file), else None: a driver's message is all
    SQLite gives, so it is read here, in one place."""
    text = str(exc.orig).lower()
    if "locked" in text or "busy" in text:
        return StoreBusy("the store is busy: another process held its write lock too long")
    if "full" in text and ("disk" in text or "database" in text):
        return StoreFull("the disk holding the store is full; nothing was written")
    if "malformed" in text or "not a database" in text:
        return StoreCorrupt(f"the store's database is damaged: {exc.orig}")
    if "readonly" in text or "read-only" in text:
        return StoreReadOnly("the store is read-only here; nothing was written")
    if isinstance(exc, sa.exc.OperationalError) and "unable to open" in text:
        return StoreError(f"cannot open the store's database: {exc.orig}")
    return None


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"
