"""What a task did to the world, end to end with real files (DESIGN scenarios 4 and 5).

Each case leaves different evidence in the record, and none lets the task be completed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_store_integrity import chain_problems

from store import Actor, CommandRejected, Store
from store import commands as c
from store.blobs import hash_file
from store.commands.effects import (
    CancelEffect,
    DispatchEffect,
    ObserveEffect,
    PlanEffect,
    ReconcileEffect,
    RecordResponse,
)

AGENT = Actor(kind="agent", id="writer-7")
ANA = Actor(kind="person", id="ana", name="Ana Lind")


def new_task(s: Store, ws: Path) -> str:
    tid: str = s.execute(
        c.CreateTask(title="report", owner="ana", objective="ship", scope_paths=[str(ws)]), AGENT
    )
    s.execute(c.AddCriterion(task_id=tid, text="report saved", criterion_id="saved"), AGENT)
    return tid


def plan_write(s: Store, tid: str, name: str = "report.md", text: str = "new\n") -> str:
    eid: str = s.execute(
        PlanEffect(
            task_id=tid,
            target=name,
            consequence=f"overwrite {name} with the final report",
            content=c.Content(text=text),
        ),
        AGENT,
    )
    return eid


def effect(s: Store, tid: str, eid: str) -> dict[str, Any]:
    return next(e for e in s.task(tid)["effects"] if e["effect_id"] == eid)


def assert_not_completable(s: Store, tid: str) -> None:
    s.execute(c.JudgeCriterion(task_id=tid, criterion_id="saved", status="waived", note="n/a"), ANA)
    with pytest.raises(CommandRejected, match=r"unresolved|cannot become completed"):
        s.execute(c.SetStatus(task_id=tid, status="completed", reason="agent says done"), AGENT)


def test_intent_is_recorded_with_the_observed_pre_state(s: Store, ws: Path) -> None:
    (ws / "report.md").write_text("old\n")
    tid = new_task(s, ws)
    eid = plan_write(s, tid)
    e = effect(s, tid, eid)
    old_digest, _ = hash_file(ws / "report.md")
    assert e["stage"] == "planned" and e["outcome"] is None and e["attempts"] == []
    assert e["target"] == str((ws / "report.md").resolve())
    assert e["intent"]["pre_state"] == {"exists": True, "digest": old_digest, "size": 4}
    assert e["intent"]["intended"]["size"] == 4
    assert e["intent"]["intended"]["digest"] != old_digest
    assert e["consequence"] == "overwrite report.md with the final report"
    assert e["idempotency_key"] == f"{tid}:{eid}"


def test_tool_reports_success_but_the_file_is_unchanged(s: Store, ws: Path) -> None:
    (ws / "report.md").write_text("old\n")
    tid = new_task(s, ws)
    eid = plan_write(s, tid)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    outcome = s.execute(
        RecordResponse(
            task_id=tid, effect_id=eid, reported="reported_success", response={"ok": True}
        ),
        AGENT,
    )
    assert outcome == "unknown"  # the executor's word is a response, not an outcome
    assert s.task(tid)["status"] == "outcome_unknown"
    verdict = s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT)
    e = effect(s, tid, eid)
    assert verdict == "absent"
    assert (e["stage"], e["outcome"]) == ("reconciled", "absent")
    reasons = e["reconciliation"]["reasons"]
    assert any("reported success" in r for r in reasons)
    assert any("pre-state" in r for r in reasons)
    assert e["attempts"][0]["response"] == {"ok": True, "reported": "reported_success"}
    assert e["unresolved"] is True  # it did not happen: still to do, or to cancel
    assert_not_completable(s, tid)


def test_file_saved_to_the_wrong_directory_is_a_conflict(s: Store, ws: Path) -> None:
    (ws / "out").mkdir()
    tid = new_task(s, ws)
    eid = plan_write(s, tid, "out/report.md")
    (ws / "report.md").write_text("new\n")  # the tool wrote beside, not into out/
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    s.execute(
        RecordResponse(
            task_id=tid,
            effect_id=eid,
            reported="reported_success",
            response={"path": str(ws / "report.md")},
        ),
        AGENT,
    )
    verdict = s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT)
    e = effect(s, tid, eid)
    assert verdict == "conflict"
    assert e["stage"] == "observed" and e["outcome"] == "unknown"
    assert any("not the authorized target" in r for r in e["reconciliation"]["reasons"])
    # A conflict waits for a person; an agent cannot settle it by decree.
    with pytest.raises(CommandRejected, match="only a person"):
        s.execute(ReconcileEffect(task_id=tid, effect_id=eid, decision="absent"), AGENT)
    with pytest.raises(CommandRejected, match="cannot be dispatched"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    assert_not_completable(s, tid)


def test_file_changed_by_someone_else_before_reconciliation(s: Store, ws: Path) -> None:
    (ws / "report.md").write_text("old\n")
    tid = new_task(s, ws)
    eid = plan_write(s, tid)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    s.execute(RecordResponse(task_id=tid, effect_id=eid, reported="timeout"), AGENT)
    obs = s.execute(ObserveEffect(task_id=tid, effect_id=eid), ANA)
    (ws / "report.md").write_text("edited by hand\n")
    # The decision rests on an observation that no longer matches the file: refused.
    with pytest.raises(CommandRejected, match="changed since observation"):
        s.execute(
            ReconcileEffect(
                task_id=tid, effect_id=eid, observation_id=obs, decision="present", note="ok"
            ),
            ANA,
        )
    fresh = s.execute(ObserveEffect(task_id=tid, effect_id=eid), ANA)
    verdict = s.execute(ReconcileEffect(task_id=tid, effect_id=eid, observation_id=fresh), ANA)
    e = effect(s, tid, eid)
    assert verdict == "conflict"
    assert any("neither the intended" in r for r in e["reconciliation"]["reasons"])
    assert [o["observation_id"] for o in e["observations"]] == [obs, fresh]
    assert e["observations"][1]["digest"] == hash_file(ws / "report.md")[0]
    assert_not_completable(s, tid)
    # A person decides, with a note; the decision and the observation are attributed.
    s.execute(
        ReconcileEffect(
            task_id=tid,
            effect_id=eid,
            observation_id=fresh,
            decision="present",
            note="Ana's hand edit supersedes the agent's text",
        ),
        ANA,
    )
    e = effect(s, tid, eid)
    rec = e["reconciliation"]
    assert (e["stage"], e["outcome"]) == ("reconciled", "succeeded")
    assert rec["by"]["id"] == "ana" and rec["by_person"] and rec["observation_id"] == fresh


def test_three_attempts_are_one_effect_with_three_attempts(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    eid = plan_write(s, tid)
    for _ in range(2):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
        s.execute(
            RecordResponse(task_id=tid, effect_id=eid, reported="failed", error="disk quota"),
            AGENT,
        )
        # The executor's word: reconciled, it did not happen, so it may be tried again.
        assert s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT) == "absent"
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    (ws / "report.md").write_text("new\n")
    s.execute(RecordResponse(task_id=tid, effect_id=eid, reported="reported_success"), AGENT)
    assert s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT) == "present"
    state = s.task(tid)
    assert len(state["effects"]) == 1
    atts = state["effects"][0]["attempts"]
    assert [(a["attempt_no"], a["outcome"], a["error"]) for a in atts] == [
        (1, "absent", "disk quota"),
        (2, "absent", "disk quota"),
        (3, "succeeded", None),
    ]
    assert state["effects"][0]["idempotency_key"] == f"{tid}:{eid}"
    assert state["effects"][0]["unresolved"] is False
    # Once it happened, it cannot happen again.
    with pytest.raises(CommandRejected, match="already happened"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)


def test_the_same_idempotency_key_is_never_a_second_effect(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    s.execute(
        PlanEffect(
            task_id=tid,
            target="a.md",
            consequence="write a",
            content=c.Content(text="a"),
            idempotency_key="upload-42",
        ),
        AGENT,
    )
    with pytest.raises(CommandRejected, match="new attempt under it"):
        s.execute(
            PlanEffect(
                task_id=tid,
                target="a.md",
                consequence="write a",
                content=c.Content(text="a"),
                idempotency_key="upload-42",
            ),
            AGENT,
        )


def test_partial_outcome_forbids_a_blind_retry(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    eid = plan_write(s, tid)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    s.execute(
        RecordResponse(task_id=tid, effect_id=eid, reported="partial", response={"written": 2}),
        AGENT,
    )
    e = effect(s, tid, eid)
    assert e["outcome"] == "partial" and e["attempts"][0]["outcome"] == "partial"
    with pytest.raises(CommandRejected, match="partial: reconcile"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    assert s.task(tid)["status"] == "outcome_unknown"
    assert_not_completable(s, tid)


def test_timeout_after_dispatch_is_still_unknown_after_restart(
    open_store: Callable[..., Store], ws: Path
) -> None:
    with open_store() as s:
        tid = new_task(s, ws)
        eid = plan_write(s, tid)
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:upload"), AGENT)
        s.execute(RecordResponse(task_id=tid, effect_id=eid, reported="timeout"), AGENT)
    with open_store() as s:
        e = effect(s, tid, eid)
        assert (e["stage"], e["outcome"]) == ("dispatched", "unknown")
        assert e["attempts"][0]["response"] == {"reported": "timeout"}
        assert s.task(tid)["status"] == "outcome_unknown"
        with pytest.raises(CommandRejected, match="unknown: reconcile"):
            s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:upload"), AGENT)
        assert_not_completable(s, tid)
        assert chain_problems(s, tid) == []


def test_targets_outside_the_scope_are_refused(s: Store, ws: Path, tmp_path: Path) -> None:
    tid = new_task(s, ws)
    outside = tmp_path / "elsewhere.md"
    (ws / "link.md").symlink_to(outside)
    targets = ("../elsewhere.md", str(outside), "link.md", "https://example.org/x")
    for target in (*targets, "mailto:anyone@example.org"):  # not a file in the workspace
        with pytest.raises(CommandRejected, match="outside the task's scope"):
            s.execute(
                PlanEffect(
                    task_id=tid, target=target, consequence="w", content=c.Content(text="x")
                ),
                AGENT,
            )
    assert s.task(tid)["effects"] == []


def test_a_link_swapped_in_after_planning_is_not_followed(
    s: Store, ws: Path, tmp_path: Path
) -> None:
    tid = new_task(s, ws)
    eid = plan_write(s, tid)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    (tmp_path / "secret").write_text("outside")
    (ws / "report.md").symlink_to(tmp_path / "secret")
    with pytest.raises(CommandRejected, match="outside the task's scope"):
        s.execute(ObserveEffect(task_id=tid, effect_id=eid), AGENT)


def test_cancel_only_before_dispatch(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    eid = plan_write(s, tid)
    other = plan_write(s, tid, "b.md")
    s.execute(CancelEffect(task_id=tid, effect_id=eid, reason="not needed"), ANA)
    assert effect(s, tid, eid)["stage"] == "cancelled"
    with pytest.raises(CommandRejected, match="cancelled"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    s.execute(DispatchEffect(task_id=tid, effect_id=other, executor="tool:save"), AGENT)
    with pytest.raises(CommandRejected, match="reconciled, not cancelled"):
        s.execute(CancelEffect(task_id=tid, effect_id=other, reason="oops"), ANA)


def test_every_effect_charges_the_effects_budget(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    s.execute(c.SetBudget(task_id=tid, counter="effects", limit=2), ANA)
    plan_write(s, tid, "a.md")
    plan_write(s, tid, "b.md")
    state = s.task(tid)
    assert [b["used"] for b in state["budgets"] if b["counter"] == "effects"] == [2]
    assert state["status"] == "budget_exhausted"


def test_rebuild_of_the_ledger_equals_incremental(s: Store, ws: Path) -> None:
    (ws / "report.md").write_text("old\n")
    tid = new_task(s, ws)
    eid = plan_write(s, tid)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    s.execute(RecordResponse(task_id=tid, effect_id=eid, reported="failed", error="x"), AGENT)
    s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    s.execute(RecordResponse(task_id=tid, effect_id=eid, reported="timeout"), AGENT)
    s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT)
    before = s.projection_dump(tid)
    s.rebuild(tid)
    assert s.projection_dump(tid) == before


def test_a_response_after_reconciliation_reopens_it(s: Store, ws: Path) -> None:
    """Plan, dispatch, reconcile absent; then the executor writes the file and reports success.
    The late word is kept and re-opens the reconciliation: the brief's next action (reconcile)
    is accepted, and a fresh observation settles the effect (it was stuck for good before)."""
    from store.services.resume import resume_brief

    tid = new_task(s, ws)
    eid = plan_write(s, tid)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    assert s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT) == "absent"
    (ws / "report.md").write_text("new\n")  # the executor was only slow
    outcome = s.execute(
        RecordResponse(task_id=tid, effect_id=eid, reported="reported_success"), AGENT
    )
    e = effect(s, tid, eid)
    assert outcome == "unknown"
    assert (e["stage"], e["outcome"], e["reconciliation"]) == ("dispatched", "unknown", None)
    assert e["attempts"][0]["response"] == {"reported": "reported_success"}
    assert s.task(tid)["status"] == "outcome_unknown"
    brief = resume_brief(s, tid)
    kinds = [b["kind"] for b in brief["blockers"] if b.get("effect_id") == eid]
    assert kinds == ["effect_to_reconcile"]
    reconcile = [a for a in brief["next_actions"] if a["command"]["type"] == "reconcile_effect"]
    assert [a["command"]["effect_id"] for a in reconcile] == [eid]
    with pytest.raises(CommandRejected, match="unknown: reconcile"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    assert s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT) == "present"
    e = effect(s, tid, eid)
    assert (e["stage"], e["outcome"], e["unresolved"]) == ("reconciled", "succeeded", False)
    before = s.projection_dump(tid)
    s.rebuild(tid)
    assert s.projection_dump(tid) == before
    assert chain_problems(s, tid) == []


def test_a_late_failure_after_a_present_reconciliation_permits_no_blind_retry(
    s: Store, ws: Path
) -> None:
    tid = new_task(s, ws)
    eid = plan_write(s, tid)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    (ws / "report.md").write_text("new\n")
    assert s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT) == "present"
    outcome = s.execute(
        RecordResponse(task_id=tid, effect_id=eid, reported="failed", error="late timeout"),
        AGENT,
    )
    # The executor's word is not the outcome: "failed" would allow sending it again.
    assert outcome == "unknown"
    assert effect(s, tid, eid)["stage"] == "dispatched"
    with pytest.raises(CommandRejected, match="unknown: reconcile"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    # A person's hand verdict is accepted again (it was refused while the effect was stuck).
    verdict = s.execute(
        ReconcileEffect(task_id=tid, effect_id=eid, decision="present", note="the file is there"),
        ANA,
    )
    assert verdict == "present"
    assert effect(s, tid, eid)["outcome"] == "succeeded"


def test_dispatch_and_completion_read_the_decision_from_the_log_not_the_table(
    s: Store, ws: Path
) -> None:
    """The tables say approved and waived (written by hand, as the database's owner could);
    no person decided either in the log. Dispatch and completion are refused."""
    from store import schema as t
    from store.commands.approvals import RequestApproval

    tid = new_task(s, ws)
    eid: str = s.execute(
        PlanEffect(
            task_id=tid,
            target="report.md",
            consequence="write the report",
            content=c.Content(text="new\n"),
            requires_approval=True,
            policy="review",
        ),
        AGENT,
    )
    apr = s.execute(RequestApproval(task_id=tid, effect_id=eid, policy="review"), AGENT)
    with s.engine.begin() as conn:
        conn.execute(
            t.approvals.update().where(t.approvals.c.approval_id == apr).values(state="approved")
        )
        conn.execute(t.criteria.update().where(t.criteria.c.task_id == tid).values(status="waived"))
        # The table also forgets that the effect needs an approval at all.
        conn.execute(
            t.effects.update().where(t.effects.c.task_id == tid).values(requires_approval=False)
        )
    dispatch = DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save", approval_id=apr)
    with pytest.raises(CommandRejected, match="no person's approval of it is in the log") as info:
        s.execute(dispatch, AGENT)
    assert info.value.rule == "approval_not_in_record"
    assert effect(s, tid, eid)["attempts"] == []
    # The criterion's waiver is not in the log either: completion is refused for it.
    s.execute(CancelEffect(task_id=tid, effect_id=eid, reason="not needed"), AGENT)
    with pytest.raises(CommandRejected, match="saved"):
        s.execute(c.SetStatus(task_id=tid, status="completed", reason="done"), AGENT)
    # What a person decides, in the log, is what counts.
    with s.engine.begin() as conn:
        conn.execute(
            t.criteria.update().where(t.criteria.c.task_id == tid).values(status="unverified")
        )
    s.execute(c.JudgeCriterion(task_id=tid, criterion_id="saved", status="waived", note="n/a"), ANA)
    s.execute(c.SetStatus(task_id=tid, status="completed", reason="done"), AGENT)
    assert s.task(tid)["status"] == "completed"


def test_a_persons_approval_in_the_log_lets_dispatch_consume_it(s: Store, ws: Path) -> None:
    from store.commands.approvals import DecideApproval, RequestApproval

    tid = new_task(s, ws)
    eid: str = s.execute(
        PlanEffect(
            task_id=tid,
            target="report.md",
            consequence="write the report",
            content=c.Content(text="new\n"),
            requires_approval=True,
            policy="review",
        ),
        AGENT,
    )
    apr = s.execute(RequestApproval(task_id=tid, effect_id=eid, policy="review"), AGENT)
    s.execute(DecideApproval(task_id=tid, approval_id=apr, decision="approved"), ANA)
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    approval = s.task(tid)["approvals"][0]
    assert (approval["state"], approval["consumed_by"]) == ("consumed", f"{eid}#1")
    with pytest.raises(CommandRejected, match="unknown: reconcile"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
