"""Stop never decides the lineage: a merge is only ever a person's explicit choice.

On a forked lineage (two heads), stopping records a stopped checkpoint that continues from
none of the heads unless the person names one, and merges only what the person names. The
store's tests run on both engines; the dialogs' tests click and type as a person and read the
result back from the store (SQLite: they open "another process's" store by directory).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS

from store import Actor, CommandRejected, Store
from store import commands as c
from store.cli import main
from store.commands.checkpoints import StopRun, WriteCheckpoint
from store.services.demo import fill_demo
from store.services.resume import brief_markdown, resume_brief
from store.services.verify import verify

AGENT = Actor(kind="agent", id="writer-7")
ANA = Actor(kind="person", id="ana", name="Ana Lind")
BO = Actor(kind="person", id="bo", name="Bo")


def _forked(s: Store, ws: Path, tid: str = "t") -> tuple[str, str]:
    """A task whose lineage forked: m1 from the initial checkpoint, and h1 from it too."""
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
        BO,
    )
    assert s.task(tid)["checkpoints"]["heads"] == ["m1", "h1"]
    return "m1", "h1"


def _row(s: Store, tid: str, cid: str) -> dict[str, Any]:
    return next(r for r in s.task(tid)["checkpoints"]["checkpoints"] if r["checkpoint_id"] == cid)


# --- the store -------------------------------------------------------------------------------


def test_a_stop_on_a_fork_leaves_both_heads_and_names_the_fork(
    s: Store, ws: Path, open_store: Any
) -> None:
    _forked(s, ws)
    stopped = s.execute(StopRun(task_id="t", reason="both lines are wrong"), ANA)
    # Read back as another process would.
    other = open_store()
    try:
        lineage = other.task("t")["checkpoints"]
        assert lineage["heads"] == ["m1", "h1", stopped]
        row = _row(other, "t", stopped)
        assert (row["reason"], row["supersedes"], row["merged"]) == ("stopped", [], [])
        assert "Still unresolved: the fork, heads m1 and h1, none chosen" in row["note"]
        assert "until a person chooses" in row["note"]
        # The resume brief says a person must choose, and names the heads the stop left open.
        brief = resume_brief(other, "t")
        (fork,) = [b for b in brief["blockers"] if b["kind"] == "fork"]
        assert fork["heads"] == ["m1", "h1", stopped]
        assert (fork["left_open_by"], fork["unchosen"]) == (stopped, ["m1", "h1"])
        assert f"stopped checkpoint {stopped} chose none of heads m1, h1" in fork["message"]
        assert "a person must choose the head to continue from" in fork["message"]
        (choose,) = [a for a in brief["next_actions"] if a["action"].startswith("choose the head")]
        assert choose["actor"] == "person" and choose["command"]["type"] == "write_checkpoint"
        assert "supersedes" in choose["needs"]
        assert "a person must choose" in brief_markdown(brief)
        # Still a sound record: a fork is information, not a problem.
        report = verify(other, "t", remember=False)
        assert report.ok and "fork" in {i.kind for i in report.info}
    finally:
        other.close()
    # The next checkpoint must name its head; the person's choice then resolves the fork.
    with pytest.raises(CommandRejected, match="forked"):
        s.execute(WriteCheckpoint(task_id="t", reason="handoff", note="?"), ANA)
    resolved = s.execute(
        WriteCheckpoint(
            task_id="t", reason="handoff", note="keep m1", supersedes=["m1"], merge=["h1", stopped]
        ),
        ANA,
    )
    assert s.task("t")["checkpoints"]["heads"] == [resolved]


def test_a_named_head_is_continued_from_and_nothing_else_merged(s: Store, ws: Path) -> None:
    _forked(s, ws)
    stopped = s.execute(StopRun(task_id="t", reason="enough", supersedes="h1"), ANA)
    row = _row(s, "t", stopped)
    assert (row["supersedes"], row["merged"]) == (["h1"], [])
    assert s.task("t")["checkpoints"]["heads"] == ["m1", stopped]
    brief = resume_brief(s, "t")
    (fork,) = [b for b in brief["blockers"] if b["kind"] == "fork"]
    assert fork["unchosen"] == ["m1"]


def test_the_cli_stop_continues_only_from_what_it_is_told(
    s: Store, ws: Path, store_dir: Path, store_url: str | None, capsys: Any
) -> None:
    _forked(s, ws)
    where = ["--store", str(store_dir), *(["--url", store_url] if store_url else [])]
    ana = ["--actor", "person:ana:Ana"]
    assert main([*where, *ana, "stop", "t", "--reason", "x", "--merge", "h1"]) != 0
    assert "name the head the stop continues from" in capsys.readouterr().err
    rc = main([*where, *ana, "stop", "t", "--reason", "x", "--continue-from", "m1"])
    stopped = capsys.readouterr().out.strip()
    assert rc == 0
    row = _row(s, "t", stopped)
    assert (row["supersedes"], row["merged"]) == (["m1"], [])
    assert s.task("t")["checkpoints"]["heads"] == ["h1", stopped]


# --- the dialogs -----------------------------------------------------------------------------


@pytest.fixture
def reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture
def demo(qtbot: Any, store: Store, reviewer: None) -> Store:
    fill_demo(store)  # "guide" has two heads: ckpt-milestone and ckpt-handoff
    assert store.task("guide")["checkpoints"]["heads"] == ["ckpt-milestone", "ckpt-handoff"]
    return store


def _stop_dialog(qtbot: Any, store: Store) -> tuple[Any, Any]:
    from test_desktop_actions import open_window

    w = open_window(qtbot, store, "guide")
    d = w.stop_task()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    return w, d


def _confirm_and_stop(qtbot: Any, w: Any, d: Any) -> None:
    from test_desktop_actions import armed, done

    d.reason.setText("the owner takes it from here")
    d.confirm.setText("guide")
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()


@pytest.mark.sqlite_only
def test_stopping_a_forked_task_from_the_dialog_leaves_both_heads(qtbot: Any, demo: Store) -> None:
    w, d = _stop_dialog(qtbot, demo)
    # The fork is shown from the stop plan, each head described, and none chosen.
    assert d.plan.fork == ("ckpt-milestone", "ckpt-handoff")
    shown = d.fork_text.text()
    assert shown.startswith("This task's lineage is forked: heads ckpt-milestone (milestone by")
    assert "and ckpt-handoff (handoff by" in shown
    assert "Stopping does not choose between them" in shown
    assert d.heads.radios[None].isChecked() and d.heads.chosen() is None
    assert not any(b.isEnabled() for b in d.heads.merges.values())
    assert "continues from none of the heads and merges nothing" in d.what.text()
    _confirm_and_stop(qtbot, w, d)
    task = demo.task("guide")
    assert task["status"] == "stopped"
    stopped = task["checkpoints"]["checkpoints"][-1]
    assert task["checkpoints"]["heads"] == [
        "ckpt-milestone",
        "ckpt-handoff",
        stopped["checkpoint_id"],
    ]
    assert (stopped["reason"], stopped["supersedes"], stopped["merged"]) == ("stopped", [], [])
    assert "heads ckpt-milestone and ckpt-handoff, none chosen" in stopped["note"]
    brief = resume_brief(demo, "guide")
    (fork,) = [b for b in brief["blockers"] if b["kind"] == "fork"]
    assert fork["unchosen"] == ["ckpt-milestone", "ckpt-handoff"]
    assert "a person must choose" in fork["message"]


@pytest.mark.sqlite_only
def test_choosing_a_head_in_the_stop_dialog_continues_from_it_without_merging(
    qtbot: Any, demo: Store
) -> None:
    w, d = _stop_dialog(qtbot, demo)
    d.heads.radios["ckpt-handoff"].click()
    assert d.plan.continue_from == "ckpt-handoff" and d.plan.merge == ()
    assert "continuing from ckpt-handoff is written" in d.what.text()
    assert "Not merged, still heads: ckpt-milestone" in d.what.text()
    # Merging is offered for the other head only, and unticked.
    assert d.heads.merges["ckpt-milestone"].isEnabled()
    assert not d.heads.merges["ckpt-milestone"].isChecked()
    assert not d.heads.merges["ckpt-handoff"].isEnabled()
    _confirm_and_stop(qtbot, w, d)
    task = demo.task("guide")
    stopped = task["checkpoints"]["checkpoints"][-1]
    assert (stopped["supersedes"], stopped["merged"]) == (["ckpt-handoff"], [])
    assert task["checkpoints"]["heads"] == ["ckpt-milestone", stopped["checkpoint_id"]]


@pytest.mark.sqlite_only
def test_a_merge_from_the_stop_dialog_is_the_one_ticked(qtbot: Any, demo: Store) -> None:
    w, d = _stop_dialog(qtbot, demo)
    d.heads.radios["ckpt-milestone"].click()
    d.heads.merges["ckpt-handoff"].click()
    assert "and merging ckpt-handoff" in d.what.text()
    _confirm_and_stop(qtbot, w, d)
    task = demo.task("guide")
    stopped = task["checkpoints"]["checkpoints"][-1]
    assert (stopped["supersedes"], stopped["merged"]) == (["ckpt-milestone"], ["ckpt-handoff"])
    assert task["checkpoints"]["heads"] == [stopped["checkpoint_id"]]


@pytest.mark.sqlite_only
def test_a_chosen_head_merged_elsewhere_is_not_chosen_for_you(qtbot: Any, demo: Store) -> None:
    _w, d = _stop_dialog(qtbot, demo)
    d.heads.radios["ckpt-handoff"].click()
    qtbot.waitUntil(lambda: d.follower.version is not None, timeout=WAIT_MS)
    other = Store.open(demo.location.directory)
    try:
        other.execute(
            WriteCheckpoint(
                task_id="guide",
                reason="handoff",
                note="kept the milestone",
                supersedes=["ckpt-milestone"],
                merge=["ckpt-handoff"],
                checkpoint_id="ckpt-merged",
            ),
            ANA,
        )
    finally:
        other.close()
    qtbot.waitUntil(lambda: not d.plan.fork, timeout=WAIT_MS)
    assert d.heads.chosen() is None and not d.fork_text.isVisible()
    assert d.plan.continue_from == "ckpt-merged"  # one head: nothing to choose
    d.reason.setText("enough")
    assert d.command().supersedes is None and d.command().merge == []
    d.reject()


@pytest.mark.sqlite_only
def test_the_checkpoint_dialog_on_a_fork_waits_for_the_persons_choice(
    qtbot: Any, demo: Store
) -> None:
    from test_desktop_actions import armed, done, open_window

    w = open_window(qtbot, demo, "guide")
    w.menu_actions.checkpoint_action.trigger()
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert d.heads.heads == ("ckpt-milestone", "ckpt-handoff")
    assert "Nothing is chosen for you" in d.fork_text.text()
    assert None not in d.heads.radios and d.heads.chosen() is None
    d.note.setPlainText("handing over; the milestone's line goes on")
    qtbot.waitUntil(lambda: d.armed, timeout=WAIT_MS)
    assert not d.ok.isEnabled()  # no head chosen: nothing to write
    d.heads.radios["ckpt-milestone"].click()
    armed(qtbot, d.ok)
    assert not d.heads.merges["ckpt-handoff"].isChecked()
    d.ok.click()
    done(qtbot, w, d)
    task = demo.task("guide")
    last = task["checkpoints"]["checkpoints"][-1]
    assert (last["reason"], last["supersedes"], last["merged"]) == (
        "handoff",
        ["ckpt-milestone"],
        [],
    )
    # The other head stays: the window merged nothing.
    assert task["checkpoints"]["heads"] == ["ckpt-handoff", last["checkpoint_id"]]


@pytest.mark.sqlite_only
def test_the_stop_dialog_on_a_fork_renders(qtbot: Any, demo: Store, tmp_path: Path) -> None:
    _w, d = _stop_dialog(qtbot, demo)
    d.resize(700, 600)
    qtbot.wait(50)
    # Nothing is cut off: every head's line is as wide as the dialog allows, and visible.
    for label in d.heads.findChildren(type(d.fork_text)):
        assert label.isVisible() and label.width() <= d.width()
    out = Path(os.environ.get("BORIS_STOP_FORK_PNG") or tmp_path / "stop-fork.png")
    assert d.grab().save(str(out))
    d.reject()
