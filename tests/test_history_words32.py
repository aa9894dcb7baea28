"""Issue 32's words in What I Decided, on both engines: articles and plurals, and the
automatic initial checkpoint not listed as the reviewer's decision."""

from __future__ import annotations

from store import Actor, Store, rules
from store import commands as c
from store.commands import checkpoints as ck
from store.reads.history import decisions_by
from store.services.demo import fill_demo

RITA = Actor(kind="person", id="rita", name="Rita Reviewer")
AGENT = Actor(kind="agent", id="a")


def test_one_approval_revoked_is_said_in_the_singular(store: Store) -> None:
    fill_demo(store)  # the note has one approval waiting: the email
    store.execute(ck.StopRun(task_id="note", reason="wrong week"), RITA)
    with store.read() as conn:
        stop = next(r for r in decisions_by(conn, "rita") if r["kind"] == "stop")
    assert stop["what"].startswith("stopped the run (1 approval revoked, ")
    assert "approvals" not in stop["what"]


def test_the_automatic_initial_checkpoint_is_not_the_reviewers_decision(store: Store) -> None:
    store.execute(c.CreateTask(task_id="t", title="T", owner="o", objective="x"), AGENT)
    store.execute(ck.WriteCheckpoint(task_id="t", reason="milestone", note="half way"), RITA)
    reasons = [
        e["payload"]["reason"] for e in store.events("t") if e["type"] == "checkpoint.written"
    ]
    assert reasons == ["initial", "milestone"]  # both written by rita's one command
    with store.read() as conn:
        rows = decisions_by(conn, "rita")
    assert [(r["kind"], r["what"]) for r in rows] == [
        ("checkpoint", "wrote a milestone checkpoint")
    ]
    assert rules.decision_kind("checkpoint.written", {"reason": "initial"}) is None
