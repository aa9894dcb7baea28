"""Opening a store's database: where it is, whether this process may write it, and that its
schema is this program's (migrating it, or refusing a newer one), before `Store.open` makes
the facade around it. Every failure is named in the store's words (store.errors)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from . import db, migrate, open_lock
from .errors import (
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreLocationInvalid,
    StoreMissing,
    StoreReadOnly,
)
from .location import DB_NAME, Location


class Opened(NamedTuple):
    """A store's database, open and at this program's schema."""

    engine: Engine
    #: Opened without write access (a read-only mount or directory).
    read_only: bool
    #: The backup a migration made before upgrading the store, if it made one.
    migrated_from_backup: str | None


def open_database(location: Location, *, create: bool) -> Opened:
    """Open the database at `location`, creating it when `create` (else StoreMissing), and
    bring its schema to this program's; a store this process cannot write opens read-only."""
    _check_directory(location.directory)
    db_file = location.sqlite_file
    guard: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    read_only = ""
    if db_file is not None:
        read_only = _check_file(db_file, create=create)
        guard = open_lock.opening(db_file)
    with guard:
        engine = db.create_engine(location.url, read_only=read_only)
        try:
            if db_file is None:
                _check_server(engine, location, create)
            if read_only:
                _refuse_if_older(engine, location)
                backup = None
            else:
                backup = migrate.ensure_current(engine, location.backups)
        except (sa.exc.DBAPIError, StoreCorrupt) as exc:
            engine.dispose()
            failure = _open_failure(exc, location)
            if failure is exc:
                raise
            raise failure from exc
        except BaseException:
            engine.dispose()
            raise
    return Opened(engine, bool(read_only), backup)


def _check_file(db_file: Path, *, create: bool) -> str:
    """Refuse a database file this process cannot use; how it may open it (`_read_only_mode`)."""
    if db_file.is_dir():
        raise StoreLocationInvalid(f"{db_file} is a directory, not a store database")
    if not db_file.exists():
        if not create:
            where = db_file.parent if db_file.name == DB_NAME else db_file
            raise StoreMissing(str(where))
        _make_directory(db_file.parent)
        return ""
    if not os.access(db_file, os.R_OK):
        raise StoreError(f"cannot read {db_file}: permission denied")
    if db_file.stat().st_size and not _looks_like_sqlite(db_file):
        raise StoreCorrupt(f"{db_file} is not a Boris store (not an SQLite database)")
    read_only = _read_only_mode(db_file)
    migrate.refuse_if_newer_sqlite(db_file)
    return read_only


def _open_failure(exc: sa.exc.DBAPIError | StoreCorrupt, location: Location) -> StoreError:
    """What to raise, in the store's words, for a database that failed to open or migrate."""
    if _disk_full(location.directory):
        # SQLite says "disk I/O error" when it cannot even make its WAL index.
        return StoreFull(
            f"the disk holding the store at {location.describe()} is full; "
            "free some space and try again"
        )
    if isinstance(exc, StoreCorrupt):
        return exc
    env = db.environment_error(exc)
    if env is not None:
        return env
    return StoreError(f"cannot open the store at {location.describe()}: {exc.orig}")


def _check_directory(directory: Path) -> None:
    """A store directory that is a file (or sits under one) is named as such, in words."""
    for p in (directory, *directory.parents):
        try:
            if p.is_dir():
                return
            if p.exists():
                what = "a file" if p.is_file() else "not a directory"
                if p == directory:
                    raise StoreLocationInvalid(f"{p} is {what}, not a store directory")
                raise StoreLocationInvalid(
                    f"cannot use {directory} as a store: {p} is {what}, not a directory"
                )
        except OSError as exc:
            raise StoreLocationInvalid(
                f"cannot use {directory} as a store: {exc.strerror}"
            ) from None


def _make_directory(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreLocationInvalid(f"cannot create a store at {directory}: {exc.strerror}") from exc


def _read_only_mode(db_file: Path) -> str:
    """ "" when this process can write the store; else how SQLite can still read it.

    A WAL database is read through its -shm index, which a reader must be able to create
    when it is missing; in a directory nobody can write, with no WAL left beside the file,
    the database is read as immutable instead."""
    directory = db_file.parent
    if os.access(db_file, os.W_OK) and os.access(directory, os.W_OK):
        return ""
    shm = db_file.with_name(db_file.name + "-shm")
    wal = db_file.with_name(db_file.name + "-wal")
    if shm.exists() or os.access(directory, os.W_OK):
        return "ro"
    if wal.exists() and wal.stat().st_size:
        raise StoreReadOnly(
            f"the store at {directory} is read-only here and its write-ahead log "
            f"({wal.name}) cannot be read without a writable directory"
        )
    return "immutable"


def _disk_full(directory: Path) -> bool:
    try:
        st = os.statvfs(directory)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        return False
    return st.f_bavail == 0


def _check_server(engine: Engine, location: Location, create: bool) -> None:
    try:
        with engine.connect():
            pass
    except sa.exc.DBAPIError as exc:
        reason = " ".join(str(exc.orig).split())
        raise StoreError(
            f"cannot connect to the database at {location.describe()}: {reason}"
        ) from exc
    if not create and migrate.current_revision(engine) is None:
        raise StoreMissing(location.describe())


def _refuse_if_older(engine: Engine, location: Location) -> None:
    """A read-only store must already be at this program's schema: it cannot be upgraded."""
    rev = migrate.current_revision(engine)
    if rev != migrate.HEAD:
        if rev is not None and rev not in migrate.REVISIONS:
            migrate.ensure_current(engine, None)  # refuses a newer store before any write
        raise StoreReadOnly(
            f"the store at {location.describe()} is read-only here and needs upgrading to "
            f"schema {migrate.HEAD} (it has {rev or 'none'}); open it once where it can be written"
        )


def _looks_like_sqlite(path: Path) -> bool:
    """Whether `path` is an SQLite database, asked of SQLite itself, never by reading its
    header with open(): closing any descriptor of the file drops every POSIX lock this
    process holds on it, SQLite's included (sqlite.org/howtocorrupt.html, 2.2). With its
    shared lock gone, another process closing its last connection deleted the write-ahead
    log under this one's open connections: this process then read and wrote a log nobody
    else saw, and the two lost each other's commits (tests/test_store_processes.py).
    SQLite keeps one descriptor per file per process and defers closing it while locks are
    held, so a connection of its own is safe. Anything but "not a database" (busy, a
    damaged page) is left to the open that follows, which reports it."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return True
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as exc:
        return getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_NOTADB
    finally:
        conn.close()
    return True
