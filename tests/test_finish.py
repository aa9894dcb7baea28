"""Finishing a task: a final checkpoint completes it, a person closes a task that will not be
finished, and a person resumes a stopped run (revoked approvals stay revoked).

The store's tests run on both engines, through the store and through `boris`; the dialogs'
tests click and type as a person and read the result back from the store.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS

from store import Actor, CommandRejected, Store
from store import commands as c
from store.cli import main
from store.commands.approvals import RequestApproval
from store.commands.checkpoints import CloseTask, StopRun, WriteCheckpoint
from store.errors import AuthorityRefused
from store.reads.decisions import decisions
from store.services.resume import resume_brief

AGENT = Actor(kind="agent", id="writer-7")
ANA = Actor(kind="person", id="ana", name="Ana Lind")


def _done_task(s: Store, ws: Path, tid: str = "t") -> None:
    """A task whose one criterion a person waived: nothing is pending."""
    s.execute(
        c.CreateTask(task_id=tid, title="T", owner="ana", objective="x", scope_paths=[str(ws)]),
        AGENT,
    )
    cid = s.execute(c.AddCriterion(task_id=tid, text="the note is saved"), AGENT)
    s.execute(
        c.JudgeCriterion(task_id=tid, criterion_id=cid, status="waived", note="not needed"), ANA
    )


def _stopped_task(s: Store, ws: Path, tid: str = "t") -> str:
    """A stopped run whose pending approval the stop revoked; returns the approval id."""
    s.execute(
        c.CreateTask(task_id=tid, title="T", owner="ana", objective="x", scope_paths=[str(ws)]),
        AGENT,
    )
    aid = s.execute(
        RequestApproval(task_id=tid, payload={"x": 1}, consequence="x", policy="p"), AGENT
    )
    s.execute(StopRun(task_id=tid, reason="the owner takes over"), ANA)
    return str(aid)


def _needs_you(s: Store, tid: str) -> bool:
    return next(t for t in s.tasks() if t["id"] == tid)["attention"] > 0


# --- a final checkpoint completes the task --------------------------------------------------


@pytest.mark.parametrize("writer", [AGENT, ANA], ids=["agent", "person"])
def test_a_final_checkpoint_completes_the_task(s: Store, ws: Path, writer: Actor) -> None:
    _done_task(s, ws)
    s.execute(WriteCheckpoint(task_id="t", reason="final", note="all done"), writer)
    assert s.task("t")["status"] == "completed"
    assert not _needs_you(s, "t")
    assert not [d for d in decisions(s)["decisions"] if d["task_id"] == "t"]
    assert resume_brief(s, "t")["status"] == "completed"
    # The record is closed: nothing more is written to it.
    with pytest.raises(CommandRejected):
        s.execute(c.AddCriterion(task_id="t", text="one more"), AGENT)


def test_a_final_checkpoint_with_pending_work_completes_nothing(s: Store, ws: Path) -> None:
    _done_task(s, ws)
    s.execute(c.AddCriterion(task_id="t", text="open"), AGENT)
    with pytest.raises(CommandRejected):
        s.execute(WriteCheckpoint(task_id="t", reason="final", note="x"), AGENT)
    assert s.task("t")["status"] == "running"


def _cli(store_dir: Path, store_url: str | None, actor: str, *argv: str) -> list[str]:
    where = ["--store", str(store_dir), *(["--url", store_url] if store_url else [])]
    return [*where, "--actor", actor, *argv]


def test_the_cli_final_checkpoint_completes_the_task(
    s: Store, ws: Path, store_dir: Path, store_url: str | None, capsys: Any
) -> None:
    _done_task(s, ws)
    capsys.readouterr()
    assert main(_cli(store_dir, store_url, "agent:writer-7", "checkpoint", "t", "final")) == 0
    capsys.readouterr()
    assert main(_cli(store_dir, store_url, "person:ana", "tasks", "--json")) == 0
    (row,) = [t for t in json.loads(capsys.readouterr().out)["result"] if t["id"] == "t"]
    assert row["status"] == "completed"
    assert main(_cli(store_dir, store_url, "person:ana", "resume", "t", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["result"]["status"] == "completed"


# --- close a task that will not be finished ---------------------------------------------------


def test_a_person_closes_a_stopped_run_with_a_reason(s: Store, ws: Path) -> None:
    _stopped_task(s, ws)
    with pytest.raises(AuthorityRefused):
        s.execute(CloseTask(task_id="t", status="failed", reason="give up"), AGENT)
    s.execute(CloseTask(task_id="t", status="failed", reason="the client cancelled"), ANA)
    task = s.task("t")
    assert task["status"] == "failed"
    assert "the client cancelled" in task["status_reason"]
    assert not [d for d in decisions(s)["decisions"] if d["task_id"] == "t"]


def test_a_run_that_may_still_dispatch_is_stopped_before_it_is_closed(s: Store, ws: Path) -> None:
    _done_task(s, ws)
    with pytest.raises(CommandRejected, match="stop it first"):
        s.execute(CloseTask(task_id="t", status="superseded", reason="replaced by t2"), ANA)
    s.execute(StopRun(task_id="t", reason="replaced"), ANA)
    s.execute(CloseTask(task_id="t", status="superseded", reason="replaced by t2"), ANA)
    assert s.task("t")["status"] == "superseded"
    assert not _needs_you(s, "t")


def test_the_cli_closes_a_task(
    s: Store, ws: Path, store_dir: Path, store_url: str | None, capsys: Any
) -> None:
    _stopped_task(s, ws)
    argv = ("close", "t", "--as", "failed", "--reason", "will not be finished")
    assert main(_cli(store_dir, store_url, "agent:writer-7", *argv)) != 0
    assert main(_cli(store_dir, store_url, "person:ana", *argv)) == 0
    assert s.task("t")["status"] == "failed"


# --- resume a stopped run ----------------------------------------------------------------------


def test_a_person_resumes_a_stopped_run_and_revoked_approvals_stay_revoked(
    s: Store, ws: Path
) -> None:
    aid = _stopped_task(s, ws)
    assert [d["kind"] for d in decisions(s)["decisions"] if d["task_id"] == "t"] == ["resume"]
    with pytest.raises(AuthorityRefused):
        s.execute(c.SetStatus(task_id="t", status="running", reason="go on"), AGENT)
    s.execute(c.SetStatus(task_id="t", status="running", reason="Ana resumes it"), ANA)
    task = s.task("t")
    assert task["status"] == "running"
    (a,) = [x for x in task["approvals"] if x["approval_id"] == aid]
    assert a["state"] == "revoked"
    assert not [d for d in decisions(s)["decisions"] if d["task_id"] == "t"]


# --- the dialogs -------------------------------------------------------------------------------


@pytest.fixture
def reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _shown_status(qtbot: Any, w: Any, status: str) -> None:
    """The window says the task's status: its header and its row in the task list."""
    from boris_desktop.ui.icons import words

    qtbot.waitUntil(lambda: words(status) in w.task_view.header.status.text(), timeout=WAIT_MS)
    row = w.inbox.rows[w.inbox.row_of("t")]
    qtbot.waitUntil(lambda: w.inbox.rows[w.inbox.row_of("t")]["status"] == status, timeout=WAIT_MS)
    assert row["id"] == "t"


