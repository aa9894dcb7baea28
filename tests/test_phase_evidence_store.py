"""The store's side of completing a phase and attaching evidence from a file (issue 32).

`phase_completion` is what the Complete Phase dialog shows, built by the store: the inputs and
their readiness, what becomes ready, what a final checkpoint is still blocked by. A blocked
phase is refused by type (`PhaseBlocked`); a completion based on a phase that moved since is a
`Conflict`. Evidence from a file outside the task's scope is refused after `..` and symbolic
links are resolved, and `evidence_target` says which artifact version it is made on.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from store import Actor, Store
from store import commands as c
from store.errors import Conflict, PhaseBlocked, ScopeViolation
from store.model import PhaseInput
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="drafter-7", name="Drafting agent")
RITA = Actor(kind="person", id="rita", name="Rita Reviewer")


def test_the_demo_guide_s_review_phase_as_the_dialog_shows_it(store: Store) -> None:
    fill_demo(store)
    view = store.phase_completion("guide", "review")
    assert view.readiness == "ready" and view.refusal is None
    assert [(i.kind, i.ref, i.identity, i.blocks) for i in view.inputs] == [
        ("phase", "draft", view.inputs[0].identity, None),
        ("artifact", "guide", "v2", None),
    ]
    # Its earlier result (on guide v1) was retired when v2 was recorded: history only.
    assert view.result is None and view.earlier == 1
    assert view.last_change is not None and view.last_change.what == "recorded guide v2"
    # Today the final checkpoint is blocked by the phase, among others; after it, not by it.
    assert "phase review is ready" in view.final_now and view.final_blocked_by_it
    done = view.outcome(True)
    assert "phase review is ready" not in done.final_blockers
    assert "criterion citations is unverified" in done.final_blockers
    assert any("no longer blocked by: phase review is ready" in x
               for x in done.lines("review", view.final_now))  # fmt: skip
    store.execute(
        c.CompletePhase(task_id="guide", phase_id="review", summary="ok", based_on=view.rev),
        RITA,
    )
    task = store.task("guide")
    assert not any(x.startswith("phase review") for x in task["pending_work"])
    review = next(p for p in task["phases"] if p["phase_id"] == "review")
    assert review["readiness"] == "done" and review["result"]["actor"]["id"] == "rita"
    assert review["result"]["input_identities"]["artifact:guide"] == "v2"


def _phases(store: Store, ws: Path) -> str:
    tid = store.execute(
        c.CreateTask(title="t", owner="o", objective="x", scope_paths=[str(ws)]), AGENT
    )
    (ws / "a.md").write_text("a1", encoding="utf-8")
    store.execute_all(
        [
            c.AddPhase(task_id=tid, phase_id="build", name="Build",
                       inputs=[PhaseInput(kind="artifact", ref="a")]),
            c.AddPhase(task_id=tid, phase_id="test", name="Test",
                       inputs=[PhaseInput(kind="phase", ref="build")]),
            c.AddPhase(task_id=tid, phase_id="ship", name="Ship",
                       inputs=[PhaseInput(kind="phase", ref="test"),
                               PhaseInput(kind="approval", ref="apr-ship")]),
        ],
        AGENT,
    )  # fmt: skip
    return tid


def test_a_blocked_phase_is_refused_by_type_and_the_view_says_why(store: Store, ws: Path) -> None:
    tid = _phases(store, ws)
    view = store.phase_completion(tid, "build")
    assert view.readiness == "blocked"
    assert view.refusal == "phase build is not ready: artifact a has no version yet"
    assert view.inputs[0].blocks == "artifact a has no version yet"
    with pytest.raises(PhaseBlocked) as refused:
        store.execute(c.CompletePhase(task_id=tid, phase_id="build"), RITA)
    assert refused.value.blocked_by == ["artifact a has no version yet"]
    assert refused.value.code == "phase_blocked" and refused.value.rule == "phase_needs_its_inputs"
    assert store.task(tid)["phases"][0]["result"] is None


def test_what_becomes_ready_what_stays_blocked_what_is_retired(store: Store, ws: Path) -> None:
    tid = _phases(store, ws)
    store.execute(c.RecordArtifact(task_id=tid, artifact_id="a", name="a.md",
                                   content=c.Content(path=str(ws / "a.md"))), AGENT)  # fmt: skip
    build = store.phase_completion(tid, "build")
    assert build.outcome(True).ready_after == ("test",)
    assert build.outcome(False).ready_after == ()
    assert build.outcome(False).still_blocked == (("test", ("phase build failed",)),)
    store.execute(c.CompletePhase(task_id=tid, phase_id="build"), AGENT)
    test = store.phase_completion(tid, "test")
    assert test.outcome(True).still_blocked == (("ship", ("approval apr-ship is not requested",)),)
    store.execute(c.CompletePhase(task_id=tid, phase_id="test"), AGENT)
    # Completing build again retires test's result, which used the earlier one.
    again = store.phase_completion(tid, "build")
    assert again.readiness == "done" and again.result and again.result.startswith("done at seq")
    assert again.outcome(True).retired == ("test",)
    store.execute(c.CompletePhase(task_id=tid, phase_id="build", based_on=again.rev), RITA)
    assert store.phase_completion(tid, "test").readiness == "ready"


def test_a_completion_based_on_an_input_that_moved_is_a_conflict(store: Store, ws: Path) -> None:
    tid = _phases(store, ws)
    store.execute(c.RecordArtifact(task_id=tid, artifact_id="a", name="a.md",
                                   content=c.Content(path=str(ws / "a.md"))), AGENT)  # fmt: skip
    seen = store.phase_completion(tid, "build").rev
    (ws / "a.md").write_text("a2", encoding="utf-8")
    store.execute(c.RecordArtifact(task_id=tid, artifact_id="a", name="a.md",
                                   content=c.Content(path=str(ws / "a.md"))), AGENT)  # fmt: skip
    with pytest.raises(Conflict) as moved:
        store.execute(c.CompletePhase(task_id=tid, phase_id="build", based_on=seen), RITA)
    assert moved.value.subject_kind == "phase" and moved.value.change == "recorded a v2"
    assert moved.value.changed_by.startswith("agent:drafter-7")
    now = store.phase_completion(tid, "build").rev
    store.execute(c.CompletePhase(task_id=tid, phase_id="build", based_on=now), RITA)
    # Somebody else completing it meanwhile moves it too.
    with pytest.raises(Conflict) as again:
        store.execute(c.CompletePhase(task_id=tid, phase_id="build", based_on=now), AGENT)
    assert again.value.change == "completed phase build"


# --- evidence from a file ----------------------------------------------------------------------


def _criterion(store: Store, ws: Path) -> str:
    tid = store.execute(
        c.CreateTask(title="t", owner="o", objective="x", scope_paths=[str(ws)]), AGENT
    )
    store.execute(c.AddCriterion(task_id=tid, criterion_id="C1", text="it works"), AGENT)
    return tid


def test_evidence_outside_the_scope_is_refused_through_a_link_or_dot_dot(
    store: Store, ws: Path, tmp_path: Path
) -> None:
    tid = _criterion(store, ws)
    secret = tmp_path / "secret.txt"
    secret.write_text("outside", encoding="utf-8")
    link = ws / "looks-inside.txt"
    os.symlink(secret, link)
    climbing = str(ws / ".." / "secret.txt")
    for path in (str(link), climbing, str(secret)):
        with pytest.raises(ScopeViolation) as refused:
            store.execute(
                c.AttachEvidence(task_id=tid, criterion_id="C1", kind="command_output",
                                 content=c.Content(path=path)),
                RITA,
            )  # fmt: skip
        assert "outside the task's scope" in str(refused.value)
        assert "\n" not in str(refused.value)  # shown in one line
    assert store.task(tid)["criteria"][0]["evidence"] == []


def test_evidence_is_made_on_the_version_the_target_names(store: Store, ws: Path) -> None:
    tid = _criterion(store, ws)
    (ws / "out.md").write_text("v1", encoding="utf-8")
    store.execute(c.RecordArtifact(task_id=tid, artifact_id="out", name="out.md", role="draft",
                                   content=c.Content(path=str(ws / "out.md"))), AGENT)  # fmt: skip
    (ws / "out.md").write_text("v2", encoding="utf-8")
    store.execute(c.RecordArtifact(task_id=tid, artifact_id="out", name="out.md",
                                   content=c.Content(path=str(ws / "out.md"))), AGENT)  # fmt: skip
    target = store.evidence_target(tid, "C1")
    assert target.default_artifact == "out"
    assert target.made_on_words("out") == "made on out v2"
    assert "command_output" in target.kinds and "review" in target.kinds
    assert target.scope_paths == (os.path.realpath(ws),)
    (ws / "check.txt").write_text("OK\n", encoding="utf-8")
    store.execute(
        c.AttachEvidence(task_id=tid, criterion_id="C1", kind="command_output",
                         content=c.Content(path=str(ws / "sub" / ".." / "check.txt")),
                         artifact_id="out", artifact_version=target.current_version("out")),
        RITA,
    )  # fmt: skip
    (ev,) = store.task(tid)["criteria"][0]["evidence"]
    assert (ev["artifact_id"], ev["artifact_version"]) == ("out", 2)
