"""A team store's write is one simple query (issue 44, store.db._exchange): each statement
runs as EXECUTE of a statement the connection prepared, its values quoted in as literals.
These tests hold what that must never change: every value reaches the database exactly as
given, whatever quotes, backslashes or placeholders it carries; statements the server lost
(deallocated behind the store's back) are prepared again without a failed write; and the
cheaper triggers of migration 0020 still record the inserting role and still refuse an agents'
role a bare projection write, on a store migrated from 0019 as on a new one."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from store import Actor, Store
from store import commands as c
from store.cli import main
from store.services.verify import verify

AGENT = Actor(kind="agent", id="a1")

#: Texts a naive quoting would break or misread.
AWKWARD = (
    "it's",
    "back\\slash \\' \\\\",
    "E'x' || 'y'",
    "$1 $2 $$dollar$$",
    "%s %(x)s %% %",
    "ünïcödé 🙂 \u2028",
    "');\nDROP TABLE events;--",
    "x" * 100_000,
)


def test_awkward_texts_are_written_and_read_back_exactly(store: Store) -> None:
    tid = store.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    for text in AWKWARD:
        store.execute(c.RecordNote(task_id=tid, text=text), AGENT)
    notes = [e.payload["text"] for e in store.events(tid) if e.type == "note.recorded"]
    assert notes == list(AWKWARD)
    assert verify(store, tid).ok


def _deallocate_everywhere(s: Store, n: int) -> None:
    """DEALLOCATE ALL on `n` of the store's pooled connections at once and on its kept
    writer's (not through psycopg, so neither psycopg nor the store hears of it)."""
    conns = [s.engine.connect() for _ in range(n)]
    kept = s._writes._conn  # the connection the store keeps for its writes (store.writing)
    try:
        for conn in [*conns, *([kept] if kept is not None else [])]:
            raw = conn.connection.driver_connection
            assert raw is not None
            raw.pgconn.exec_(b"DEALLOCATE ALL")
    finally:
        for conn in conns:
            conn.close()


def test_statements_the_server_lost_are_prepared_again(pg_url: str, tmp_path: Path) -> None:
    """A first write to a task is not built on a guess, so nothing would retry it: the
    exchange itself prepares its statements again."""
    with Store.open(tmp_path / "s", url=pg_url) as s:
        for i in range(3):
            _deallocate_everywhere(s, 3)  # the pool's connections, each with statements
            tid = s.execute(c.CreateTask(title=f"t{i}", owner="o", objective="x"), AGENT)
            s.execute(c.RecordNote(task_id=tid, text="a step"), AGENT)
            assert [e.seq for e in s.events(tid)] == [1, 2]
            assert verify(s, tid).ok


def test_the_kept_write_connection_is_replaced_once_the_server_drops_it(
    pg_url: str, tmp_path: Path
) -> None:
    """The store keeps one connection for its writes (no pool checkout a write): when the
    server ends it between two writes, a write finds it broken or pings it, and goes on a
    new one; the chain holds and the pool's readers never get it in autocommit."""
    with Store.open(tmp_path / "s", url=pg_url) as s:
        tid = s.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
        kept = s._writes._conn
        assert kept is not None
        pid = kept.connection.driver_connection.info.backend_pid  # type: ignore[union-attr]
        _admin(pg_url, f"SELECT pg_terminate_backend({pid})")
        # Within a second of its last use it is not pinged: this write may fail, once.
        with contextlib.suppress(sa.exc.DBAPIError):
            s.execute(c.RecordNote(task_id=tid, text="right after"), AGENT)
        s.execute(c.RecordNote(task_id=tid, text="next"), AGENT)
        again = s._writes._conn
        assert again is not None and again is not kept
        texts = [e.payload.get("text") for e in s.events(tid)]
        assert texts[-1] == "next" and texts.count("next") == 1
        assert verify(s, tid).ok
        with s.engine.connect() as reader:
            assert reader.connection.driver_connection.autocommit is False  # type: ignore[union-attr]


def _admin(url: str, sql: str) -> None:
    import psycopg

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(sql)  # no parameters: several statements in one go, as psql runs them


def _at_0019_then_reopened(s: Store, reopen: Callable[[], Store]) -> Store:
    from alembic import command
    from alembic.config import Config

    from store import migrate

    cfg = Config()
    cfg.set_main_option("script_location", str(migrate.MIGRATIONS_DIR))
    with s.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0019")
    s.close()
    again = reopen()
    assert migrate.current_revision(again.engine) == migrate.HEAD
    return again


def test_a_store_at_schema_0019_migrates_and_writes(
    store: Store, open_store: Callable[..., Store]
) -> None:
    tid = store.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    store.execute(c.RecordNote(task_id=tid, text="before"), AGENT)
    with _at_0019_then_reopened(store, open_store) as again:
        again.execute(c.RecordNote(task_id=tid, text="after"), AGENT)
        assert [e.seq for e in again.events(tid)] == [1, 2, 3]
        assert verify(again, tid).ok


def test_after_0020_the_server_still_names_the_role_and_guards_projections(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = f"{os.getpid()}_x20"
    agents, reviewers, service, login = f"ag_{n}", f"rv_{n}", f"svc_{n}", f"login_{n}"
    s = Store.open(tmp_path / "s", url=pg_url)
    with _at_0019_then_reopened(s, lambda: Store.open(tmp_path / "s", url=pg_url)) as again:
        tid = again.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    capsys.readouterr()
    argv = ["roles-sql", "--url", pg_url, "--agents", agents, "--reviewers", reviewers]
    assert main([*argv, "--service", service, "--json"]) == 0
    _admin(pg_url, json.loads(capsys.readouterr().out)["result"]["sql"])
    _admin(pg_url, f"CREATE ROLE {login} LOGIN PASSWORD 'secret' IN ROLE {service}")
    as_agent = make_url(pg_url).set(username=login, password="secret")
    engine = sa.create_engine(as_agent)
    try:
        with engine.connect() as conn:
            # A client naming another role for its row: the server records its own.
            trans = conn.begin()
            role = conn.execute(
                sa.text(
                    "INSERT INTO events (task_id, seq, type, format, payload, actor_kind, "
                    "actor_id, actor_name, at, prev_hash, hash, db_role) VALUES (:t, 99, "
                    "'note.recorded', 1, '{}', 'agent', 'a1', '', 'x', 'p', 'h', 'someone') "
                    "RETURNING db_role"
                ),
                {"t": tid},
            ).scalar_one()
            trans.rollback()
            assert role == login
            # A bare projection write, with no event of its own: refused by the guard.
            with pytest.raises(sa.exc.DBAPIError) as info, conn.begin():
                conn.execute(
                    sa.text("UPDATE tasks SET status = 'completed' WHERE task_id = :t"), {"t": tid}
                )
            diag = getattr(info.value.orig, "diag", None)
            assert (
                getattr(diag, "constraint_name", None) == "projection_written_only_with_its_event"
            )
        # Its writes through the store pass.
        with Store.open(tmp_path / "agent", url=as_agent.render_as_string(False)) as st:
            st.execute(c.RecordNote(task_id=tid, text="through the store"), AGENT)
    finally:
        engine.dispose()
        roles = (login, agents, reviewers, service)
        _admin(pg_url, f"DROP OWNED BY {', '.join(roles)}")
        _admin(pg_url, f"DROP ROLE {', '.join(roles)}")
