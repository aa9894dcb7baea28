"""Crash safety: a writer process is killed (SIGKILL) at each boundary of an agent's work,
and the reopened store still holds every awkward state and repeats nothing (DESIGN
scenario 7).

The writer is tests/crash_writer.py. It sends a marker after each boundary and blocks
(inside the transaction, for a `*_tx` step); the test reads up to the marker it wants,
kills the process, and reopens the store in this one.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import crash_writer
import pytest
from test_store_integrity import chain_problems

from store import Actor, CommandRejected, Store
from store import commands as c
from store.blobs import hash_file
from store.canonical import digest_of
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoint_state import task_checkpoint_state
from store.commands.checkpoints import WriteCheckpoint
from store.commands.effects import DispatchEffect, ReconcileEffect, RecordResponse
from store.location import DB_NAME

# Long enough for a fork server's first start on a loaded machine; a broken writer fails at
# once (its end of the pipe closes), so this only bounds a writer that hangs.
MARK_TIMEOUT = 60.0

# Writers are forked from one server process (started with sys.executable) that has
# imported the writer and the store once; each is still a process of its own, killed with
# SIGKILL and reaped. A fresh interpreter per writer would spend a second on imports.
_WRITERS = multiprocessing.get_context("forkserver")
# "__main__" first: the server imports the test runner's main script once, so that writers
# do not each run it again; the SQLite dialect is otherwise imported by each writer.
_WRITERS.set_forkserver_preload(["__main__", "crash_writer", "sqlalchemy.dialects.sqlite"])

AGENT = Actor(kind="agent", id="resumer-2")
ANA = Actor(kind="person", id="ana", name="Ana Lind")
BO = Actor(kind="person", id="bo", name="Bo")
OLD = b"old\n"
INTENDED = b"the final report\n"
PARTIAL = b"the fin"


# --- the writer and its kill ---------------------------------------------------------------


@dataclass
class Crashed:
    """What a killed writer left: its store, its workspace, and the marks it printed."""

    store_dir: Path
    ws: Path
    marks: dict[str, dict[str, Any]]

    @property
    def tid(self) -> str:
        return str(self.marks["create"]["task_id"])

    @property
    def db_file(self) -> Path:
        return self.store_dir / DB_NAME

    def reopen(self) -> Store:
        return Store.open(self.store_dir, create=False)


def _read_marks(conn: Connection, until: str) -> dict[str, dict[str, Any]]:
    marks: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + MARK_TIMEOUT
    while until not in marks:
        left = deadline - time.monotonic()
        if left <= 0 or not conn.poll(left):
            pytest.fail(
                f"the writer sent no mark {until!r} within {MARK_TIMEOUT:.0f}s "
                f"(marks so far: {list(marks)})"
            )
        try:
            line = conn.recv_bytes().decode()
        except EOFError:
            pytest.fail(f"the writer ended before mark {until!r} (marks so far: {list(marks)})")
        word, _, rest = line.partition(" ")
        if word == "ERROR":
            pytest.fail(f"the writer failed before mark {until!r}:\n{rest}")
        assert word == "MARK", line
        step, _, data = rest.partition(" ")
        marks[step] = json.loads(data)
    return marks


def crash(tmp: Path, ws: Path, *steps: str) -> Crashed:
    """Run a writer through `steps`, SIGKILL it at the last step's boundary, and reap it."""
    store_dir = tmp / "store"
    # Created (migrated) here, so the writer only opens it: a fresh store costs Alembic.
    Store.open(store_dir).close()
    recv, send = _WRITERS.Pipe(duplex=False)
    proc = _WRITERS.Process(
        target=crash_writer.serve,
        args=(send, str(store_dir), str(ws), list(steps)),
        name="crash-writer",
    )
    try:
        proc.start()
        send.close()  # the writer holds the only sending end: its death is our EOF
        marks = _read_marks(recv, steps[-1])
        assert proc.pid is not None and proc.pid != os.getpid()
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        # Killed while it blocked at the boundary, not exited on its own.
        assert proc.exitcode == -signal.SIGKILL
    finally:
        if proc.pid is not None and proc.exitcode is None:
            proc.kill()
            proc.join(10)
        send.close()
        recv.close()
        if proc.exitcode is not None:
            proc.close()
    return Crashed(store_dir, ws, marks)


