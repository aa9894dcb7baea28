"""A final checkpoint closes the lineage: never "completed" with two heads (issue 39).

On a forked lineage a final checkpoint names every head, the one it continues from and each
other merged, or it is refused (`fork_open`, exit 1) naming the heads; the store never picks
one. A stop still picks none (tests/test_stop_fork.py), so a stop on the demo's fork leaves a
third head that the final checkpoint must name too. Completion by status is refused on a fork
as well. The store's tests run on both engines; the dialog's click as a person (SQLite).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS

from store import Actor, Store
from store import commands as c
from store.cli import main
from store.commands.checkpoints import StopRun, WriteCheckpoint
from store.errors import ForkOpen
from store.rules import final_fork_refusal, final_left_open
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="writer-7")
ANA = Actor(kind="person", id="ana", name="Ana Lind")


def _forked(s: Store, ws: Path, tid: str = "t") -> None:
    """A task with nothing pending whose lineage forked: m1 and h1, both from the initial."""
    s.execute(
        c.CreateTask(task_id=tid, title="T", owner="ana", objective="x", scope_paths=[str(ws)]),
        AGENT,
    )
    s.execute(WriteCheckpoint(task_id=tid, reason="milestone", note="m1", checkpoint_id="m1"), ANA)
    initial = s.task(tid)["checkpoints"]["checkpoints"][0]["checkpoint_id"]
    s.execute(
        WriteCheckpoint(
            task_id=tid, reason="handoff", note="h1", supersedes=[initial], checkpoint_id="h1"
        ),
        ANA,
    )
    assert s.task(tid)["checkpoints"]["heads"] == ["m1", "h1"]


# --- the rule --------------------------------------------------------------------------------


def test_the_rule_names_the_heads_a_final_checkpoint_would_leave() -> None:
    heads = ["m1", "h1", "s1"]
    assert final_left_open(heads, ["m1"], ["h1", "s1"]) == ()
    assert final_left_open(heads, ["m1"], ["h1"]) == ("s1",)
    assert final_left_open(heads, None, []) == ("m1", "h1", "s1")  # nothing picked
    assert final_left_open(heads, None, ["h1"]) == ("m1", "s1")
    assert final_left_open(heads, None, ["h1", "s1"]) == ()  # m1: the only head left
    assert final_left_open(["m1"], None, []) == ()
    assert final_left_open(["m1"], ["i0"], []) == ("m1",)  # it would fork the lineage
    assert final_fork_refusal(heads, ["m1"], ["h1", "s1"]) is None
    words = final_fork_refusal(heads, ["m1"], ["h1"])
    assert words is not None
    assert "the lineage is forked (heads m1, h1, s1)" in words
    assert "s1 would stay a head beside the finished task" in words
    assert "merge every other head" in words


# --- the store -------------------------------------------------------------------------------


def test_final_on_a_fork_with_a_head_left_is_refused_naming_it(s: Store, ws: Path) -> None:
    _forked(s, ws)
    stopped = s.execute(StopRun(task_id="t", reason="enough for today"), ANA)
    s.execute(c.SetStatus(task_id="t", status="running", reason="resumed"), ANA)
    heads = ["m1", "h1", stopped]
    assert s.task("t")["checkpoints"]["heads"] == heads
    # The demo walkthrough's old step 6 after a stop: continue from m1, merge h1 only.
    with pytest.raises(ForkOpen) as refused:
        s.execute(
            WriteCheckpoint(
                task_id="t", reason="final", note="done", supersedes=["m1"], merge=["h1"]
            ),
            ANA,
        )
    assert (refused.value.code, refused.value.rule) == ("fork_open", "final_closes_the_lineage")
    assert (refused.value.heads, refused.value.left_open) == (heads, [stopped])
    assert f"{stopped} would stay a head" in str(refused.value)
    # No head named at all: refused, nothing picked.
    with pytest.raises(ForkOpen) as refused:
        s.execute(WriteCheckpoint(task_id="t", reason="final", note="done"), ANA)
    assert refused.value.left_open == heads
    task = s.task("t")
    assert task["status"] == "running" and task["checkpoints"]["heads"] == heads
    # Every head named: written, completed, one head.
    final = s.execute(
        WriteCheckpoint(
            task_id="t", reason="final", note="done", supersedes=["m1"], merge=["h1", stopped]
        ),
        ANA,
    )
    task = s.task("t")
    assert task["status"] == "completed"
    assert task["checkpoints"]["heads"] == [final] and task["checkpoints"]["forks"] == []


def test_final_that_would_fork_a_single_head_is_refused(s: Store, ws: Path) -> None:
    s.execute(
        c.CreateTask(task_id="t", title="T", owner="ana", objective="x", scope_paths=[str(ws)]),
        AGENT,
    )
    s.execute(WriteCheckpoint(task_id="t", reason="milestone", note="m", checkpoint_id="m1"), ANA)
    initial = s.task("t")["checkpoints"]["checkpoints"][0]["checkpoint_id"]
    with pytest.raises(ForkOpen, match="m1 would stay a head"):
        s.execute(WriteCheckpoint(task_id="t", reason="final", note="x", supersedes=[initial]), ANA)
    # The one head, by default: completed.
    s.execute(WriteCheckpoint(task_id="t", reason="final", note="done"), ANA)
    assert s.task("t")["status"] == "completed"


def test_completing_by_status_on_a_fork_is_refused(s: Store, ws: Path) -> None:
    _forked(s, ws)
    with pytest.raises(ForkOpen, match="the lineage is forked"):
        s.execute(c.SetStatus(task_id="t", status="completed", reason="done"), ANA)
    assert s.task("t")["status"] != "completed"


def test_the_cli_refuses_final_on_a_fork_with_exit_1_and_the_heads(
    s: Store, ws: Path, store_dir: Path, store_url: str | None, capsys: Any
) -> None:
    _forked(s, ws)
    where = ["--store", str(store_dir), *(["--url", store_url] if store_url else [])]
    ana = ["--actor", "person:ana:Ana"]
    argv = [*where, *ana, "--json", "checkpoint", "t", "final", "--note", "done"]
    assert main([*argv, "--supersedes", "m1"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["code"], error["category"], error["exit_code"]) == ("fork_open", "refused", 1)
    assert error["details"]["heads"] == ["m1", "h1"]
    assert error["details"]["left_open"] == ["h1"]
    assert main([*argv, "--supersedes", "m1", "--merge", "h1"]) == 0
    capsys.readouterr()
    assert s.task("t")["status"] == "completed"


def test_the_demo_guide_after_a_stop_finishes_only_with_every_head_named(s: Store) -> None:
    """The walkthrough's order: Stop on the guide (no head chosen), Resume, then the finishing
    steps; step 6 names ckpt-milestone, ckpt-handoff and the stopped checkpoint."""
    fill_demo(s)
    stopped = s.execute(StopRun(task_id="guide", reason="the owner looks first"), ANA)
    heads = s.task("guide")["checkpoints"]["heads"]
    assert heads == ["ckpt-milestone", "ckpt-handoff", stopped]
    s.execute(c.SetStatus(task_id="guide", status="running", reason="resumed"), ANA)
    with pytest.raises(ForkOpen) as refused:
        s.execute(
            WriteCheckpoint(
                task_id="guide",
                reason="final",
                note="x",
                supersedes=["ckpt-milestone"],
                merge=["ckpt-handoff"],
            ),
            ANA,
        )
    assert refused.value.left_open == [stopped]


# --- the dialog ------------------------------------------------------------------------------


@pytest.fixture
def reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _finishable_guide(store: Store) -> str:
    """The demo guide stopped once (a third head), resumed, and finished but for its final
    checkpoint: the walkthrough's steps 1 to 4 through the store."""
    from store.rules import Verdict
    from store.services.demo import GUIDE_V2
    from store.services.reconcile import reconcile_by_hand

    fill_demo(store)
    stopped = store.execute(StopRun(task_id="guide", reason="the owner looks first"), ANA)
    store.execute(c.SetStatus(task_id="guide", status="running", reason="resumed"), ANA)
    reconcile_by_hand(store, ANA, "guide", "upload-guide", Verdict.PRESENT, "it is on the site")
    v3 = GUIDE_V2.replace("[citation needed: policy P-12]", "(policy P-12)")
    store.execute(
        c.RecordArtifact(
            task_id="guide", artifact_id="guide", name="guide.md", content=c.Content(text=v3)
        ),
        ANA,
    )
    store.execute(c.CompletePhase(task_id="guide", phase_id="review", summary="v3 read"), ANA)
    for cid in ("structure", "citations"):
        store.execute(
            c.AttachEvidence(
                task_id="guide",
                criterion_id=cid,
                evidence_id=f"review-{cid}",
                kind="review",
                content=c.Content(text="read guide v3"),
            ),
            ANA,
        )
        store.execute(
            c.JudgeCriterion(
                task_id="guide",
                criterion_id=cid,
                status="satisfied",
                artifact_id="guide",
                artifact_version=3,
                evidence_ids=[f"review-{cid}"],
            ),
            ANA,
        )
    assert store.task("guide")["pending_work"] == []
    return str(stopped)


