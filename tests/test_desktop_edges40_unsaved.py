"""Typed text is not thrown away without asking (issue 40): Escape, Cancel and the window's
close button ask first in a dialog where the person typed something.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QMessageBox
from test_desktop_actions import WAIT_MS, open_window, viewed
from test_desktop_edges40 import edit_note_artifact, open_from_menu

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


# --- 6. typed text is not thrown away without asking ----------------------------------------


def _discard_box(qtbot, d) -> QMessageBox:
    qtbot.waitUntil(
        lambda: d.discard_box is not None and d.discard_box.isVisible(), timeout=WAIT_MS
    )
    return d.discard_box


def test_escape_cancel_and_close_ask_before_typed_text_is_thrown_away(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    d = open_from_menu(qtbot, w, w.menu_actions.amend_action)
    qtbot.keyClicks(d.text, " Also by Friday.")
    qtbot.keyClick(d.text, Qt.Key.Key_Escape)
    box = _discard_box(qtbot, d)
    assert d.isVisible() and "discard" in box.text().lower()
    box.button(QMessageBox.StandardButton.Cancel).click()  # keep editing
    assert d.isVisible() and "Also by Friday." in d.text.toPlainText()
    d.buttons.button(QDialogButtonBox.StandardButton.Cancel).click()
    box = _discard_box(qtbot, d)
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert d.isVisible()
    d.close()  # the window's close button
    box = _discard_box(qtbot, d)
    assert d.isVisible()
    box.button(QMessageBox.StandardButton.Discard).click()
    qtbot.waitUntil(lambda: not d.isVisible(), timeout=WAIT_MS)
    assert "Also by Friday" not in demo.task("note")["objective"]["text"]


def test_an_artifact_edit_or_a_typed_note_asks_and_an_untouched_dialog_does_not(
    qtbot, demo: Store
) -> None:
    w = open_window(qtbot, demo, "note")
    d = edit_note_artifact(qtbot, w)
    qtbot.keyClicks(d.editor, "x")
    qtbot.keyClick(d.editor, Qt.Key.Key_Escape)
    _discard_box(qtbot, d).button(QMessageBox.StandardButton.Discard).click()
    qtbot.waitUntil(lambda: not d.isVisible(), timeout=WAIT_MS)
    # A note typed in the Approve dialog asks too.
    a = open_from_menu(qtbot, w, w.menu_actions.approve_action)
    viewed(qtbot, a)
    qtbot.keyClicks(a.note, "looks right")
    qtbot.keyClick(a.note, Qt.Key.Key_Escape)
    assert a.isVisible()
    _discard_box(qtbot, a).button(QMessageBox.StandardButton.Discard).click()
    qtbot.waitUntil(lambda: not a.isVisible(), timeout=WAIT_MS)
    # Nothing typed: Escape closes at once.
    r = open_from_menu(qtbot, w, w.menu_actions.amend_action)
    qtbot.keyClick(r.text, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not r.isVisible(), timeout=WAIT_MS)
    assert r.discard_box is None or not r.discard_box.isVisible()
