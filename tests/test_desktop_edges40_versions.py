"""A person's edit or judgement on a version a colleague moved on (issue 40): the step onto the
newer version shows it first, and who changed it, when and why stay in sight.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, done, open_window
from test_desktop_edges40 import AGENT, MARIA, colleague, edit_note_artifact, open_from_menu, texts

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


# --- 2. basing an edit on a colleague's version shows it first -------------------------------


def _record_note_v2(store: Store, text: str, note: str) -> None:
    art = store.task("note")["artifacts"][0]
    other = colleague(store)
    try:
        other.execute(
            c.RecordArtifact(task_id="note", artifact_id=art["artifact_id"], name=art["name"],
                             content=c.Content(text=text), note=note, based_on=1),
            MARIA,
        )  # fmt: skip
    finally:
        other.close()


def test_basing_an_edit_on_a_colleagues_version_shows_that_version_first(
    qtbot, demo: Store
) -> None:
    w = open_window(qtbot, demo, "note")
    d = edit_note_artifact(qtbot, w)
    name = demo.task("note")["artifacts"][0]["name"]
    assert d.windowTitle().endswith("(v1)")
    d.editor.setFocus()
    d.editor.moveCursor(d.editor.textCursor().MoveOperation.End)
    qtbot.keyClicks(d.editor, "Reviewed by Rita.")
    theirs = "# Project note\n\nKick-off on Tuesday, in room 4.\n"
    _record_note_v2(demo, theirs, "moved the kick-off")
    qtbot.waitUntil(d.rebase.isVisible, timeout=WAIT_MS)
    assert not d.ok.isEnabled()
    d.rebase.click()
    # Not savable before the colleague's version is on screen...
    shown = lambda: "Kick-off on Tuesday, in room 4." in texts(d)  # noqa: E731
    assert shown() or not d.ok.isEnabled()
    qtbot.waitUntil(shown, timeout=WAIT_MS)
    # ...and then the title names the version the edit is based on.
    assert d.windowTitle() == f"Edit {name} (v2)"
    assert "Reviewed by Rita." in d.editor.toPlainText()  # the person's text is kept
    qtbot.waitUntil(d.ok.isEnabled, timeout=WAIT_MS)
    d.ok.click()
    done(qtbot, w, d)
    art = demo.task("note")["artifacts"][0]
    assert art["current_version"] == 3


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


# --- 4. evidence keeps the version it was made on, whatever "Against" says -------------------


def _guide_v3_with_evidence(store: Store) -> None:
    out = Path(store.task("guide")["scope"]["paths"][0]) / "out"
    guide = out / "guide.md"
    guide.write_text(guide.read_text(encoding="utf-8") + "7. Contacts (07-contacts).\n")
    store.execute(
        c.RecordArtifact(task_id="guide", artifact_id="guide", name="guide.md",
                         content=c.Content(path=str(guide))),
        AGENT,
    )  # fmt: skip
    check = out / "check-3.txt"
    check.write_text("$ check-structure out/guide.md\n7 sections found\nOK\n")
    store.execute(
        c.AttachEvidence(task_id="guide", criterion_id="structure", evidence_id="check-3",
                         kind="command_output", content=c.Content(path=str(check)),
                         description="check-structure on guide v3", artifact_id="guide",
                         artifact_version=3),
        AGENT,
    )  # fmt: skip


def _evidence_line(d, evidence_id: str) -> str:
    for i in range(d.evidence.count()):
        item = d.evidence.item(i)
        if item.data(Qt.ItemDataRole.UserRole) == evidence_id:
            return str(item.text())
    raise AssertionError(f"no evidence {evidence_id}")


def test_evidence_says_the_version_it_was_made_on_whatever_it_is_judged_against(
    qtbot, demo: Store
) -> None:
    _guide_v3_with_evidence(demo)
    w = open_window(qtbot, demo, "guide")
    d = _open_judge(qtbot, w)
    assert "made on guide v3 (current)" in _evidence_line(d, "check-3")
    d.artifact.setCurrentIndex(d.artifact.findData("06-support"))
    line = _evidence_line(d, "check-3")
    assert "made on guide v3 (current)" in line and "06-support v1" not in line
    # A newer guide while the dialog is open: v3 is no longer current, and it says so.
    out = Path(demo.task("guide")["scope"]["paths"][0]) / "out" / "guide.md"
    other = colleague(demo)
    try:
        other.execute(
            c.RecordArtifact(task_id="guide", artifact_id="guide", name="guide.md",
                             content=c.Content(text=out.read_text() + "8. Index.\n")),
            AGENT,
        )  # fmt: skip
    finally:
        other.close()
    qtbot.waitUntil(d.rebase.isVisible, timeout=WAIT_MS)
    d.rebase.click()
    line = _evidence_line(d, "check-3")
    assert "made on guide v3" in line and "(current)" not in line and "now v4" in line
