"""Everything that depends on the database engine lives here.

SQLite is the embedded default (one file, WAL, synchronous=FULL, write transactions started
with BEGIN IMMEDIATE as PLATFORM.md requires); a team store uses PostgreSQL through the same
Core statements. Code elsewhere asks this module for the engine, the clock and the
append-only guard, and never tests the dialect itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

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


def create_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        return _sqlite_engine(url)
    return sa.create_engine(url, pool_pre_ping=True)


def _sqlite_engine(url: str) -> Engine:
    engine = sa.create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        pool_size=4,
        max_overflow=8,
    )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control from the sqlite3 module so BEGIN is ours to choose.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode=WAL")
        # FULL: when a write call returns its events are on disk, even on power loss.
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # A read-then-write transaction started with a plain BEGIN fails with "database is
        # locked" despite busy_timeout; writers take the lock up front.
        if conn.get_execution_options().get("boris_write"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")

    return engine


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
    return str(conn.exec_driver_sql(now_expression(conn.dialect.name)).scalar_one())


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


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"
