"""Projections: the task's events replayed into a scratch database (a private temporary
SQLite database holding only the projection tables) and the replayed rows compared with the
stored ones; the real tables are never written."""

from __future__ import annotations

import sqlite3
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.pool import StaticPool

from ... import projections
from ... import schema as t
from ...record import Event
from .findings import TaskFindings

#: How many differing rows of one projection table are named before the rest are counted.
MAX_ROWS_NAMED = 10


class Scratch:
    """A private temporary SQLite database holding only the projection tables: where a
    task's log is replayed, so the live tables are never written and no write lock is
    taken. SQLite keeps such a database in memory and spills it to a temporary file as it
    grows, so a large task's replay does not have to fit in memory. Each task's replay is
    one transaction, rolled back when the task is done."""

    def __init__(self) -> None:
        def connect() -> sqlite3.Connection:
            raw = sqlite3.connect("", check_same_thread=False, isolation_level=None)
            raw.execute("PRAGMA journal_mode=MEMORY")
            raw.execute("PRAGMA synchronous=OFF")
            return raw

        self.engine = sa.create_engine("sqlite://", creator=connect, poolclass=StaticPool)
        t.metadata.create_all(self.engine, tables=list(t.PROJECTIONS))
        self.conn = self.engine.connect()
        self._raw: Any = self.conn.connection.driver_connection

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()
        self.engine.dispose()

    def begin(self) -> None:
        self._raw.execute("BEGIN")

    def discard(self) -> None:
        self.conn.rollback()
        if self._raw.in_transaction:
            self._raw.execute("ROLLBACK")


class Replay:
    """The log's events applied to the scratch database as they stream by (`see`), until
    one cannot be read (`stop`) or one fails to apply; then compared (`compare`)."""

    def __init__(self, found: TaskFindings, scratch: Scratch) -> None:
        self.found = found
        self.scratch = scratch
        self.replaying = True
        #: Every event of the log could be read (else there is nothing to compare).
        self.decoded_all = True
        self.error: str | None = None
        self.error_seq: int | None = None
        self._pending: Event | None = None
        self._head_only: dict[str, bool] = {}

    def stop(self) -> None:
        """An event could not be read: the projections are not compared with a replay."""
        self.decoded_all = self.replaying = False

    def see(self, event: Event) -> None:
        if not self.replaying:
            return
        # An event that only moves the head is replayed only if no later event moves it
        # again (every apply moves it first): same rows, less work.
        head_only = self._head_only.get(event.type)
        if head_only is None:
            head_only = self._head_only[event.type] = projections.only_advances_head(event.type)
        if head_only:
            self._pending = event
        else:
            self._pending = None
            self._apply(event)

    def finish(self) -> None:
        """The log has ended: the last event that only moved the head, replayed."""
        if self._pending is not None and self.replaying:
            self._apply(self._pending)

    def _apply(self, e: Event) -> None:
        try:
            projections.apply(self.scratch.conn, e)
        except Exception as exc:  # a broken log can make any apply function fail
            reason = " ".join(str(getattr(exc, "orig", None) or exc).splitlines())
            self.error = (
                f"replaying the log failed at seq {e.seq} ({e.type}): "
                f"{type(exc).__name__}: {reason}"
            )
            self.error_seq = e.seq
            self.replaying = False

    def compare(self, conn: Connection) -> None:
        """Each projection table's rows of the task, stored against replayed."""
        if self.error is not None:
            self.found.problem("replay_failed", self.error, self.error_seq)
            return
        if not self.decoded_all:
            return
        task_id = self.found.task_id
        for table in t.PROJECTIONS:
            before = _dump_table(conn, table, task_id)
            after = _dump_table(self.scratch.conn, table, task_id)
            if before != after:
                for message in _row_differences(table, before, after):
                    self.found.problem("projection", message)


def _dump_table(conn: Connection, table: sa.Table, task_id: str) -> list[tuple[Any, ...]]:
    """A task's rows of one projection table in primary-key order (as projections.dump,
    one table at a time, so only one table's rows are held at once)."""
    order = list(table.primary_key.columns)
    q = sa.select(table).where(table.c.task_id == task_id).order_by(*order)
    return [tuple(r) for r in conn.execute(q)]


def _row_differences(
    table: sa.Table, before: list[tuple[Any, ...]], after: list[tuple[Any, ...]]
) -> list[str]:
    names = [c.name for c in table.columns]
    pk = [names.index(c.name) for c in table.primary_key.columns if c.name != "task_id"]

    def key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(row[i] for i in pk)

    def label(k: tuple[Any, ...]) -> str:
        return f"{table.name} row" + (f" {'/'.join(map(str, k))}" if k else "")

    old = {key(r): r for r in before}
    new = {key(r): r for r in after}
    out: list[str] = []
    for k in sorted(set(old) | set(new), key=repr):
        if k not in new:
            out.append(f"{label(k)} is in the projection, but a replay of the log has no such row")
        elif k not in old:
            out.append(f"{label(k)} is missing from the projection; a replay of the log makes it")
        elif old[k] != new[k]:
            cols = [
                f"{n} is {_short(a)}, a replay gives {_short(b)}"
                for n, a, b in zip(names, old[k], new[k], strict=True)
                if a != b
            ]
            out.append(f"{label(k)} differs from a replay of the log: " + "; ".join(cols))
    if len(out) > MAX_ROWS_NAMED:
        out = [*out[:MAX_ROWS_NAMED], f"{table.name}: {len(out) - MAX_ROWS_NAMED} more rows differ"]
    return out


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
