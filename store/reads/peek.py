"""A first look at a SQLite store's inbox, before the Store is open.

Opening a store imports SQLAlchemy, pydantic and the store's own modules: about 300 ms of
CPU on the 2-core machine, five times the query itself (bench_desktop.py). The window
shows the tasks meanwhile by reading the same statements (store.reads.inbox) with the
standard library's sqlite3, on a read-only connection. It creates nothing, changes nothing
and never migrates: a missing file, a schema other than this program's, a team store (a
URL) or any database error gives None, and the window waits for the Store as before, which
says what is wrong. Nothing can be decided from this look: the window's actions wait for
the Store.
"""

from __future__ import annotations

import os
import sqlite3

from ..blobs import BlobStore
from ..clock import system_now
from ..location import resolve
from ..version import SCHEMA_REVISIONS
from . import inbox


def peek_tasks(directory: str | os.PathLike[str] | None) -> list[inbox.TaskRow] | None:
    """The inbox of the SQLite store at `directory` (as `Store.tasks` lists it), or None
    when it cannot be read this way."""
    if os.environ.get("BORIS_STORE_URL"):
        return None
    location = resolve(directory)
    db_file = location.sqlite_file
    if db_file is None or not db_file.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db_file.as_uri()}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error:
        return None
    try:
        versions = [r[0] for r in conn.execute("SELECT version_num FROM alembic_version")]
        if versions != [SCHEMA_REVISIONS[-1]]:
            return None
        blobs = BlobStore(location.blobs)
        # One read transaction: every statement sees the same snapshot, as Store.read does.
        conn.execute("BEGIN")
        try:
            return inbox.list_tasks(conn.execute, system_now(), blobs.has)
        finally:
            conn.rollback()
    except (sqlite3.Error, OSError):
        return None
    finally:
        conn.close()
