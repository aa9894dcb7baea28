"""Codex CLI's PermissionRequest hook answered from Boris (`boris hook permission-request
--for codex`, store.adapters.claude_code_permission with `claude_code.CODEX`).

The real `boris hook` fed Codex's documented PermissionRequest input on stdin
(tests/fixtures/claude_code/codex_permission_request.json, see SOURCE.md there), on the
store `boris init` makes; a person decides with the real `boris approve` / `stop`. Every
answer on stdout is validated against the JSON Schema Codex reads it with (its generated
`permission-request.command.output.schema.json`, copied verbatim), and never carries
`updatedInput` or `updatedPermissions`, which that schema says fail closed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator  # type: ignore[import-untyped]
from signed_default import PERSON, Signed, signed_default_store
from test_claude_code_permission_hooks import FIXTURES, Hook, effect, waiting

from store.canonical import digest_of

AGENT = "agent:codex"
ASKED = json.loads((FIXTURES / "codex_permission_request.json").read_text(encoding="utf-8"))
SCHEMA = json.loads(
    (FIXTURES / "codex_permission_request.output.schema.json").read_text(encoding="utf-8")
)


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("codex") / "home", AGENT)


def codex_reads(said: dict[str, Any] | None) -> dict[str, Any]:
    """The decision as Codex reads it, after checking the answer against Codex's schema."""
    assert said is not None
    Draft7Validator(SCHEMA).validate(said)
    decision = said["hookSpecificOutput"]["decision"]
    assert said["hookSpecificOutput"]["hookEventName"] == "PermissionRequest"
    assert not {"updatedInput", "updatedPermissions"} & set(decision)  # fail closed in Codex
    return dict(decision)


def test_codex_asks_a_person_in_boris_and_reads_the_decision(
    signed: Signed, tmp_path: Path
) -> None:
    task = signed.task("codex-task", "codex://tools/")

    # Approved: allow; the call recorded as Codex's, the attempt binding its input.
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED, "--for", "codex")
    asked = waiting(signed, task, hook)
    assert asked["consequence"] == "Codex runs Bash: rm -f /tmp/example"
    assert asked["policy"] == "Codex asks before this tool runs"
    signed.ok("--actor", PERSON, "approve", task, asked["id"])
    code, said, _ = hook.answer()
    assert code == 0 and codex_reads(said) == {"behavior": "allow"}
    ran = effect(signed, task, asked["effect_id"])
    assert ran["target"] == "codex://tools/Bash"
    (attempt,) = ran["attempts"]
    assert attempt["executor"] == "codex:Bash"
    assert attempt["inputs"]["prepared_digest"] == digest_of(ASKED["tool_input"])

    # Approved only with an edit: Codex's answer cannot carry it, so the call is not run;
    # Codex is told no with the person's command, to ask again with exactly it.
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED, "--for", "codex")
    asked = waiting(signed, task, hook)
    edited = {"command": "rm -f /tmp/example.log"}
    signed.ok("--actor", PERSON, "approve", task, asked["id"], "--edited-json", json.dumps(edited))
    code, said, _ = hook.answer()
    decision = codex_reads(said)
    assert (code, decision["behavior"]) == (0, "deny")
    assert '{"command":"rm -f /tmp/example.log"}' in decision["message"]
    assert "Codex cannot run an edited call" in decision["message"]
    not_run = effect(signed, task, asked["effect_id"])
    assert not_run["stage"] == "cancelled" and not_run["attempts"] == []

    # The run stopped in Boris: deny with interrupt, as Codex's schema offers it.
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED, "--for", "codex")
    waiting(signed, task, hook)
    signed.ok("--actor", PERSON, "stop", task, "--reason", "wrong repository")
    code, said, _ = hook.answer()
    decision = codex_reads(said)
    assert (code, decision["behavior"], decision["interrupt"]) == (0, "deny", True)
    signed.assert_signed()


def test_codex_is_answered_only_at_its_permission_request(signed: Signed) -> None:
    task = signed.task("codex-only", "codex://tools/")
    done = signed.boris(
        "hook", "pre-tool-use", "--for", "codex", "--task", task, agent=True,
        stdin=json.dumps(dict(ASKED, hook_event_name="PreToolUse")).encode(),
    )  # fmt: skip
    assert done.returncode == 1
    assert "--for codex answers permission-request only" in done.stderr.decode()
    assert signed.effects(task) == []
