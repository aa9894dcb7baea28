"""Issue 32's words: articles and plurals in What I Decided, the automatic initial checkpoint
not listed as the reviewer's decision, an approved or used request's expiry in words, the
queue's Waiting column ticking between reads, and the Checkpoint dialog's Tab order."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, open_window

from store import Actor, Store
from store.commands import approvals as ap
from store.services.demo import fill_demo

RITA = Actor(kind="person", id="rita", name="Rita Reviewer")
AGENT = Actor(kind="agent", id="a")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def test_an_approved_or_used_request_does_not_say_it_expires(qtbot, store: Store) -> None:  # type: ignore[no-untyped-def]
    fill_demo(store)
    store.execute(
        ap.DecideApproval(task_id="note", approval_id="apr-note-mail", decision="approved"), RITA
    )
    w = open_window(qtbot, store)
    panel = w.task_view.panel("Approvals")
    mail = next(a for a in store.task("note")["approvals"] if a["approval_id"] == "apr-note-mail")
    assert panel.expiry_text(mail).startswith("approved: to be used within ")
    upload = store.task("guide")["approvals"][0]
    assert upload["state"] == "consumed"
    assert panel.expiry_text(upload) == "no longer matters: used by upload-guide#1"
    assert panel._expiry_line(upload).startswith(
        "no longer matters: used by upload-guide#1 (was due "
    )


def test_the_queues_waiting_column_ticks_between_reads(qtbot, store: Store) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.queue.decisions import WAITING

    fill_demo(store)
    w = open_window(qtbot, store)
    q = w.queue
    w.show_queue()
    qtbot.waitUntil(lambda: bool(q.loaded and q.model.rows), timeout=WAIT_MS)
    reads = [0]
    q.updated.connect(lambda *_: reads.__setitem__(0, reads[0] + 1))
    before = q.model.index(0, WAITING).data()
    at, read = q.model._read_clock
    q.model._read_clock = (at, read - 3600)  # as if the last read were an hour ago
    qtbot.waitUntil(lambda: q.model.index(0, WAITING).data() != before, timeout=WAIT_MS)
    assert reads == [0]  # not read again: the clock moved the column
    assert " h " in q.model.index(0, WAITING).data() + " "


def test_tab_from_the_checkpoint_note_reaches_write_before_cancel(qtbot, store: Store) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QDialogButtonBox

    from boris_desktop.decide.checkpoint import CheckpointDialog

    fill_demo(store)
    w = open_window(qtbot, store)
    d = CheckpointDialog(w, store.task("note"))
    qtbot.addWidget(d)
    cancel = d.buttons.button(QDialogButtonBox.StandardButton.Cancel)
    nxt = d.note.nextInFocusChain()
    while nxt not in (d.ok, cancel):
        nxt = nxt.nextInFocusChain()
    assert nxt is d.ok
    assert d.ok.nextInFocusChain() is cancel
