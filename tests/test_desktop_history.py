"""What I decided, in the window: a decision made shows with its note; search; export."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog
from test_desktop_actions import WAIT_MS, armed, open_window

from store import Actor, Store
from store.commands import core
from store.services.demo import fill_demo

RITA = Actor(kind="person", id="rita", name="Rita Reviewer")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _approve_from_the_queue(qtbot, w, note: str) -> None:
    q = w.queue
    qtbot.waitUntil(lambda: q.loaded, timeout=WAIT_MS)
    w.show_queue()
    q.kind.setCurrentIndex(q.kind.findData("approval"))
    q.table.setCurrentIndex(q.proxy.index(0, 0))
    qtbot.keyClick(q.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: q.dialog is not None and q.dialog.isVisible(), timeout=WAIT_MS)
    d = q.dialog
    armed(qtbot, d.ok)
    d.note.setPlainText(note)
    qtbot.mouseClick(d.ok, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not d.isVisible(), timeout=WAIT_MS)


def test_a_decision_made_shows_with_its_note_search_and_export(qtbot, store, tmp_path, monkeypatch):
    fill_demo(store)
    w = open_window(qtbot, store)
    h = w.history
    assert not h.loaded  # read when first shown
    w.show_history()
    assert w.views.currentWidget() is h
    qtbot.waitUntil(lambda: h.loaded, timeout=WAIT_MS)
    assert h.model.rows == []  # rita has decided nothing yet
    _approve_from_the_queue(qtbot, w, "the mail reads right")
    w.show_history()
    qtbot.waitUntil(lambda: len(h.model.rows) == 1, timeout=WAIT_MS)
    row = [h.proxy.index(0, c).data() for c in range(h.proxy.columnCount())]
    assert row[1] == "Approved"
    assert row[2] == "Save the weekly project note"
    assert "apr-note-mail" in row[4]
    assert row[5] == "the mail reads right"
    seq = h.model.rows[0]["seq"]
    assert row[3] == f"#{seq}"

    # A waiver written elsewhere (the CLI, another window) joins the list, newest first.
    other = Store.open(store.location.directory)
    try:
        other.execute(
            core.JudgeCriterion(task_id="guide", criterion_id="citations", status="waived",
                                note="figures have no sources yet"),
            RITA,
        )  # fmt: skip
    finally:
        other.close()
    qtbot.waitUntil(lambda: len(h.model.rows) == 2, timeout=WAIT_MS)
    assert h.proxy.index(0, 1).data() == "Waived"

    # Search: every word must match somewhere in the decision.
    qtbot.keyClicks(h.search, "citations sources")
    assert h.proxy.rowCount() == 1
    assert h.proxy.index(0, 5).data() == "figures have no sources yet"
    assert "1 shown" in h.summary.text()
    h.search.clear()
    assert h.proxy.rowCount() == 2

    # Export what is shown, as CSV and as JSON (the save dialog faked at its boundary).
    for fmt, button in (("csv", h.csv), ("json", h.json)):
        target = tmp_path / f"audit.{fmt}"
        monkeypatch.setattr(
            QFileDialog, "getSaveFileName", staticmethod(lambda *a, t=target: (str(t), ""))
        )
        with qtbot.waitSignal(h.exported, timeout=WAIT_MS):
            qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
        if fmt == "csv":
            with target.open(newline="", encoding="utf-8") as f:
                got = list(csv.DictReader(f))
        else:
            got = json.loads(target.read_text("utf-8"))
        assert [r["kind"] for r in got] == ["waiver", "approved"]
        assert got[1]["note"] == "the mail reads right"
        assert str(got[1]["seq"]) == str(seq)
        assert got[1]["task_id"] == "note" and got[1]["actor"] == "person:rita"

    # Selecting a decision shows its task below; Enter shows it at its timeline.
    h.table.setCurrentIndex(h.proxy.index(0, 0))
    qtbot.waitUntil(lambda: w.task_view.task_id == "guide", timeout=WAIT_MS)
    assert w.views.currentWidget() is h  # the list stays in front
    h.table.setCurrentIndex(h.proxy.index(1, 0))
    qtbot.keyClick(h.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: w.task_view.task_id == "note", timeout=WAIT_MS)
    assert w.task_view.tabs.currentWidget() is w.task_view.panel("Timeline")
