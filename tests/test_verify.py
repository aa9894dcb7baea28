"""`verify` (`boris verify`): a clean store is ok, and each kind of damage is found and named.

Damage is done the way an attacker, a bad tool or a restored older backup would do it: through
a raw connection of our own (sqlite3 or psycopg) (dropping the append-only triggers first where a row of
`events` must change or go), or on the blob files. A crafted event is appended with a correct
hash chain, so only the check meant for it can object; `Store.rebuild` then brings the
projections in line with the crafted log where a test wants the projections out of the way.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from blob_damage import damage_blob, lose_blob

from store import Actor, Store, StoreError, UnknownTask, clock
from store import commands as c
from store import events as ev
from store.canonical import canonical_json, chain_hash, digest_of
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.commands.effects import DispatchEffect, PlanEffect, RecordResponse
from store.record import stored_body
from store.services import answers
from store.services.verify import Report, VerifyFailed, remembered_head, verify

AGENT = Actor(kind="agent", id="writer-7")
ANA = Actor(kind="person", id="ana", name="Ana Lind")
FIXTURE = Path(__file__).parent / "fixtures" / "store-0001"


# --- a store with something of everything ---------------------------------------------------


def _ledger_task(s: Store, ws: Path) -> dict[str, Any]:
    """Criteria, artifacts, evidence, budgets, an approved and dispatched effect (its approval
    consumed), and checkpoints: what each check has to look at."""
    tid: str = s.execute(
        c.CreateTask(title="send", owner="ana", objective="ship it", scope_paths=[str(ws)]), AGENT
    )
    s.execute_all(
        [
            c.AddCriterion(task_id=tid, criterion_id="saved", text="the report is saved"),
            c.RecordArtifact(
                task_id=tid, artifact_id="report", name="report.md", content=c.Content(text="v1")
            ),
            c.SetBudget(task_id=tid, counter="tool_calls", limit=10),
            c.ChargeBudget(task_id=tid, counter="tool_calls", amount=1.1),
            c.ChargeBudget(task_id=tid, counter="tool_calls", amount=2.2),
        ],
        AGENT,
    )
    evidence = s.execute(
        c.AttachEvidence(
            task_id=tid,
            criterion_id="saved",
            evidence_id="log",
            kind="command_output",
            content=c.Content(text="saved OK\n"),
        ),
        AGENT,
    )
    s.execute(
        c.JudgeCriterion(
            task_id=tid,
            criterion_id="saved",
            status="satisfied",
            artifact_id="report",
            artifact_version=1,
            evidence_ids=[evidence],
        ),
        AGENT,
    )
    s.execute(WriteCheckpoint(task_id=tid, reason="milestone", note="drafted"), AGENT)
    eid: str = s.execute(
        PlanEffect(
            task_id=tid,
            target="out.md",
            consequence="write out.md",
            content=c.Content(text="final\n"),
            requires_approval=True,
            policy="every write is reviewed",
        ),
        AGENT,
    )
    aid: str = s.execute(RequestApproval(task_id=tid, effect_id=eid, policy="writes"), AGENT)
    s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved", note="ok"), ANA)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    s.execute(RecordResponse(task_id=tid, effect_id=eid, reported="failed", error="503"), AGENT)
    s.execute(WriteCheckpoint(task_id=tid, reason="handoff", note="over to you"), AGENT)
    state = s.task(tid)
    return {
        "tid": tid,
        "eid": eid,
        "aid": aid,
        "artifact_digest": state["artifacts"][0]["current"]["digest"],
        "evidence_digest": state["criteria"][0]["evidence"][0]["digest"],
    }


@pytest.fixture
def made(s: Store, ws: Path) -> dict[str, Any]:
    return _ledger_task(s, ws)


class _PgRaw:
    """A psycopg connection that takes the same `?` placeholders as sqlite3."""

    def __init__(self, url: str) -> None:
        import psycopg
        from sqlalchemy.engine import make_url

        plain = make_url(url).set(drivername="postgresql")
        self._conn = psycopg.connect(plain.render_as_string(hide_password=False))

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]

    def commit(self) -> None:
        self._conn.commit()

    def close(self) -> None:
        self._conn.close()


@contextlib.contextmanager
def _raw(s: Store, *, unguarded: bool = False) -> Iterator[Any]:
    """A connection of our own to the store's database; `unguarded` drops the triggers that
    keep `events` append-only (for this database, from now on)."""
    path = s.location.sqlite_file
    conn: Any = sqlite3.connect(path) if path is not None else _PgRaw(s.location.url)
    try:
        if unguarded and path is not None:
            conn.execute("DROP TRIGGER IF EXISTS events_no_update")
            conn.execute("DROP TRIGGER IF EXISTS events_no_delete")
        elif unguarded:
            conn.execute("DROP TRIGGER IF EXISTS events_append_only ON events")
        yield conn
        conn.commit()
    finally:
        conn.close()


def _append_raw(s: Store, task_id: str, payload: ev.Payload, actor: Actor = AGENT) -> int:
    """Append an event behind the store's back, with a correct seq, prev link and hash."""
    data = payload.model_dump(mode="json")
    with _raw(s) as conn:
        seq, prev = conn.execute(
            "SELECT seq, hash FROM events WHERE task_id = ? ORDER BY seq DESC LIMIT 1", (task_id,)
        ).fetchone()
        seq += 1
        at = clock.system_now()
        body = stored_body(task_id, seq, payload.TYPE, payload.FORMAT, data, actor, at)
        conn.execute(
            "INSERT INTO events (task_id, seq, type, format, payload, actor_kind, actor_id,"
            " actor_name, at, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                task_id,
                seq,
                payload.TYPE,
                payload.FORMAT,
                canonical_json(data),
                actor.kind,
                actor.id,
                actor.name,
                at,
                prev,
                chain_hash(prev, body),
            ),
        )
    return int(seq)