@pytest.fixture
def reopened() -> Iterator[list[Store]]:
    """Stores the test reopens are closed at its end, whatever happens."""
    opened: list[Store] = []
    yield opened
    for s in opened:
        s.close()


def reopen(crashed: Crashed, opened: list[Store]) -> Store:
    s = crashed.reopen()
    opened.append(s)
    return s


# --- what every reopened record must be ------------------------------------------------------


def consumed_counts(s: Store, tid: str) -> Counter[str]:
    return Counter(e["payload"]["approval_id"] for e in s.events(tid, types=["approval.consumed"]))


def check_record(s: Store, crashed: Crashed) -> list[dict[str, Any]]:
    """The chain verifies link by link, seqs have no gap, the head is the last event, no
    approval was consumed twice, the projections are a fold of the log, and SQLite agrees."""
    tid = crashed.tid
    assert chain_problems(crashed.db_file, tid) == []
    evs = s.events(tid)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    state = s.task(tid)
    assert (state["last_seq"], state["head_hash"]) == (len(evs), evs[-1]["hash"])
    counts = consumed_counts(s, tid)
    assert all(n == 1 for n in counts.values()), counts
    consumed_rows = {a["approval_id"] for a in state["approvals"] if a["state"] == "consumed"}
    assert consumed_rows == set(counts)
    before = s.projection_dump(tid)
    s.rebuild(tid)
    assert s.projection_dump(tid) == before
    conn = sqlite3.connect(crashed.db_file)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    return evs


def types_of(evs: list[dict[str, Any]]) -> Counter[str]:
    return Counter(e["type"] for e in evs)


def effect(s: Store, tid: str, eid: str) -> dict[str, Any]:
    return next(e for e in s.task(tid)["effects"] if e["effect_id"] == eid)


def approval(s: Store, tid: str, aid: str) -> dict[str, Any]:
    return next(a for a in s.task(tid)["approvals"] if a["approval_id"] == aid)


def committed_as_marked(s: Store, crashed: Crashed, step: str) -> None:
    """The record ends exactly where the writer's last committed boundary said it did."""
    state = s.task(crashed.tid)
    mark = crashed.marks[step]
    assert (state["last_seq"], state["head_hash"]) == (mark["last_seq"], mark["head_hash"])


def assert_refused_and_nothing_written(s: Store, tid: str, cmd: c.Command, match: str) -> None:
    seq = s.task(tid)["last_seq"]
    with pytest.raises(CommandRejected, match=match):
        s.execute(cmd, AGENT)
    assert s.task(tid)["last_seq"] == seq


def assert_not_completable(s: Store, tid: str) -> None:
    s.execute(c.JudgeCriterion(task_id=tid, criterion_id="saved", status="waived", note="n/a"), ANA)
    assert_refused_and_nothing_written(
        s,
        tid,
        c.SetStatus(task_id=tid, status="completed", reason="the agent says it is done"),
        r"unresolved|cannot become completed",
    )


def dispatch(tid: str, eid: str = "eff-a") -> DispatchEffect:
    return DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save")


def approve_anew(s: Store, tid: str, eid: str) -> str:
    aid: str = s.execute(RequestApproval(task_id=tid, effect_id=eid, policy="writes"), AGENT)
    s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved", note="go"), BO)
    return aid


# --- the boundaries ------------------------------------------------------------------------


def test_kill_after_the_intent_is_recorded(tmp_path: Path, ws: Path, reopened: list[Store]) -> None:
    (ws / "a.md").write_bytes(OLD)
    crashed = crash(tmp_path, ws, "create", "plan:a")
    s = reopen(crashed, reopened)
    tid = crashed.tid
    evs = check_record(s, crashed)
    committed_as_marked(s, crashed, "plan:a")

    e = effect(s, tid, "eff-a")
    assert (e["stage"], e["outcome"], e["attempts"], e["observations"]) == (
        "planned",
        None,
        [],
        [],
    )
    assert e["requires_approval"] is True
    old_digest, _ = hash_file(ws / "a.md")
    assert e["intent"]["pre_state"] == {"exists": True, "digest": old_digest, "size": len(OLD)}
    assert (ws / "a.md").read_bytes() == OLD
    assert s.task(tid)["approvals"] == []
    assert s.task(tid)["status"] == "running"
    assert types_of(evs)["effect.planned"] == 1
    assert_not_completable(s, tid)

    # The next actor continues the same intent; it neither plans it again nor skips the
    # approval it needs.
    assert_refused_and_nothing_written(s, tid, dispatch(tid), "requires an approval")
    aid = approve_anew(s, tid, "eff-a")
    assert s.execute(dispatch(tid), AGENT) == 1
    assert consumed_counts(s, tid) == Counter({aid: 1})
    assert types_of(check_record(s, crashed))["effect.planned"] == 1


