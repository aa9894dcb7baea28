"""MCP tasks kept in the store (issue 42): a task outlives the `boris mcp` that created it.

On a signed store as `boris init` makes it (tests/signed_default.py): the real `boris mcp`
as a subprocess, driven by the official MCP client over stdio, acting as the agent with its
trusted key (BORIS_KEY). The agent calls `wait_for_approval` as a task; the server is killed
(SIGKILL: nothing of it runs on); rita approves with the real `boris approve` in her own
shell; a new `boris mcp` answers `tasks/get` and `tasks/result` for the same task: completed,
with her decision. `boris verify` finds every write signed (the task's record included).

The task-augmented call goes through the client's own JSON-RPC dispatcher (the SDK's
`call_tool` reads a CallToolResult only at 2025-11-25), as tests/test_mcp_tasks.py says.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from signed_default import ROOT, Signed, signed_default_store
from test_mcp_tasks import get_task, pending_approval

AGENT = "agent:writer"


@pytest.fixture
def signed(tmp_path: Path) -> Signed:
    return signed_default_store(tmp_path / "home", AGENT)


def _server_pids() -> set[int]:
    """This test process's `boris mcp` children (by their parent: this process)."""
    found = subprocess.run(
        ["pgrep", "-P", str(os.getpid())], capture_output=True, text=True, check=False
    )
    return {int(p) for p in found.stdout.split()}


@asynccontextmanager
async def agent_session(signed: Signed, **session: Any) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", "--actor", AGENT],
        env=signed.env(agent=True),
        cwd=str(ROOT),
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, **session) as client,
    ):
        yield client


async def _result(session: ClientSession, task_id: str) -> types.CallToolResult:
    return await session.send_request(
        types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
        types.CallToolResult,
    )


def test_a_task_survives_a_killed_server_and_a_person_decides_meanwhile(
    signed: Signed, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()

    async def scenario() -> None:
        before = _server_pids()
        async with agent_session(signed) as session:
            await session.initialize()
            task, approval = await pending_approval(session, ws)
            created = await session._dispatcher.send_raw_request(
                "tools/call",
                {
                    "name": "wait_for_approval",
                    "arguments": {"task_id": task, "approval_id": approval, "timeout_seconds": 120},
                    "task": {"ttl": 600000},
                },
            )
            mcp_task = types.CreateTaskResult.model_validate(created, by_name=False).task
            assert mcp_task.status == "working" and mcp_task.ttl == 600000
            assert (await get_task(session, mcp_task.task_id)).status == "working"
            (server,) = _server_pids() - before
            os.kill(server, signal.SIGKILL)  # killed: nothing of it runs on
            with anyio.fail_after(30):
                while server in _server_pids():
                    await anyio.sleep(0.1)
            with suppress(Exception):
                await session.send_ping()
        signed.tasks.append(task)

        # Rita approves from her own shell while no server runs.
        await anyio.to_thread.run_sync(lambda: signed.approve(task, approval))

        async with agent_session(signed) as session:
            await session.initialize()
            for _ in range(200):
                got = await get_task(session, mcp_task.task_id)
                if got.status == "completed":
                    break
                await anyio.sleep(0.1)
            assert got.status == "completed", got
            assert got.ttl == 600000
            assert got.created_at == mcp_task.created_at
            answer = await _result(session, mcp_task.task_id)
            assert answer.is_error is not True
            decision = answer.structured_content
            assert decision is not None
            assert decision["result"]["state"] == "approved"
            assert decision["result"]["decided_by"]["id"] == "rita"
            assert decision["timed_out"] is False
            assert answer.meta is not None
            assert answer.meta["io.modelcontextprotocol/related-task"] == {
                "taskId": mcp_task.task_id
            }
            # An id the store never recorded is unknown (-32602), as the spec says.
            with pytest.raises(MCPError) as unknown:
                await get_task(session, f"{task}~0000")
            assert unknown.value.error.code == types.INVALID_PARAMS

        # A third server reads the ended task from the record alone.
        async with agent_session(signed) as session:
            await session.initialize()
            again = await get_task(session, mcp_task.task_id)
            assert again.status == "completed"
            assert again.last_updated_at == got.last_updated_at
            assert (await _result(session, mcp_task.task_id)).structured_content == decision

    anyio.run(scenario)
    events = signed.read("events", signed.tasks[-1])
    kinds = [e["type"] for e in events]
    assert kinds.count("mcp_task.created") == 1 and kinds.count("mcp_task.ended") == 1
    signed.assert_signed()