def test_final_from_the_checkpoint_dialog_completes_the_task(
    qtbot: Any, store: Store, ws: Path, reviewer: None
) -> None:
    from test_desktop_actions import armed, done, open_window

    _done_task(store, ws)
    w = open_window(qtbot, store, "t")
    w.menu_actions.update()
    assert w.menu_actions.checkpoint_action.isEnabled()
    w.menu_actions.checkpoint_action.trigger()
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert d.radios["final"].isEnabled() and d.radios["final"].isChecked()
    qtbot.keyClicks(d.note, "Everything is in; the note was waived.")
    armed(qtbot, d.ok)
    qtbot.mouseClick(d.ok, _LEFT())
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()
    assert store.task("t")["status"] == "completed"
    _shown_status(qtbot, w, "completed")
    assert w.inbox.rows[w.inbox.row_of("t")]["attention"] <= 0  # not "needs you"
    w.menu_actions.update()
    assert not w.menu_actions.close_action.isEnabled()
    assert not w.menu_actions.resume_action.isEnabled()


def _LEFT() -> Any:
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_the_close_dialog_closes_a_stopped_run_as_failed(
    qtbot: Any, store: Store, ws: Path, reviewer: None
) -> None:
    from test_desktop_actions import armed, done, open_window

    _stopped_task(store, ws)
    w = open_window(qtbot, store, "t")
    w.menu_actions.update()
    assert w.menu_actions.close_action.isEnabled()
    w.menu_actions.close_action.trigger()
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert d.chosen() == "failed"
    assert "stopped → failed" in d.what.text()
    qtbot.keyClicks(d.reason, "the client cancelled the note")
    qtbot.wait(50)
    assert not d.ok.isEnabled()  # not without the task id typed
    qtbot.keyClicks(d.confirm, "t")
    armed(qtbot, d.ok)
    d.grab().save("/tmp/finish-close.png")
    qtbot.mouseClick(d.ok, _LEFT())
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()
    task = store.task("t")
    assert task["status"] == "failed"
    assert "the client cancelled the note" in task["status_reason"]
    _shown_status(qtbot, w, "failed")


