"""Answer as the tool (issue 42) for Claude: a person's `boris respond` reaches Claude as the
tool's result, the call never run.

Claude Code documents one way to give Claude a text for a call it does not run: a deny whose
message Claude reads (PermissionRequest's `decision.message`, PreToolUse's
`permissionDecisionReason` "shown to Claude", the Agent SDK's `PermissionResultDeny.message`,
the permission-prompt tool's `message`). So a Claude Code call's request accepts a text result
(the effect declares `result_schema` {"type": "string"}), and the answer is a deny carrying
the person's result, with no `interrupt` (Claude goes on with it).

On the store `boris init` makes (signed; BORIS_KEY the agent's): the Agent SDK's public client
over the scripted CLI (tests/fw42_scripted_cli.py), `boris hook permission-request` and
`pre-tool-use --decide` fed the documented JSON, and `boris mcp`'s permission prompt through
the official MCP client; rita answers from her own shell with the real `boris respond`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from fw42_scripted_cli import Call, ScriptedCli, client_for, run_turn
from signed_default import PERSON, Signed, signed_default_store
from test_claude_code_adapter import prompt
from test_claude_code_permission_hooks import ASKED_PR, ASKED_PRE, Hook, waiting
from test_fw42_claude_batch import all_pending
from test_fw42_mcp_answers import boris_mcp

from store import db
from store.adapters.claude_agent_sdk import boris_can_use_tool
from store.adapters.claude_code import TOOL_RESULT_SCHEMA
from store.reads.decision_views import ApprovalDecision, ApprovalVerdict, approval_decision
from store.store import Store

AGENT = "agent:claude"
OUTPUT = "3 passed, 0 failed (read off the CI run by rita)"


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("fw42-respond") / "home", AGENT)


def respond(signed: Signed, task: str, approval_id: str, result: Any) -> None:
    signed.ok(
        "--actor", PERSON, "respond", task, approval_id, "--result-json", json.dumps(result),
    )  # fmt: skip


def decision_view(store: Store, task: str, approval_id: str) -> ApprovalDecision:
    with store.read() as conn:
        now = db.database_now(conn)
        return approval_decision(conn, store.blobs, task, approval_id, now)


def assert_answered_not_run(signed: Signed, task: str, message: str) -> None:
    assert "rita answered this Bash call in Boris in the tool's place; it was not run" in message
    assert message.endswith("The Bash tool's result:\n" + OUTPUT)
    (effect,) = signed.effects(task)
    assert effect["stage"] == "cancelled" and effect["attempts"] == []
    (approval,) = signed.read("approvals", task)
    assert approval["state"] == "answered"


def test_the_agent_sdk_hands_claude_the_persons_answer(
    signed: Signed, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = signed.task("fw42-sdk-respond", "claude-code://tools/")
    signed.use_here(monkeypatch)
    call = Call("toolu_r1", "Bash", {"command": "npm test", "description": "Run the tests"})
    cli = ScriptedCli([[call]])

    async def scenario(store: Store) -> None:
        callback = boris_can_use_tool(store, AGENT, task, timeout_seconds=120)
        async with client_for(callback, cli) as client, anyio.create_task_group() as tg:
            tg.start_soon(run_turn, client)
            (asked,) = await anyio.to_thread.run_sync(all_pending, signed, task, 1)
            # The decision view (the window's Approve dialog) offers the answer, with the text
            # schema the call's effect declares.
            view = await anyio.to_thread.run_sync(decision_view, store, task, asked["id"])
            assert ApprovalVerdict.RESPOND in view.verdicts
            assert json.loads(view.result_schema_json or "null") == TOOL_RESULT_SCHEMA
            # A result that is no text is refused by the schema; nothing is written.
            wrong = signed.boris(
                "--actor", PERSON, "respond", task, asked["id"], "--result-json", "{}"
            )
            assert wrong.returncode != 0 and not cli.turns[0].answers
            await anyio.to_thread.run_sync(respond, signed, task, asked["id"], OUTPUT)

    with Store.open() as store:
        anyio.run(scenario, store)
    answer = cli.turns[0].answers["toolu_r1"]
    assert set(answer) == {"behavior", "message"} and answer["behavior"] == "deny"
    assert_answered_not_run(signed, task, answer["message"])
    # What the model is given for the call: the person's result.
    result = cli.turns[0].results["toolu_r1"]
    assert result["content"] == answer["message"] and OUTPUT in result["content"]
    signed.assert_signed()


def test_claude_code_hooks_hand_claude_the_persons_answer(signed: Signed, tmp_path: Path) -> None:
    task = signed.task("fw42-hook-respond", "claude-code://tools/")
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    respond(signed, task, asked["id"], OUTPUT)
    code, out, err = hook.answer()
    assert (code, err) == (0, "") and out is not None
    decision = out["hookSpecificOutput"]["decision"]
    assert out["hookSpecificOutput"]["hookEventName"] == "PermissionRequest"
    assert set(decision) == {"behavior", "message"} and decision["behavior"] == "deny"
    assert_answered_not_run(signed, task, decision["message"])

    task = signed.task("fw42-pre-respond", "claude-code://tools/")
    pre = dict(ASKED_PRE, tool_use_id="toolu_r2")
    hook = Hook(signed, tmp_path, task, "pre-tool-use", pre, "--decide")
    asked = waiting(signed, task, hook)
    respond(signed, task, asked["id"], OUTPUT)
    code, out, err = hook.answer()
    assert (code, err) == (0, "") and out is not None
    specific = out["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"  # the reason is shown to Claude
    assert_answered_not_run(signed, task, specific["permissionDecisionReason"])
    assert "continue" not in out  # Claude goes on, with the answer
    signed.assert_signed()


def test_the_permission_prompt_hands_claude_the_persons_answer(signed: Signed) -> None:
    task = signed.task("fw42-mcp-prompt-respond", "claude-code://tools/")
    answer: dict[str, Any] = {}
    arguments = {"tool_name": "Bash", "input": {"command": "npm test"}, "tool_use_id": "toolu_r3"}

    async def scenario() -> None:
        async with boris_mcp(signed, "--task", task, "--permission-timeout", "120") as session:

            async def ask() -> None:
                answer.update(await prompt(session, arguments))

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                (asked,) = await anyio.to_thread.run_sync(all_pending, signed, task, 1)
                await anyio.to_thread.run_sync(respond, signed, task, asked["id"], OUTPUT)

    anyio.run(scenario)
    assert set(answer) == {"behavior", "message"} and answer["behavior"] == "deny"
    assert_answered_not_run(signed, task, answer["message"])
    signed.assert_signed()
