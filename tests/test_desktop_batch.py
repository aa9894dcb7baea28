"""The batch table (issue 42): the Decisions tab's "Decide several…" shows the pending
approvals as a pre-flight table (what each would do, its target, its digest), a verdict per
row, one Apply then Confirm; each row shows its own result, and a row whose request was
decided elsewhere since the table was read shows its conflict while the others are recorded.
Return decides nothing. On a signed store as `boris init` makes it, on both engines."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, open_window
from test_respond import Signed

from store import Store
from store.events import ApprovalDecided
from store.reads.decision_views import ApprovalVerdict


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _open_batch(qtbot, w):
    """The Decisions tab, then "Decide several…", as the reviewer clicks them."""
    from boris_desktop.queue.batch import BatchDialog

    w.views.setCurrentWidget(w.queue)
    qtbot.waitUntil(lambda: w.queue.loaded, timeout=WAIT_MS)
    qtbot.mouseClick(w.queue.batch_button, Qt.MouseButton.LeftButton)
    d = w.queue.batch
    assert isinstance(d, BatchDialog)
    qtbot.addWidget(d)
    qtbot.waitUntil(lambda: not d.reading and d.table.rowCount() > 0, timeout=WAIT_MS)
    return d


def _cells(d, r: int) -> list[str]:
    return [d.table.item(r, c).text() if d.table.item(r, c) else "" for c in range(4)]


def test_decide_several_from_the_batch_table(qtbot, signed: Signed, window_store: Store) -> None:
    from boris_desktop.queue.batch import APPROVAL, DIGEST, TARGET, WHAT

    one, two = signed.task("t1"), signed.task("t2")
    a1, a2, a3 = (signed.ask(one, f"tool{i}", {"n": i}) for i in range(3))
    b1 = signed.ask(two, "deploy", {"env": "staging"})
    w = open_window(qtbot, window_store)
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == 4, timeout=WAIT_MS)
    d = _open_batch(qtbot, w)

    # The pre-flight table: every pending approval, what it would do, its target and digest.
    assert d.table.rowCount() == 4
    by_id = {d.table.item(r, APPROVAL).text(): r for r in range(4)}
    assert set(by_id) == {a1, a2, a3, b1}
    r1 = by_id[a1]
    assert d.table.item(r1, WHAT).text() == "the agent runs tool0"
    assert d.table.item(r1, TARGET).text() == "langgraph://tools/tool0"
    digest = signed.approval(one, a1)["payload_digest"]
    assert d.table.item(r1, DIGEST).toolTip() == digest
    assert "4 pending requests · 0 to decide" in d.summary.text()
    assert not d.apply_button.isEnabled()  # nothing set, nothing to apply

    d.set_verdict(by_id[a1], ApprovalVerdict.APPROVE)
    d.set_verdict(by_id[a2], ApprovalVerdict.REJECT)
    d.set_verdict(by_id[b1], ApprovalVerdict.SEND_BACK)
    assert not d.apply_button.isEnabled()  # a send-back needs its note
    qtbot.keyClicks(d.note_field(by_id[b1]), "use the canary first")
    assert d.apply_button.isEnabled()

    # A stray Return decides nothing; Apply asks, Confirm decides.
    qtbot.keyClick(d, Qt.Key.Key_Return)
    qtbot.mouseClick(d.apply_button, Qt.MouseButton.LeftButton)
    assert d.confirm_button.isVisible() and "Decide 3 requests as set" in d.confirm_text.text()
    qtbot.keyClick(d, Qt.Key.Key_Return)
    assert signed.approval(one, a1)["state"] == "pending"
    qtbot.mouseClick(d.confirm_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.result_text(by_id[a1]) != "", timeout=WAIT_MS)

    assert d.result_text(by_id[a1]) == "Recorded: approved"
    assert d.result_text(by_id[a2]) == "Recorded: rejected"
    assert d.result_text(by_id[b1]) == "Recorded: sent back for changes"
    assert d.result_text(by_id[a3]) == ""  # left as it was
    assert "3 recorded, 0 refused" in d.summary.text()
    assert signed.approval(one, a3)["state"] == "pending"
    decided = [e for e in signed.store.events(one) if e["type"] == ApprovalDecided.TYPE]
    assert {e["actor"]["id"] for e in decided} == {"rita"}
    rc, problems = signed.verify()
    assert rc == 0, problems
    d.close()
    w.close()


def test_a_row_decided_elsewhere_shows_its_conflict(
    qtbot, signed: Signed, window_store: Store
) -> None:
    tid = signed.task("t1")
    a1, a2 = signed.ask(tid, "tool", {"n": 1}), signed.ask(tid, "tool", {"n": 2})
    w = open_window(qtbot, window_store)
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == 2, timeout=WAIT_MS)
    d = _open_batch(qtbot, w)
    from boris_desktop.queue.batch import APPROVAL

    by_id = {d.table.item(r, APPROVAL).text(): r for r in range(2)}
    d.set_verdict(by_id[a1], ApprovalVerdict.APPROVE)
    d.set_verdict(by_id[a2], ApprovalVerdict.APPROVE)
    # Meanwhile the second is rejected from the command line.
    signed.ok("--actor", "person:rita", "reject", tid, a2, "--note", "not this one")
    qtbot.mouseClick(d.apply_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(d.confirm_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.result_text(by_id[a2]) != "", timeout=WAIT_MS)
    assert d.result_text(by_id[a1]) == "Recorded: approved"
    stale = d.result_text(by_id[a2])
    assert stale.startswith("Refused: approval") and "rejected by rita meanwhile" in stale
    assert "1 recorded, 1 refused" in d.summary.text()
    assert signed.approval(tid, a2)["state"] == "rejected"
    d.close()
    w.close()
