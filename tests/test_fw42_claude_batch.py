"""Five parallel calls decided in one pass (issue 42): 3 approved, 1 edited, 1 rejected with
`boris decide-batch`, each reaching Claude in its documented shape, per call id.

On the store `boris init` makes (signed; the agent's key as BORIS_KEY), rita deciding from
her own shell with the real `boris decide-batch -`:

- the Claude Agent SDK's public client (`ClaudeSDKClient`, its `can_use_tool` the Boris
  callback) over a scripted stand-in for the `claude` CLI (tests/fw42_scripted_cli.py): the
  CLI reads `{"behavior": "allow", "updatedInput": …}` per request (the edit's object for the
  edited one) and `{"behavior": "deny", "message": …}` with rita's note for the rejected one;
- Claude Code's hooks: five `boris hook pre-tool-use --decide` processes fed the documented
  PreToolUse JSON (tests/fixtures/claude_code/), each with its own tool_use_id: `allow` (with
  `updatedInput` only for the edit) or `deny` with the reason Claude reads.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from fw42_scripted_cli import Call, ScriptedCli, client_for, run_turn
from signed_default import PERSON, Signed, signed_default_store
from test_claude_code_permission_hooks import ASKED_PRE, Hook

from store.adapters.claude_agent_sdk import boris_can_use_tool
from store.canonical import digest_of
from store.store import Store

AGENT = "agent:claude"
COMMANDS = ["npm test", "npm run lint", "npm run build", "rm -rf dist", "git push --force"]
EDITED = {"command": "rm -rf dist/cache", "description": "only the cache"}
NOTE = "never force-push from an agent"


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("fw42-batch") / "home", AGENT)


def calls() -> list[Call]:
    return [
        Call(f"toolu_b{i}", "Bash", {"command": c, "description": f"step {i}"})
        for i, c in enumerate(COMMANDS)
    ]


def all_pending(signed: Signed, task: str, n: int) -> list[dict[str, Any]]:
    for _ in range(600):
        waiting = signed.pending(task)
        if len(waiting) == n:
            return waiting
        time.sleep(0.1)
    raise AssertionError(f"{len(signed.pending(task))} of {n} calls waiting")


def decide_batch(signed: Signed, task: str, waiting: list[dict[str, Any]]) -> dict[str, Any]:
    """Rita's one pass, from the pre-flight digests: 3 approved, the 4th approved as she
    edited it, the 5th rejected with a note."""
    by_command = {a["payload"]["command"]: a for a in waiting}
    lines = []
    for command in COMMANDS:
        a = by_command[command]
        item: dict[str, Any] = {
            "task_id": task,
            "approval_id": a["id"],
            "verdict": "approve",
            "based_on": a["payload_digest"],
        }
        if command == "rm -rf dist":
            item["edited"] = EDITED
        if command == "git push --force":
            item |= {"verdict": "reject", "note": NOTE}
        lines.append(json.dumps(item))
    done = signed.boris(
        "--actor", PERSON, "decide-batch", "-", "--json", stdin="\n".join(lines).encode()
    )
    assert done.returncode == 0, done.stderr.decode()
    answer = json.loads(done.stdout)
    assert (answer["recorded"], answer["refused"]) == (5, 0), answer
    assert [r["recorded"] for r in answer["result"]["results"]] == [True] * 5
    return dict(answer)


def assert_recorded(signed: Signed, task: str, ran: dict[str, dict[str, Any]]) -> None:
    """Four effects dispatched, each attempt binding exactly what runs; the rejected one
    cancelled, never attempted."""
    effects = {e["intent"]["prepared"]["command"]: e for e in signed.effects(task)}
    for command in COMMANDS:
        effect = effects.get(command) or effects[ran[command]["command"]]
        if command == "git push --force":
            assert effect["stage"] == "cancelled" and effect["attempts"] == []
            continue
        (attempt,) = effect["attempts"]
        assert attempt["inputs"]["prepared_digest"] == digest_of(ran[command])


def test_agent_sdk_gets_each_of_five_parallel_calls_in_its_documented_shape(
    signed: Signed, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = signed.task("fw42-sdk-batch", "claude-code://tools/")
    signed.use_here(monkeypatch)
    cli = ScriptedCli([calls()])

    async def scenario(store: Store) -> None:
        callback = boris_can_use_tool(store, AGENT, task, timeout_seconds=120)
        async with client_for(callback, cli) as client, anyio.create_task_group() as tg:
            tg.start_soon(run_turn, client)
            waiting = await anyio.to_thread.run_sync(all_pending, signed, task, 5)
            assert not cli.turns[0].answers  # the CLI waits on all five
            await anyio.to_thread.run_sync(decide_batch, signed, task, waiting)

    with Store.open() as store:
        anyio.run(scenario, store)
    turn = cli.turns[0]
    ran: dict[str, dict[str, Any]] = {}
    for call in calls():
        answer = turn.answers[call.tool_use_id]
        command = call.tool_input["command"]
        if command == "git push --force":
            assert set(answer) == {"behavior", "message"} and answer["behavior"] == "deny"
            assert "rita rejected this Bash call in Boris" in answer["message"]
            assert NOTE in answer["message"]
            assert turn.results[call.tool_use_id]["is_error"] is True
            continue
        expected = EDITED if command == "rm -rf dist" else call.tool_input
        assert answer == {"behavior": "allow", "updatedInput": expected}
        ran[command] = expected
    assert_recorded(signed, task, ran)
    signed.assert_signed()


def test_claude_code_hooks_get_each_of_five_parallel_calls_in_the_documented_shape(
    signed: Signed, tmp_path: Path
) -> None:
    task = signed.task("fw42-hooks-batch", "claude-code://tools/")
    hooks = {
        c.tool_use_id: Hook(
            signed,
            tmp_path,
            task,
            "pre-tool-use",
            dict(ASKED_PRE, tool_input=c.tool_input, tool_use_id=c.tool_use_id),
            "--decide",
            "--wait",
            "120",
        )
        for c in calls()
    }
    decide_batch(signed, task, all_pending(signed, task, 5))
    ran: dict[str, dict[str, Any]] = {}
    for call in calls():
        code, out, err = hooks[call.tool_use_id].answer()
        assert (code, err) == (0, "") and out is not None
        specific = out["hookSpecificOutput"]
        assert specific["hookEventName"] == "PreToolUse"
        command = call.tool_input["command"]
        if command == "git push --force":
            assert specific["permissionDecision"] == "deny"
            assert NOTE in specific["permissionDecisionReason"]
            assert "continue" not in out  # a rejection is no stop: Claude goes on
            continue
        assert specific["permissionDecision"] == "allow"
        if command == "rm -rf dist":
            assert specific["updatedInput"] == EDITED
            ran[command] = EDITED
        else:
            assert "updatedInput" not in specific  # as asked: the input not rewritten
            ran[command] = call.tool_input
    assert_recorded(signed, task, ran)
    signed.assert_signed()
