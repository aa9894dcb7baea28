"""How many times a write waits for PostgreSQL (issue 36): counted on the real server through
benchmarks/pg_delay_proxy.py, which counts the client's flights (a burst sent after the
server's ReadyForQuery). Before issue 36 an agent's note waited eleven times and a
checkpoint twelve; now the task's row (lock, head, lease, clock), the keyring head with the
queued writes, and the COMMIT with NOTIFY."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from store import Actor, Store
from store import commands as c
from store.commands.checkpoints import WriteCheckpoint
from store.errors import CommandRejected
from store.services.verify import verify

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from pg_delay_proxy import DelayProxy

AGENT = Actor(kind="agent", id="a1")
PERSON = Actor(kind="person", id="p1")
#: The waits a write makes now: task row, keyring head (+ queued writes), COMMIT (+ NOTIFY).
WAITS = 3


@pytest.fixture
def proxy(pg_url: str) -> Iterator[DelayProxy]:
    u = make_url(pg_url)
    p = DelayProxy(u.host or "127.0.0.1", u.port or 5432).start()
    yield p
    p.stop()


@pytest.fixture
def via(proxy: DelayProxy, pg_url: str, tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "s", url=proxy.url_for(pg_url)) as s:
        yield s


def _waits(proxy: DelayProxy, write: Any, n: int = 5) -> float:
    write()  # the connection is open and warm: the loop counts only the writes
    proxy.reset()
    for _ in range(n):
        write()
    return proxy.counts()[0] / n


def test_an_agents_note_waits_at_most_three_times(via: Store, proxy: DelayProxy) -> None:
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    note = c.RecordNote(task_id=tid, text="a step")
    assert _waits(proxy, lambda: via.execute(note, AGENT)) <= WAITS


def test_a_persons_note_waits_at_most_three_times(via: Store, proxy: DelayProxy) -> None:
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), PERSON)
    note = c.RecordNote(task_id=tid, text="a step")
    assert _waits(proxy, lambda: via.execute(note, PERSON)) <= WAITS


def test_a_repeated_checkpoint_waits_at_most_three_times(via: Store, proxy: DelayProxy) -> None:
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    cmd = WriteCheckpoint(task_id=tid, reason="milestone", note="")
    assert _waits(proxy, lambda: via.execute(cmd, AGENT)) <= WAITS


def test_writes_queued_in_one_exchange_are_all_there_and_chained(
    via: Store, proxy: DelayProxy
) -> None:
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    for i in range(5):
        via.execute(c.RecordNote(task_id=tid, text=f"n{i}"), AGENT)
    via.execute(WriteCheckpoint(task_id=tid, reason="milestone", note=""), AGENT)
    events = via.events(tid)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len(events) >= 7
    assert verify(via, tid).ok


def test_a_refused_write_sends_nothing_it_queued(via: Store, proxy: DelayProxy) -> None:
    """A command refused after its event was queued (here: a second task with the same id in
    the same transaction) leaves no trace: the queued statements were never sent."""
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    before = len(via.events(tid))
    with pytest.raises(CommandRejected):
        via.execute_all(
            [c.RecordNote(task_id=tid, text="queued"), c.RecordNote(task_id="nope", text="x")],
            AGENT,
        )
    assert len(via.events(tid)) == before
    via.execute(c.RecordNote(task_id=tid, text="after"), AGENT)
    assert len(via.events(tid)) == before + 1


def test_a_dropped_idle_connection_is_replaced_before_a_write(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool no longer pings before every checkout (a round trip per write); one idle
    longer than db._IDLE_PING_S is still pinged, and a dead one replaced, not failed."""
    import psycopg

    from store import db

    monkeypatch.setattr(db, "_IDLE_PING_S", 0.0)
    with Store.open(tmp_path / "s", url=pg_url) as s:
        tid = s.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
        plain = make_url(pg_url).set(drivername="postgresql").render_as_string(False)
        with psycopg.connect(plain, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        s.execute(c.RecordNote(task_id=tid, text="after the server dropped us"), AGENT)
        assert len(s.events(tid)) == 2