@pytest.mark.parametrize("where", ["after_the_decision", "inside_the_dispatch_transaction"])
def test_kill_between_approval_and_dispatch(
    tmp_path: Path, ws: Path, reopened: list[Store], where: str
) -> None:
    (ws / "a.md").write_bytes(OLD)
    steps = ["create", "plan:a", "request:a", "approve:a"]
    if where == "inside_the_dispatch_transaction":
        steps.append("dispatch_tx:a")
    crashed = crash(tmp_path, ws, *steps)
    if where == "inside_the_dispatch_transaction":
        held = crashed.marks["dispatch_tx:a"]
        # The kill landed after the approval was consumed and the attempt written, with
        # their pages already spilled into the WAL, but before the commit.
        assert held["result"] == 1
        assert held["emitted"][:2] == ["attempt.dispatched", "approval.consumed"]
        assert held["wal_after"] != held["wal_before"]
    s = reopen(crashed, reopened)
    tid = crashed.tid
    aid = crashed.marks["request:a"]["approval_id"]
    evs = check_record(s, crashed)
    committed_as_marked(s, crashed, "approve:a")

    a = approval(s, tid, aid)
    assert (a["state"], a["consumed_at"], a["consumed_by"]) == ("approved", None, None)
    assert a["decided_by"].to_json() == {"kind": "person", "id": "ana", "name": "Ana Lind"}
    e = effect(s, tid, "eff-a")
    assert (e["stage"], e["outcome"], e["attempts"]) == ("approved", None, [])
    assert types_of(evs)["attempt.dispatched"] == 0
    assert consumed_counts(s, tid) == Counter()
    assert s.task(tid)["status"] == "running"
    assert (ws / "a.md").read_bytes() == OLD

    # The dispatch now consumes the approval exactly once.
    assert s.execute(dispatch(tid), AGENT) == 1
    a = approval(s, tid, aid)
    assert (a["state"], a["consumed_by"]) == ("consumed", "eff-a#1")
    assert effect(s, tid, "eff-a")["attempts"][0]["approval_id"] == aid
    # That attempt fails (the executor's word: reconciled, it did not happen); a new one
    # would need the approval again, and it is spent.
    s.execute(
        RecordResponse(task_id=tid, effect_id="eff-a", reported="failed", error="disk full"), AGENT
    )
    assert_refused_and_nothing_written(s, tid, dispatch(tid), "unknown: reconcile")
    assert s.execute(ReconcileEffect(task_id=tid, effect_id="eff-a"), AGENT) == "absent"
    assert_refused_and_nothing_written(
        s, tid, dispatch(tid), rf"no usable approval for effect eff-a: {aid} is consumed"
    )
    assert len(effect(s, tid, "eff-a")["attempts"]) == 1
    assert consumed_counts(s, tid) == Counter({aid: 1})
    check_record(s, crashed)


