"""A person changes a budget or cancels a planned effect (issue 32): the store's read models
say what each would do before it is sent, its rules decide, and the record keeps the
person's reason. Both engines (the `store` fixture)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from store import Actor, Store
from store import commands as c
from store.commands import approvals as ap
from store.commands import effects as lg
from store.errors import CommandRejected, Conflict
from store.reads.budget_views import budget_change, budget_view, most_pressing_counter
from store.reads.changes import Write
from store.reads.effect_views import cancel_effect_view
from store.rules import (
    BudgetStanding,
    RunStatus,
    effect_cancellable,
    ledger_status,
    limit_change_reopens,
    why_not_cancellable,
)

AGENT = Actor(kind="agent", id="worker-3", name="Worker")
RITA = Actor(kind="person", id="rita", name="Rita")


def _task(s: Store, ws: Path) -> str:
    return s.execute(
        c.CreateTask(task_id="t", title="T", owner="o", objective="x", scope_paths=[str(ws)]),
        AGENT,
    )


def _exhausted(s: Store, ws: Path) -> str:
    tid = _task(s, ws)
    s.execute_all(
        [
            c.SetBudget(task_id=tid, counter="tool_calls", limit=20),
            c.ChargeBudget(task_id=tid, counter="tool_calls", amount=20),
        ],
        AGENT,
    )
    assert s.task(tid)["status"] == RunStatus.BUDGET_EXHAUSTED
    return tid


def _planned(s: Store, ws: Path, tid: str, *, approval: bool = True) -> str:
    target = ws / "note.md"
    target.write_text("old\n")
    s.execute(
        lg.PlanEffect(task_id=tid, effect_id="save", kind="file_write", target=str(target),
                      consequence="Overwrite note.md", content=c.Content(text="new\n"),
                      requires_approval=approval, policy="owner"),
        AGENT,
    )  # fmt: skip
    if approval:
        s.execute(
            ap.RequestApproval(task_id=tid, approval_id="apr", effect_id="save", policy="owner"),
            AGENT,
        )
    return "save"


# --- budgets -----------------------------------------------------------------------------------


def test_raising_an_exhausted_limit_says_the_run_goes_on_and_it_does(s: Store, ws: Path) -> None:
    tid = _exhausted(s, ws)
    view = budget_view(s, tid, "tool_calls")
    assert (view.used, view.reserved, view.limit) == (20, 0, 20)
    assert view.standing == BudgetStanding.EXHAUSTED and view.limit_rev == 1
    assert view.last_change is not None and "set its limit to 20" in view.last_change.what
    plan = budget_change(view, set_limit=True, limit=30)
    assert plan.refusal is None
    assert plan.lines[0] == "Limit: 20 → 30"
    assert "Standing: exhausted → within" in plan.lines
    assert plan.status_after == RunStatus.RUNNING
    assert plan.lines[-1] == "The run goes on: budget exhausted → running"
    s.execute(
        c.SetBudget(task_id=tid, counter="tool_calls", limit=30, based_on=view.limit_rev), RITA
    )
    assert s.task(tid)["status"] == plan.status_after


def test_a_raise_that_leaves_another_counter_exhausted_keeps_the_run_stopped(
    s: Store, ws: Path
) -> None:
    tid = _exhausted(s, ws)
    s.execute(c.SetBudget(task_id=tid, counter="model_calls", limit=5), AGENT)
    s.execute(c.SetStatus(task_id=tid, status="running", reason="go on"), RITA)
    s.execute(c.ChargeBudget(task_id=tid, counter="model_calls", amount=5), AGENT)
    assert s.task(tid)["status"] == RunStatus.BUDGET_EXHAUSTED
    assert most_pressing_counter(s.task(tid).budgets) in {"model_calls", "tool_calls"}
    plan = budget_change(budget_view(s, tid, "tool_calls"), set_limit=True, limit=100)
    assert plan.status_after == RunStatus.BUDGET_EXHAUSTED
    assert "still at its limit: model_calls" in plan.lines[-1]
    s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=100), RITA)
    assert s.task(tid)["status"] == RunStatus.BUDGET_EXHAUSTED


def test_a_raise_with_an_approval_pending_says_awaiting_approval(s: Store, ws: Path) -> None:
    tid = _task(s, ws)
    _planned(s, ws, tid)
    s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=2), AGENT)
    s.execute(c.ChargeBudget(task_id=tid, counter="tool_calls", amount=3), AGENT)
    assert s.task(tid)["status"] == RunStatus.BUDGET_EXHAUSTED
    plan = budget_change(budget_view(s, tid, "tool_calls"), set_limit=True, limit=None)
    assert plan.lines[0] == "Limit: 2 → none"
    assert plan.standing_after == BudgetStanding.UNLIMITED
    assert plan.status_after == RunStatus.AWAITING_APPROVAL
    assert "approval apr is pending" in plan.lines[-1]
    s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=None), RITA)
    assert s.task(tid)["status"] == RunStatus.AWAITING_APPROVAL


def test_lowering_below_what_is_used_says_the_next_charge_stops_the_run(s: Store, ws: Path) -> None:
    tid = _task(s, ws)
    s.execute_all(
        [
            c.SetBudget(task_id=tid, counter="tool_calls", limit=20),
            c.ChargeBudget(task_id=tid, counter="tool_calls", amount=10),
        ],
        AGENT,
    )
    plan = budget_change(budget_view(s, tid, "tool_calls"), set_limit=True, limit=8)
    assert "Standing: within → exhausted" in plan.lines
    assert plan.status_after == RunStatus.RUNNING
    assert "its next tool_calls charge stops it" in plan.lines[-1]


def test_a_persons_release_needs_a_reason_and_the_record_keeps_it(s: Store, ws: Path) -> None:
    tid = _task(s, ws)
    s.execute_all(
        [
            c.SetBudget(task_id=tid, counter="tool_calls", limit=10),
            c.ReserveBudget(task_id=tid, counter="tool_calls", amount=10),
        ],
        AGENT,
    )
    view = budget_view(s, tid, "tool_calls")
    assert view.standing == BudgetStanding.FULLY_RESERVED
    plan = budget_change(view, set_limit=False, limit=None, release=4)
    assert plan.refusal is not None and "give a reason" in plan.refusal
    with pytest.raises(CommandRejected, match="give a reason"):
        s.execute(c.ReleaseBudget(task_id=tid, counter="tool_calls", amount=4), RITA)
    plan = budget_change(view, set_limit=False, limit=None, release=4, reason="the upload is off")
    assert plan.refusal is None
    assert "Reserved: 10 → 6 (4 released, with your reason)" in plan.lines
    assert "Standing: fully reserved → within" in plan.lines
    s.execute(
        c.ReleaseBudget(task_id=tid, counter="tool_calls", amount=4, reason="the upload is off"),
        RITA,
    )
    b = s.task(tid)["budgets"][0]
    assert b["reserved"] == 6
    released = [e for e in s.events(tid) if e["type"] == "budget.released"]
    payload = released[-1]["payload"]
    payload = json.loads(payload) if isinstance(payload, str) else payload
    assert payload["reason"] == "the upload is off"
    assert released[-1]["actor"]["id"] == "rita"
    # An agent releases what it reserved as before, no reason asked; its event is unchanged.
    s.execute(c.ReleaseBudget(task_id=tid, counter="tool_calls", amount=1), AGENT)
    last = [e for e in s.events(tid) if e["type"] == "budget.released"][-1]["payload"]
    last = json.loads(last) if isinstance(last, str) else last
    assert "reason" not in last
    # Never more than is reserved, from the dialog's plan or the command.
    plan = budget_change(budget_view(s, tid, "tool_calls"), set_limit=False, limit=None,
                         release=9, reason="x")  # fmt: skip
    assert plan.refusal is not None and "than is reserved" in plan.refusal
    with pytest.raises(CommandRejected, match="than is reserved"):
        s.execute(c.ReleaseBudget(task_id=tid, counter="tool_calls", amount=9, reason="x"), RITA)


def test_no_non_finite_or_negative_number_is_a_limit(s: Store, ws: Path) -> None:
    tid = _task(s, ws)
    view = budget_view(s, tid, "tool_calls")
    for bad in (math.inf, -math.inf, math.nan, -1.0):
        assert budget_change(view, set_limit=True, limit=bad).refusal is not None, bad
        with pytest.raises(ValidationError):
            c.SetBudget(task_id=tid, counter="tool_calls", limit=bad)
        with pytest.raises(ValidationError):
            c.ReleaseBudget(task_id=tid, counter="tool_calls", amount=bad, reason="r")
    assert budget_change(view, set_limit=False, limit=None).refusal is not None  # nothing
    assert s.task(tid)["budgets"] == []


def test_a_stale_limit_is_a_conflict_naming_who_changed_it(s: Store, ws: Path) -> None:
    tid = _task(s, ws)
    s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=20), AGENT)
    seen = budget_view(s, tid, "tool_calls")
    s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=10), AGENT)
    with pytest.raises(Conflict) as refused:
        s.execute(
            c.SetBudget(task_id=tid, counter="tool_calls", limit=40, based_on=seen.limit_rev),
            RITA,
        )
    assert refused.value.current == 2 and "worker-3" in str(refused.value)
    assert budget_view(s, tid, "tool_calls").limit == 10


def test_the_rules_say_when_a_limit_reopens_and_what_the_ledger_makes_of_a_run() -> None:
    assert limit_change_reopens(RunStatus.BUDGET_EXHAUSTED, [])
    assert not limit_change_reopens(RunStatus.BUDGET_EXHAUSTED, ["tool_calls"])
    assert not limit_change_reopens(RunStatus.STOPPED, [])
    assert ledger_status(None, None)[0] == RunStatus.RUNNING
    assert ledger_status("e", "a")[0] == RunStatus.OUTCOME_UNKNOWN
    assert ledger_status(None, "a")[0] == RunStatus.AWAITING_APPROVAL


# --- cancelling a planned effect ---------------------------------------------------------------


def test_the_cancel_view_shows_the_change_and_the_approvals_revoked_with_it(
    s: Store, ws: Path
) -> None:
    tid = _task(s, ws)
    eid = _planned(s, ws, tid)
    assert s.task(tid)["status"] == RunStatus.AWAITING_APPROVAL
    view = cancel_effect_view(s, tid, eid)
    assert view.cancellable and view.why_not is None
    assert view.consequence == "Overwrite note.md"
    assert isinstance(view.change, Write) and view.change.target.endswith("note.md")
    assert view.prepared_digest.startswith("sha256:") and '"file_write"' in view.prepared_json
    assert [(r.approval_id, r.state) for r in view.revoked] == [("apr", "pending")]
    assert view.status_after == RunStatus.RUNNING
    s.execute(lg.CancelEffect(task_id=tid, effect_id=eid, reason="not this week"), RITA)
    task = s.task(tid)
    assert task["status"] == view.status_after
    assert task["effects"][0]["stage"] == "cancelled"
    assert task["approvals"][0]["state"] == "revoked"
    after = cancel_effect_view(s, tid, eid)
    assert not after.cancellable and after.why_not == "it was cancelled already"
    assert after.revoked == ()


def test_a_sent_effect_is_not_cancellable_by_the_rule_the_command_keeps(s: Store, ws: Path) -> None:
    tid = _task(s, ws)
    eid = _planned(s, ws, tid, approval=False)
    s.execute(lg.DispatchEffect(task_id=tid, effect_id=eid, executor="tool"), AGENT)
    s.execute(lg.RecordResponse(task_id=tid, effect_id=eid, reported="timeout"), AGENT)
    view = cancel_effect_view(s, tid, eid)
    assert not effect_cancellable(view.stage, view.outcome)
    assert view.why_not == why_not_cancellable(view.stage, view.outcome)
    assert view.why_not is not None and "reconciled, not cancelled" in view.why_not
    with pytest.raises(CommandRejected, match="reconciled, not cancelled"):
        s.execute(lg.CancelEffect(task_id=tid, effect_id=eid, reason="r"), RITA)
    assert effect_cancellable("planned", None) and effect_cancellable("dispatched", "failed")
