"""Claude Code's hooks and its own "always" answers (issue 42's Done-when, audited): a rule a
person picks from a PermissionRequest's `permission_suggestions` decides the next matching
PermissionRequest and PreToolUse (recorded as the rule's: `approval.ruled` naming it), never a
call whose policy a person reserved, and nothing after its expiry on the database clock.
tests/test_fw42_claude_rules.py proves revocation for the hooks (and all three for the Agent
SDK's suggestions); here the expiry and the reservation for the hooks, and `boris verify`
judging the rule's earlier decisions by the reservation as it was when they were made.

The real `boris hook permission-request` / `pre-tool-use --decide` fed Claude Code's
documented input (tests/fixtures/claude_code/), on the store `boris init` makes (signed; the
agent's key as BORIS_KEY); rita picks the offered line with the real `boris rules add`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from signed_default import PERSON, Signed, signed_default_store
from test_claude_code_permission_hooks import ASKED_PR, ASKED_PRE, Hook, permission_request, waiting
from test_fw42_claude_rules import AGENT, pick, suggestion

from store.adapters.claude_code import POLICY

NPM_TEST = {"command": "npm test", "description": "Run the tests"}


@pytest.fixture
def signed(tmp_path: Path) -> Signed:
    return signed_default_store(tmp_path / "home", AGENT)


def ruled(signed: Signed, task: str) -> dict[str, str]:
    """approval id -> the rule the record says decided it."""
    return {
        e["payload"]["approval_id"]: e["payload"]["rule_id"]
        for e in signed.read("events", task)
        if e["type"] == "approval.ruled"
    }


def denied_unasked(signed: Signed, tmp: Path, task: str, asked: dict[str, Any]) -> None:
    """A PermissionRequest nobody decides within a second: denied, saying so (no rule)."""
    code, out, _ = Hook(signed, tmp, task, "permission-request", asked, "--wait", "1").answer()
    decision = out["hookSpecificOutput"]["decision"] if out else {}
    assert (code, decision["behavior"]) == (0, "deny")
    assert "nobody decided this Bash call in Boris" in decision["message"]


def test_a_picked_suggestion_never_decides_a_reserved_policy_and_verify_keeps_its_past(
    signed: Signed, tmp_path: Path
) -> None:
    task = signed.task("i42-hook-reserved", "claude-code://tools/")
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    rule = pick(signed, task, asked["id"], "allow Bash(rm -rf node_modules) [localSettings]")
    assert hook.answer() == (0, permission_request({"behavior": "allow"}), "")

    # The next PreToolUse like it: allowed by the rule at once, recorded as the rule's.
    pre = dict(ASKED_PRE, tool_input=ASKED_PR["tool_input"], tool_use_id="toolu_i42_1")
    code, out, _ = Hook(signed, tmp_path, task, "pre-tool-use", pre, "--decide").answer()
    specific = out["hookSpecificOutput"] if out else {}
    assert (code, specific["permissionDecision"]) == (0, "allow")
    assert f"by standing rule {rule['id']}" in specific["permissionDecisionReason"]
    assert list(ruled(signed, task).values()) == [rule["id"]]

    # Reserved for a person: the same call is no longer the rule's; nobody deciding, denied.
    signed.ok("--actor", PERSON, "rules", "reserve", POLICY)
    denied_unasked(signed, tmp_path, task, ASKED_PR)
    assert list(ruled(signed, task).values()) == [rule["id"]]
    # Verify judges the rule's earlier decision by the reservation as it was then (none).
    signed.assert_signed()
    signed.ok("--actor", PERSON, "rules", "reserve", POLICY, "--off")

    # Lifted: the rule decides again.
    code, out, _ = Hook(signed, tmp_path, task, "permission-request", ASKED_PR).answer()
    assert (code, out) == (0, permission_request({"behavior": "allow"}))
    assert list(ruled(signed, task).values()) == [rule["id"], rule["id"]]
    signed.assert_signed()


def test_a_picked_suggestion_decides_nothing_after_its_expiry(
    signed: Signed, tmp_path: Path
) -> None:
    task = signed.task("i42-hook-expiry", "claude-code://tools/")
    offered = dict(ASKED_PR, tool_input=NPM_TEST, permission_suggestions=[suggestion("npm test")])
    hook = Hook(signed, tmp_path, task, "permission-request", offered)
    asked = waiting(signed, task, hook)
    rule = pick(
        signed, task, asked["id"], "allow Bash(npm test) [localSettings]", "--expires-in", "4s"
    )
    granted = time.monotonic()
    assert hook.answer() == (0, permission_request({"behavior": "allow"}), "")

    # While it stands: the next PermissionRequest like it is the rule's.
    code, out, _ = Hook(signed, tmp_path, task, "permission-request", offered).answer()
    assert time.monotonic() - granted < 4, "the machine was too slow to see the rule decide"
    assert (code, out) == (0, permission_request({"behavior": "allow"}))
    assert list(ruled(signed, task).values()) == [rule["id"]]

    # Past its expiry (database clock): a person is asked again; nobody: denied.
    time.sleep(max(0.0, 4.3 - (time.monotonic() - granted)))
    denied_unasked(signed, tmp_path, task, offered)
    pre = dict(ASKED_PRE, tool_input=NPM_TEST, tool_use_id="toolu_i42_2")
    code, out, _ = Hook(
        signed, tmp_path, task, "pre-tool-use", pre, "--decide", "--wait", "1"
    ).answer()
    assert out is not None and out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert list(ruled(signed, task).values()) == [rule["id"]]
    (listed,) = [r for r in signed.read("rules", "list")["rules"] if r["id"] == rule["id"]]
    assert (listed["standing"], listed["decided"]) == ("expired", 1)
    signed.assert_signed()
