"""The Approve dialog's other answers (issue 32): Send back… with a note, and Edit… the
message's subject and body, then approve the edited version. Each test clicks the real
dialog and reads the store back."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import armed, done
from test_desktop_decide import _approval, _open_approve

from store import Actor, Store
from store.commands.effects import DispatchEffect
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture
def demo(qtbot, store: Store):
    fill_demo(store)
    return store


def test_send_back_needs_a_note_and_records_changes_requested(qtbot, demo: Store) -> None:
    w, d = _open_approve(qtbot, demo, "note")
    armed(qtbot, d.send_back_button)
    d.send_back_button.click()  # no note yet: asked for, nothing decided
    assert "what should change" in d.error.text()
    assert _approval(demo, "note")["state"] == "pending"
    qtbot.keyClicks(d.note, "Mention Tuesday's outage")
    d.send_back_button.click()
    done(qtbot, w, d)
    a = _approval(demo, "note")
    assert (a["state"], a["note"], a["decided_by"]["id"]) == (
        "sent_back",
        "Mention Tuesday's outage",
        "rita",
    )
    assert not d.isVisible()


def test_edit_then_approve_sends_exactly_the_edited_message(qtbot, demo: Store) -> None:
    w, d = _open_approve(qtbot, demo, "note")
    old = d.decision.payload_digest
    armed(qtbot, d.edit_button)
    assert d.edit_button.isVisible() and not d.edits.isVisible()
    d.edit_button.click()
    assert d.edits.isVisible() and d.edits.subject.text() == "Project note, this week"
    assert "edited" in d.ok.text().lower()
    d.edits.subject.setText("Project note, week 49")
    d.edits.body.setPlainText("All green.\n")
    armed(qtbot, d.ok)  # re-armed a moment after Approve changed meaning
    d.ok.click()
    done(qtbot, w, d)
    a = _approval(demo, "note")
    assert a["state"] == "approved" and a["payload_digest"] != old
    view = demo.approval_decision("note", "apr-note-mail")
    assert (view.change.subject, view.change.body) == ("Project note, week 49", "All green.\n")
    # The agent's version is refused; the edited one is what dispatches.
    effect = next(e for e in demo.task("note")["effects"] if e["effect_id"] == "mail-note")
    assert effect["intent"]["prepared_digest"] == a["payload_digest"]
    n = demo.execute(DispatchEffect(task_id="note", effect_id="mail-note", executor="smtp"), AGENT)
    assert n == 1


def test_approve_without_opening_edit_approves_as_asked(qtbot, demo: Store) -> None:
    w, d = _open_approve(qtbot, demo, "note")
    old = d.decision.payload_digest
    armed(qtbot, d.ok)
    d.edit_button.click()
    d.edits.subject.setText("Changed my mind")
    d.edit_button.click()  # closed again: the edit is not what is approved
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    assert _approval(demo, "note")["payload_digest"] == old
