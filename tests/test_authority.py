"""Authority, binding budgets, evidence that counts only while readable, and overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from blob_damage import damage_blob, lose_blob

from store import Actor, Store
from store import commands as c
from store.commands import effects as lg
from store.commands.checkpoints import StopRun, WriteCheckpoint
from store.errors import (
    AuthorityRefused,
    BudgetBinds,
    CommandRejected,
    EvidenceMissing,
    ObservationOverride,
    TargetChanged,
)
from store.services.resume import resume_brief

AGENT = Actor(kind="agent", id="agent-1", name="Worker")
ANA = Actor(kind="person", id="ana", name="Ana")


def new_task(s: Store, ws: Path) -> str:
    tid: str = s.execute(
        c.CreateTask(title="t", owner="ana", objective="o", scope_paths=[str(ws)]), AGENT
    )
    return tid


def satisfied_criterion(s: Store, tid: str) -> str:
    cid: str = s.execute(c.AddCriterion(task_id=tid, text="right"), AGENT)
    s.execute(
        c.RecordArtifact(task_id=tid, artifact_id="r", name="r", content=c.Content(text="r")),
        AGENT,
    )
    eid = s.execute(
        c.AttachEvidence(
            task_id=tid, criterion_id=cid, kind="command_output", content=c.Content(text="ok")
        ),
        AGENT,
    )
    s.execute(
        c.JudgeCriterion(
            task_id=tid, criterion_id=cid, status="satisfied", artifact_id="r", evidence_ids=[eid]
        ),
        AGENT,
    )
    return cid


def test_an_agent_cannot_waive_a_person_can(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    cid = s.execute(c.AddCriterion(task_id=tid, text="right"), AGENT)
    waive = c.JudgeCriterion(task_id=tid, criterion_id=cid, status="waived", note="n/a")
    with pytest.raises(AuthorityRefused) as info:
        s.execute(waive, AGENT)
    assert info.value.rule == "waiver_is_a_persons" and "ask a person" in str(info.value)
    s.execute(waive, ANA)
    assert s.task(tid)["criteria"][0]["status"] == "waived"


def test_budget_binds_until_a_person_raises_the_limit(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    (ws / "out.txt").write_text("old")
    eff = s.execute(
        lg.PlanEffect(task_id=tid, target="out.txt", consequence="c", content=c.Content(text="n")),
        AGENT,
    )
    s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=100), AGENT)
    s.execute(c.ChargeBudget(task_id=tid, counter="tool_calls", amount=105), AGENT)
    assert s.task(tid)["status"] == "budget_exhausted"
    # The agent steps around nothing: no reopening, no spending, no dispatch, no raising.
    with pytest.raises(AuthorityRefused, match="only a person reopens"):
        s.execute(c.SetStatus(task_id=tid, status="running"), AGENT)
    with pytest.raises(AuthorityRefused):
        s.execute(c.SetStatus(task_id=tid, status="paused"), AGENT)
    with pytest.raises(BudgetBinds):
        s.execute(c.ChargeBudget(task_id=tid, counter="tool_calls", amount=1), AGENT)
    with pytest.raises(CommandRejected, match="nothing may be dispatched"):
        s.execute(lg.DispatchEffect(task_id=tid, effect_id=eff, executor="x"), AGENT)
    with pytest.raises(AuthorityRefused, match="raises or removes"):
        s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=200), AGENT)
    brief = resume_brief(s, tid)
    assert not any(a["command"]["type"] == "dispatch_effect" for a in brief["next_actions"])
    assert any(b["kind"] == "budget_exhausted" for b in brief["blockers"])
    assert any(
        a["actor"] == "person" and a["command"]["type"] == "set_status"
        for a in brief["next_actions"]
    )
    # A person raises the limit: the run goes on, recorded as that person's decision.
    s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=200), ANA)
    state = s.task(tid)
    assert state["status"] == "running" and "ana" in state["status_reason"]
    s.execute(lg.DispatchEffect(task_id=tid, effect_id=eff, executor="x"), AGENT)


def test_an_agent_cannot_reopen_a_stopped_run(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    s.execute(StopRun(task_id=tid, reason="enough"), ANA)
    with pytest.raises(AuthorityRefused, match="reopen"):
        s.execute(c.SetStatus(task_id=tid, status="running"), AGENT)
    s.execute(c.SetStatus(task_id=tid, status="running", reason="one more try"), ANA)
    assert s.task(tid)["status"] == "running"


@pytest.mark.parametrize("damage", ["delete", "replace"])
def test_missing_or_unreadable_evidence_does_not_count(s: Store, ws: Path, damage: str) -> None:
    tid = new_task(s, ws)
    cid = satisfied_criterion(s, tid)
    ev = s.task(tid)["criteria"][0]["evidence"][0]
    if damage == "delete":
        lose_blob(s, ev["digest"])
    else:
        damage_blob(s, ev["digest"], b"something else entirely")
    state = s.task(tid)
    crit = state["criteria"][0]
    assert crit["status"] == "satisfied" and crit["state"] == "evidence_missing"
    (problem,) = [p for p in state["problems"] if p["kind"] == "evidence"]
    assert problem["digest"] == ev["digest"]
    assert problem["owner"] == {"criterion_id": cid, "evidence_id": ev["evidence_id"]}
    with pytest.raises(EvidenceMissing) as info:
        s.execute(c.SetStatus(task_id=tid, status="completed"), AGENT)
    assert info.value.criteria == [cid]
    with pytest.raises(EvidenceMissing):
        s.execute(WriteCheckpoint(task_id=tid, reason="final", note="done"), ANA)
    brief = resume_brief(s, tid)
    assert brief["criteria"][0]["status"] == "evidence_missing"
    block = next(b for b in brief["blockers"] if b["kind"] == "evidence_missing")
    assert block["evidence"][0]["digest"] == ev["digest"]


def test_show_json_names_the_blob_and_its_owner(
    s: Store, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from store.cli import main

    tid = new_task(s, ws)
    cid = satisfied_criterion(s, tid)
    ev = s.task(tid)["criteria"][0]["evidence"][0]
    damage_blob(s, ev["digest"], b"garbage")
    url = [] if s.location.sqlite_file else ["--url", s.location.url]
    rc = main(["--store", str(s.location.directory), *url, "show", tid, "--json"])
    out = json.loads(capsys.readouterr().out)["result"]
    assert rc in (0, None)
    assert [(p["digest"], p["owner"]["criterion_id"]) for p in out["problems"]] == [
        (ev["digest"], cid)
    ]


def _timed_out_write(s: Store, ws: Path, tid: str) -> str:
    (ws / "out.txt").write_text("old\n")
    eff: str = s.execute(
        lg.PlanEffect(
            task_id=tid, target="out.txt", consequence="c", content=c.Content(text="new\n")
        ),
        AGENT,
    )
    s.execute(lg.DispatchEffect(task_id=tid, effect_id=eff, executor="tool"), AGENT)
    s.execute(lg.RecordResponse(task_id=tid, effect_id=eff, reported="timeout"), AGENT)
    return eff


def test_a_hand_decision_against_a_fresh_hash_is_an_explicit_override(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    eff = _timed_out_write(s, ws, tid)  # the file still holds its pre-state: absent
    obs = s.execute(lg.ObserveEffect(task_id=tid, effect_id=eff), ANA)
    decide = {"task_id": tid, "effect_id": eff, "observation_id": obs, "decision": "present"}
    with pytest.raises(ObservationOverride, match="overrides that observation"):
        s.execute(lg.ReconcileEffect(**decide, note="I saw it"), ANA)
    with pytest.raises(AuthorityRefused):
        s.execute(lg.ReconcileEffect(**decide, override=True, note="I saw it"), AGENT)
    with pytest.raises(CommandRejected, match="note"):
        s.execute(lg.ReconcileEffect(**decide, override=True), ANA)
    s.execute(lg.ReconcileEffect(**decide, override=True, note="written elsewhere, copied"), ANA)
    rec = next(e for e in s.task(tid)["effects"] if e["effect_id"] == eff)["reconciliation"]
    assert rec["verdict"] == "present" and rec["overrode"] == "absent" and rec["by_person"]
    (event,) = [e for e in s.events(tid) if e["type"] == "effect.reconciled"]
    assert event["payload"]["overrode"] == "absent" and event["format"] == 2
    brief = resume_brief(s, tid)
    eb = next(e for e in brief["effects"] if e["id"] == eff)
    assert eb["override"]["observation_said"] == "absent"


def test_a_conflict_is_a_persons_to_decide_and_the_brief_says_so(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    eff = _timed_out_write(s, ws, tid)
    (ws / "out.txt").write_text("something else\n")
    assert s.execute(lg.ReconcileEffect(task_id=tid, effect_id=eff), AGENT) == "conflict"
    brief = resume_brief(s, tid)
    block = next(b for b in brief["blockers"] if b["kind"] == "conflict_undecided")
    assert block["decided_by"] == "person" and "a person must decide" in block["message"]
    (act,) = [a for a in brief["next_actions"] if a["command"]["type"] == "reconcile_effect"]
    assert act["actor"] == "person" and act["needs"] == ["decision", "note"]
    # No override is needed to decide a conflict: the store could not settle it.
    s.execute(
        lg.ReconcileEffect(
            task_id=tid,
            effect_id=eff,
            observation_id=act["command"]["observation_id"],
            decision="absent",
            note="the other text is mine; the write never landed",
        ),
        ANA,
    )


def test_a_changed_target_is_refused_by_type(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    eff = _timed_out_write(s, ws, tid)
    obs = s.execute(lg.ObserveEffect(task_id=tid, effect_id=eff), ANA)
    (ws / "out.txt").write_text("edited\n")
    with pytest.raises(TargetChanged) as info:
        s.execute(lg.ReconcileEffect(task_id=tid, effect_id=eff, observation_id=obs), ANA)
    assert info.value.observation_id == obs


def test_reconcile_hashes_the_target_once_outside_the_write_lock(
    s: Store, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tid = new_task(s, ws)
    eff = _timed_out_write(s, ws, tid)
    calls: list[bool] = []
    real = lg.hash_file

    def counting(path: Path, *a: object) -> tuple[str, int]:
        calls.append(s._write_lock.locked())
        return real(path)

    monkeypatch.setattr(lg, "hash_file", counting)
    assert s.execute(lg.ReconcileEffect(task_id=tid, effect_id=eff), AGENT) == "absent"
    assert calls == [False]  # one hash, and not under the write lock
    calls.clear()
    s.execute(lg.ObserveEffect(task_id=tid, effect_id=eff, purpose="watch"), AGENT)
    assert calls == [False]


def test_a_counter_s_standing_counts_reservations_as_promised_spending(s: Store, ws: Path) -> None:
    """One rule for how a budget stands, asked by the desktop: a reservation that takes what
    is left means nothing more can be reserved (the store refuses it), without the run
    being stopped as it is once what is used reaches the limit."""
    from store.rules import BudgetStanding, budget_standing

    tid = new_task(s, ws)
    s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=10), AGENT)

    def standing() -> BudgetStanding:
        b = s.task(tid)["budgets"][0]
        return budget_standing(b["used"], b["reserved"], b["limit_value"])

    assert standing() == BudgetStanding.WITHIN
    s.execute(c.ReserveBudget(task_id=tid, counter="tool_calls", amount=8), AGENT)
    assert standing() == BudgetStanding.NEAR_LIMIT
    s.execute(c.ReserveBudget(task_id=tid, counter="tool_calls", amount=2), AGENT)
    assert standing() == BudgetStanding.FULLY_RESERVED
    with pytest.raises(CommandRejected, match="only 0 left"):
        s.execute(c.ReserveBudget(task_id=tid, counter="tool_calls", amount=1), AGENT)
    assert s.task(tid)["status"] != "budget_exhausted"
    s.execute(c.ReleaseBudget(task_id=tid, counter="tool_calls", amount=10), AGENT)
    s.execute(c.ChargeBudget(task_id=tid, counter="tool_calls", amount=10), AGENT)
    assert standing() == BudgetStanding.EXHAUSTED
    assert budget_standing(5, 0, None) == BudgetStanding.UNLIMITED
