"""Commit notices on a team store: PostgreSQL's LISTEN/NOTIFY, so open windows never poll.

Every write transaction on PostgreSQL ends with `pg_notify(CHANNEL, …)` naming the tasks it
appended to. The server holds a notification back until its transaction commits and drops it
if it rolls back, so a listener hears of exactly the commits, from every machine sharing the
database, at the moment they commit.

`Listener` is the other end: its own psycopg connection (LISTEN), meant for one worker
thread, which calls `wait(timeout)` in a loop. Notifications sent while it was not
listening are lost, so each (re)connection is reported as `Changes(everything=True)`: read
everything once. When the server drops the connection the listener says so (`connected`
turns False) and tries again at most every `retry_s` seconds, each try within the caller's
`wait`. An SQLite store has no server to listen to: `available` says so, and its windows keep
their own way of noticing writes.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from .errors import StoreError

#: The one channel every commit is announced on.
CHANNEL = "boris_commits"
#: PostgreSQL refuses a payload of 8000 bytes or more: longer lists are sent in parts.
_PAYLOAD_LIMIT = 7000


class NotifyUnavailable(StoreError):
    """The store's database cannot announce commits (an SQLite file)."""

    code = "notify_unavailable"


def available(url: str) -> bool:
    """Whether a store at `url` announces its commits (PostgreSQL does; SQLite does not)."""
    return url.startswith("postgresql")


def payloads(task_ids: Iterable[str]) -> list[str]:
    """The notification payloads naming `task_ids`: JSON lists, each under the server's limit."""
    parts: list[str] = []
    current: list[str] = []
    for task_id in sorted(set(task_ids)):
        candidate = json.dumps([*current, task_id], separators=(",", ":"))
        if current and len(candidate.encode()) > _PAYLOAD_LIMIT:
            parts.append(json.dumps(current, separators=(",", ":")))
            current = [task_id]
        else:
            current.append(task_id)
    if current:
        parts.append(json.dumps(current, separators=(",", ":")))
    return parts


def announce(conn: Connection, task_ids: Iterable[str]) -> None:
    """Inside a write transaction: tell listeners, on commit, which tasks it wrote to.

    Nothing on SQLite. On PostgreSQL the notification is queued with the transaction: it is
    delivered when (and only if) the transaction commits."""
    if conn.dialect.name != "postgresql":
        return
    from . import db

    for payload in payloads(task_ids):
        # Nothing to read back: it goes out with the COMMIT, in the same round trip.
        db.queue(conn, "SELECT pg_notify(%s, %s)", (CHANNEL, payload))


@dataclass(frozen=True)
class Changes:
    """What commits touched since the last `wait`: these tasks, or possibly anything
    (`everything`: notifications may have been missed while not listening)."""

    task_ids: frozenset[str] = frozenset()
    everything: bool = False

    def touches(self, task_id: str | None) -> bool:
        return self.everything or (task_id is not None and task_id in self.task_ids)


def _decode(payload: str) -> set[str] | None:
    """The task ids a payload names, or None for one this program did not send."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if isinstance(data, list) and all(isinstance(x, str) for x in data):
        return set(data)
    return None


def conninfo(url: str) -> str:
    """The psycopg connection string for a store URL (`postgresql+psycopg://…`)."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class Listener:
    """Hears every commit to a PostgreSQL store. Use it from one thread: `wait`, then `close`."""

    def __init__(
        self,
        url: str,
        *,
        channel: str = CHANNEL,
        retry_s: float = 1.0,
        connect_timeout_s: int = 5,
    ) -> None:
        if not available(url):
            raise NotifyUnavailable(
                "this store's database does not announce commits (only PostgreSQL does)"
            )
        self._conninfo = conninfo(url)
        self._channel = channel
        self._retry_s = retry_s
        self._connect_timeout_s = connect_timeout_s
        self._conn: Any = None
        self._next_try = 0.0
        self._closed = False
        #: Times the server dropped us; and the last reason, for a status line.
        self.drops = 0
        self.last_error: str | None = None

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def backend_pid(self) -> int | None:
        """The server process listening for us (to find it in pg_stat_activity)."""
        return int(self._conn.info.backend_pid) if self._conn is not None else None

    def _connect(self) -> bool:
        import psycopg
        from psycopg import sql

        self._next_try = time.monotonic() + self._retry_s
        try:
            conn = psycopg.connect(
                self._conninfo,
                autocommit=True,
                connect_timeout=self._connect_timeout_s,
                application_name="boris listener",
            )
        except psycopg.Error as exc:
            self.last_error = (
                str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            )
            return False
        try:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
        except psycopg.Error as exc:
            self.last_error = str(exc).strip().splitlines()[0]
            with contextlib.suppress(Exception):
                conn.close()
            return False
        self._conn = conn
        self.last_error = None
        return True

    def _drop(self, exc: BaseException) -> None:
        conn, self._conn = self._conn, None
        self.drops += 1
        text = str(exc).strip()
        self.last_error = text.splitlines()[0] if text else type(exc).__name__
        self._next_try = time.monotonic()  # try again at once: the server may be back
        with contextlib.suppress(Exception):
            conn.close()

    def wait(self, timeout: float) -> Changes | None:
        """Block up to `timeout` seconds for commits; what they touched, or None if none.

        Not connected (at first, or after the server dropped us): try to connect, at most
        every `retry_s` seconds; a connection made is `Changes(everything=True)`, since what
        was written while nobody listened is unknown."""
        if self._closed:
            raise StoreError("the listener is closed")
        if self._conn is None:
            wait = self._next_try - time.monotonic()
            if wait > 0:
                time.sleep(min(wait, timeout))
                if time.monotonic() < self._next_try:
                    return None
            if not self._connect():
                return None
            return Changes(everything=True)
        import psycopg

        ids: set[str] = set()
        everything = False
        try:
            heard = list(self._conn.notifies(timeout=timeout, stop_after=1))
            if heard:
                # Several commits often land together: take whatever else is already here.
                heard += list(self._conn.notifies(timeout=0.0))
        except (psycopg.Error, OSError) as exc:
            self._drop(exc)
            return None
        for note in heard:
            named = _decode(note.payload)
            if named is None:
                everything = True
            else:
                ids |= named
        if not heard:
            return None
        return Changes(frozenset(ids), everything)

    def close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