@pytest.mark.parametrize("executor_wrote", [True, False], ids=["written", "not_written"])
def test_kill_after_dispatch_before_the_response(
    tmp_path: Path, ws: Path, reopened: list[Store], executor_wrote: bool
) -> None:
    (ws / "a.md").write_bytes(OLD)
    steps = ["create", "plan:a", "request:a", "approve:a", "dispatch:a"]
    if executor_wrote:
        steps.append("write:a")
    crashed = crash(tmp_path, ws, *steps)
    s = reopen(crashed, reopened)
    tid = crashed.tid
    aid = crashed.marks["request:a"]["approval_id"]
    check_record(s, crashed)
    committed_as_marked(s, crashed, "dispatch:a")

    e = effect(s, tid, "eff-a")
    assert (e["stage"], e["outcome"]) == ("dispatched", "unknown")
    assert [
        (x["attempt_no"], x["outcome"], x["ended_at"], x["response"], x["approval_id"])
        for x in e["attempts"]
    ] == [(1, "unknown", None, None, aid)]
    assert approval(s, tid, aid)["consumed_by"] == "eff-a#1"
    assert consumed_counts(s, tid) == Counter({aid: 1})
    assert s.task(tid)["status"] == "outcome_unknown"
    assert (ws / "a.md").read_bytes() == (INTENDED if executor_wrote else OLD)

    # No blind retry while the outcome is unknown, and no completion either.
    assert_refused_and_nothing_written(s, tid, dispatch(tid), "unknown: reconcile")
    assert_not_completable(s, tid)

    # A fresh observation of the file settles it.
    verdict = s.execute(ReconcileEffect(task_id=tid, effect_id="eff-a"), AGENT)
    e = effect(s, tid, "eff-a")
    now_digest, _ = hash_file(ws / "a.md")
    assert [(o["purpose"], o["digest"]) for o in e["observations"]] == [("reconcile", now_digest)]
    assert e["reconciliation"]["observation_id"] == e["observations"][0]["observation_id"]
    assert s.task(tid)["status"] == "running"
    if executor_wrote:
        assert verdict == "present"
        assert (e["stage"], e["outcome"], e["attempts"][0]["outcome"]) == (
            "reconciled",
            "succeeded",
            "succeeded",
        )
        assert_refused_and_nothing_written(s, tid, dispatch(tid), "it already happened")
    else:
        assert verdict == "absent"
        assert (e["stage"], e["outcome"]) == ("reconciled", "absent")
        # A retry is allowed now, but not on the approval the first attempt used.
        assert_refused_and_nothing_written(s, tid, dispatch(tid), f"{aid} is consumed")
        again = approve_anew(s, tid, "eff-a")
        assert s.execute(dispatch(tid), AGENT) == 2
        assert [x["approval_id"] for x in effect(s, tid, "eff-a")["attempts"]] == [aid, again]
        assert consumed_counts(s, tid) == Counter({aid: 1, again: 1})
    check_record(s, crashed)


def test_kill_after_a_partial_response(tmp_path: Path, ws: Path, reopened: list[Store]) -> None:
    (ws / "a.md").write_bytes(OLD)
    steps = ["create", "plan:a", "request:a", "approve:a", "dispatch:a"]
    crashed = crash(tmp_path, ws, *steps, "write_partial:a", "respond_partial:a")
    s = reopen(crashed, reopened)
    tid = crashed.tid
    check_record(s, crashed)
    committed_as_marked(s, crashed, "respond_partial:a")

    e = effect(s, tid, "eff-a")
    assert (e["stage"], e["outcome"]) == ("dispatched", "partial")
    (att,) = e["attempts"]
    assert att["outcome"] == "partial" and att["ended_at"] is not None
    assert att["response"] == {"reported": "partial", "written_bytes": len(PARTIAL)}
    assert s.task(tid)["status"] == "outcome_unknown"
    assert (ws / "a.md").read_bytes() == PARTIAL
    assert_refused_and_nothing_written(s, tid, dispatch(tid), "partial: reconcile")

    # The half-written file is neither the pre-state nor the intent: a conflict, which
    # settles nothing and still forbids a retry.
    assert s.execute(ReconcileEffect(task_id=tid, effect_id="eff-a"), AGENT) == "conflict"
    e = effect(s, tid, "eff-a")
    assert (e["outcome"], e["unresolved"], e["reconciliation"]["verdict"]) == (
        "partial",
        True,
        "conflict",
    )
    assert s.task(tid)["status"] == "outcome_unknown"
    assert_refused_and_nothing_written(s, tid, dispatch(tid), "partial: reconcile")
    assert_not_completable(s, tid)
    check_record(s, crashed)


