"""`boris mcp` and a person's fewer, better decisions (issue 42), through the official MCP
client over stdio, on the store `boris init` makes (signed; the agent's key as BORIS_KEY),
rita deciding from her own shell:

- five parallel permission prompts (Claude Code's `--permission-prompt-tool`) decided in one
  pass with `boris decide-batch`, 3 approved / 1 edited / 1 rejected: each call's one text
  content is the documented `{"behavior": "allow", "updatedInput"}` (the edit's object for
  the edited one) or `{"behavior": "deny", "message"}` with her note, per tool_use_id;
- an answer in the tool's place (`boris respond`): the agent's `wait_for_approval` call's
  result carries the person's result as the tool's (`answered.result`), checked against the
  tool's schema, and the call is never run; as an MCP task too, across a killed `boris mcp`
  (the person answers while no server runs; a new server's `tasks/result` carries it).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from signed_default import PERSON, ROOT, Signed, signed_default_store
from test_claude_code_adapter import prompt
from test_fw42_claude_batch import COMMANDS, EDITED, NOTE, all_pending, calls, decide_batch
from test_mcp_task_restart import _result, _server_pids
from test_mcp_tasks import get_task

from store.canonical import digest_of

AGENT = "agent:claude"
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"temperature_c": {"type": "number"}, "sky": {"type": "string"}},
    "required": ["temperature_c"],
}


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("fw42-mcp") / "home", AGENT)


@asynccontextmanager
async def boris_mcp(signed: Signed, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", *args],
        env=signed.env(agent=True),
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def test_five_parallel_permission_prompts_decided_in_one_batch(signed: Signed) -> None:
    task = signed.task("fw42-mcp-batch", "claude-code://tools/")
    answers: dict[str, dict[str, Any]] = {}

    async def scenario() -> None:
        async with (
            boris_mcp(signed, "--task", task, "--permission-timeout", "120") as session,
            anyio.create_task_group() as tg,
        ):
            for call in calls():

                async def ask(call: Any = call) -> None:
                    answers[call.tool_use_id] = await prompt(
                        session,
                        {
                            "tool_name": call.tool_name,
                            "input": call.tool_input,
                            "tool_use_id": call.tool_use_id,
                        },
                    )

                tg.start_soon(ask)
            waiting = await anyio.to_thread.run_sync(all_pending, signed, task, 5)
            assert not answers
            await anyio.to_thread.run_sync(decide_batch, signed, task, waiting)

    anyio.run(scenario)
    assert sorted(answers) == sorted(c.tool_use_id for c in calls())
    for call in calls():
        answer = answers[call.tool_use_id]
        command = call.tool_input["command"]
        if command == COMMANDS[-1]:
            assert answer["behavior"] == "deny" and set(answer) == {"behavior", "message"}
            assert NOTE in answer["message"]
        else:
            expected = EDITED if command == "rm -rf dist" else call.tool_input
            assert answer == {"behavior": "allow", "updatedInput": expected}
    signed.assert_signed()


async def ask_weather(session: ClientSession, task: str) -> str:
    """The agent asks, over MCP, for a weather lookup a person may answer themselves."""
    planned = await session.call_tool(
        "plan_effect",
        {
            "task_id": task,
            "kind": "other",
            "target": "https://weather.example/oslo",
            "consequence": "the agent asks the weather service for Oslo",
            "prepared": {"city": "Oslo", "result_schema": WEATHER_SCHEMA},
            "intended": {"exists": True, "digest": "sha256:" + "0" * 64},
            "requires_approval": True,
            "policy": "weather lookups",
        },
    )
    assert planned.is_error is False, planned.content
    effect_id = planned.structured_content["result"]  # type: ignore[index]
    requested = await session.call_tool(
        "request_approval", {"task_id": task, "effect_id": effect_id, "policy": "weather lookups"}
    )
    assert requested.is_error is False, requested.content
    return str(requested.structured_content["result"])  # type: ignore[index]


def test_an_answer_in_the_tools_place_is_the_wait_calls_result(signed: Signed) -> None:
    task = signed.task("fw42-mcp-respond", "https://weather.example/")
    given = {"temperature_c": 4, "sky": "grey"}
    waited: dict[str, Any] = {}

    async def scenario() -> None:
        async with boris_mcp(signed, "--actor", AGENT) as session:
            approval_id = await ask_weather(session, task)

            async def wait() -> None:
                result = await session.call_tool(
                    "wait_for_approval",
                    {"task_id": task, "approval_id": approval_id, "timeout_seconds": 120},
                )
                waited["result"] = result

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                # A result that does not fit the tool's schema is refused; nothing is written.
                done = await anyio.to_thread.run_sync(
                    lambda: signed.boris(
                        "--actor", PERSON, "respond", task, approval_id,
                        "--result-json", '{"sky": "grey"}',
                    )
                )  # fmt: skip
                assert done.returncode != 0 and not waited
                await anyio.to_thread.run_sync(
                    lambda: signed.ok(
                        "--actor", PERSON, "respond", task, approval_id,
                        "--result-json", json.dumps(given), "--note", "read off the station",
                    )
                )  # fmt: skip

    anyio.run(scenario)
    result = waited["result"]
    assert result.is_error is False
    answer = result.structured_content["result"]
    assert answer["state"] == "answered" and answer["decided"] is True
    assert answer["payload"] is None  # nothing approved to run
    answered = answer["answered"]
    assert answered["result"] == given
    assert answered["result_digest"] == digest_of(given)
    assert answered["answered_by"]["id"] == "rita" and answered["answered_by"]["kind"] == "person"
    assert answered["note"] == "read off the station" and answered["schema_checked"] is True
    # The text content Claude reads says the same.
    assert json.loads(result.content[0].text)["result"]["answered"]["result"] == given
    (effect,) = signed.effects(task)
    assert effect["stage"] == "cancelled" and effect["attempts"] == []
    signed.assert_signed()


def test_an_answer_given_while_no_server_runs_is_the_tasks_result(signed: Signed) -> None:
    task = signed.task("fw42-mcp-respond-task", "https://weather.example/")
    given = {"temperature_c": -2}

    async def scenario() -> tuple[str, types.CallToolResult]:
        before = _server_pids()
        async with boris_mcp(signed, "--actor", AGENT) as session:
            approval_id = await ask_weather(session, task)
            created = await session._dispatcher.send_raw_request(
                "tools/call",
                {
                    "name": "wait_for_approval",
                    "arguments": {
                        "task_id": task, "approval_id": approval_id, "timeout_seconds": 120,
                    },
                    "task": {"ttl": 600000},
                },
            )  # fmt: skip
            mcp_task = types.CreateTaskResult.model_validate(created, by_name=False).task
            (server,) = _server_pids() - before
            os.kill(server, signal.SIGKILL)  # killed: nothing of it runs on
            with anyio.fail_after(30):
                while server in _server_pids():
                    await anyio.sleep(0.1)
            with suppress(Exception):
                await session.send_ping()
        await anyio.to_thread.run_sync(
            lambda: signed.ok(
                "--actor", PERSON, "respond", task, approval_id, "--result-json", json.dumps(given)
            )
        )
        async with boris_mcp(signed, "--actor", AGENT) as session:
            for _ in range(200):
                got = await get_task(session, mcp_task.task_id)
                if got.status == "completed":
                    break
                await anyio.sleep(0.1)
            assert got.status == "completed", got
            return approval_id, await _result(session, mcp_task.task_id)

    approval_id, result = anyio.run(scenario)
    assert result.is_error is not True
    answer = result.structured_content["result"]  # type: ignore[index]
    assert (answer["approval_id"], answer["state"]) == (approval_id, "answered")
    assert answer["answered"]["result"] == given
    assert answer["answered"]["answered_by"]["id"] == "rita"
    (effect,) = signed.effects(task)
    assert effect["stage"] == "cancelled" and effect["attempts"] == []
    signed.assert_signed()
