"""Approvals bind the exact object, are decided once and used once; checkpoints keep a
lineage with heads and forks; stop revokes and accounts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from store import Actor, CommandRejected, Store
from store import commands as c
from store.canonical import digest_of
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import StopRun, WriteCheckpoint
from store.commands.effects import (
    DispatchEffect,
    PlanEffect,
    ReconcileEffect,
    RecordResponse,
    ReviseEffect,
)

AGENT = Actor(kind="agent", id="writer-7")
ANA = Actor(kind="person", id="ana", name="Ana Lind")
BO = Actor(kind="person", id="bo", name="Bo")


@pytest.fixture
def tid(s: Store, ws: Path) -> str:
    task: str = s.execute(
        c.CreateTask(title="send", owner="ana", objective="ship it", scope_paths=[str(ws)]), AGENT
    )
    return task


def plan(s: Store, tid: str, name: str = "out.md", text: str = "v1") -> str:
    eid: str = s.execute(
        PlanEffect(
            task_id=tid,
            target=name,
            consequence=f"write {name}",
            content=c.Content(text=text),
            requires_approval=True,
            policy="every write is reviewed",
        ),
        AGENT,
    )
    return eid


def ask(s: Store, tid: str, eid: str, seconds: float = 600) -> str:
    aid: str = s.execute(
        RequestApproval(task_id=tid, effect_id=eid, policy="writes", expires_in_seconds=seconds),
        AGENT,
    )
    return aid


def approval(s: Store, tid: str, aid: str) -> dict[str, Any]:
    return next(a for a in s.task(tid)["approvals"] if a["approval_id"] == aid)


def test_request_binds_the_prepared_object_and_waits(s: Store, tid: str) -> None:
    eid = plan(s, tid)
    aid = ask(s, tid, eid)
    a = approval(s, tid, aid)
    e = s.task(tid)["effects"][0]
    assert a["state"] == "pending"
    assert a["payload"] == e["intent"]["prepared"]
    assert a["payload_digest"] == digest_of(e["intent"]["prepared"])
    assert a["consequence"] == "write out.md"
    assert a["requester"]["id"] == "writer-7" and a["policy"] == "writes"
    assert a["expires_at"] > s.now()
    assert s.task(tid)["status"] == "awaiting_approval"


def test_dispatch_needs_a_valid_approval(s: Store, tid: str) -> None:
    eid = plan(s, tid)
    with pytest.raises(CommandRejected, match="requires an approval and has none"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="t"), AGENT)
    aid = ask(s, tid, eid)
    with pytest.raises(CommandRejected, match=f"{aid} is pending"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="t"), AGENT)
    s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved", note="ok"), ANA)
    assert s.task(tid)["effects"][0]["stage"] == "approved"
    assert s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="t"), AGENT) == 1
    a = approval(s, tid, aid)
    assert a["state"] == "consumed" and a["consumed_by"] == f"{eid}#1"
    assert s.task(tid)["effects"][0]["attempts"][0]["approval_id"] == aid
    # A failed attempt (reconciled: it did not happen) does not give the used approval back.
    s.execute(RecordResponse(task_id=tid, effect_id=eid, reported="failed", error="503"), AGENT)
    with pytest.raises(CommandRejected, match="unknown: reconcile"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="t"), AGENT)
    assert s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT) == "absent"
    with pytest.raises(CommandRejected, match=f"{aid} is consumed"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="t"), AGENT)


def test_decided_once_by_a_named_person_not_the_requester(s: Store, tid: str) -> None:
    aid = ask(s, tid, plan(s, tid))
    with pytest.raises(CommandRejected, match="named person"):
        s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved"), AGENT)
    requester = Actor(kind="person", id="req")
    own = s.execute(
        RequestApproval(task_id=tid, payload={"x": 1}, consequence="x", policy="p"), requester
    )
    with pytest.raises(CommandRejected, match="requester cannot decide"):
        s.execute(DecideApproval(task_id=tid, approval_id=own, decision="approved"), requester)
    s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="rejected", note="no"), ANA)
    with pytest.raises(CommandRejected, match="already rejected by ana"):
        s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved"), BO)
    a = approval(s, tid, aid)
    assert (a["state"], a["decided_by"]["id"], a["note"]) == ("rejected", "ana", "no")


def test_expiry_is_judged_by_the_database_clock(s: Store, tid: str) -> None:
    eid = plan(s, tid)
    aid = ask(s, tid, eid, seconds=0.05)
    time.sleep(0.1)
    assert approval(s, tid, aid)["state"] == "expired"
    with pytest.raises(CommandRejected, match="expired"):
        s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved"), ANA)
    aid2 = approved_before_it_expires(s, tid, eid)
    deadline = time.monotonic() + 60  # bounds a hang only: the store says when it expired
    while approval(s, tid, aid2)["state"] != "expired":
        assert time.monotonic() < deadline, "the approval never expired"
        time.sleep(0.05)
    with pytest.raises(CommandRejected, match="expired"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="t"), AGENT)
    assert approval(s, tid, aid2)["state"] == "expired"


def approved_before_it_expires(s: Store, tid: str, eid: str) -> str:
    """An approval of a short life, approved within it. A machine too slow to decide in
    0.3 s (a loaded one was) is refused as expired: it asks again for a life four times as
    long, so the test never hangs on how fast the machine is."""
    life = 0.3
    while True:
        aid = ask(s, tid, eid, seconds=life)
        try:
            s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved"), ANA)
            return aid
        except CommandRejected as exc:
            if "expired" not in str(exc) or life > 60:
                raise
            life *= 4


def test_a_changed_payload_makes_the_approval_stale(s: Store, tid: str) -> None:
    eid = plan(s, tid)
    aid = ask(s, tid, eid)
    s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved"), ANA)
    with pytest.raises(CommandRejected, match="differ from effect"):
        s.execute(
            DispatchEffect(task_id=tid, effect_id=eid, executor="t", inputs={"other": 1}), AGENT
        )
    s.execute(
        ReviseEffect(
            task_id=tid, effect_id=eid, reason="typo", content=c.Content(text="v2, fixed")
        ),
        AGENT,
    )
    assert approval(s, tid, aid)["state"] == "stale"
    with pytest.raises(CommandRejected, match=f"{aid} is stale"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="t"), AGENT)
    with pytest.raises(CommandRejected, match="payload changed"):
        s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved"), BO)
    fresh = ask(s, tid, eid)
    assert approval(s, tid, fresh)["payload_digest"] != approval(s, tid, aid)["payload_digest"]


def test_stop_revokes_cancels_keeps_unknown_and_accounts(s: Store, tid: str) -> None:
    sent = plan(s, tid, "sent.md")
    s.execute(DecideApproval(task_id=tid, approval_id=ask(s, tid, sent), decision="approved"), ANA)
    s.execute(DispatchEffect(task_id=tid, effect_id=sent, executor="t"), AGENT)
    s.execute(RecordResponse(task_id=tid, effect_id=sent, reported="timeout"), AGENT)
    waiting = plan(s, tid, "waiting.md")
    pending = ask(s, tid, waiting)
    approved_unused = plan(s, tid, "later.md")
    unused = ask(s, tid, approved_unused)
    s.execute(DecideApproval(task_id=tid, approval_id=unused, decision="approved"), ANA)

    ckpt = s.execute(StopRun(task_id=tid, reason="client withdrew"), ANA)
    state = s.task(tid)
    assert state["status"] == "stopped"
    states = {a["approval_id"]: a["state"] for a in state["approvals"]}
    assert states[pending] == "revoked" and states[unused] == "revoked"
    stages = {e["effect_id"]: (e["stage"], e["outcome"]) for e in state["effects"]}
    assert stages[sent] == ("dispatched", "unknown")  # stays for manual reconciliation
    assert stages[waiting] == ("cancelled", None) and stages[approved_unused][0] == "cancelled"
    head = s.head_checkpoint(tid)
    assert head is not None and head["checkpoint_id"] == ckpt and head["reason"] == "stopped"
    assert f"{sent} (dispatched, unknown)" in head["note"]
    assert head["state"]["unresolved_effects"][0]["id"] == sent
    assert "do not dispatch again" in head["state"]["unresolved_effects"][0]["safe_recovery"]
    with pytest.raises(CommandRejected, match="nothing may be dispatched"):
        s.execute(DispatchEffect(task_id=tid, effect_id=sent, executor="t"), AGENT)
    with pytest.raises(CommandRejected, match="cannot be stopped"):
        s.execute(StopRun(task_id=tid, reason="again"), ANA)


def test_lineage_heads_fork_and_merge(s: Store, tid: str) -> None:
    first = s.execute(WriteCheckpoint(task_id=tid, reason="milestone", note="m1"), ANA)
    lineage = s.task(tid)["checkpoints"]
    initial = lineage["checkpoints"][0]
    assert initial["reason"] == "initial" and lineage["heads"] == [first]
    with pytest.raises(CommandRejected, match="exactly one initial"):
        s.execute(WriteCheckpoint(task_id=tid, reason="initial", note="again"), ANA)
    second = s.execute(WriteCheckpoint(task_id=tid, reason="milestone", note="m2"), ANA)
    # Someone resumed from the older checkpoint: a fork, shown and not resolved.
    branch = s.execute(
        WriteCheckpoint(task_id=tid, reason="handoff", note="from m1", supersedes=[first]), BO
    )
    lineage = s.task(tid)["checkpoints"]
    assert sorted(lineage["heads"]) == sorted([second, branch])
    assert lineage["forks"] == [lineage["heads"]]
    with pytest.raises(CommandRejected, match="forked"):
        s.execute(WriteCheckpoint(task_id=tid, reason="milestone", note="?"), ANA)
    merged = s.execute(
        WriteCheckpoint(
            task_id=tid, reason="milestone", note="keep Bo's", supersedes=[branch], merge=[second]
        ),
        ANA,
    )
    lineage = s.task(tid)["checkpoints"]
    assert lineage["heads"] == [merged] and lineage["forks"] == []
    row = next(x for x in lineage["checkpoints"] if x["checkpoint_id"] == merged)
    assert row["supersedes"] == [branch] and row["merged"] == [second]
    assert row["author"]["name"] == "Ana Lind" and row["note"] == "keep Bo's"


def test_checkpoint_is_taken_at_its_event_boundary(s: Store, tid: str) -> None:
    s.execute(c.AddCriterion(task_id=tid, text="it works", criterion_id="works"), AGENT)
    before = s.task(tid)
    cid = s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), AGENT)
    rows = s.task(tid)["checkpoints"]["checkpoints"]
    row = next(x for x in rows if x["checkpoint_id"] == cid)
    initial = next(x for x in rows if x["reason"] == "initial")
    # The initial checkpoint was taken at the boundary that existed before this command.
    assert (initial["seq"], initial["chain_hash"]) == (before["last_seq"], before["head_hash"])
    events = s.events(tid)
    at_boundary = next(e for e in events if e["seq"] == row["seq"])
    assert at_boundary["hash"] == row["chain_hash"]
    assert events[row["seq"]]["type"] == "checkpoint.written"
    assert row["state_digest"] == digest_of(row["state"])
    assert row["state"]["criteria"] == [
        {"id": "works", "status": "unverified", "artifact_id": None, "artifact_version": None}
    ]
    assert len(str(row["state"])) < 10_000


def test_final_is_refused_with_pending_work(s: Store, tid: str) -> None:
    s.execute(c.AddCriterion(task_id=tid, text="it works", criterion_id="works"), AGENT)
    with pytest.raises(CommandRejected, match=r"handoff .*stopped"):
        s.execute(WriteCheckpoint(task_id=tid, reason="final", note="done"), ANA)
    with pytest.raises(CommandRejected, match="carries their note"):
        s.execute(WriteCheckpoint(task_id=tid, reason="handoff"), ANA)
    s.execute(c.JudgeCriterion(task_id=tid, criterion_id="works", status="waived", note="x"), ANA)
    cid = s.execute(WriteCheckpoint(task_id=tid, reason="final", note="all done"), ANA)
    assert s.head_checkpoint(tid)["checkpoint_id"] == cid  # type: ignore[index]


def test_rebuild_with_approvals_and_checkpoints_equals_incremental(s: Store, tid: str) -> None:
    eid = plan(s, tid)
    aid = ask(s, tid, eid)
    s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved"), ANA)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="t"), AGENT)
    s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), AGENT)
    s.execute(StopRun(task_id=tid, reason="enough"), ANA)
    before = s.projection_dump(tid)
    s.rebuild(tid)
    assert s.projection_dump(tid) == before


def _fork(s: Store, tid: str) -> tuple[str, str]:
    m1: str = s.execute(WriteCheckpoint(task_id=tid, reason="milestone", note="m1"), ANA)
    initial = s.task(tid)["checkpoints"]["checkpoints"][0]["checkpoint_id"]
    h1: str = s.execute(
        WriteCheckpoint(task_id=tid, reason="handoff", note="h1", supersedes=[initial]), BO
    )
    return m1, h1


def test_stop_on_a_forked_lineage_picks_no_head(s: Store, tid: str) -> None:
    # (This used to merge the other heads into the newest one: a stop chose the lineage.)
    m1, h1 = _fork(s, tid)
    stopped = s.execute(StopRun(task_id=tid, reason="enough"), ANA)
    lineage = s.task(tid)["checkpoints"]
    row = next(x for x in lineage["checkpoints"] if x["checkpoint_id"] == stopped)
    assert (row["reason"], row["supersedes"], row["merged"]) == ("stopped", [], [])
    # Both heads are still heads; the stopped checkpoint stands beside them.
    assert lineage["heads"] == [m1, h1, stopped] and lineage["forks"] == [[m1, h1, stopped]]
    assert f"Still unresolved: the fork, heads {m1} and {h1}, none chosen" in row["note"]
    (stop,) = s.events(tid, types=["run.stopped"])
    assert f"heads {m1} and {h1}, none chosen" in stop["payload"]["account"]
    # The head read is the stopped checkpoint, its state the task's.
    head = s.head_checkpoint(tid)
    assert head is not None and head["checkpoint_id"] == stopped


def test_stop_continues_from_the_named_head_and_merges_only_when_told(s: Store, tid: str) -> None:
    m1, h1 = _fork(s, tid)
    stopped = s.execute(StopRun(task_id=tid, reason="enough", supersedes=m1), ANA)
    lineage = s.task(tid)["checkpoints"]
    row = next(x for x in lineage["checkpoints"] if x["checkpoint_id"] == stopped)
    assert (row["supersedes"], row["merged"]) == ([m1], [])
    assert lineage["heads"] == [h1, stopped]
    assert f"continues from {m1}." in row["note"]
    assert f"Still unresolved: {h1} stays a head, not merged" in row["note"]


def test_stop_merges_what_the_person_names(s: Store, tid: str) -> None:
    m1, h1 = _fork(s, tid)
    stopped = s.execute(StopRun(task_id=tid, reason="enough", supersedes=m1, merge=[h1]), ANA)
    lineage = s.task(tid)["checkpoints"]
    row = next(x for x in lineage["checkpoints"] if x["checkpoint_id"] == stopped)
    assert lineage["heads"] == [stopped]
    assert (row["supersedes"], row["merged"]) == ([m1], [h1])
    assert f"continues from {m1} and merges {h1}" in row["note"]


def test_a_stops_choice_of_head_is_checked(s: Store, tid: str) -> None:
    m1, h1 = _fork(s, tid)
    initial = s.task(tid)["checkpoints"]["checkpoints"][0]["checkpoint_id"]
    for bad, why in (
        (StopRun(task_id=tid, reason="x", supersedes=initial), "not a head"),
        (StopRun(task_id=tid, reason="x", supersedes=m1, merge=[initial]), "only a head"),
        (StopRun(task_id=tid, reason="x", supersedes=m1, merge=[m1]), "not merged too"),
        (StopRun(task_id=tid, reason="x", merge=[h1]), "name the head"),
    ):
        with pytest.raises(CommandRejected, match=why):
            s.execute(bad, ANA)
    assert s.task(tid)["status"] != "stopped"  # nothing was written


def test_stop_plan_names_the_fork() -> None:
    from store import rules

    plan = rules.stop_plan([], [], "now", ["a", "b"])
    assert (plan.fork, plan.continue_from, plan.merge, plan.left_open) == (
        ("a", "b"),
        None,
        (),
        ("a", "b"),
    )
    plan = rules.stop_plan([], [], "now", ["a", "b"], continue_from="b")
    assert (plan.continue_from, plan.left_open) == ("b", ("a",))
    plan = rules.stop_plan([], [], "now", ["a"])
    assert (plan.fork, plan.continue_from, plan.left_open) == ((), "a", ())


def test_an_effect_that_did_not_happen_can_be_approved_again(s: Store, tid: str) -> None:
    eid = plan(s, tid)
    s.execute(DecideApproval(task_id=tid, approval_id=ask(s, tid, eid), decision="approved"), ANA)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="t"), AGENT)
    s.execute(RecordResponse(task_id=tid, effect_id=eid, reported="failed", error="503"), AGENT)
    # The executor's word: only once reconciled (absent) did it not happen.
    assert s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT) == "absent"
    again = ask(s, tid, eid)
    s.execute(DecideApproval(task_id=tid, approval_id=again, decision="approved"), ANA)
    assert s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="t"), AGENT) == 2
    assert approval(s, tid, again)["consumed_by"] == f"{eid}#2"
