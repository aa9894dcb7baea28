"""The Approve dialog's diff follows the file it writes (issue 40)."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, armed, done, open_window, viewed
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


# --- 1. the Approve dialog's diff follows the file -------------------------------------------


def test_the_approve_dialogs_diff_follows_the_file_and_approve_waits(
    qtbot, store: Store, ws: Path
) -> None:
    make_task(store, ws)
    f = ws / "notes.md"
    f.write_text("one\ntwo\nthree\n", encoding="utf-8")
    write_for_approval(store, f, "one\nTWO\nthree\n", "w", "ap")
    w = open_window(qtbot, store, "t")
    d = open_from_menu(qtbot, w, w.menu_actions.approve_action)
    viewed(qtbot, d)
    qtbot.waitUntil(lambda: "+TWO" in d.content.pane.toPlainText(), timeout=WAIT_MS)
    armed(qtbot, d.ok)
    assert "four" not in d.content.pane.toPlainText()
    # A colleague appends a line while the dialog is open: approving would now delete it.
    with f.open("a", encoding="utf-8") as out:
        out.write("four\n")
    qtbot.waitUntil(lambda: "-four\n" in d.content.pane.toPlainText(), timeout=WAIT_MS)
    # The new diff is on screen and Approve waits until the person has had a moment with it.
    assert not d.ok.isEnabled()
    assert d.changed.isVisible() and "notes.md" in d.changed.text()
    assert "changed" in d.changed.text()
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    assert store.task("t")["approvals"][0]["state"] == "approved"
