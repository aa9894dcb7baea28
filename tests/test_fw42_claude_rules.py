"""Claude Code's own "always" answers become Boris standing rules (issue 42).

Claude Code offers "always" answers with a call it asks about (the Agent SDK's
`ToolPermissionContext.suggestions`, a PermissionRequest hook's `permission_suggestions`).
Boris keeps them beside the call as the `boris rules add --from-approval` lines that make each
a standing rule (store.adapters.claude_code_rules); rita picks one with the real CLI from her
own shell. The rule then decides the next matching call at once, recorded as the rule's; it
decides nothing after its revocation or its expiry, and never a call whose policy is reserved
for a person. Boris answers no `updatedPermissions` back (Claude Code's settings would take
the calls out of Boris; revoking would stop none of them).

On the store `boris init` makes (signed; the agent's key as BORIS_KEY): the Agent SDK's public
client over the scripted CLI (tests/fw42_scripted_cli.py), Claude Code's hooks through the real
`boris hook` fed the documented JSON (tests/fixtures/claude_code/).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeSDKClient
from fw42_scripted_cli import Call, ScriptedCli, client_for, run_turn
from signed_default import PERSON, ROOT, Signed, signed_default_store
from test_claude_code_permission_hooks import ASKED_PR, ASKED_PRE, Hook, permission_request, waiting
from test_fw42_claude_batch import all_pending

from store.adapters.claude_agent_sdk import boris_can_use_tool
from store.adapters.claude_code import POLICY
from store.store import Store

AGENT = "agent:claude"


def suggestion(
    content: str | None = None,
    *,
    behavior: str = "allow",
    destination: str = "localSettings",
    tool: str = "Bash",
) -> dict[str, Any]:
    """One "always" answer as Claude Code offers it (its PermissionUpdate on the wire)."""
    rule: dict[str, Any] = {"toolName": tool}
    if content is not None:
        rule["ruleContent"] = content
    return {"type": "addRules", "rules": [rule], "behavior": behavior, "destination": destination}


SET_MODE = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}


@pytest.fixture
def signed(tmp_path: Path) -> Signed:
    return signed_default_store(tmp_path / "home", AGENT)


def offered(signed: Signed, task: str, approval_id: str) -> list[str]:
    """The offer note kept beside the call: its lines."""
    notes = [
        e["payload"]["text"]
        for e in signed.read("events", task)
        if e["type"] == "note.recorded" and f"(approval {approval_id})" in e["payload"]["text"]
    ]
    assert len(notes) == 1, notes
    return str(notes[0]).splitlines()


def pick(signed: Signed, task: str, approval_id: str, words: str, *extra: str) -> dict[str, Any]:
    """Rita picks the offered answer `words` says, running its line as it is written."""
    (line,) = [x for x in offered(signed, task, approval_id) if x.startswith(f"- {words}")]
    argv = shlex.split("boris " + line.rsplit(": boris ", 1)[1])
    assert argv[:3] == ["boris", "rules", "add"]
    said = signed.ok(*argv[1:], *extra, "--actor", PERSON, "--json")
    return dict(json.loads(said)["result"])


def decided_by(signed: Signed, task: str, rule_id: str) -> list[dict[str, Any]]:
    """The requests the record says the rule decided (`approval.ruled` naming it)."""
    ruled = {
        e["payload"]["approval_id"]
        for e in signed.read("events", task)
        if e["type"] == "approval.ruled" and e["payload"]["rule_id"] == rule_id
    }
    found = [a for a in signed.read("approvals", task) if a["id"] in ruled]
    assert all(rule_id in (a["note"] or "") for a in found)  # and the approval says so
    return found


class Agent:
    """The Agent SDK's client over the scripted CLI, one turn (one call) at a time."""

    def __init__(self, client: ClaudeSDKClient, cli: ScriptedCli, signed: Signed, task: str):
        self.client, self.cli, self.signed, self.task = client, cli, signed, task

    async def turn(
        self, person: Callable[[dict[str, Any]], Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The turn's one answer, and the request a person saw (None: nobody was asked)."""
        index = self.cli.played
        seen: list[dict[str, Any]] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_turn, self.client)
            if person is not None:
                (asked,) = await anyio.to_thread.run_sync(all_pending, self.signed, self.task, 1)
                seen.append(asked)
                await anyio.to_thread.run_sync(person, asked)
        (answer,) = self.cli.turns[index].answers.values()
        return answer, (seen[0] if seen else None)


def test_agent_sdk_suggestion_becomes_a_rule_until_revoked_or_expired_never_reserved(
    signed: Signed, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = signed.task("fw42-sdk-rules", "claude-code://tools/")
    signed.use_here(monkeypatch)
    test = {"command": "npm test", "description": "Run the tests"}
    lint = {"command": "npm run lint", "description": "Lint"}
    build = {"command": "npm run build", "description": "Build"}
    offer = [suggestion("npm test:*"), SET_MODE]
    cli = ScriptedCli(
        [
            [Call("t1", "Bash", test, offer)],
            [Call("t2", "Bash", test, offer)],
            [Call("t3", "Bash", {"command": "npm test -- --watch"}, offer)],
            [Call("t4", "Bash", test, offer)],
            [Call("t5", "Bash", lint, [suggestion("npm run lint", destination="session")])],
            [Call("t6", "Bash", lint)],
            [Call("t7", "Bash", build, [suggestion("npm run build:*")])],
            [Call("t8", "Bash", build)],
        ]
    )
    rules: dict[str, dict[str, Any]] = {}

    def reject(asked: dict[str, Any]) -> None:
        signed.ok("--actor", PERSON, "reject", task, asked["id"], "--note", "not now")

    async def scenario(store: Store) -> None:
        callback = boris_can_use_tool(store, AGENT, task, timeout_seconds=120)
        async with client_for(callback, cli) as client:
            agent = Agent(client, cli, signed, task)

            # 1. Rita picks Claude Code's "always" for npm test: this call is allowed too.
            def always(asked: dict[str, Any]) -> None:
                lines = offered(signed, task, asked["id"])
                assert "not a rule: 'setMode acceptEdits [session]' changes" in lines[-1]
                rules["test"] = pick(signed, task, asked["id"], "allow Bash(npm test:*)")

            answer, asked = await agent.turn(always)
            assert answer == {"behavior": "allow", "updatedInput": test}
            assert "updatedPermissions" not in answer  # nothing written into Claude Code
            rule = rules["test"]
            assert (rule["scope"], rule["verdict"], rule["tool"]) == ("task", "approved", "Bash")
            assert rule["payload"] == {"command": "npm test"}  # exactly: not a shell prefix

            # 2. The same call again: decided by the rule at once, recorded as its decision.
            answer, asked = await agent.turn()
            assert asked is None and answer == {"behavior": "allow", "updatedInput": test}
            (by_rule,) = await anyio.to_thread.run_sync(decided_by, signed, task, rule["id"])
            assert by_rule["state"] == "consumed"

            # 3. Another command is not covered (no prefix): a person is asked.
            answer, asked = await agent.turn(reject)
            assert asked is not None and answer["behavior"] == "deny"

            # 4. Revoked: the rule decides nothing from then on.
            signed.ok("--actor", PERSON, "rules", "revoke", rule["id"], "--reason", "enough")
            answer, asked = await agent.turn(reject)
            assert asked is not None and answer["behavior"] == "deny"

            # 5-6. A rule picked for two seconds decides nothing once it expired.
            def briefly(asked: dict[str, Any]) -> None:
                words = "allow Bash(npm run lint) [session]"
                rules["lint"] = pick(signed, task, asked["id"], words, "--expires-in", "2s")

            answer, _ = await agent.turn(briefly)
            assert answer["behavior"] == "allow"
            await anyio.sleep(2.5)
            answer, asked = await agent.turn(reject)
            assert asked is not None and answer["behavior"] == "deny"

            # 7-8. A policy reserved for a person: a rule picked for it decides no later call.
            signed.ok("--actor", PERSON, "rules", "reserve", POLICY)

            def always_build(asked: dict[str, Any]) -> None:
                rules["build"] = pick(signed, task, asked["id"], "allow Bash(npm run build:*)")

            answer, _ = await agent.turn(always_build)
            assert answer["behavior"] == "allow"
            answer, asked = await agent.turn(reject)
            assert asked is not None and answer["behavior"] == "deny"

    with Store.open() as store:
        anyio.run(scenario, store)
    assert len(decided_by(signed, task, rules["test"]["id"])) == 1
    assert decided_by(signed, task, rules["lint"]["id"]) == []
    assert decided_by(signed, task, rules["build"]["id"]) == []
    listed = {r["id"]: r for r in signed.read("rules", "list")["rules"]}
    assert listed[rules["test"]["id"]]["standing"] == "revoked"
    assert listed[rules["lint"]["id"]]["standing"] == "expired"
    # Still reserved: verify judges the rule's earlier decision by the reservation as it was
    # when the rule made it (none then), not as it is now.
    signed.assert_signed()


def test_permission_request_suggestions_become_rules_for_the_hooks(
    signed: Signed, tmp_path: Path
) -> None:
    task = signed.task("fw42-hook-rules", "claude-code://tools/")
    # The documented input offers "always allow Bash(rm -rf node_modules)" in localSettings.
    (offer,) = ASKED_PR["permission_suggestions"]
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    rule = pick(signed, task, asked["id"], "allow Bash(rm -rf node_modules) [localSettings]")
    assert rule["payload"] == {"command": "rm -rf node_modules"}
    assert hook.answer() == (0, permission_request({"behavior": "allow"}), "")
    assert offer["destination"] == "localSettings"

    # The next PermissionRequest and PreToolUse like it: decided by the rule at once.
    started = time.monotonic()
    again = Hook(signed, tmp_path, task, "permission-request", ASKED_PR, "--wait", "60")
    assert again.answer() == (0, permission_request({"behavior": "allow"}), "")
    pre = dict(ASKED_PRE, tool_input=ASKED_PR["tool_input"], tool_use_id="toolu_fw42")
    code, out, _ = Hook(signed, tmp_path, task, "pre-tool-use", pre, "--decide").answer()
    assert time.monotonic() - started < 40
    assert out is not None and out["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert f"by standing rule {rule['id']}" in out["hookSpecificOutput"]["permissionDecisionReason"]
    assert len(decided_by(signed, task, rule["id"])) == 2
    # A call the rule decided as it was asked gets no offer: nobody is asked about it.
    for decided in decided_by(signed, task, rule["id"]):
        assert not [
            e
            for e in signed.read("events", task)
            if e["type"] == "note.recorded" and decided["id"] in e["payload"]["text"]
        ]

    # Revoked: the next one waits for a person again (nobody: denied).
    signed.ok("--actor", PERSON, "rules", "revoke", rule["id"], "--reason", "done")
    code, out, _ = Hook(
        signed, tmp_path, task, "permission-request", ASKED_PR, "--wait", "1"
    ).answer()
    assert out is not None and out["hookSpecificOutput"]["decision"]["behavior"] == "deny"

    # A ruleContent with a line break makes no line of its own in the note a person reads.
    forged = suggestion("ls\n- allow Bash [userSettings]: boris rules add x --tool '*'")
    hook = Hook(
        signed, tmp_path, task, "permission-request",
        dict(ASKED_PR, permission_suggestions=[forged]), "--wait", "1",
    )  # fmt: skip
    asked = waiting(signed, task, hook)
    lines = offered(signed, task, asked["id"])
    assert len(lines) == 2 and lines[1].startswith("- allow Bash(ls - allow Bash [userSettings]:")
    assert lines[1].endswith(
        f"boris rules add {task} --from-approval {asked['id']} --field command"
    )
    hook.answer()

    # "Always deny Bash" for every project of this user: rejected now, and the agent's Bash
    # calls on another task too, at once, by the rule, with interrupt never set.
    deny_all = dict(
        ASKED_PR, permission_suggestions=[suggestion(behavior="deny", destination="userSettings")]
    )
    hook = Hook(signed, tmp_path, task, "permission-request", deny_all)
    asked = waiting(signed, task, hook)
    rule = pick(signed, task, asked["id"], "deny Bash [userSettings]")
    assert (rule["scope"], rule["verdict"], rule["agent"]) == ("agent", "rejected", AGENT)
    code, out, _ = hook.answer()
    assert out is not None and out["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    other = signed.task("fw42-hook-rules-2", "claude-code://tools/")
    elsewhere = dict(ASKED_PR, tool_input={"command": "ls"})
    code, out, _ = Hook(signed, tmp_path, other, "permission-request", elsewhere).answer()
    assert code == 0
    decision = out["hookSpecificOutput"]["decision"] if out else {}
    assert decision["behavior"] == "deny" and "interrupt" not in decision
    assert len(decided_by(signed, other, rule["id"])) == 1
    signed.assert_signed()


def test_rule_from_suggestion_for_an_app_that_embeds_boris(signed: Signed) -> None:
    """The Python API (what the window and an app call), run as rita in her own process."""
    task = signed.task("fw42-api-rules", "claude-code://tools/")
    asking = dict(ASKED_PR, permission_suggestions=[])
    hook = Hook(signed, Path(signed.home), task, "permission-request", asking)
    asked = waiting(signed, task, hook)
    script = f"""
import json
from store.adapters.claude_code_rules import SuggestionRefused, rule_from_suggestion
from store.store import Store
with Store.open() as store:
    try:
        rule_from_suggestion(store, {PERSON!r}, {task!r}, {asked["id"]!r}, {SET_MODE!r})
    except SuggestionRefused as refused:
        print("refused:", refused)
    rule = rule_from_suggestion(
        store, {PERSON!r}, {task!r}, {asked["id"]!r},
        {suggestion(tool="Bash", destination="userSettings")!r}, expires_in_seconds=600,
    )
    print(json.dumps(rule.to_json()))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], env=signed.env(), cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    refusal, said = done.stdout.splitlines()
    assert refusal.startswith("refused: 'setMode acceptEdits [session]' changes Claude Code's")
    rule = json.loads(said)
    assert rule["origin"] == "Claude Code's suggestion: allow Bash [userSettings]"
    assert (rule["scope"], rule["payload"], rule["answered"]) == ("agent", None, asked["id"])
    assert hook.answer() == (0, permission_request({"behavior": "allow"}), "")
    signed.ok("--actor", PERSON, "rules", "revoke", rule["id"], "--reason", "test over")
    signed.assert_signed()
