"""How many times a write waits for PostgreSQL (issue 36): counted on the real server through
benchmarks/pg_delay_proxy.py, which counts the client's flights (a burst sent after the
server's ReadyForQuery). Before issue 36 an agent's note waited eleven times and a
checkpoint twelve. A process's first write to a task waits twice (the task's row with its
lock, head, lease and clock; then the write with the COMMIT); its next writes to the task,
built on the row its last write left and checked by the server's guard under the lock
(store.tx.Guesses, migration 0018), wait once. A guess that is wrong (another process
wrote, a person took the task over, a clock estimate off) is never written: the write is
made again the ordinary way."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from store import Actor, Store, db
from store import commands as c
from store.commands.checkpoints import WriteCheckpoint
from store.errors import CommandRejected, LeaseLost
from store.services.verify import verify

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from pg_delay_proxy import DelayProxy

AGENT = Actor(kind="agent", id="a1")
PERSON = Actor(kind="person", id="p1")
#: The waits a process's next write to a task makes: the whole write with the COMMIT.
WAITS = 1


def _waits(proxy: DelayProxy, write: Any, n: int = 5) -> float:
    write()  # the connection is open and warm: the loop counts only the writes
    proxy.reset()
    for _ in range(n):
        write()
    return proxy.counts()[0] / n


def test_an_agents_note_waits_once(via: Store, proxy: DelayProxy) -> None:
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    note = c.RecordNote(task_id=tid, text="a step")
    assert _waits(proxy, lambda: via.execute(note, AGENT)) <= WAITS


def test_a_persons_note_waits_once(via: Store, proxy: DelayProxy) -> None:
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), PERSON)
    note = c.RecordNote(task_id=tid, text="a step")
    assert _waits(proxy, lambda: via.execute(note, PERSON)) <= WAITS


def test_a_repeated_checkpoint_waits_once(via: Store, proxy: DelayProxy) -> None:
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


def _other(pg_url: str, tmp_path: Path, name: str) -> Store:
    """Another process's store on the same database (its own knowledge of the tasks)."""
    return Store.open(tmp_path / name, url=pg_url)


def test_a_first_write_waits_twice_and_teaches_the_next(via: Store, proxy: DelayProxy) -> None:
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    via._guesses.forget([tid])  # as a process that never wrote the task
    proxy.reset()
    via.execute(c.RecordNote(task_id=tid, text="first"), AGENT)
    assert proxy.counts()[0] == 2
    proxy.reset()
    via.execute(c.RecordNote(task_id=tid, text="second"), AGENT)
    assert proxy.counts()[0] == 1


def test_writers_taking_turns_keep_one_chain_and_the_database_clock(
    via: Store, proxy: DelayProxy, pg_url: str, tmp_path: Path
) -> None:
    """Two processes alternate on one task: each one's knowledge is stale every time. Every
    write lands once, chained, its time never before the previous event's."""
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    with _other(pg_url, tmp_path, "b") as other:
        for i in range(12):
            (via if i % 2 else other).execute(c.RecordNote(task_id=tid, text=f"n{i}"), AGENT)
        events = via.events(tid)
        assert [e["seq"] for e in events] == list(range(1, 14))
        texts = [e["payload"].get("text") for e in events[1:]]
        assert texts == [f"n{i}" for i in range(12)]
        times = [e["at"] for e in events]
        assert times == sorted(times)
        assert verify(via, tid).ok


def test_a_session_taken_over_is_refused_though_its_process_knew_the_lease(
    via: Store, pg_url: str, tmp_path: Path
) -> None:
    """The process knew the lease as its own; a person took the task over from another
    process. Its next write, built on that knowledge, is caught by the guard and refused
    the ordinary way: LeaseLost, nothing written."""
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    lease = via.execute(c.AcquireLease(task_id=tid, session_id="s1"), AGENT)
    via.execute(c.RecordNote(task_id=tid, text="mine", lease_token=lease["token"]), AGENT)
    with _other(pg_url, tmp_path, "person") as person:
        person.execute(c.TakeOver(task_id=tid, reason="I finish it"), PERSON)
    count = len(via.events(tid))
    with pytest.raises(LeaseLost):
        via.execute(c.RecordNote(task_id=tid, text="late", lease_token=lease["token"]), AGENT)
    assert len(via.events(tid)) == count


def test_a_refusal_built_on_stale_knowledge_is_judged_again(
    via: Store, pg_url: str, tmp_path: Path
) -> None:
    """This process knew token 1 as the lease; meanwhile the task was taken over, handed back
    and the same agent acquired token 3 in another process. A write with token 3 would be
    refused on what this process knew: it is judged again on the row, and written."""
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    first = via.execute(c.AcquireLease(task_id=tid, session_id="s1"), AGENT)
    via.execute(c.RecordNote(task_id=tid, text="one", lease_token=first["token"]), AGENT)
    with _other(pg_url, tmp_path, "person") as person, _other(pg_url, tmp_path, "a2") as again:
        person.execute(c.TakeOver(task_id=tid, reason="a look"), PERSON)
        person.execute(c.ReleaseLease(task_id=tid), PERSON)
        later = again.execute(c.AcquireLease(task_id=tid, session_id="s2"), AGENT)
    assert later["token"] > first["token"]
    via.execute(c.RecordNote(task_id=tid, text="two", lease_token=later["token"]), AGENT)
    assert via.events(tid)[-1]["payload"]["text"] == "two"
    assert verify(via, tid).ok


def test_a_clock_estimate_off_is_refused_and_the_databases_clock_used(
    via: Store, proxy: DelayProxy
) -> None:
    """The process's estimate of the server's clock ten seconds ahead: the guard refuses the
    time, and the write is made again with the clock the server gives."""
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
    via.execute(c.RecordNote(task_id=tid, text="warm"), AGENT)
    offset = via._guesses._offset_us
    assert offset is not None
    via._guesses._offset_us = offset + 10_000_000
    proxy.reset()
    via.execute(c.RecordNote(task_id=tid, text="now"), AGENT)
    # The refused exchange and its ROLLBACK, then the row and the write.
    assert proxy.counts()[0] == 4
    with via.read() as conn:
        server_now = db.database_now(conn)
    assert via.events(tid)[-1]["at"] <= server_now
