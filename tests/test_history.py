"""What I decided: a person's decisions across tasks, newest first, with their notes."""

from __future__ import annotations

from store import Actor, Store, rules
from store.commands import approvals as ap
from store.commands import checkpoints as ck
from store.commands import core
from store.commands import effects as ef
from store.reads.history import FIELDS, decisions_by
from store.services.demo import fill_demo

RITA = Actor(kind="person", id="rita", name="Rita Reviewer")
AGENT = Actor(kind="agent", id="drafter-7")


def _decide_a_day(store: Store) -> None:
    store.execute(
        ap.DecideApproval(task_id="note", approval_id="apr-note-mail", decision="approved",
                          note="the mail reads right"),
        RITA,
    )  # fmt: skip
    store.execute(
        ef.ReconcileEffect(task_id="note", effect_id="save-note", decision="absent",
                           note="unchanged on disk"),
        RITA,
    )  # fmt: skip
    store.execute(
        core.JudgeCriterion(task_id="guide", criterion_id="citations", status="waived",
                            note="figures have no sources yet"),
        RITA,
    )  # fmt: skip
    store.execute(ck.StopRun(task_id="guide", reason="the brief changed"), RITA)


def test_decisions_by_a_person_newest_first_with_their_notes(store: Store) -> None:
    fill_demo(store)
    _decide_a_day(store)
    # Another person's and an agent's writes are not rita's decisions.
    store.execute(core.RecordNote(task_id="note", text="an agent's remark"), AGENT)
    with store.read() as conn:
        rows = decisions_by(conn, "rita")
    kinds = [r["kind"] for r in rows]
    # Newest first: the stop wrote a stopped checkpoint after its run.stopped event.
    assert kinds == ["checkpoint", "stop", "waiver", "reconcile", "approved"]
    by_kind = {r["kind"]: r for r in rows}
    assert by_kind["approved"]["note"] == "the mail reads right"
    assert by_kind["approved"]["subject"] == "apr-note-mail"
    assert by_kind["approved"]["task_title"] == "Save the weekly project note"
    assert by_kind["reconcile"]["note"] == "unchanged on disk"
    assert "absent" in by_kind["reconcile"]["what"]
    assert by_kind["waiver"]["subject"] == "citations"
    assert by_kind["stop"]["note"] == "the brief changed"
    assert all(set(FIELDS) == set(r.to_json()) for r in rows)
    # Each names its event: the seq is the event's in its task.
    events = {e["seq"]: e for e in store.events("note")}
    assert events[by_kind["approved"]["seq"]]["type"] == "approval.decided"
    with store.read() as conn:
        assert decisions_by(conn, "nobody") == []
        assert len(decisions_by(conn, "rita", limit=2)) == 2


def test_which_events_are_decisions_is_the_rules_word() -> None:
    assert rules.decision_kind("approval.decided", {"decision": "rejected"}) == "rejected"
    assert rules.decision_kind("criterion.judged", {"status": "waived"}) == "waiver"
    assert rules.decision_kind("criterion.judged", {"status": "satisfied"}) == "judgement"
    assert rules.decision_kind("note.recorded", {}) is None


def test_a_takeover_and_a_cancelled_wait_are_the_persons_decisions(store: Store) -> None:
    from store import commands as c

    task = store.execute(core.CreateTask(title="Note", owner="rita", objective="write it"), AGENT)
    store.execute(c.AcquireLease(task_id=task, session_id="run-1", ttl_seconds=60), AGENT)
    store.execute(c.TakeOver(task_id=task, reason="the outline needs a person"), RITA)
    for wid in ("quota", "mine"):
        store.execute(c.RecordWait(task_id=task, kind="time", after_seconds=60, wait_id=wid), RITA)
    store.execute(c.CancelWait(task_id=task, wait_id="quota", reason="raised by hand"), RITA)
    # A wait settled is the re-evaluation's end, not a decision about the task.
    store.execute(c.SettleWait(task_id=task, wait_id="mine", result="done"), RITA)
    with store.read() as conn:
        mine = decisions_by(conn, "rita")
    assert [(d["kind"], d["subject"], d["what"], d["note"]) for d in mine] == [
        ("cancel_wait", "quota", "cancelled the wait", "raised by hand"),
        ("takeover", "", "took the task over (lease token 2)", "the outline needs a person"),
    ]
