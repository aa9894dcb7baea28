"""Claude Code's interactive prompts and a person's standing rule (issue 42): "always" answered
in Boris to a call a hook asked about decides the next calls like it, recorded as the rule's,
until the person revokes it.

The real `boris hook permission-request` / `pre-tool-use --decide` fed the documented input
(tests/fixtures/claude_code/), on the store `boris init` makes; the person answers with the
real `boris rules add --from-approval` and `boris rules revoke`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from signed_default import PERSON, Signed, signed_default_store
from test_claude_code_permission_hooks import ASKED_PR, ASKED_PRE, Hook, permission_request, waiting

AGENT = "agent:claude"


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("cc-rules") / "home", AGENT)


def test_always_in_boris_decides_the_next_calls_like_it_until_revoked(
    signed: Signed, tmp_path: Path
) -> None:
    task = signed.task("cc-always", "claude-code://tools/")

    # The first call waits; the person answers "always, for this command".
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    said = signed.ok(
        "--actor", PERSON, "rules", "add", task, "--from-approval", asked["id"],
        "--field", "command", "--json",
    )  # fmt: skip
    rule = json.loads(said)["result"]
    assert hook.answer() == (0, permission_request({"behavior": "allow"}), "")

    # The same call again: decided by the rule at once, no person asked, recorded as the
    # rule's decision (the approval's note names it), and the attempt binds the input.
    started = time.monotonic()
    again = Hook(signed, tmp_path, task, "permission-request", ASKED_PR, "--wait", "30")
    assert again.answer() == (0, permission_request({"behavior": "allow"}), "")
    assert time.monotonic() - started < 20
    ruled = [a for a in signed.read("approvals", task) if rule["id"] in (a["note"] or "")]
    assert len(ruled) == 1 and ruled[0]["state"] == "consumed"

    # PreToolUse --decide says whose decision it was, for the user.
    pre = dict(ASKED_PRE, tool_input=ASKED_PR["tool_input"], tool_use_id="toolu_rule")
    code, out, _ = Hook(signed, tmp_path, task, "pre-tool-use", pre, "--decide").answer()
    assert code == 0 and out is not None
    specific = out["hookSpecificOutput"]
    assert specific["permissionDecision"] == "allow"
    assert f"by standing rule {rule['id']}" in specific["permissionDecisionReason"]

    # Another command is not covered: it waits for a person (nobody: denied).
    other = dict(ASKED_PR, tool_input={"command": "rm -rf dist", "description": "Clean"})
    code, out, _ = Hook(signed, tmp_path, task, "permission-request", other, "--wait", "1").answer()
    assert out is not None and out["hookSpecificOutput"]["decision"]["behavior"] == "deny"

    # Revoked: the rule decides nothing from then on; the call waits for a person again.
    signed.ok("--actor", PERSON, "rules", "revoke", rule["id"], "--reason", "enough")
    code, out, _ = Hook(
        signed, tmp_path, task, "permission-request", ASKED_PR, "--wait", "1"
    ).answer()
    decision = out["hookSpecificOutput"]["decision"] if out else {}
    assert (code, decision["behavior"]) == (0, "deny")
    assert "nobody decided" in decision["message"]
    signed.assert_signed()
