"""The head read in a process that writes (store.reads.heads): on the writer connection,
the heads its own commits made are kept as the query would read them, and nothing another
connection committed is ever missed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from store import Actor, Store
from store import commands as c
from store.commands.checkpoints import WriteCheckpoint

ANA = Actor(kind="person", id="ana", name="Ana Lind")
BOT = Actor(kind="agent", id="bot")


def queried(directory: Path, task_id: str) -> Any:
    """The head as a store that never wrote reads it: by the query."""
    with Store.open(directory, create=False) as other:
        return other.head_checkpoint(task_id)


def test_the_heads_a_write_keeps_are_the_heads_the_query_reads(tmp_path: Path) -> None:
    d = tmp_path / "s"
    with Store.open(d) as s:
        tid = s.execute(c.CreateTask(title="t", owner="ana", objective="x"), BOT)
        s.execute(c.AddCriterion(task_id=tid, text="it ships"), BOT)
        first = s.execute(WriteCheckpoint(task_id=tid, reason="milestone", note="m1"), ANA)
        assert s.head_checkpoint(tid) == queried(d, tid)
        second = s.execute(WriteCheckpoint(task_id=tid, reason="milestone", note='ü "'), ANA)
        assert s.head_checkpoint(tid)["checkpoint_id"] == second
        assert s.head_checkpoint(tid) == queried(d, tid)
        # A fork, then its merge: the newest head, as the query says.
        branch = s.execute(
            WriteCheckpoint(task_id=tid, reason="handoff", note="b", supersedes=[first]), BOT
        )
        assert s.head_checkpoint(tid)["checkpoint_id"] == branch
        assert s.head_checkpoint(tid) == queried(d, tid)
        merged = s.execute(
            WriteCheckpoint(
                task_id=tid, reason="milestone", note="m", supersedes=[branch], merge=[second]
            ),
            ANA,
        )
        head = s.head_checkpoint(tid)
        assert head["checkpoint_id"] == merged and head["merged"] == [second]
        assert head == queried(d, tid)
        # An event that is not a checkpoint: the head stays, read again.
        s.execute(c.RecordNote(task_id=tid, text="later"), BOT)
        assert s.head_checkpoint(tid) == queried(d, tid)
        # Each caller gets its own dict.
        mine = s.head_checkpoint(tid)
        mine["state"]["criteria"].clear()
        assert s.head_checkpoint(tid)["state"]["criteria"]


def test_a_checkpoint_another_connection_writes_is_never_missed(tmp_path: Path) -> None:
    d = tmp_path / "s"
    with Store.open(d) as s:
        tid = s.execute(c.CreateTask(title="t", owner="ana", objective="x"), BOT)
        mine = s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), BOT)
        assert s.head_checkpoint(tid)["checkpoint_id"] == mine
        with Store.open(d, create=False) as other:
            theirs = other.execute(WriteCheckpoint(task_id=tid, reason="handoff"), BOT)
        assert s.head_checkpoint(tid)["checkpoint_id"] == theirs
        # And after this process writes again, its own is the head.
        again = s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), BOT)
        assert s.head_checkpoint(tid)["checkpoint_id"] == again
        assert s.head_checkpoint(tid) == queried(d, tid)


def test_a_rolled_back_checkpoint_is_never_kept(tmp_path: Path) -> None:
    d = tmp_path / "s"
    with Store.open(d) as s:
        tid = s.execute(c.CreateTask(title="t", owner="ana", objective="x"), BOT)
        kept = s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), BOT)
        assert s.head_checkpoint(tid)["checkpoint_id"] == kept
        with pytest.raises(RuntimeError), s.transaction() as tx:
            from store.commands import execute

            execute(tx, WriteCheckpoint(task_id=tid, reason="milestone"), BOT)
            raise RuntimeError("the caller gave up")
        assert s.head_checkpoint(tid)["checkpoint_id"] == kept
        assert s.head_checkpoint(tid) == queried(d, tid)


def test_a_head_read_never_waits_for_a_write_in_progress(tmp_path: Path) -> None:
    import threading
    import time

    from store.commands import execute

    d = tmp_path / "s"
    with Store.open(d) as s:
        tid = s.execute(c.CreateTask(title="t", owner="ana", objective="x"), BOT)
        kept = s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), BOT)
        inside, done = threading.Event(), threading.Event()

        def slow_write() -> None:
            with s.transaction() as tx:
                execute(tx, WriteCheckpoint(task_id=tid, reason="milestone"), BOT)
                inside.set()
                assert done.wait(10)

        writer = threading.Thread(target=slow_write)
        writer.start()
        assert inside.wait(10)
        t0 = time.monotonic()
        head = s.head_checkpoint(tid)  # the committed head, read beside the write
        waited = time.monotonic() - t0
        done.set()
        writer.join(10)
        assert head is not None and head["checkpoint_id"] == kept
        assert waited < 1.0
        assert s.head_checkpoint(tid) == queried(d, tid) != head