@pytest.mark.sqlite_only
def test_the_checkpoint_dialog_makes_final_name_every_head(
    qtbot: Any, store: Store, reviewer: None, tmp_path: Path
) -> None:
    from test_desktop_actions import armed, done, open_window

    stopped = _finishable_guide(store)
    w = open_window(qtbot, store, "guide")
    w.menu_actions.checkpoint_action.trigger()
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert d.radios["final"].isChecked()
    assert d.heads.heads == ("ckpt-milestone", "ckpt-handoff", stopped)
    d.note.setPlainText("finished")
    qtbot.waitUntil(lambda: d.armed, timeout=WAIT_MS)
    assert d.final_fork.isVisible() and not d.ok.isEnabled()
    d.heads.radios["ckpt-milestone"].click()
    d.heads.merges["ckpt-handoff"].click()
    # One head left: the store's refusal, in its words, and nothing to send.
    assert not d.ok.isEnabled()
    assert f"{stopped} would stay a head" in d.final_fork.text()
    d.resize(1024, 700)
    qtbot.wait(50)
    out = Path(os.environ.get("BORIS_FINAL_FORK_PNG") or tmp_path / "final-fork.png")
    assert d.grab().save(str(out))
    d.heads.merges[stopped].click()
    armed(qtbot, d.ok)
    assert "keeps one head" in d.final_fork.text()
    d.ok.click()
    done(qtbot, w, d)
    task = store.task("guide")
    last = task["checkpoints"]["checkpoints"][-1]
    assert (last["reason"], last["supersedes"], sorted(last["merged"])) == (
        "final",
        ["ckpt-milestone"],
        sorted(["ckpt-handoff", stopped]),
    )
    assert task["status"] == "completed" and task["checkpoints"]["heads"] == [last["checkpoint_id"]]
    w.close()


