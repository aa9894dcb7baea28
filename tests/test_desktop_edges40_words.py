"""What the task view says of a sent-back approval and of a cancelled effect (issue 40): the
store's states, in words.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, armed, done, open_window, settle, viewed
from test_desktop_edges40 import make_task, open_from_menu, write_for_approval

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


# --- 5. the header says a sent-back approval was sent back ----------------------------------


def test_the_header_says_a_sent_back_approval_was_sent_back(qtbot, store: Store, ws: Path) -> None:
    make_task(store, ws)
    write_for_approval(store, ws / "a.md", "a\n", "wa", "ap-a")
    write_for_approval(store, ws / "b.md", "b\n", "wb", "ap-b")
    w = open_window(qtbot, store, "t")
    status = w.task_view.header.status
    assert "ap-a" in status.text() and "pending" in status.text()
    d = open_from_menu(qtbot, w, w.menu_actions.approve_action)
    viewed(qtbot, d)
    assert d.approval_id == "ap-a"
    qtbot.keyClicks(d.note, "name the file in the heading")
    armed(qtbot, d.send_back_button)
    d.send_back_button.click()
    done(qtbot, w, d)
    qtbot.waitUntil(lambda: "sent back" in status.text(), timeout=WAIT_MS)
    said = status.text()
    assert "ap-a is pending" not in said
    assert "ap-b is pending" in said and "ap-a was sent back by Rita Reviewer" in said
    assert "“name the file in the heading”" in said


# --- 9. a cancelled effect's outcome ---------------------------------------------------------


def test_a_cancelled_effects_outcome_says_it_was_never_dispatched(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    d = w.menu_actions.cancel_effect()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: d.view is not None, timeout=WAIT_MS)
    qtbot.keyClicks(d.reason, "the owner sends it herself")
    qtbot.keyClicks(d.confirm, "cancel")
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    eid = d.effect_id
    qtbot.waitUntil(
        lambda: any(
            e["effect_id"] == eid and e["stage"] == "cancelled"
            for e in w.task_view.bundle["task"]["effects"]
        ),
        timeout=WAIT_MS,
    )
    settle(qtbot, w)
    tree = w.task_view.panel("Effects").tree
    index = tree.index_at((eid,))
    outcome = index.siblingAtColumn(2).data()
    assert index.siblingAtColumn(1).data() == "cancelled"  # the stage
    assert outcome == "never dispatched"  # not "not known yet": there is nothing to know