def test_a_running_task_cannot_be_closed_from_the_window(
    qtbot: Any, store: Store, ws: Path, reviewer: None
) -> None:
    from test_desktop_actions import open_window

    _done_task(store, ws)
    w = open_window(qtbot, store, "t")
    w.menu_actions.update()
    assert not w.menu_actions.close_action.isEnabled()
    assert not w.menu_actions.resume_action.isEnabled()
    d = w.menu_actions.close_task()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert "Stop the run first" in d.what.text()
    qtbot.keyClicks(d.reason, "x")
    qtbot.keyClicks(d.confirm, "t")
    qtbot.wait(50)
    assert not d.ok.isEnabled()
    d.reject()


def test_the_queues_resume_decision_opens_the_resume_dialog(
    qtbot: Any, store: Store, ws: Path, reviewer: None
) -> None:
    from test_desktop_actions import done
    from test_queue_pane import _ctrl_d, _row_of, _window

    from boris_desktop.decide.finish import ResumeDialog

    aid = _stopped_task(store, ws)
    w = _window(qtbot, store)
    q = w.queue
    _ctrl_d(qtbot, w)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "resume", "t"), 0))
    qtbot.keyClick(q.table, _RETURN())
    qtbot.waitUntil(lambda: isinstance(q.dialog, ResumeDialog), timeout=WAIT_MS)
    d = q.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert "stopped → running" in d.what.text()
    assert f"Approvals revoked stay revoked: {aid}" in d.what.text()
    assert not d.ok.isEnabled()  # a reason first
    qtbot.keyClicks(d.reason, "Rita takes it on from here")
    qtbot.waitUntil(d.ok.isEnabled, timeout=WAIT_MS)
    d.grab().save("/tmp/finish-resume.png")
    qtbot.mouseClick(d.ok, _LEFT())
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()
    task = store.task("t")
    assert task["status"] == "running"
    assert next(a for a in task["approvals"] if a["approval_id"] == aid)["state"] == "revoked"
    qtbot.waitUntil(lambda: not [r for r in q.model.rows if r["task_id"] == "t"], timeout=WAIT_MS)
    w.close()


def _RETURN() -> Any:
    from PySide6.QtCore import Qt

    return Qt.Key.Key_Return


def test_a_resumed_run_with_an_effect_in_doubt_is_outcome_unknown_again(store: Store) -> None:
    from store.services.demo import fill_demo

    fill_demo(store)  # the guide's upload has an unknown outcome
    store.execute(StopRun(task_id="guide", reason="the owner takes over"), ANA)
    store.execute(c.SetStatus(task_id="guide", status="running", reason="go on"), ANA)
    assert store.task("guide")["status"] == "outcome_unknown"
