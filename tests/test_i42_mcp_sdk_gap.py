"""The official MCP Python SDK's public client and a task-augmented answer at 2025-11-25
(issue 42: "reachable from the official SDK's public client, or documented as the SDK's gap
with the exact version"), pinned so the documentation cannot go stale unnoticed.

At 2026-07-28 the public `mcp.Client` reads the tasks extension (tests/test_mcp_task_extension.py).
At 2025-11-25, with `mcp` 2.3.0, the public `ClientSession` cannot: `call_tool` has no `task`
parameter, and `send_request` validates every `tools/call` answer as a `CallToolResult`
(whatever result type is asked for), so a `CreateTaskResult` is refused ("content: Field
required"); the tests of the 2025-11-25 tasks go through the session's JSON-RPC dispatcher
(tests/test_mcp_tasks.py, tests/test_mcp_task_restart.py). The server did record the task:
Boris's side is whole, the gap is the SDK's. When a new SDK reads it, this test fails: say so
in docs/agents/mcp.md and move those tests to the public route.

The real `boris mcp` over stdio, on the store `boris init` makes (the agent's key as
BORIS_KEY), the official client.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from pathlib import Path

import anyio
import mcp_types as types
import pydantic
import pytest
from mcp import ClientSession
from signed_default import Signed, signed_default_store
from test_mcp_task_restart import AGENT, agent_session
from test_mcp_tasks import pending_approval


@pytest.fixture
def signed(tmp_path: Path) -> Signed:
    return signed_default_store(tmp_path / "home", AGENT)


def test_the_public_client_at_2025_11_25_cannot_read_a_task_answer_sdk_2_3(
    signed: Signed, tmp_path: Path
) -> None:
    version = importlib.metadata.version("mcp")
    assert "task" not in inspect.signature(ClientSession.call_tool).parameters, version
    ws = tmp_path / "ws"
    ws.mkdir()

    async def scenario() -> None:
        async with agent_session(signed) as session:
            init = await session.initialize()
            assert init.protocol_version == "2025-11-25"
            task, approval = await pending_approval(session, ws)
            signed.tasks.append(task)
            request = types.CallToolRequest(
                params=types.CallToolRequestParams(
                    name="wait_for_approval",
                    arguments={"task_id": task, "approval_id": approval, "timeout_seconds": 5},
                    task=types.TaskMetadata(ttl=60000),
                )
            )
            with pytest.raises(pydantic.ValidationError) as refused:
                await session.send_request(request, types.CreateTaskResult)
            said = str(refused.value)
            assert "CallToolResult" in said and "content" in said, (version, said)

    anyio.run(scenario)
    # Boris answered with a task and kept it in the record before answering.
    kinds = [e["type"] for e in signed.read("events", signed.tasks[-1])]
    assert kinds.count("mcp_task.created") == 1
    signed.assert_signed()