@pytest.mark.sqlite_only
def test_a_head_added_while_the_dialog_is_open_is_refused_by_the_store(
    qtbot: Any, store: Store, reviewer: None
) -> None:
    """Every head ticked, then another process stops the run (a new head): the dialog says
    the lineage changed; forced through, the store refuses and the dialog shows it."""
    from test_desktop_actions import open_window

    stopped = _finishable_guide(store)
    w = open_window(qtbot, store, "guide")
    w.menu_actions.checkpoint_action.trigger()
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    d.note.setPlainText("finished")
    d.heads.radios["ckpt-milestone"].click()
    for h in ("ckpt-handoff", stopped):
        d.heads.merges[h].click()
    command = d.command()
    assert (command.supersedes, command.merge) == (["ckpt-milestone"], ["ckpt-handoff", stopped])
    # Meanwhile a stop elsewhere adds a head.
    again = store.execute(StopRun(task_id="guide", reason="wait"), ANA)
    store.execute(c.SetStatus(task_id="guide", status="running", reason="resumed"), ANA)
    qtbot.waitUntil(lambda: again in d.heads.heads, timeout=WAIT_MS)
    assert not d.ok.isEnabled() and f"{again} would stay a head" in d.final_fork.text()
    assert "The lineage changed while this was open" in d.changed.text()
    # The command as it was, sent anyway (another window's): refused, nothing written.
    with pytest.raises(ForkOpen) as refused:
        store.execute(command, ANA)
    assert refused.value.left_open == [again]
    assert store.task("guide")["status"] != "completed"
    d.reject()
    w.close()
