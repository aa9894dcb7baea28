"""One opener at a time: the step that may switch an SQLite store to WAL and migrate it
(a file lock), and on a database server the migration (an advisory lock, `migrating`).

Switching a rollback-journal database to WAL needs an exclusive lock that SQLite does not
wait for through its busy timeout, so two programs opening an old store at the same moment
could see "database is locked" before either reached the migration's own BEGIN IMMEDIATE.
An advisory file lock beside the database serializes just that step (a few milliseconds on
a current store); the second opener then finds the store at its head with nothing to do.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's own locking is all there is
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def opening(db_file: Path) -> Iterator[None]:
    lock_path = db_file.with_name(db_file.name + ".open-lock")
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        # A read-only directory: nobody can migrate or switch the journal here anyway.
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


#: The advisory lock key of "migrating this store" (advisory locks are per database).
SCHEMA_LOCK_KEY = int.from_bytes(
    hashlib.sha256(b"boris: store schema").digest()[:8], "big", signed=True
)


@contextlib.contextmanager
def migrating(engine: Engine) -> Iterator[None]:
    """One migrator at a time on a database server: a session advisory lock held on a
    connection of its own while the version is checked and the migration runs. Others wait
    for it, then find the schema current. A killed holder's session ends and frees it."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
        try:
            yield
        finally:
            conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": SCHEMA_LOCK_KEY})