def test_kill_during_a_checkpoint_write(tmp_path: Path, ws: Path, reopened: list[Store]) -> None:
    (ws / "a.md").write_bytes(OLD)
    steps = ["create", "draft", "plan:a", "request:a", "checkpoint", "checkpoint_tx"]
    crashed = crash(tmp_path, ws, *steps)
    held = crashed.marks["checkpoint_tx"]
    lost = held["result"]
    assert held["emitted"] == ["checkpoint.written"]
    assert held["wal_after"] != held["wal_before"], "the transaction's pages reached the WAL"
    s = reopen(crashed, reopened)
    tid = crashed.tid
    evs = check_record(s, crashed)
    committed_as_marked(s, crashed, "checkpoint")

    head = crashed.marks["checkpoint"]["checkpoint_id"]
    head_row = s.head_checkpoint(tid)
    assert head_row is not None and head_row["checkpoint_id"] == head
    cps = s.task(tid)["checkpoints"]
    assert cps["heads"] == [head] and cps["forks"] == []
    assert [(x["reason"], x["superseded"]) for x in cps["checkpoints"]] == [
        ("initial", True),
        ("milestone", False),
    ]
    assert lost not in {x["checkpoint_id"] for x in cps["checkpoints"]}
    assert all(lost not in json.dumps(e["payload"]) for e in evs)
    assert evs[-1]["type"] == "checkpoint.written"
    assert evs[-1]["payload"]["checkpoint_id"] == head
    # The state the head holds is still the record's: the approval still waits.
    assert approval(s, tid, crashed.marks["request:a"]["approval_id"])["state"] == "pending"
    assert s.task(tid)["status"] == "awaiting_approval"

    # The killed writer's lock went with it: the next checkpoint continues from the head.
    new = s.execute(WriteCheckpoint(task_id=tid, reason="handoff"), AGENT)
    cps = s.task(tid)["checkpoints"]
    assert cps["heads"] == [new]
    assert cps["checkpoints"][-1]["supersedes"] == [head]
    check_record(s, crashed)


def test_kill_right_after_a_checkpoint_commit(
    tmp_path: Path, ws: Path, reopened: list[Store]
) -> None:
    (ws / "a.md").write_bytes(OLD)
    steps = ["create", "draft", "plan:a", "request:a", "approve:a", "dispatch:a", "checkpoint"]
    crashed = crash(tmp_path, ws, *steps)
    s = reopen(crashed, reopened)
    tid = crashed.tid
    evs = check_record(s, crashed)
    committed_as_marked(s, crashed, "checkpoint")

    cid = crashed.marks["checkpoint"]["checkpoint_id"]
    row = s.head_checkpoint(tid)
    assert row is not None and row["checkpoint_id"] == cid
    # Whole: its digest is its state's; its boundary is the event just before its own.
    assert row["state_digest"] == digest_of(row["state"])
    boundary = evs[row["seq"] - 1]
    assert (boundary["seq"], boundary["hash"]) == (row["seq"], row["chain_hash"])
    written = evs[row["seq"]]
    assert written is evs[-1] and written["type"] == "checkpoint.written"
    p = written["payload"]
    assert (p["checkpoint_id"], p["boundary_seq"], p["boundary_hash"]) == (
        cid,
        row["seq"],
        row["chain_hash"],
    )
    assert (p["state"], p["state_digest"]) == (row["state"], row["state_digest"])
    # And it says what the record says: an unknown outcome to reconcile, the local draft.
    with s.transaction() as tx:
        assert task_checkpoint_state(tx, tid) == row["state"]
    state = row["state"]
    assert state["status"] == "outcome_unknown"
    assert [(e["id"], e["stage"], e["outcome"]) for e in state["unresolved_effects"]] == [
        ("eff-a", "dispatched", "unknown")
    ]
    assert state["unresolved_effects"][0]["safe_recovery"].startswith("observe the target")
    assert [(a["id"], a["digest"]) for a in state["artifacts"]] == [
        ("notes", crashed.marks["draft"]["digest"])
    ]
    assert state["open_approvals"] == []


