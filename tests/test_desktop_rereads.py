"""The task on screen is read again whenever the store changes; it is redrawn only when its
record did. A write to another task made every panel redraw (20-50 ms of the GUI thread on a
big store, benchmarks/bench_queue.py) and the resume brief, which hashes files, be read again."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, open_window, settle

from boris_desktop.runtime import jobs
from store import Actor, Store
from store import commands as c
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


def _counted(w, monkeypatch) -> dict[str, int]:
    """How often each panel is shown the task, and the brief read (from when every tab
    shows the record on screen: the tabs behind the front one are filled in turns)."""
    counts: dict[str, int] = {"brief": 0}
    assert not w.task_view._unfilled
    for title, panel in w.task_view.panels.items():
        counts[title] = 0

        def show(bundle, _show=panel.show_task, _title=title):
            counts[_title] += 1
            _show(bundle)

        monkeypatch.setattr(panel, "show_task", show)
    brief = jobs.brief

    def counted_brief(store, task_id):
        counts["brief"] += 1
        return brief(store, task_id)

    monkeypatch.setattr(jobs, "brief", counted_brief)
    return counts


def test_a_write_to_another_task_redraws_nothing_but_the_clock(
    qtbot, store: Store, monkeypatch
) -> None:
    fill_demo(store)
    w = open_window(qtbot, store, "note")
    qtbot.waitUntil(lambda: not w.task_view._unfilled, timeout=WAIT_MS)
    approvals = w.task_view.panel("Approvals")
    assert approvals._approvals  # the note's upload waits for the owner
    clock_before = approvals._clock[0]
    shown_before = w.task_view.bundle
    counts = _counted(w, monkeypatch)

    store.execute(c.CreateTask(task_id="other", title="Other", owner="o", objective="x"), AGENT)
    qtbot.waitUntil(lambda: w.inbox.row_of("other") >= 0, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.task_view.bundle is not shown_before, timeout=WAIT_MS)
    settle(qtbot, w)

    assert w.task_view.task_id == "note"
    assert {k: v for k, v in counts.items() if v} == {}  # no panel redrawn, no brief read
    assert approvals._clock[0] > clock_before  # time left to decide follows the new reading
    assert w.task_view.bundle["task"]["now"] > shown_before["task"]["now"]


def test_a_write_to_the_task_on_screen_redraws_it(qtbot, store: Store, monkeypatch) -> None:
    fill_demo(store)
    w = open_window(qtbot, store, "note")
    qtbot.waitUntil(lambda: not w.task_view._unfilled, timeout=WAIT_MS)
    counts = _counted(w, monkeypatch)

    store.execute(
        c.AmendObjective(task_id="note", text="Save the note, then stop", reason="scope"),
        Actor(kind="person", id="olga"),
    )
    qtbot.waitUntil(lambda: "then stop" in w.task_view.header.objective.text(), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: counts["brief"] == 1, timeout=WAIT_MS)
    settle(qtbot, w)
    qtbot.waitUntil(lambda: not w.task_view._unfilled, timeout=WAIT_MS)  # filled in turns
    assert {t: counts[t] for t in w.task_view.panels} == {t: 1 for t in w.task_view.panels}


def test_the_tab_in_front_is_shown_at_once_the_others_in_turns(
    qtbot, store: Store, monkeypatch
) -> None:
    """A record shown fills the tab in front with it at once; the other tabs each in a turn
    of their own, or at once when the reviewer picks one before its turn."""
    fill_demo(store)
    w = open_window(qtbot, store, "note")
    tv = w.task_view
    qtbot.waitUntil(lambda: not tv._unfilled, timeout=WAIT_MS)
    counts = _counted(w, monkeypatch)
    tv._fill_timer.timeout.disconnect()  # hold the turns back: what is filled without them
    store.execute(
        c.AmendObjective(task_id="note", text="Save the note, then stop", reason="scope"),
        Actor(kind="person", id="olga"),
    )
    qtbot.waitUntil(lambda: "then stop" in tv.header.objective.text(), timeout=WAIT_MS)
    front = tv.tabs.currentWidget().title
    assert {t for t, n in counts.items() if n and t != "brief"} == {front}
    tv.tabs.setCurrentWidget(tv.panels["Effects"])  # picked: shown before it is painted
    assert counts["Effects"] == 1
    assert tv.panel("Timeline") is tv.panels["Timeline"] and counts["Timeline"] == 1
    assert counts["Budgets"] == 0  # its turn has not come
    tv._fill_timer.timeout.connect(tv._fill_next)
    tv._fill_timer.start()
    qtbot.waitUntil(lambda: not tv._unfilled, timeout=WAIT_MS)
    assert {t: counts[t] for t in tv.panels} == {t: 1 for t in tv.panels}
