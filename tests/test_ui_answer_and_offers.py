"""The Approve dialog on a call Claude Code asked about (issue 42), on the store `boris init`
makes: answered as the tool in plain text (the call's result schema is a string: no JSON
quotes to type), and Claude Code's offered "always" answer shown as the Boris rule it would be,
granted only through the Rules form with clicks of the person's own.

The call is the real `boris hook permission-request` fed Claude Code's documented input
(tests/fixtures/claude_code/permission_request.json, which offers "allow Bash(rm -rf
node_modules) [localSettings]"); the window signs with rita's own key from her config dir.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import QPoint, Qt
from signed_default import Signed, signed_default_store
from test_claude_code_permission_hooks import ASKED_PR, Hook, permission_request, waiting
from test_desktop_actions import WAIT_MS, armed, done, open_window, store_for_window

from store import Store
from store.api import Opaque
from store.services.respond import answered_result

AGENT = "agent:claude"


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Signed:
    found = signed_default_store(tmp_path / "home", AGENT)
    # This test process is rita's desktop: her home, no agent key.
    found.use_here(monkeypatch, key=False)
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")
    return found


@pytest.fixture
def window_store(signed: Signed) -> Iterator[Store]:
    with store_for_window(signed.store_dir, create=False) as s:
        yield s


def _dialog(qtbot, w, tid: str, aid: str):
    from boris_desktop.decide.approve import ApproveDialog

    d = ApproveDialog(w, tid, aid)
    qtbot.addWidget(d)
    d.show()
    qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)
    return d


def test_answer_a_claude_code_call_as_the_tool_in_plain_text(
    qtbot, signed: Signed, window_store: Store, tmp_path: Path
) -> None:
    task = signed.task("cc-text", "claude-code://tools/")
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    w = open_window(qtbot, window_store, task)
    d = _dialog(qtbot, w, task, asked["id"])
    assert d.decision.answer_as_text  # the store says: the result is a string

    armed(qtbot, d.respond_button)
    qtbot.mouseClick(d.respond_button, Qt.MouseButton.LeftButton)
    panel = d.respond_panel
    assert panel.isVisible() and "plain text" in panel.result_label.text()
    armed(qtbot, panel.answer_button)
    # Empty: the store refuses (the schema wants at least one character), shown, nothing kept.
    qtbot.mouseClick(panel.answer_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.error.isVisible(), timeout=WAIT_MS)
    assert "does not fit the tool's schema" in d.error.text()
    assert signed.pending(task)

    d.close()
    d = _dialog(qtbot, w, task, asked["id"])
    armed(qtbot, d.respond_button)
    d.respond_button.click()
    armed(qtbot, d.respond_panel.answer_button)
    # Typed as the person writes it: quotes and a second line are text, not JSON.
    qtbot.keyClicks(d.respond_panel.result, 'removed "node_modules"')
    qtbot.keyClick(d.respond_panel.result, Qt.Key.Key_Return)
    qtbot.keyClicks(d.respond_panel.result, "(412 MB freed)")
    qtbot.mouseClick(d.respond_panel.answer_button, Qt.MouseButton.LeftButton)
    done(qtbot, w, d)
    found = answered_result(window_store, task, asked["id"])
    assert found is not None
    assert found.result == 'removed "node_modules"\n(412 MB freed)'
    code, out, _ = hook.answer()
    assert code == 0 and out is not None
    decision = out["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"  # Claude Code's way to hand it a tool's output
    assert 'removed "node_modules"\n(412 MB freed)' in decision["message"]
    signed.assert_signed()
    w.close()


def test_claude_codes_offered_always_answer_opens_the_rules_form_filled_in(
    qtbot, signed: Signed, window_store: Store, tmp_path: Path
) -> None:
    task = signed.task("cc-offer", "claude-code://tools/")
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    w = open_window(qtbot, window_store, task)
    d = _dialog(qtbot, w, task, asked["id"])

    # The call's arguments are its content: shown as that JSON, not as an unreadable upload.
    assert isinstance(d.decision.change, Opaque)
    assert json.loads(d.decision.change.payload_json) == ASKED_PR["tool_input"]
    assert "whose arguments (this JSON) are the whole of it" in d.decision.change.why
    (offer,) = d.decision.offered
    assert offer.words == "allow Bash(rm -rf node_modules) [localSettings]"
    assert offer.fields == ("command",)
    panel = d.offered
    qtbot.waitUntil(panel.isVisible, timeout=WAIT_MS)
    assert "Claude Code offered" in panel.title.text()
    assert 'command is exactly "rm -rf node_modules"' in panel.lines[0].text()
    # Nothing picked: nothing to open. Return in the note decides nothing either.
    assert not panel.allow_button.isEnabled()
    armed(qtbot, d.reject_button)
    d.note.setFocus()
    qtbot.keyClick(d.note, Qt.Key.Key_Return)
    qtbot.keyClick(d, Qt.Key.Key_Return)
    choice = panel.choices[0]
    # On the radio's indicator (its text ends well before the row does).
    qtbot.mouseClick(choice, Qt.MouseButton.LeftButton, pos=QPoint(8, choice.height() // 2))
    assert choice.isChecked()
    assert panel.allow_button.isEnabled()
    assert not panel.allow_button.isDefault() and not panel.allow_button.autoDefault()
    qtbot.keyClick(panel.choices[0], Qt.Key.Key_Return)
    qtbot.wait(200)
    assert signed.pending(task) and getattr(d, "rules_dialog", None) is None

    qtbot.mouseClick(panel.allow_button, Qt.MouseButton.LeftButton)
    rules = d.rules_dialog
    qtbot.addWidget(rules)
    qtbot.waitUntil(lambda: rules.draft is not None, timeout=WAIT_MS)
    form = rules.form
    assert form.payload.text() == '{"command": "rm -rf node_modules"}'
    assert form.scope.currentData() == "task" and form.verdict.currentData() == "approved"
    assert form.tool.text() == "Bash"
    assert signed.pending(task)  # opened, filled in: still nobody decided

    qtbot.mouseClick(rules.grant_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not rules.running and bool(rules.rules), timeout=WAIT_MS)
    assert rules.last_error is None
    (rule,) = rules.rules
    assert rule.origin.startswith("Claude Code's suggestion: allow Bash(rm -rf node_modules)")
    assert hook.answer() == (0, permission_request({"behavior": "allow"}), "")
    signed.assert_signed()
    rules.close()
    d.close()
    w.close()
