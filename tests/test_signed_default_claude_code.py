"""Claude Code on the store `boris init` makes (signed by default): `boris mcp` and `boris hook`.

`boris mcp` is started as Claude Code starts it from .mcp.json, BORIS_KEY in its env, and its
permission prompt called through the official MCP client; the person approves with the real
`boris approve` in a process of their own (rita's own key, by itself). `boris hook` is fed
Claude Code's documented hook JSON (tests/fixtures/claude_code/) with `--key` and with
BORIS_KEY. Without a key each path says the refusal's one line: the prompt's deny message,
the hook's stderr line (exit 1, no traceback).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from signed_default import ROOT, Signed, one_line_refusal, signed_default_store
from test_claude_code_adapter import FIXTURES, prompt

from store.canonical import digest_of

AGENT = "agent:claude"
ASKED = {"command": "npm test", "description": "Run the tests"}


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("signed") / "home", AGENT)


@asynccontextmanager
async def boris_mcp(signed: Signed, task: str, *, key: bool) -> AsyncIterator[ClientSession]:
    """`boris mcp` as .mcp.json starts it: BORIS_ACTOR, and BORIS_KEY when `key`."""
    env = signed.env(agent=True)
    if not key:
        del env["BORIS_KEY"]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", "--task", task, "--permission-timeout", "60"],
        env=env,
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def test_the_permission_prompt_asks_and_a_person_allows_on_the_default_signed_store(
    signed: Signed,
) -> None:
    task = signed.task("cc-prompt", "claude-code://tools/")
    arguments = {"tool_name": "Bash", "input": ASKED, "tool_use_id": "toolu_p1"}
    answer: dict[str, Any] = {}

    async def scenario() -> None:
        async with boris_mcp(signed, task, key=True) as session:

            async def ask() -> None:
                answer.update(await prompt(session, arguments))

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                for _ in range(300):
                    waiting = await anyio.to_thread.run_sync(signed.pending, task)
                    if waiting:
                        break
                    await anyio.sleep(0.1)
                assert waiting and not answer  # Claude Code waits for the person
                await anyio.to_thread.run_sync(signed.approve, task, waiting[0]["id"])

    anyio.run(scenario)
    assert answer == {"behavior": "allow", "updatedInput": ASKED}
    (effect,) = signed.effects(task)
    assert effect["attempts"][0]["inputs"]["prepared_digest"] == digest_of(ASKED)
    signed.assert_signed()


def test_hooks_record_claude_codes_documented_json_with_key_or_boris_key(signed: Signed) -> None:
    task = signed.task("cc-hooks", "claude-code://tools/")
    pre = (FIXTURES / "pre_tool_use.json").read_bytes()
    failure = (FIXTURES / "post_tool_use_failure.json").read_bytes()
    where = ["--task", task, "--actor", AGENT]

    done = signed.boris("hook", "pre-tool-use", *where, "--key", str(signed.key), stdin=pre)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done.stderr.decode()
    done = signed.boris("hook", "post-tool-use-failure", *where, agent=True, stdin=failure)
    assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode()
    (effect,) = signed.effects(task)
    assert effect["intent"]["prepared"] == json.loads(pre)["tool_input"]
    (attempt,) = effect["attempts"]
    # Claude Code's word on it: the outcome stays unknown until reconciled (issue 40).
    assert (attempt["outcome"], attempt["response"]["reported"]) == ("unknown", "failed")
    signed.assert_signed()


def test_without_a_key_the_prompt_denies_and_the_hook_says_the_next_step(signed: Signed) -> None:
    task = signed.task("cc-no-key", "claude-code://tools/")
    arguments = {"tool_name": "Bash", "input": ASKED, "tool_use_id": "toolu_n1"}

    async def scenario() -> dict[str, Any]:
        async with boris_mcp(signed, task, key=False) as session:
            return await prompt(session, arguments)

    denied = anyio.run(scenario)
    assert denied["behavior"] == "deny"
    assert denied["message"].startswith("Boris could not record this call, so it was not run: ")
    one_line_refusal(denied["message"], AGENT)

    pre = (FIXTURES / "pre_tool_use.json").read_bytes()
    done = signed.boris("hook", "pre-tool-use", "--task", task, "--actor", AGENT, stdin=pre)
    assert done.returncode == 1 and done.stdout == b""
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith("boris hook: Bash call not recorded: store ")
    one_line_refusal(line, AGENT)
    assert signed.effects(task) == []
