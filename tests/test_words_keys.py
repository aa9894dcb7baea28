"""Issue 32's keys: Return on a focused decision button presses it once armed, as Space
does, and never before (a stray keystroke as the dialog opens decides nothing); Return in
a field still presses no button. The words of the same list are in test_desktop_words32.py
and test_history_words32.py."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import armed, done, open_window, viewed

from store import Store
from store.services.demo import fill_demo


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _approve_dialog(qtbot, store: Store):  # type: ignore[no-untyped-def]
    """The demo's note with its email to approve: the window and its Approve dialog."""
    fill_demo(store)
    w = open_window(qtbot, store, "note")
    w.menu_actions.approve_action.trigger()
    return w, w.menu_actions.dialog


def _state(store: Store) -> str:
    mail = next(a for a in store.task("note")["approvals"] if a["approval_id"] == "apr-note-mail")
    return str(mail["state"])


@pytest.mark.parametrize("key", [Qt.Key.Key_Return, Qt.Key.Key_Enter])
def test_return_on_the_focused_approve_button_approves_once_armed(
    qtbot, store: Store, key: Qt.Key
) -> None:  # type: ignore[no-untyped-def]
    w, d = _approve_dialog(qtbot, store)
    d.ok.setFocus()
    qtbot.keyClick(d.ok, key)  # before it is armed: a stray keystroke
    assert not d.running
    viewed(qtbot, d)
    qtbot.keyClick(d.ok, key)  # shown, not yet armed
    assert not d.running and _state(store) == "pending"
    armed(qtbot, d.ok)
    d.ok.setFocus()
    qtbot.keyClick(d.ok, key)
    done(qtbot, w, d)
    assert _state(store) == "approved"


def test_return_in_the_note_presses_no_button(qtbot, store: Store) -> None:  # type: ignore[no-untyped-def]
    _window, d = _approve_dialog(qtbot, store)
    viewed(qtbot, d)
    armed(qtbot, d.ok)
    d.note.setFocus()
    qtbot.keyClick(d.note, Qt.Key.Key_Return)
    qtbot.wait(50)
    assert not d.running and d.isVisible() and _state(store) == "pending"
    assert "\n" in d.note.toPlainText()  # a new line in the note, as typed


def test_return_on_the_focused_reject_button_rejects_once_armed(qtbot, store: Store) -> None:  # type: ignore[no-untyped-def]
    w, d = _approve_dialog(qtbot, store)
    viewed(qtbot, d)
    d.note.setPlainText("not before Friday")
    armed(qtbot, d.reject_button)
    d.reject_button.setFocus()
    qtbot.keyClick(d.reject_button, Qt.Key.Key_Return)
    done(qtbot, w, d)
    assert _state(store) == "rejected"
