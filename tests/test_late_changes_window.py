"""Late changes in the window (issue 35 part L), as a reviewer meets them: the inbox and the
task header say a completed task changed after completion, the decision queue offers
"acknowledge" or "open a follow-up task", and a newer late fact arriving while the dialog is
open is a conflict shown in it. On both engines."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, armed, done, open_window, settle
from test_late_changes import AGENT, EVAL, completed_task

from store import Store
from store import commands as c
from store.commands.effects import ObserveEffect


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _late_task(store: Store, ws: Path) -> dict[str, str]:
    ids = completed_task(store, ws)
    (ws / "report.md").write_text("someone rewrote it\n")
    store.execute(ObserveEffect(task_id="t", effect_id=ids["effect"], purpose="watch"), AGENT)
    return ids


def _needs(w, task_id: str) -> str:
    from boris_desktop.inbox.table import NEEDS

    return str(w.inbox.index(w.inbox.row_of(task_id), NEEDS).data())


def _open_from_queue(qtbot, w):
    w.views.setCurrentIndex(1)
    q = w.queue
    qtbot.waitUntil(lambda: q.loaded and q.model.row_of("late_changes:t:t") >= 0, timeout=WAIT_MS)
    q.open_decision("late_changes:t:t")
    qtbot.waitUntil(lambda: q.dialog is not None and q.dialog.isVisible(), timeout=WAIT_MS)
    return q.dialog


def test_inbox_and_header_say_it_changed_and_it_stays_completed(qtbot, store: Store, ws: Path):
    _late_task(store, ws)
    w = open_window(qtbot, store, "t")
    assert "changed after completion (1)" in _needs(w, "t")
    header = w.task_view.header
    qtbot.waitUntil(header.late.isVisible, timeout=WAIT_MS)
    line = header.late.label.text()
    assert line.startswith("Changed after completion: 1 fact since 20")
    assert "report.md" in line and "stays completed" in line
    assert "Completed" in header.status.text() or "completed" in header.status.text()
    assert store.task("t")["status"] == "completed"
    w.close()


def test_acknowledge_from_the_queue(qtbot, store: Store, ws: Path) -> None:
    _late_task(store, ws)
    w = open_window(qtbot, store)
    d = _open_from_queue(qtbot, w)
    assert "report.md" in d.facts.text()
    assert "completed → completed" in d.what.text()
    assert not d.ok.isEnabled()  # armed only a moment after it opened
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    assert d.result_value is not None and not d.error.isVisible()
    task = store.task("t")
    assert task["status"] == "completed" and task["late"]["count"] == 0
    assert task["late"]["answers"][-1]["by"].startswith("person:rita")
    w.close()


def test_a_newer_late_fact_while_open_is_a_conflict_shown_in_the_dialog(
    qtbot, store: Store, ws: Path
) -> None:
    ids = _late_task(store, ws)
    w = open_window(qtbot, store)
    d = _open_from_queue(qtbot, w)
    seen = d.based_on
    # Another process: an evaluator revises its judgement while the dialog is open.
    store.execute(
        c.JudgeCriterion(task_id="t", criterion_id=ids["criterion"], status="failed",
                         note="evaluator v2"),
        EVAL,
    )  # fmt: skip
    qtbot.waitUntil(d.changed.isVisible, timeout=WAIT_MS)
    assert "newer late fact" in d.changed.text() and "judged it failed" in d.changed.text()
    assert d.based_on == seen  # still what the person was shown
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    assert d.error.isVisible() and "changed since you read it" in d.error.text()
    assert store.task("t")["late"]["count"] == 2  # nothing acknowledged unseen
    # The person looks at what is there now, then decides.
    assert d.rebase.isVisible()
    d.rebase.click()
    assert d.based_on != seen and "judged it failed" in d.facts.text()
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    assert store.task("t")["late"]["count"] == 0
    w.close()


def test_open_a_follow_up_task_from_the_queue(qtbot, store: Store, ws: Path) -> None:
    _late_task(store, ws)
    w = open_window(qtbot, store)
    d = _open_from_queue(qtbot, w)
    d.choices["follow_up"].setChecked(True)
    assert d.objective.toPlainText() == "ship the report"  # the draft
    qtbot.waitUntil(lambda: d.armed, timeout=WAIT_MS)
    assert not d.ok.isEnabled()  # a follow-up needs its title
    qtbot.keyClicks(d.title_field, "Fix the rewritten report")
    d.objective.setPlainText("ship the report again, as it was approved")
    assert "Fix the rewritten report" in d.what.text()
    qtbot.waitUntil(d.ok.isEnabled, timeout=WAIT_MS)
    d.ok.click()
    done(qtbot, w, d)
    new_id = d.result_value
    old, new = store.task("t"), store.task(new_id)
    assert old["status"] == "completed" and old["late"]["count"] == 0
    assert new["title"] == "Fix the rewritten report" and new["status"] == "running"
    assert new["objective"]["text"] == "ship the report again, as it was approved"
    assert new["late"]["origin"]["task_id"] == "t"
    settle(qtbot, w)
    w.close()
