"""Tab in the confirm dialogs (issue 40): it visits only what is shown and enabled, in the
order it is read, top to bottom and left to right.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import functools

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QWidget
from test_desktop_actions import WAIT_MS, armed, done, open_window

from store import Store
from store.services.demo import fill_demo


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture
def demo(qtbot, store: Store) -> Store:
    fill_demo(store)
    return store


# --- 8. Tab in the confirm dialogs -----------------------------------------------------------


def _reading_order(dialog: QWidget, widgets: list[QWidget]) -> list[QWidget]:
    """Top to bottom; side by side (overlapping rows), left to right."""

    def box(x: QWidget) -> tuple[int, int, int]:
        at = x.mapTo(dialog, QPoint(0, 0))
        return at.y(), at.y() + x.height(), at.x()

    def before(a: QWidget, b: QWidget) -> int:
        (at, ab, ax), (bt, bb, bx) = box(a), box(b)
        if ab <= bt:
            return -1
        if bb <= at:
            return 1
        return -1 if ax < bx else 1 if ax > bx else 0

    return sorted(widgets, key=functools.cmp_to_key(before))


def _tab_cycle(qtbot, d) -> list[QWidget]:
    start = d.focusWidget()
    seen = [start]
    for _ in range(40):
        qtbot.keyClick(d.focusWidget(), Qt.Key.Key_Tab)
        now = d.focusWidget()
        if now is start:
            return seen
        seen.append(now)
    raise AssertionError(f"Tab never came back to {start}: {seen}")


def _check_tabs(qtbot, d) -> list[str]:
    qtbot.waitUntil(lambda: d.focusWidget() is not None, timeout=WAIT_MS)
    cycle = _tab_cycle(qtbot, d)
    names = [x.accessibleName() or type(x).__name__ for x in cycle]
    for x in cycle:
        assert x.isVisible() and x.isEnabled(), names
        assert not isinstance(x, QAbstractScrollArea) or x.accessibleName(), names
        assert x.focusPolicy() & Qt.FocusPolicy.TabFocus, names
    # Reading order, from the first widget in it.
    order = _reading_order(d, cycle)
    first = cycle.index(order[0])
    assert cycle[first:] + cycle[:first] == order, names
    return names


def test_tab_visits_what_is_shown_in_reading_order_in_the_confirm_dialogs(
    qtbot, demo: Store
) -> None:
    w = open_window(qtbot, demo, "guide")
    stop = w.stop_task()
    qtbot.waitExposed(stop, timeout=WAIT_MS)
    names = _check_tabs(qtbot, stop)
    # From the reason on, in reading order: the fork's choice at the top comes after Cancel.
    assert names[0] == "Reason" and any("fork" in n for n in names)
    assert "Stop the run" not in names  # disabled until the task id is typed
    qtbot.keyClicks(stop.reason, "the owner takes it from here")
    qtbot.keyClicks(stop.confirm, "stop")
    armed(qtbot, stop.ok)
    assert "Stop the run" in _check_tabs(qtbot, stop)
    stop.ok.click()
    done(qtbot, w, stop)
    close = w.menu_actions.close_task()
    qtbot.waitExposed(close, timeout=WAIT_MS)
    assert not close.ok.isEnabled()  # nothing typed: Close is not yet a place to stop
    names = _check_tabs(qtbot, close)
    assert "failed" in names  # the choice, checked, at the top
    assert "Close the task" not in names
    close.reject()
    delete = w.menu_actions.delete_task()
    qtbot.waitExposed(delete, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: delete.plan is not None, timeout=WAIT_MS)
    _check_tabs(qtbot, delete)
    delete.reject()
    w2 = open_window(qtbot, demo, "note")
    cancel = w2.menu_actions.cancel_effect()
    qtbot.waitExposed(cancel, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: cancel.view is not None, timeout=WAIT_MS)
    names = _check_tabs(qtbot, cancel)
    assert names[0] == "Reason" and "Keep it" in names
    # Typed and armed: the decision joins the cycle where it is read.
    cancel.confirm.setText("cancel")
    qtbot.keyClicks(cancel.reason, "not needed")
    armed(qtbot, cancel.ok)
    assert "Cancel the effect" in _check_tabs(qtbot, cancel)
    cancel.reject()
