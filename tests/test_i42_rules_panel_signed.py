"""The Rules panel on a signed store (issue 42's Done-when, audited): tests/test_desktop_rules.py
drives the panel on a store that signs nothing; here on a store as `boris init --actor
person:rita` makes it (signatures required, the agent's key trusted), on both engines. The
reviewer's grant from the window is signed with her own key, so the record proves the rule
hers ("approve", never "not proved"); the agent's next call like it, asked with the agent's
key, is decided by the rule (`approval.ruled` naming it); once the window revoked it the same
call waits for a person; `boris verify` accepts every write. pytest-qt, as the reviewer clicks.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, open_window
from test_desktop_rules import _open_rules, _rows
from test_respond import Signed

from store import Store
from store.events import ApprovalRuled, RuleGranted, RuleRevoked


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _events(signed: Signed, task_id: str, type_: str) -> list[dict[str, object]]:
    return [e for e in signed.store.events(task_id) if e["type"] == type_]


def _who(event: dict[str, object]) -> tuple[str, str]:
    actor = event["actor"]
    return (str(getattr(actor, "kind", "")), str(getattr(actor, "id", "")))


def test_a_rule_granted_and_revoked_in_the_window_on_a_signed_store(
    qtbot, signed: Signed, window_store: Store
) -> None:
    tid = signed.task("t1")
    w = open_window(qtbot, window_store)
    d = _open_rules(qtbot, w)
    qtbot.keyClicks(d.form.task, tid)
    d.form.tool.clear()
    qtbot.keyClicks(d.form.tool, "deploy")
    qtbot.keyClicks(d.form.payload, '{"env": "staging"}')
    qtbot.keyClicks(d.form.note, "staging is ours")
    qtbot.mouseClick(d.grant_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.table.rowCount() == 1, timeout=WAIT_MS)
    rule_id, now, decides = _rows(d)[0][:3]
    # Signed with rita's own key: the record proves it hers (no "not proved" in the row).
    assert (now, decides, _rows(d)[0][7]) == ("active", "approve", "rita")
    (granted,) = _events(signed, tid, RuleGranted.TYPE)
    assert _who(granted) == ("person", "rita")

    # The agent's next call like it (signed with its key) is decided by the rule.
    first = signed.ask(tid, "deploy", {"env": "staging"})
    assert signed.approval(tid, first)["state"] == "approved"
    (ruled,) = _events(signed, tid, ApprovalRuled.TYPE)
    assert ruled["payload"]["approval_id"] == first  # type: ignore[index]
    assert ruled["payload"]["rule_id"] == rule_id  # type: ignore[index]
    other = signed.ask(tid, "deploy", {"env": "prod"})
    assert signed.approval(tid, other)["state"] == "pending"

    # Revoked from the window: the same call waits for a person.
    qtbot.mouseClick(d.reload_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not d.reading and _rows(d)[0][9] == "1", timeout=WAIT_MS)
    d.table.selectRow(0)
    qtbot.keyClicks(d.reason, "staging is frozen")
    qtbot.mouseClick(d.revoke_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _rows(d)[0][1] == "revoked", timeout=WAIT_MS)
    (revoked,) = _events(signed, tid, RuleRevoked.TYPE)
    assert _who(revoked) == ("person", "rita")
    again = signed.ask(tid, "deploy", {"env": "staging"})
    assert signed.approval(tid, again)["state"] == "pending"
    assert len(_events(signed, tid, ApprovalRuled.TYPE)) == 1

    rc, problems = signed.verify()
    assert rc == 0 and problems == [], problems
    d.close()
    w.close()
