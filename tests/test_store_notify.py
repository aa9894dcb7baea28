"""Commit notices on a team store (store.notify): PostgreSQL's NOTIFY, sent inside each write
transaction, reaches a listener on commit only; a dropped listener reconnects and says that
anything may have changed; an SQLite store announces nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from test_team_roles import Team, team  # noqa: F401  (the team roles fixture)

from store import Store, notify
from store import commands as c
from store.errors import CommandRejected
from store.model import Actor

AGENT = Actor(kind="agent", id="agent-1", name="Tester")


@pytest.fixture
def pg_store(tmp_path: Path, pg_url: str) -> Iterator[Store]:
    s = Store.open(tmp_path / "here", url=pg_url)
    yield s
    s.close()


@pytest.fixture
def listening(pg_store: Store) -> Iterator[notify.Listener]:
    listener = pg_store.listener()
    assert listener is not None
    # Connecting is reported as "anything may have changed": nobody listened before.
    assert listener.wait(5) == notify.Changes(everything=True)
    assert listener.connected
    yield listener
    listener.close()


def _heard(listener: notify.Listener, within: float = 2.0) -> set[str]:
    """Every task id announced within `within` seconds (until a wait hears nothing)."""
    ids: set[str] = set()
    end = time.monotonic() + within
    while time.monotonic() < end:
        changes = listener.wait(min(0.3, end - time.monotonic()))
        if changes is None:
            if ids:
                break
            continue
        assert not changes.everything
        ids |= changes.task_ids
    return ids


def test_a_commit_is_announced_with_the_tasks_it_wrote(
    pg_store: Store, listening: notify.Listener
) -> None:
    pg_store.execute_all(
        [
            c.CreateTask(task_id="t1", title="a", owner="o", objective="x"),
            c.CreateTask(task_id="t2", title="b", owner="o", objective="y"),
        ],
        AGENT,
    )
    assert _heard(listening) == {"t1", "t2"}
    pg_store.execute(c.AmendObjective(task_id="t2", text="z", reason="clearer"), AGENT)
    assert _heard(listening) == {"t2"}


def test_a_write_from_another_store_object_is_heard_within_a_second(
    tmp_path: Path, pg_url: str, listening: notify.Listener
) -> None:
    with Store.open(tmp_path / "elsewhere", url=pg_url) as other:
        other.execute(c.CreateTask(task_id="far", title="a", owner="o", objective="x"), AGENT)
        committed = time.monotonic()
        changes = listening.wait(1.0)
        latency = time.monotonic() - committed
    assert changes is not None and changes.task_ids == {"far"}
    assert latency < 1.0


def test_a_rolled_back_write_is_never_announced(
    pg_store: Store, listening: notify.Listener
) -> None:
    pg_store.execute(c.CreateTask(task_id="t1", title="a", owner="o", objective="x"), AGENT)
    assert _heard(listening) == {"t1"}
    # A dry run (check) appends and rolls back; a refused command rolls back; so does a
    # transaction its caller abandons after emitting.
    pg_store.check(c.AmendObjective(task_id="t1", text="y", reason="r"), AGENT)
    with pytest.raises(CommandRejected):
        pg_store.execute(c.CreateTask(task_id="t1", title="again", owner="o", objective="x"), AGENT)

    class Abandon(Exception):
        pass

    with pytest.raises(Abandon), pg_store.transaction() as tx:
        c.execute(tx, c.AmendObjective(task_id="t1", text="y", reason="r"), AGENT)
        notify.announce(tx.conn, ["t1", "ghost"])
        raise Abandon
    assert listening.wait(0.5) is None
    assert pg_store.task("t1")["objective"]["text"] == "x"
    # The listener still hears the next commit: silence above was not deafness.
    pg_store.execute(c.AmendObjective(task_id="t1", text="z", reason="r"), AGENT)
    assert _heard(listening) == {"t1"}


def test_a_listener_the_server_drops_reconnects_and_asks_for_one_full_reload(
    pg_store: Store, pg_url: str, listening: notify.Listener
) -> None:
    pid = listening.backend_pid()
    assert pid is not None
    with psycopg.connect(notify.conninfo(pg_url), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    # The drop is noticed on the next wait, and written while nobody listens is lost...
    assert listening.wait(2.0) is None
    assert not listening.connected and listening.drops == 1
    pg_store.execute(c.CreateTask(task_id="missed", title="a", owner="o", objective="x"), AGENT)
    # ... so the reconnection says "anything may have changed" (the window reloads once).
    assert listening.wait(2.0) == notify.Changes(everything=True)
    assert listening.connected and listening.backend_pid() != pid
    pg_store.execute(c.CreateTask(task_id="heard", title="a", owner="o", objective="x"), AGENT)
    assert _heard(listening) == {"heard"}


def test_a_listener_that_cannot_connect_waits_and_retries(pg_url: str) -> None:
    from sqlalchemy.engine import make_url

    nowhere = make_url(pg_url).set(database="no_such_database").render_as_string(False)
    listener = notify.Listener(nowhere, retry_s=0.2)
    start = time.monotonic()
    assert listener.wait(1.0) is None
    assert not listener.connected and listener.last_error
    # The next try waits out the retry interval rather than hammering the server.
    assert listener.wait(0.05) is None
    assert time.monotonic() - start >= 0.05
    listener.close()
    with pytest.raises(notify.StoreError):
        listener.wait(0.1)


def test_many_tasks_are_announced_in_parts_under_the_servers_limit(
    pg_store: Store, listening: notify.Listener
) -> None:
    ids = [f"task-{i:04d}-" + "x" * 60 for i in range(400)]
    parts = notify.payloads(ids)
    assert len(parts) > 1 and all(len(p.encode()) < 8000 for p in parts)
    with pg_store.transaction() as tx:
        notify.announce(tx.conn, ids)
    assert _heard(listening) == set(ids)


def test_an_sqlite_store_announces_nothing_and_has_no_listener(tmp_path: Path) -> None:
    with Store.open(tmp_path / "local") as local:
        assert local.listener() is None
        local.execute(c.CreateTask(task_id="t1", title="a", owner="o", objective="x"), AGENT)
        with pytest.raises(notify.NotifyUnavailable):
            notify.Listener(local.location.url)


def test_a_reviewer_logins_listener_hears_an_agent_logins_commit(
    team: Team,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
) -> None:
    """With the team's roles (store.team) neither login needs a grant to announce or listen."""
    with (
        Store.open(tmp_path / "reviewer", url=team.reviewer_url) as reviewer,
        Store.open(tmp_path / "agent", url=team.agent_url) as agent,
    ):
        listener = reviewer.listener()
        assert listener is not None
        with listener:
            assert listener.wait(5) == notify.Changes(everything=True)
            tid = agent.execute(c.CreateTask(title="ship", owner="ana", objective="go"), AGENT)
            assert _heard(listener) == {tid}
