"""What a process's next write to a task is built on, checked by the rows' versions (issue 44).

A process's next write to a task it wrote is sent in one exchange, built on the task's row,
lease, heartbeat and keyring head as its last write left them; the server's guard checks,
under the task's row lock, that none of those rows changed since: the rows' versions as the
server keeps them (their xmin), not a hash of their contents (store.tx._FINGERPRINT). A
write that appended to a task without touching its lease reads back only the task's row.
These tests change each row from another process (a heartbeat has no event and leaves the
task's row as it was) and check that the next write sees the change, and that a process's
own lease events still teach its next write (one wait)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_pg_round_trips import DelayProxy, _other, _waits

from store import Actor, Store
from store import commands as c
from store.errors import CommandRejected
from store.services.verify import verify
from store.tx import Guesses

HOLDER = Actor(kind="agent", id="a1")
OTHER_AGENT = Actor(kind="agent", id="a2")


def test_a_heartbeat_from_another_process_fences_the_next_write(
    via: Store, proxy: DelayProxy, pg_url: str, tmp_path: Path
) -> None:
    """Agent a2 writes to a task whose lease (a1's) expired, so its writes are accepted and
    its process knows the lease as expired (its notes wait once: built on that knowledge).
    a1's process renews the lease: no event, the task's row unchanged, only the heartbeat's
    row. a2's next write must see the lease alive and be refused, not be built on the
    expired lease it knew."""
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), HOLDER)
    with _other(pg_url, tmp_path, "holder") as holder:
        lease = holder.execute(c.AcquireLease(task_id=tid, session_id="s1", ttl_seconds=1), HOLDER)
        time.sleep(1.3)
        via.execute(c.RecordNote(task_id=tid, text="while expired"), OTHER_AGENT)
        time.sleep(Guesses._COLD_S + 0.1)  # its knowledge was stale once: not guessed a while
        note = c.RecordNote(task_id=tid, text="while expired")
        assert _waits(proxy, lambda: via.execute(note, OTHER_AGENT), n=2) == 1
        holder.execute(
            c.RenewLease(task_id=tid, lease_token=lease["token"], ttl_seconds=60), HOLDER
        )
        with pytest.raises(CommandRejected, match="holds this task's lease"):
            via.execute(c.RecordNote(task_id=tid, text="after the heartbeat"), OTHER_AGENT)
        texts = [e["payload"].get("text") for e in via.events(tid)]
        assert "after the heartbeat" not in texts
        assert texts[-4:] == ["while expired"] * 4
        assert verify(via, tid).ok


def test_a_lease_acquired_and_released_by_this_process_teaches_its_next_write(
    via: Store, proxy: DelayProxy
) -> None:
    """The writes that change the task's lease read the whole row back (the lease's new
    version with it): the next write under the lease, and the next after its release, wait
    once, and every one is in the verified chain."""
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), HOLDER)
    lease = via.execute(c.AcquireLease(task_id=tid, session_id="s1"), HOLDER)
    note = c.RecordNote(task_id=tid, text="under the lease", lease_token=lease["token"])
    assert _waits(proxy, lambda: via.execute(note, HOLDER), n=3) == 1
    via.execute(c.ReleaseLease(task_id=tid, lease_token=lease["token"]), HOLDER)
    after = c.RecordNote(task_id=tid, text="after the release")
    proxy.reset()
    via.execute(after, HOLDER)
    assert proxy.counts()[0] == 1
    events = via.events(tid)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert verify(via, tid).ok


def test_another_process_writing_between_is_seen_though_only_the_row_is_read_back(
    via: Store, proxy: DelayProxy, pg_url: str, tmp_path: Path
) -> None:
    """This process's notes read back only the task's row; another process's note between
    two of them changes that row's version: the next note is made again on the new head,
    and once the task is guessed again, a note waits once."""
    tid = via.execute(c.CreateTask(title="t", owner="o", objective="x"), HOLDER)
    for i in range(2):
        via.execute(c.RecordNote(task_id=tid, text=f"mine {i}"), HOLDER)
    with _other(pg_url, tmp_path, "b") as other:
        other.execute(c.RecordNote(task_id=tid, text="theirs"), OTHER_AGENT)
    via.execute(c.RecordNote(task_id=tid, text="mine after"), HOLDER)
    time.sleep(Guesses._COLD_S + 0.1)  # a missed task is not guessed again for a while
    note = c.RecordNote(task_id=tid, text="again")
    assert _waits(proxy, lambda: via.execute(note, HOLDER), n=3) == 1
    texts = [e["payload"].get("text") for e in via.events(tid)][1:]
    assert texts[:4] == ["mine 0", "mine 1", "theirs", "mine after"]
    assert verify(via, tid).ok
