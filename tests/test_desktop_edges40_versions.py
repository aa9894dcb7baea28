"""A person's edit or judgement on a version a colleague moved on (issue 40): the step onto the
newer version shows it first, and who changed it, when and why stay in sight.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, done, open_window
from test_desktop_edges40 import MARIA, colleague, open_from_menu

from store import Store
from store import commands as c
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


# --- 3. "Look at it now" keeps who changed what, when and why --------------------------------


def _open_judge(qtbot, w):
    d = open_from_menu(qtbot, w, w.menu_actions.judge_action)
    qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)
    return d


def test_look_at_it_now_after_a_conflict_keeps_who_changed_it_and_why(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "guide")
    d = _open_judge(qtbot, w)
    assert d.criterion_id == "structure"
    d.set_status("failed")
    qtbot.keyClicks(d.note, "the guide has six sources but the check counted three")
    qtbot.waitUntil(d.ok.isEnabled, timeout=WAIT_MS)
    # The dialog has not heard of Maria's judgement yet (a slow machine): the click is refused.
    d.follower.stop()
    other = colleague(demo)
    try:
        other.execute(
            c.JudgeCriterion(task_id="guide", criterion_id="structure", status="waived",
                             note="the auditors accept the structure as it is"),
            MARIA,
        )  # fmt: skip
    finally:
        other.close()
    d.ok.click()
    done(qtbot, w, d)
    qtbot.waitUntil(d.rebase.isVisible, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "auditors accept" in d.changed.text(), timeout=WAIT_MS)
    d.rebase.click()
    # Looking at it now: it is shown as it is, and who changed it, when and why stay in sight.
    assert d.changed.isVisible()
    said = d.changed.text()
    assert "Maria Keller" in said and "waived" in said and "auditors accept" in said
    assert "waived" in d.state.text()
    assert d.note.text() == "the guide has six sources but the check counted three"