def test_kill_with_every_awkward_state_at_once(
    tmp_path: Path, ws: Path, reopened: list[Store]
) -> None:
    """Scenario 7: a local edit, an unknown effect, an approval wait, a partial result and an
    unused approval, then a kill inside a checkpoint write. All are still there after
    reopening; resuming from the head checkpoint repeats nothing."""
    for name in "abcd":
        (ws / f"{name}.md").write_bytes(OLD)
    steps = [
        "create",
        "draft",
        *("plan:a", "request:a", "approve:a", "dispatch:a", "write:a"),
        *("plan:b", "request:b"),
        *("plan:c", "request:c", "approve:c", "dispatch:c", "write_partial:c", "respond_partial:c"),
        *("plan:d", "request:d", "approve:d"),
        "checkpoint",
        "checkpoint_tx",
    ]
    crashed = crash(tmp_path, ws, *steps)
    s = reopen(crashed, reopened)
    tid = crashed.tid
    apr = {n: crashed.marks[f"request:{n}"]["approval_id"] for n in "abcd"}
    evs = check_record(s, crashed)
    committed_as_marked(s, crashed, "checkpoint")

    # Nothing the writer did is missing, and nothing is there twice.
    counts = types_of(evs)
    assert {k: counts[k] for k in counts if k.startswith(("effect.", "attempt.", "approval."))} == {
        "effect.planned": 4,
        "approval.requested": 4,
        "approval.decided": 3,
        "attempt.dispatched": 2,
        "approval.consumed": 2,
        "attempt.responded": 1,
    }
    assert counts["checkpoint.written"] == 2
    state = s.task(tid)
    assert state["status"] == "outcome_unknown"
    assert state["problems"] == []
    # The local edit: the draft and its bytes.
    (art,) = state["artifacts"]
    assert (art["artifact_id"], art["current"]["digest"]) == (
        "notes",
        crashed.marks["draft"]["digest"],
    )
    assert s.blobs.read(art["current"]["digest"]) == (ws / "notes.md").read_bytes()
    effs = {e["effect_id"]: e for e in state["effects"]}
    assert {k: (e["stage"], e["outcome"], len(e["attempts"])) for k, e in effs.items()} == {
        "eff-a": ("dispatched", "unknown", 1),
        "eff-b": ("planned", None, 0),
        "eff-c": ("dispatched", "partial", 1),
        "eff-d": ("approved", None, 0),
    }
    assert {n: approval(s, tid, apr[n])["state"] for n in "abcd"} == {
        "a": "consumed",
        "b": "pending",
        "c": "consumed",
        "d": "approved",
    }
    assert [(ws / f"{n}.md").read_bytes() for n in "abcd"] == [INTENDED, OLD, PARTIAL, OLD]

    # The head checkpoint (the milestone; the handoff died uncommitted) names every one.
    head = s.head_checkpoint(tid)
    assert head is not None
    assert head["checkpoint_id"] == crashed.marks["checkpoint"]["checkpoint_id"]
    assert head["state_digest"] == digest_of(head["state"])
    recovery = {e["id"]: e["safe_recovery"] for e in head["state"]["unresolved_effects"]}
    assert sorted(recovery) == ["eff-a", "eff-b", "eff-c", "eff-d"]
    assert {a["id"]: a["state"] for a in head["state"]["open_approvals"]} == {
        apr["b"]: "pending",
        apr["d"]: "approved",
    }

    # Resume as the next actor would, following each safe recovery: nothing is sent twice.
    assert s.execute(ReconcileEffect(task_id=tid, effect_id="eff-a"), AGENT) == "present"
    assert s.execute(ReconcileEffect(task_id=tid, effect_id="eff-c"), AGENT) == "conflict"
    for eid in ("eff-a", "eff-c"):
        assert_refused_and_nothing_written(s, tid, dispatch(tid, eid), "cannot be dispatched")
    assert s.execute(dispatch(tid, "eff-d"), AGENT) == 1
    assert_refused_and_nothing_written(s, tid, dispatch(tid, "eff-b"), "no usable approval")
    s.execute(DecideApproval(task_id=tid, approval_id=apr["b"], decision="approved"), BO)
    assert s.execute(dispatch(tid, "eff-b"), AGENT) == 1
    assert consumed_counts(s, tid) == Counter({apr[n]: 1 for n in "abcd"})
    assert {e["effect_id"]: len(e["attempts"]) for e in s.task(tid)["effects"]} == {
        "eff-a": 1,
        "eff-b": 1,
        "eff-c": 1,
        "eff-d": 1,
    }
    check_record(s, crashed)
