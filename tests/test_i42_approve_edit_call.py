"""The Approve dialog edits a framework's tool call (issue 42: "edit then approve" for the calls
five agents ask, not only for messages): Edit… shows the call's arguments as JSON (the store's
`edits_call`, `prepared_json`); what is no JSON object is said and can be mended (the dialog
stays usable); Approve edited records the person's revision, and LangGraph's resume hands the
tool exactly those arguments.

The real LangChain agent with the real `HumanInTheLoopMiddleware` (per-call) on `SqliteSaver`
and a scripted model (tests/test_i42_langgraph_rules.py `Graph`), on the store `boris init`
makes (the agent's key as BORIS_KEY); rita's window with her own key; pytest-qt.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from signed_default import Signed, signed_for_window
from test_desktop_actions import WAIT_MS, armed, done, open_window
from test_i42_langgraph_rules import Graph
from test_langgraph_adapter import AGENT, ran_calls

from store.canonical import digest_of
from store.store import Store

ASKED = {"path": "reports/q3.pdf"}
EDITED = {"path": "reports/q3-draft.pdf"}


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Signed:
    return signed_for_window(tmp_path, monkeypatch, f"agent:{AGENT.id}")


def test_edit_a_calls_arguments_then_approve_and_the_graph_runs_them(
    qtbot, signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from boris_desktop.decide.approve import ApproveDialog

    task = signed.task("i42-edit-call", "langgraph://tools/")
    signed.use_here(monkeypatch)
    g = Graph(signed, task, tmp_path)
    asked = g.ask("t1", "delete_file", ASKED)

    signed.use_here(monkeypatch, key=False)  # rita's window: her own key
    store = Store.open(signed.store_dir)
    try:
        w = open_window(qtbot, store, task)
        d = ApproveDialog(w, task, asked.approval_id)
        qtbot.addWidget(d)
        d.show()
        qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)
        assert d.decision is not None and d.decision.edits_call
        armed(qtbot, d.edit_button)
        assert d.edit_button.isVisible() and not d.call_edits.isVisible()
        d.edit_button.click()
        assert d.call_edits.isVisible() and not d.edits.isVisible()
        assert json.loads(d.call_edits.text.toPlainText()) == ASKED
        assert "edited" in d.ok.text().lower()

        d.call_edits.text.setPlainText('{"path": ')  # not JSON: said, nothing sent
        armed(qtbot, d.ok)
        d.ok.click()
        assert "Not approved: your arguments are not JSON" in d.error.text()
        assert d.final_refusal is None and d.isVisible()
        assert g.state(asked.approval_id) == "pending"

        d.call_edits.text.setPlainText(json.dumps(EDITED))
        armed(qtbot, d.ok)
        d.ok.click()
        done(qtbot, w, d)
        assert d.last_error is None
        w.close()
    finally:
        from PySide6.QtCore import QThreadPool

        QThreadPool.globalInstance().waitForDone(10_000)
        store.close()
    (approval,) = [a for a in signed.read("approvals", task) if a["id"] == asked.approval_id]
    assert approval["state"] == "approved" and approval["payload_digest"] == digest_of(EDITED)
    assert approval["decided_by"]["id"] == "rita"

    signed.use_here(monkeypatch)  # the agent resumes the graph
    said = g.resume("t1")
    assert said is not None and said["call-t1"].endswith("deleted reports/q3-draft.pdf")
    assert ran_calls(g.ran_log) == [{"tool": "delete_file", "args": EDITED}]
    signed.assert_signed()
