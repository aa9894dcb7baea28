"""The write path's economy keeps the record right: a checkpoint's projection takes the
task's heads from the row its transaction already read (not read again), and the durable
writes run a fixed, small number of statements (counted on SQLite's driver)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from store import Actor, Store
from store import commands as c
from store.commands.checkpoints import StopRun, WriteCheckpoint
from store.reads.checkpoints import heads as task_heads

AGENT = Actor(kind="agent", id="writer-3")


def new_task(s: Store, ws: Path) -> str:
    tid: str = s.execute(
        c.CreateTask(title="t", owner="ana", objective="ship it", scope_paths=[str(ws)]), AGENT
    )
    s.execute(c.AddCriterion(task_id=tid, text="it ships"), AGENT)
    return tid


def heads(s: Store, tid: str) -> list[str]:
    with s.read() as conn:
        return task_heads(conn, tid)


def assert_rebuild_agrees(s: Store, tid: str) -> None:
    before = s.projection_dump(tid)
    s.rebuild(tid)  # replays every event with no row at hand: the heads are read
    assert s.projection_dump(tid) == before


def test_heads_from_the_transaction_s_row_match_a_replay(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    first = s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), AGENT)
    second = s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), AGENT)
    # A fork: a checkpoint continuing from the superseded `first` makes a second head.
    fork = s.execute(WriteCheckpoint(task_id=tid, reason="milestone", supersedes=[first]), AGENT)
    assert sorted(heads(s, tid)) == sorted([second, fork])
    assert_rebuild_agrees(s, tid)
    # Several checkpoints and another event in one transaction: each checkpoint starts from
    # the heads the one before it left.
    merged, _, after = s.execute_all(
        [
            WriteCheckpoint(task_id=tid, reason="milestone", supersedes=[second], merge=[fork]),
            c.RecordNote(task_id=tid, text="between"),
            WriteCheckpoint(task_id=tid, reason="handoff"),
        ],
        AGENT,
    )
    assert heads(s, tid) == [after]
    assert merged != after
    assert_rebuild_agrees(s, tid)
    stopped = s.execute(StopRun(task_id=tid, reason="done for today"), AGENT)
    assert heads(s, tid) == [stopped]
    assert_rebuild_agrees(s, tid)


def _statements(s: Store, write: object) -> list[str]:
    """The SQL the driver ran for one call of `write` on the store's writer connection."""
    with s.transaction() as tx:
        raw = tx.conn.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)
    seen: list[str] = []
    raw.set_trace_callback(seen.append)
    try:
        write()  # type: ignore[operator]
    finally:
        raw.set_trace_callback(None)
    return [" ".join(q.split()).split(" ")[0] for q in seen]


def test_a_durable_write_on_sqlite_runs_few_statements(tmp_path: Path, ws: Path) -> None:
    with Store.open(tmp_path / "store") as s:
        tid = new_task(s, ws)
        ck = WriteCheckpoint(task_id=tid, reason="milestone")
        s.execute(ck, AGENT)
        # The state held since the last checkpoint: the task's row read with the lease's fence
        # (an agent's write: store.commands.core.fence) and the keyring's head in one
        # statement, the event, the task's head and heads in one update, the lineage row;
        # BEGIN, COMMIT.
        assert _statements(s, lambda: s.execute(ck, AGENT)) == [
            "BEGIN",
            "SELECT",
            "INSERT",
            "UPDATE",
            "INSERT",
            "COMMIT",
        ]
        # A plain append: the row (with the fence and the keyring's head), the event, the head.
        note = c.RecordNote(task_id=tid, text="a step")
        assert _statements(s, lambda: s.execute(note, AGENT)) == [
            "BEGIN",
            "SELECT",
            "INSERT",
            "UPDATE",
            "COMMIT",
        ]
        assert len(heads(s, tid)) == 1