def _head(s: Store, task_id: str) -> tuple[int, str]:
    last = s.events(task_id)[-1]
    return int(last["seq"]), str(last["hash"])


def _checkpoint(
    s: Store,
    task_id: str,
    checkpoint_id: str,
    *,
    reason: str = "milestone",
    supersedes: Sequence[str] = (),
    boundary_hash: str | None = None,
) -> int:
    seq, h = _head(s, task_id)
    return _append_raw(
        s,
        task_id,
        ev.CheckpointWritten(
            checkpoint_id=checkpoint_id,
            reason=reason,  # type: ignore[arg-type]
            supersedes=tuple(supersedes),
            boundary_seq=seq,
            boundary_hash=boundary_hash or h,
            state={},
            state_digest=digest_of({}),
        ),
    )


def _kinds(report: Report) -> set[str]:
    return {p.kind for p in report.problems}


def _messages(report: Report, kind: str) -> list[str]:
    return [p.message for p in report.problems if p.kind == kind]


# --- clean ---------------------------------------------------------------------------------


def test_clean_store_is_ok_and_its_heads_are_remembered(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    before = s.projection_dump(tid)
    report = verify(s)
    assert report.problems == [], [p.line() for p in report.problems]
    assert report.ok and report.summary() == "verified 1 task: ok"
    assert report.tasks == [tid] and report.remembered == [tid]
    seq, h = _head(s, tid)
    assert report.heads == {tid: {"seq": seq, "hash": h}}
    mem = remembered_head(s, tid)
    assert mem is not None and (mem["seq"], mem["hash"]) == (seq, h)
    # The replay was rolled back: the projections are as they were.
    assert s.projection_dump(tid) == before
    # verified_heads is not a projection: a rebuild leaves it alone.
    s.rebuild(tid)
    assert remembered_head(s, tid) == mem
    # Work goes on; the next verify moves the remembered head forward.
    s.execute(c.RecordNote(task_id=tid, text="later"), AGENT)
    assert verify(s, tid).ok
    mem2 = remembered_head(s, tid)
    assert mem2 is not None and mem2["seq"] == seq + 1


def test_remember_false_records_nothing(s: Store, made: dict[str, Any]) -> None:
    report = verify(s, remember=False)
    assert report.ok and report.remembered == []
    assert remembered_head(s, made["tid"]) is None


def test_one_task_or_an_unknown_one(s: Store, made: dict[str, Any]) -> None:
    other = s.execute(c.CreateTask(title="other", owner="o", objective="x"), AGENT)
    assert verify(s, other).tasks == [other]
    assert sorted(verify(s).tasks) == sorted([made["tid"], other])
    with pytest.raises(UnknownTask):
        verify(s, "no-such-task")


def test_demo_store_names_its_missing_build_log_and_its_fork(s: Store) -> None:
    from store.services.demo import fill_demo

    fill_demo(s)
    report = verify(s)
    # The demo deliberately lost a build log's blob and forked its checkpoints.
    assert _kinds(report) == {"blob_missing"}
    assert all("build-log" in m for m in _messages(report, "blob_missing"))
    assert "fork" in {i.kind for i in report.info}


def test_fork_is_info_not_a_problem(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    first = s.task(tid)["checkpoints"]["checkpoints"][0]["checkpoint_id"]
    s.execute(
        WriteCheckpoint(task_id=tid, reason="handoff", supersedes=[first], checkpoint_id="side"),
        AGENT,
    )
    report = verify(s)
    assert report.ok
    (fork,) = [i for i in report.info if i.kind == "fork"]
    assert "2 heads" in fork.message and "side" in fork.message


def test_fixture_store_migrated_to_0002_verifies_clean(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    shutil.copytree(FIXTURE, store_dir)
    with Store.open(store_dir, create=False) as s:
        report = verify(s)
        assert report.problems == [], [p.line() for p in report.problems]
        assert report.remembered == ["guide", "note"]
        assert remembered_head(s, "guide") is not None


# --- the log -------------------------------------------------------------------------------


def test_edited_event_is_named_by_seq(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    with _raw(s, unguarded=True) as conn:
        (payload,) = conn.execute(
            "SELECT payload FROM events WHERE task_id = ? AND seq = 2", (tid,)
        ).fetchone()
        data = json.loads(payload)
        data["text"] = "a different criterion"
        conn.execute(
            "UPDATE events SET payload = ? WHERE task_id = ? AND seq = 2",
            (canonical_json(data), tid),
        )
    report = verify(s)
    assert not report.ok and report.remembered == []
    (msg,) = _messages(report, "event_hash")
    assert msg.startswith("seq 2 (criterion.added): stored hash")
    # The edited event replays to another criterion text than the projection holds.
    assert any("criteria row saved" in m and "text" in m for m in _messages(report, "projection"))


def test_seq_gap_is_named(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    with _raw(s, unguarded=True) as conn:
        conn.execute("DELETE FROM events WHERE task_id = ? AND seq = 3", (tid,))
    report = verify(s)
    assert _messages(report, "seq_gap") == ["seq 3 missing: the log jumps from seq 2 to seq 4"]
    (link,) = _messages(report, "chain_link")
    assert link.startswith("seq 4: prev_hash")


def test_event_that_cannot_be_decoded(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    seq = _append_raw(s, tid, ev.NoteRecorded(text="fine"))
    with _raw(s, unguarded=True) as conn:
        conn.execute("UPDATE events SET format = 99 WHERE task_id = ? AND seq = ?", (tid, seq))
    report = verify(s)
    (msg,) = _messages(report, "event_unreadable")
    assert msg.startswith(f"seq {seq} (note.recorded) cannot be read")
    assert "format 99" in msg
    assert any(m.startswith(f"seq {seq}") for m in _messages(report, "event_hash"))


def test_task_row_that_disagrees_with_the_log(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    _append_raw(s, tid, ev.NoteRecorded(text="behind the store's back"))
    seq, h = _head(s, tid)
    report = verify(s)
    (msg,) = _messages(report, "task_head")
    assert f"the log ends at seq {seq} ({h})" in msg
    assert any(m.startswith("tasks row differs") for m in _messages(report, "projection"))


# --- blobs ---------------------------------------------------------------------------------


def test_corrupt_blob_is_named_by_digest(s: Store, made: dict[str, Any]) -> None:
    digest = made["artifact_digest"]
    damage_blob(s, digest, b"evil bytes")
    report = verify(s)
    (msg,) = _messages(report, "blob_corrupt")
    assert digest in msg and "artifact report v1" in msg and "does not match" in msg
    assert _kinds(report) == {"blob_corrupt"}


def test_missing_blob_is_named_by_digest(s: Store, made: dict[str, Any]) -> None:
    digest = made["evidence_digest"]
    lose_blob(s, digest)
    report = verify(s)
    (msg,) = _messages(report, "blob_missing")
    assert digest in msg and "evidence log" in msg
    assert _kinds(report) == {"blob_missing"}


def test_intended_state_blob_absent_is_info_but_corrupt_is_a_problem(
    s: Store, made: dict[str, Any]
) -> None:
    intended = s.task(made["tid"])["effects"][0]["intent"]["intended"]["digest"]
    lose_blob(s, intended)
    report = verify(s)
    assert report.ok
    assert any(i.kind == "blob_absent" and intended in i.message for i in report.info)
    damage_blob(s, intended, b"not the intended content")
    (msg,) = _messages(verify(s), "blob_corrupt")
    assert intended in msg and f"effect {made['eid']} intended state" in msg


# --- projections ---------------------------------------------------------------------------


def test_edited_projection_row_is_found_and_left_alone(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    with _raw(s) as conn:
        conn.execute(
            "UPDATE criteria SET status = 'failed' WHERE task_id = ? AND criterion_id = 'saved'",
            (tid,),
        )
    report = verify(s)
    (msg,) = _messages(report, "projection")
    assert msg == (
        "criteria row saved differs from a replay of the log: "
        "status is 'failed', a replay gives 'satisfied'"
    )
    assert report.remembered == []
    # verify reports; it does not repair (that is what rebuild is for).
    assert s.task(tid)["criteria"][0]["status"] == "failed"
    s.rebuild(tid)
    assert verify(s).ok


def test_extra_and_missing_projection_rows(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    with _raw(s) as conn:
        conn.execute(
            "DELETE FROM artifacts WHERE task_id = ? AND artifact_id = 'report'",
            (tid,),
        )
        conn.execute(
            "INSERT INTO budgets (task_id, counter, limit_value, used, reserved)"
            " VALUES (?, 'reviews', NULL, 0, 0)",
            (tid,),
        )
    msgs = _messages(verify(s), "projection")
    assert "artifacts row report is missing from the projection; a replay of the log makes it" in (
        msgs
    )
    assert "budgets row reviews is in the projection, but a replay of the log has no such row" in (
        msgs
    )


def test_log_that_cannot_be_replayed(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    seq = _append_raw(s, tid, ev.PhaseCompleted(phase_id="ghost", ok=True))
    report = verify(s)
    (msg,) = _messages(report, "replay_failed")
    assert msg.startswith(f"replaying the log failed at seq {seq} (phase.completed)")


# --- lineage -------------------------------------------------------------------------------


def test_supersedes_that_points_nowhere(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    seq = _checkpoint(s, tid, "ckpt-x", supersedes=["ckpt-ghost"])
    s.rebuild(tid)
    report = verify(s)
    assert _messages(report, "lineage_unresolved") == [
        f"checkpoint ckpt-x (seq {seq}) supersedes ckpt-ghost, which is no checkpoint"
    ]
    assert _kinds(report) == {"lineage_unresolved"}


def test_supersedes_a_checkpoint_of_another_task(s: Store, made: dict[str, Any]) -> None:
    other = s.execute(c.CreateTask(title="other", owner="o", objective="x"), AGENT)
    theirs = s.execute(WriteCheckpoint(task_id=other, reason="milestone"), AGENT)
    seq = _checkpoint(s, made["tid"], "ckpt-x", supersedes=[theirs])
    s.rebuild(made["tid"])
    (msg,) = _messages(verify(s), "lineage_unresolved")
    assert msg == (
        f"checkpoint ckpt-x (seq {seq}) supersedes {theirs}, a checkpoint of task {other}, "
        "not of this task"
    )


def test_two_initial_checkpoints(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    seq = _checkpoint(s, tid, "ckpt-again", reason="initial")
    s.rebuild(tid)
    report = verify(s)
    (msg,) = _messages(report, "lineage_initial")
    assert msg.startswith("2 initial checkpoints (") and f"ckpt-again (seq {seq})" in msg
    assert _kinds(report) == {"lineage_initial"}
    assert "fork" in {i.kind for i in report.info}


def test_supersedes_cycle(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    a = _checkpoint(s, tid, "ckpt-a", supersedes=["ckpt-b"])
    b = _checkpoint(s, tid, "ckpt-b", supersedes=["ckpt-a"])
    s.rebuild(tid)
    report = verify(s)
    assert _messages(report, "lineage_forward") == [
        f"checkpoint ckpt-a (seq {a}) supersedes ckpt-b, which is written only later (seq {b})"
    ]
    (cycle,) = _messages(report, "lineage_cycle")
    assert cycle == "checkpoints supersede each other in a cycle: ckpt-a -> ckpt-b -> ckpt-a"


def test_checkpoint_boundary_that_is_not_the_event_there(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    head = s.task(tid)["checkpoints"]["checkpoints"][-1]["checkpoint_id"]
    seq = _checkpoint(s, tid, "ckpt-x", supersedes=[head], boundary_hash="f" * 64)
    s.rebuild(tid)
    report = verify(s)
    (msg,) = _messages(report, "checkpoint_boundary")
    assert msg.startswith(f"checkpoint ckpt-x (seq {seq}) names boundary seq {seq - 1} with hash")
    assert _kinds(report) == {"checkpoint_boundary"}


# --- approvals and budgets -----------------------------------------------------------------


def test_approval_consumed_twice(s: Store, made: dict[str, Any]) -> None:
    tid, aid = made["tid"], made["aid"]
    first = next(e["seq"] for e in s.events(tid) if e["type"] == "approval.consumed")
    again = _append_raw(
        s, tid, ev.ApprovalConsumed(approval_id=aid, effect_id=made["eid"], attempt_no=2)
    )
    s.rebuild(tid)
    report = verify(s)
    assert _messages(report, "approval_reused") == [
        f"approval {aid} is consumed 2 times (seqs {first}, {again}); an approval is used at "
        "most once"
    ]
    assert _kinds(report) == {"approval_reused"}


def test_approval_consumed_that_was_never_requested(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    seq = _append_raw(
        s, tid, ev.ApprovalConsumed(approval_id="apr-ghost", effect_id=made["eid"], attempt_no=2)
    )
    s.rebuild(tid)
    (msg,) = _messages(verify(s), "approval_unknown")
    assert msg.startswith(f"seq {seq} consumes approval apr-ghost")


def test_budget_used_that_is_not_the_sum_of_its_charges(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    with _raw(s) as conn:
        conn.execute(
            "UPDATE budgets SET used = 1 WHERE task_id = ? AND counter = 'tool_calls'", (tid,)
        )
    report = verify(s)
    assert _messages(report, "budget") == [
        "counter tool_calls: used is 1, but its 2 charges sum to 3.3"
    ]
    assert any("budgets row tool_calls" in m for m in _messages(report, "projection"))


# --- the remembered head -------------------------------------------------------------------


def test_truncated_log_below_the_verified_head(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    assert verify(s).ok
    seq, h = _head(s, tid)
    # Cut the last three events and make the rest consistent again: the chain and the
    # projections now agree with each other; only the remembered head knows better.
    with _raw(s, unguarded=True) as conn:
        conn.execute("DELETE FROM events WHERE task_id = ? AND seq > ?", (tid, seq - 3))
    s.rebuild(tid)
    assert s.task(tid)["last_seq"] == seq - 3
    for _ in range(2):  # a problem stays found: the head found clean is not replaced
        report = verify(s)
        (msg,) = _messages(report, "head_rolled_back")
        assert msg.startswith(f"verify found this task clean at seq {seq} ({h}) on ")
        assert f"the log now ends at seq {seq - 3}" in msg
        assert _kinds(report) == {"head_rolled_back"}
        assert report.remembered == []


def test_rolled_back_and_rewritten_log(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    assert verify(s).ok
    seq, h = _head(s, tid)
    with _raw(s, unguarded=True) as conn:
        conn.execute("DELETE FROM events WHERE task_id = ? AND seq > ?", (tid, seq - 2))
    _append_raw(s, tid, ev.NoteRecorded(text="another history"))
    _append_raw(s, tid, ev.NoteRecorded(text="another history, continued"))
    s.rebuild(tid)
    report = verify(s)
    (msg,) = _messages(report, "head_rewritten")
    new_hash = s.events(tid)[seq - 1]["hash"]
    assert msg.startswith(f"verify found this task clean at seq {seq} ({h}) on ")
    assert f"the event at seq {seq} now has hash {new_hash}" in msg
    assert _kinds(report) == {"head_rewritten"}


def test_task_whose_log_is_gone_after_it_was_verified(s: Store, made: dict[str, Any]) -> None:
    tid = made["tid"]
    assert verify(s).ok
    seq, _ = _head(s, tid)
    with _raw(s, unguarded=True) as conn:
        for table in ("events", "tasks", "criteria", "artifacts", "artifact_versions"):
            conn.execute(f"DELETE FROM {table} WHERE task_id = ?", (tid,))
    report = verify(s, tid)
    (msg,) = _messages(report, "head_rolled_back")
    assert msg.endswith(f"the log has no events for it now: seqs 1..{seq} went missing")


# --- an older copy of the database restored ------------------------------------------------


def _copy_database(directory: Path, dest: Path) -> None:
    """Copy `boris.sqlite*` of a closed store, as a user restoring a backup would."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in directory.glob("boris.sqlite*"):
        shutil.copy2(f, dest / f.name)


def _restore_database(backup: Path, directory: Path) -> None:
    for f in directory.glob("boris.sqlite*"):
        f.unlink()
    for f in backup.glob("boris.sqlite*"):
        shutil.copy2(f, directory / f.name)


def _notes(s: Store, tid: str, n: int, text: str = "tick") -> None:
    s.execute_all([c.RecordNote(task_id=tid, text=text)] * n, AGENT)


def test_an_older_copy_of_the_database_restored_is_named_task_by_task(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d, backup = tmp_path / "store", tmp_path / "backup"
    with Store.open(d) as s:
        made = _ledger_task(s, ws)
        tid = made["tid"]
        assert verify(s).ok
        old_seq, _ = _head(s, tid)
    _copy_database(d, backup)
    with Store.open(d) as s:
        _notes(s, tid, 5)
        later: str = s.execute(c.CreateTask(title="later", owner="ana", objective="x"), AGENT)
        _notes(s, later, 2)
        assert verify(s).ok  # remembers both heads
        seq, h = _head(s, tid)
        later_seq, _ = _head(s, later)
    _restore_database(backup, d)
    with Store.open(d) as s:
        # The restored database is consistent with itself: only the witness kept outside
        # it knows that events went missing.
        assert s.task(tid)["last_seq"] == old_seq
        report = verify(s)
        assert _kinds(report) == {"head_rolled_back"}
        by_task = {p.task_id: p.message for p in report.problems}
        assert by_task[tid].startswith(f"verify found this task clean at seq {seq} ({h}) on ")
        assert (
            f"the log now ends at seq {old_seq}: seqs {old_seq + 1}..{seq} went missing"
            in (by_task[tid])
        )
        assert by_task[later].endswith(
            f"the log has no events for it now: seqs 1..{later_seq} went missing"
        )
        assert report.remembered == []
        # Verifying again does not forget it, and the command line names it too.
        assert _cli(s, "verify") == 3
        out = capsys.readouterr().out
        assert f"{tid}: head_rolled_back:" in out and f"{later}: head_rolled_back:" in out
        assert remembered_head(s, tid)["seq"] == seq  # type: ignore[index]


def test_a_restored_copy_written_on_again_is_a_rewritten_history(tmp_path: Path, ws: Path) -> None:
    d, backup = tmp_path / "store", tmp_path / "backup"
    with Store.open(d) as s:
        tid: str = s.execute(c.CreateTask(title="t", owner="ana", objective="x"), AGENT)
        _notes(s, tid, 3)
    _copy_database(d, backup)
    with Store.open(d) as s:
        _notes(s, tid, 4, "the history verify saw")
        assert verify(s).ok
        seq, h = _head(s, tid)
    _restore_database(backup, d)
    with Store.open(d) as s:
        _notes(s, tid, 6, "another history")  # the log grows past the remembered seq again
        report = verify(s)
        (msg,) = _messages(report, "head_rewritten")
        assert msg.startswith(f"verify found this task clean at seq {seq} ({h}) on ")
        assert f"the event at seq {seq} now has hash {s.events(tid)[seq - 1]['hash']}" in msg
        assert _kinds(report) == {"head_rewritten"}


def test_the_witness_lives_outside_the_database_files_and_is_written_atomically(
    s: Store, made: dict[str, Any]
) -> None:
    from store.services import verified_heads

    assert verify(s).ok
    path = verified_heads.witness_path(s.location)
    assert path.parent == s.location.directory and not path.name.startswith("boris.sqlite")
    data = json.loads(path.read_text())
    seq, h = _head(s, made["tid"])
    assert data["tasks"][made["tid"]] == {
        "seq": seq,
        "hash": h,
        "verified_at": data["tasks"][made["tid"]]["verified_at"],
    }
    # No temporary file is left beside it.
    assert [p.name for p in path.parent.glob(f".{path.name}*")] == []
    # A head never moves back: a run that read an older snapshot keeps the newer head.
    older = verified_heads.VerifiedHead(seq - 1, "0" * 64, "then")
    verified_heads.remember(s.location, {made["tid"]: older})
    assert remembered_head(s, made["tid"])["seq"] == seq  # type: ignore[index]


def test_a_team_store_keeps_its_witness_per_url_without_the_password(tmp_path: Path) -> None:
    from store.location import Location
    from store.services.verified_heads import witness_path

    a = Location("postgresql+psycopg://boris:secret@db.example:5432/boris", tmp_path)
    b = Location("postgresql+psycopg://boris:rotated@db.example:5432/boris", tmp_path)
    other = Location("postgresql+psycopg://boris:secret@db.example:5432/other", tmp_path)
    assert witness_path(a) == witness_path(b) != witness_path(other)
    assert witness_path(a).parent == tmp_path


def test_a_head_an_older_program_kept_in_the_database_is_still_compared(
    s: Store, made: dict[str, Any]
) -> None:
    """Before the witness file, verify remembered heads in the `verified_heads` table; such
    a head still counts when the file has none for the task."""
    tid = made["tid"]
    seq, _ = _head(s, tid)
    with _raw(s) as conn:
        conn.execute(
            "INSERT INTO verified_heads (task_id, seq, hash, verified_at) VALUES (?, ?, ?, ?)",
            (tid, seq + 4, "f" * 64, "2026-01-01T00:00:00.000000Z"),
        )
    report = verify(s)
    (msg,) = _messages(report, "head_rolled_back")
    assert f"seqs {seq + 1}..{seq + 4} went missing" in msg


def test_a_damaged_witness_file_is_a_clear_error(s: Store, made: dict[str, Any]) -> None:
    from store.services import verified_heads

    verified_heads.witness_path(s.location).write_text("{not json")
    with pytest.raises(StoreError, match=r"is damaged .*move it aside"):
        verify(s)


def test_a_witness_that_cannot_be_written_is_said_not_hidden(
    s: Store,
    made: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import errno

    from store.services import verified_heads

    def refuse(*_: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(verified_heads, "remember", refuse)
    assert _cli(s, "verify") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "ok"
    assert out[0].startswith("warning: the heads found clean could not be recorded in ")
    witness = verified_heads.witness_path(s.location).name
    assert out[0].endswith(f"{witness}: Read-only file system")


# --- verify beside writers ----------------------------------------------------------------


def test_a_writer_during_verify_finishes_normally_and_verify_reads_one_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_url: str | None
) -> None:
    """Verify is stopped half-way through replaying a task while another store (as another
    process would) appends to that very task: every append succeeds at once, and verify
    reports the snapshot it began with, clean, not a head that moved under it."""
    import threading
    import time

    from store.services import verify as verify_module

    d = tmp_path / "store"
    with Store.open(d, url=store_url) as s, Store.open(d, url=store_url) as writer:
        tid: str = s.execute(c.CreateTask(title="big", owner="ana", objective="x"), AGENT)
        _notes(s, tid, 1500)
        # Half-way, an event the replay must apply: verify pauses there.
        s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=10), AGENT)
        _notes(s, tid, 1500)
        snapshot_seq, snapshot_hash = _head(s, tid)
        paused, resume = threading.Event(), threading.Event()
        real_apply = verify_module.projections.apply

        def apply_then_pause(conn: Any, e: Any, *known: Any) -> None:
            if e.task_id == tid and e.type == "budget.limit_set" and not paused.is_set():
                paused.set()
                resume.wait(60)
            real_apply(conn, e, *known)

        monkeypatch.setattr(verify_module.projections, "apply", apply_then_pause)
        results: list[Report] = []
        errors: list[BaseException] = []

        def run() -> None:
            try:
                results.append(verify(s, tid))
            except BaseException as exc:
                errors.append(exc)
                paused.set()

        thread = threading.Thread(target=run)
        thread.start()
        try:
            assert paused.wait(60) and not errors
            t0 = time.perf_counter()
            for i in range(20):
                writer.execute(c.RecordNote(task_id=tid, text=f"while verify runs {i}"), AGENT)
            elapsed = time.perf_counter() - t0
        finally:
            resume.set()
            thread.join(60)
        assert not errors
        # 20 durable appends take milliseconds; waiting on verify's lock would take seconds
        # (then fail with "store is busy").
        assert elapsed < 5, elapsed
        (report,) = results
        assert report.ok, [p.line() for p in report.problems]
        assert report.heads[tid] == {"seq": snapshot_seq, "hash": snapshot_hash}
        monkeypatch.undo()
        after = verify(s, tid)
        assert after.ok and after.heads[tid]["seq"] == snapshot_seq + 20


# --- the command line ----------------------------------------------------------------------


def _cli(s: Store, *argv: str) -> int:
    """`boris verify …` through the real command line."""
    from store.cli import main

    url = [] if s.location.sqlite_file else ["--url", s.location.url]
    return main(["--store", str(s.location.directory), *url, *argv])


def test_cli_ok_then_problems(
    s: Store, made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli(s, "verify") == 0
    assert capsys.readouterr().out == "ok\n"
    lose_blob(s, made["evidence_digest"])
    assert _cli(s, "verify", made["tid"]) == 3
    out, err = capsys.readouterr()
    (line,) = out.splitlines()
    assert line.startswith(f"{made['tid']}: blob_missing: blob {made['evidence_digest']}")
    assert err == "boris: verified 1 task: 1 problem in 1 of them\n"
    assert _cli(s, "verify", "--json") == 3
    answer = json.loads(capsys.readouterr().out)
    assert answer["ok"] is False
    assert (answer["error"]["code"], answer["error"]["category"]) == (
        "integrity_problems",
        "integrity",
    )
    data = answer["error"]["details"]["report"]
    assert data["ok"] is False
    assert [p["kind"] for p in data["problems"]] == ["blob_missing"]
    assert data["problems"][0]["task_id"] == made["tid"]


def test_cli_no_remember(
    s: Store, made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli(s, "verify", "--no-remember") == 0
    assert remembered_head(s, made["tid"]) is None


def test_verify_failed_carries_the_report(s: Store, made: dict[str, Any]) -> None:
    lose_blob(s, made["artifact_digest"])
    report = verify(s)
    exc = VerifyFailed(report)
    assert isinstance(exc, StoreError) and exc.report is report
    assert answers.exit_code(exc.category) == 3
    assert str(exc) == report.summary()


def test_boris_main_exits_non_zero_when_wired(
    s: Store, made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from store import cli

    d = ["--store", str(s.location.directory)]
    if s.location.sqlite_file is None:
        d += ["--url", s.location.url]
    assert cli.main(["verify", *d]) == 0
    assert capsys.readouterr().out.strip() == "ok"
    lose_blob(s, made["artifact_digest"])
    assert cli.main(["verify", *d]) != 0
    assert "blob_missing" in capsys.readouterr().out
