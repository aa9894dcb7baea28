"""One opener at a time: the step that may switch an SQLite store to WAL and migrate it.

Switching a rollback-journal database to WAL needs an exclusive lock that SQLite does not
wait for through its busy timeout, so two programs opening an old store at the same moment
could see "database is locked" before either reached the migration's own BEGIN IMMEDIATE.
An advisory file lock beside the database serializes just that step (a few milliseconds on
a current store); the second opener then finds the store at its head with nothing to do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

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
