"""Five parallel calls decided in the window's batch table reach LangGraph (issue 42: a batch of
5 parallel calls decided 3 approve / 1 edit / 1 reject reaches each framework in its documented
shape; here the person decides in Boris Desktop rather than with `boris decide-batch`).

The real LangChain agent (`create_agent`, the real `HumanInTheLoopMiddleware`, batched) on the
real `SqliteSaver`, its scripted model (tests/test_fw42_langgraph.py), asks five gated calls in
one turn on the store `boris init` makes (the agent's key as BORIS_KEY). Rita opens the window
on that store (her own key signs; pytest-qt as she clicks): Decisions › Decide several…, three
rows Approve, one edited with Edit… (the call's arguments as JSON, the store's `edits_call`),
one Reject with her note; Apply, Confirm. The graph resumes with the middleware's one
`{"decisions": [...]}` in the model's order, the tools run with exactly the approved and edited
arguments, the rejected one not at all, and the model reads each call's result.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from signed_default import Signed, signed_for_window
from test_desktop_actions import WAIT_MS, open_window, store_for_window
from test_desktop_batch import _open_batch
from test_fw42_langgraph import EDITED, VERDICTS, ask_batched, resume_as_decided
from test_langgraph_adapter import AGENT, config_of, ran_calls

from store.reads.decision_views import ApprovalVerdict

NOTE = "keep the quarterly report"


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Signed:
    return signed_for_window(tmp_path, monkeypatch, f"agent:{AGENT.id}")


def test_five_calls_decided_in_the_batch_table_reach_the_graph(
    qtbot, signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from boris_desktop.queue.batch import APPROVAL, WHAT

    task = signed.task("lg-window-batch", "langgraph://tools/")
    signed.use_here(monkeypatch)  # the agent's process
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    config = config_of("t-window")
    interrupt, asked = ask_batched(signed, task, checkpoints, ran_log, config)
    by_call = {str(a.action.tool_call_id): a.approval_id for a in asked}

    # Rita's window: her own key (no BORIS_KEY in her session).
    signed.use_here(monkeypatch, key=False)
    with store_for_window(signed.store_dir) as window_store:
        w = open_window(qtbot, window_store)
        qtbot.waitUntil(lambda: len(w.queue.model.rows) == 5, timeout=WAIT_MS)
        d = _open_batch(qtbot, w)
        row = {d.table.item(r, APPROVAL).text(): r for r in range(5)}
        for call_id, verdict in VERDICTS.items():
            r = row[by_call[call_id]]
            if verdict == "approve":
                d.set_verdict(r, ApprovalVerdict.APPROVE)
            elif verdict == "reject":
                d.set_verdict(r, ApprovalVerdict.REJECT)
                qtbot.keyClicks(d.note_field(r), NOTE)
            else:  # Edit…: the call's arguments as JSON, her own
                d.table.setCurrentCell(r, 0)
                qtbot.mouseClick(d.edit_button, Qt.MouseButton.LeftButton)
                editor = d.editor
                assert editor is not None and not editor.words
                shown = json.loads(editor.call_edits.text.toPlainText())
                assert shown == next(
                    a.action.args for a in asked if a.approval_id == by_call[call_id]
                )
                editor.call_edits.text.setPlainText("[1, 2]")  # no object: not taken
                qtbot.mouseClick(editor.use_button, Qt.MouseButton.LeftButton)
                assert editor.isVisible() and "must be a JSON object" in editor.error.text()
                editor.call_edits.text.setPlainText(json.dumps(EDITED))
                qtbot.mouseClick(editor.use_button, Qt.MouseButton.LeftButton)
                assert not editor.isVisible()
                assert d.verdict_box(r).currentData() == ApprovalVerdict.APPROVE
                assert d.table.item(r, WHAT).text().endswith("— with your arguments")
        qtbot.mouseClick(d.apply_button, Qt.MouseButton.LeftButton)
        said = d.confirm_text.text()
        assert "Approve 3" in said and "Approve edited 1" in said and "Reject 1" in said
        qtbot.mouseClick(d.confirm_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: "5 recorded, 0 refused" in d.summary.text(), timeout=WAIT_MS)
        d.close()
        w.close()
    assert ran_calls(ran_log) == []

    # The agent's process resumes the graph from Boris.
    signed.use_here(monkeypatch)
    resume_as_decided(signed, task, checkpoints, ran_log, config, interrupt, asked)
