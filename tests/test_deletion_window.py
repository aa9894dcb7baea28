"""The window's Actions › Delete Task… (issue 35 part D): the dialog counts what goes, needs
the task id typed and a reason, arms after a moment with no default button, and the task
leaves the inbox; a live agent's lease keeps it disabled and says why. Both engines.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtWidgets import QPushButton
from test_desktop_actions import WAIT_MS, armed, done, open_window, settle

from store import Actor, Store
from store import commands as c
from store.errors import TaskDeleted
from store.services import deletion

AGENT = Actor(kind="agent", id="drafter-7")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _tasks(store: Store, ws: Path) -> None:
    for tid, title in (("doomed", "Draft the withdrawn letter"), ("keeper", "Keep this one")):
        store.execute(
            c.CreateTask(
                task_id=tid, title=title, owner="rita", objective="o", scope_paths=[str(ws)]
            ),
            AGENT,
        )
    store.execute(
        c.RecordArtifact(task_id="doomed", name="letter.md", content=c.Content(text="Dear")), AGENT
    )
    store.execute(c.WriteCheckpoint(task_id="doomed", reason="initial"), AGENT)


def test_a_person_deletes_a_task_from_the_window_and_it_leaves_the_inbox(
    qtbot, store: Store, ws: Path
) -> None:
    _tasks(store, ws)
    w = open_window(qtbot, store, "doomed")
    w.menu_actions.update()
    assert w.menu_actions.delete_task_action.isEnabled()
    d = w.menu_actions.delete_task()
    qtbot.waitUntil(lambda: d.plan is not None, timeout=WAIT_MS)
    shown = d.what.text()
    assert "3 events" in shown or "events up to seq" in shown
    assert "1 checkpoint," in shown and "1 blob only this task uses" in shown
    assert all(not b.isDefault() and not b.autoDefault() for b in d.findChildren(QPushButton))
    assert not d.ok.isEnabled()
    d.reason.setText("the client withdrew the request")
    d.confirm.setText("doome")  # not the id: still disabled
    qtbot.wait(50)
    assert not d.ok.isEnabled()
    d.confirm.setText("doomed")
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    assert d.last_error is None, d.last_error
    assert d.result_value.who == "person:rita"
    qtbot.waitUntil(lambda: w.inbox.row_of("doomed") == -1, timeout=WAIT_MS)
    assert w.inbox.row_of("keeper") >= 0
    with pytest.raises(TaskDeleted):
        store.task("doomed")
    assert [r.actor["id"] for r in deletion.receipts(store)] == ["rita"]
    settle(qtbot, w)


def test_a_live_agent_lease_keeps_the_deletion_disabled_and_says_why(
    qtbot, store: Store, ws: Path
) -> None:
    _tasks(store, ws)
    store.execute(c.AcquireLease(task_id="doomed", session_id="s1", ttl_seconds=600), AGENT)
    w = open_window(qtbot, store, "doomed")
    d = w.menu_actions.delete_task()
    qtbot.waitUntil(lambda: d.plan is not None, timeout=WAIT_MS)
    d.reason.setText("r")
    d.confirm.setText("doomed")
    qtbot.waitUntil(lambda: d.armed, timeout=WAIT_MS)  # past the arming delay
    assert not d.ok.isEnabled()
    assert d.why_not.isVisibleTo(d)
    assert "agent:drafter-7 holds a live lease" in d.why_not.text()
    d.reject()
