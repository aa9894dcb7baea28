"""MCP as it is now: waiting on a person as a task, elicitation, the versions spoken.

The real `boris mcp` as a subprocess, driven by the official MCP client over stdio; a person
decides with the real `boris` CLI in a process of their own.

- A task-augmented `wait_for_approval` (2025-11-25 tasks) answers with a task at once;
  `tasks/get` shows it working, `tasks/result` gives the decision once a person took it.
- Elicitation only sends the client's user to Boris: `boris mcp` acts for an agent, so an
  "approve" answered over its connection must not approve anything (the approval stays
  pending until a person decides in Boris); a declining client falls back to the queue too.

The SDK's client surface maps `tools/call` to `CallToolResult` only (its task types are
types-only), so the task-augmented call itself goes through the client's own JSON-RPC
dispatcher (`session._dispatcher.send_raw_request`); `tasks/*` go through `send_request`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _where(store_dir: Path, store_url: str | None) -> list[str]:
    return ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])


def boris(store_dir: Path, store_url: str | None, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real `boris`, in a process of its own (a person at the command line)."""
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *_where(store_dir, store_url)],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def approval_state(store_dir: Path, store_url: str | None, task: str, approval: str) -> str:
    done = boris(store_dir, store_url, "approvals", task, "--json")
    assert done.returncode == 0, done.stderr
    (row,) = [r for r in json.loads(done.stdout)["result"] if r["id"] == approval]
    return str(row["state"])


@asynccontextmanager
async def agent_session(
    store_dir: Path, store_url: str | None, elicitation: Any = None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", *_where(store_dir, store_url), "--actor", "agent:writer"],
        env=_env(),
        cwd=str(ROOT),
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=elicitation) as session,
    ):
        await session.initialize()
        yield session


async def tool(session: ClientSession, name: str, **arguments: Any) -> Any:
    result = await session.call_tool(name, arguments)
    answer = result.structured_content
    assert answer is not None and answer["ok"] is True, answer
    return answer


async def pending_approval(session: ClientSession, ws: Path) -> tuple[str, str]:
    """A task with an effect waiting for a person's approval."""
    task = (
        await tool(
            session,
            "create_task",
            title="Save the weekly note",
            owner="rita",
            objective="Write this week's note",
            scope_paths=[str(ws)],
        )
    )["result"]
    effect = (
        await tool(
            session,
            "plan_effect",
            task_id=task,
            kind="file_write",
            target=str(ws / "NOTE.md"),
            consequence="overwrite NOTE.md with this week's note",
            content={"text": "# Week 49\n"},
            requires_approval=True,
            policy="file writes need a reviewer",
        )
    )["result"]
    approval = (
        await tool(session, "request_approval", task_id=task, effect_id=effect, policy="review")
    )["result"]
    return str(task), str(approval)


async def get_task(session: ClientSession, task_id: str) -> types.GetTaskResult:
    return await session.send_request(
        types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)),
        types.GetTaskResult,
    )


async def until_status(
    session: ClientSession, task_id: str, status: str, saying: str = ""
) -> types.GetTaskResult:
    for _ in range(300):
        got = await get_task(session, task_id)
        if got.status == status and saying in (got.status_message or ""):
            return got
        await anyio.sleep(0.1)
    raise AssertionError(f"task {task_id} never became {status} ({saying}): {got}")


def test_wait_for_approval_runs_as_a_task_a_person_decides(
    store_dir: Path, store_url: str | None, ws: Path
) -> None:
    async def scenario() -> None:
        async with agent_session(store_dir, store_url) as session:
            # The server states what it speaks, and which tools may run as tasks.
            assert session.protocol_version == "2025-11-25"
            init = session.initialize_result
            assert init is not None
            assert init.capabilities.tasks is not None
            assert init.capabilities.tasks.requests is not None
            description = init.server_info.description or ""
            for version in ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"):
                assert version in description
            listed = {t.name: t for t in (await session.list_tools()).tools}
            wait_tool = listed["wait_for_approval"]
            assert wait_tool.execution is not None
            assert wait_tool.execution.task_support == "optional"
            assert listed["permission_prompt"].execution is not None
            assert listed["create_task"].execution is None

            task, approval = await pending_approval(session, ws)
            created = await session._dispatcher.send_raw_request(
                "tools/call",
                {
                    "name": "wait_for_approval",
                    "arguments": {"task_id": task, "approval_id": approval, "timeout_seconds": 60},
                    "task": {"ttl": 60000},
                },
            )
            mcp_task = types.CreateTaskResult.model_validate(created, by_name=False).task
            assert mcp_task.status == "working"
            assert mcp_task.ttl == 60000

            # Waiting on the person in Boris's queue: working, and says so.
            got = await until_status(session, mcp_task.task_id, "working", "queue")
            assert approval in (got.status_message or "")
            listed_tasks = await session.send_request(
                types.ListTasksRequest(), types.ListTasksResult
            )
            assert [t.task_id for t in listed_tasks.tasks] == [mcp_task.task_id]

            # tasks/result blocks until the task is done; the person decides meanwhile.
            result: list[types.CallToolResult] = []

            async def read_result() -> None:
                result.append(
                    await session.send_request(
                        types.GetTaskPayloadRequest(
                            params=types.GetTaskPayloadRequestParams(task_id=mcp_task.task_id)
                        ),
                        types.CallToolResult,
                    )
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(read_result)
                await anyio.sleep(0.5)
                assert not result
                done = await anyio.to_thread.run_sync(
                    lambda: boris(
                        store_dir, store_url, "approve", task, approval, "--actor", "person:rita"
                    )
                )
                assert done.returncode == 0, done.stderr

            (answer,) = result
            assert answer.is_error is not True
            decision = answer.structured_content
            assert decision is not None
            assert decision["result"]["state"] == "approved"
            assert decision["result"]["decided_by"]["kind"] == "person"
            assert decision["result"]["decided_by"]["id"] == "rita"
            assert (await get_task(session, mcp_task.task_id)).status == "completed"

            # A tool that does not wait on a person does not run as a task.
            with pytest.raises(MCPError):
                await session._dispatcher.send_raw_request(
                    "tools/call",
                    {"name": "create_task", "arguments": {}, "task": {}},
                )

            # tasks/cancel stops the wait, not the approval: it stays pending.
            task2, approval2 = await pending_approval(session, ws)
            created = await session._dispatcher.send_raw_request(
                "tools/call",
                {
                    "name": "wait_for_approval",
                    "arguments": {"task_id": task2, "approval_id": approval2},
                    "task": {},
                },
            )
            second = types.CreateTaskResult.model_validate(created, by_name=False).task
            cancelled = await session.send_request(
                types.CancelTaskRequest(
                    params=types.CancelTaskRequestParams(task_id=second.task_id)
                ),
                types.CancelTaskResult,
            )
            assert cancelled.status == "cancelled"
            assert (await get_task(session, second.task_id)).status == "cancelled"
            state = await anyio.to_thread.run_sync(
                lambda: approval_state(store_dir, store_url, task2, approval2)
            )
            assert state == "pending"

            # Without `task`, the blocking call as before.
            blocking = await tool(
                session,
                "wait_for_approval",
                task_id=task2,
                approval_id=approval2,
                timeout_seconds=0.5,
            )
            assert blocking["timed_out"] is True

    anyio.run(scenario)


def test_an_elicited_approve_decides_nothing_a_person_does(
    store_dir: Path, store_url: str | None, ws: Path
) -> None:
    """The client's user answers "approve" in the client: the approval stays pending (the
    connection acts for an agent); the person's decision in Boris is what the wait returns."""
    asked: list[types.ElicitRequestParams] = []

    async def answers_approve(context: Any, params: types.ElicitRequestParams) -> Any:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"decision": "approve", "seen": True})

    async def scenario() -> None:
        async with agent_session(store_dir, store_url, answers_approve) as session:
            task, approval = await pending_approval(session, ws)
            waited: dict[str, Any] = {}

            async def wait() -> None:
                waited.update(
                    await tool(
                        session,
                        "wait_for_approval",
                        task_id=task,
                        approval_id=approval,
                        timeout_seconds=60,
                    )
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                for _ in range(300):
                    if asked:
                        break
                    await anyio.sleep(0.1)
                (params,) = asked
                assert isinstance(params, types.ElicitRequestFormParams)
                assert approval in params.message
                assert f"boris approve {task} {approval}" in params.message
                await anyio.sleep(0.6)
                assert not waited  # "approve" in the client decided nothing
                state = await anyio.to_thread.run_sync(
                    lambda: approval_state(store_dir, store_url, task, approval)
                )
                assert state == "pending"
                done = await anyio.to_thread.run_sync(
                    lambda: boris(
                        store_dir, store_url, "approve", task, approval, "--actor", "person:rita"
                    )
                )
                assert done.returncode == 0, done.stderr
            assert waited["result"]["state"] == "approved"
            assert waited["result"]["decided_by"]["id"] == "rita"

    anyio.run(scenario)


def test_a_declining_client_falls_back_to_the_queue(
    store_dir: Path, store_url: str | None, ws: Path
) -> None:
    """Declined (or a client that cannot ask): the approval stays pending in the queue; in
    the task form, `input_required` while the client's user is asked, then working again."""
    asked = anyio.Event()
    answer_now = anyio.Event()

    async def declines(context: Any, params: types.ElicitRequestParams) -> Any:
        asked.set()
        await answer_now.wait()
        return types.ElicitResult(action="decline")

    async def scenario() -> None:
        async with agent_session(store_dir, store_url, declines) as session:
            task, approval = await pending_approval(session, ws)
            created = await session._dispatcher.send_raw_request(
                "tools/call",
                {
                    "name": "wait_for_approval",
                    "arguments": {"task_id": task, "approval_id": approval, "timeout_seconds": 60},
                    "task": {},
                },
            )
            mcp_task = types.CreateTaskResult.model_validate(created, by_name=False).task
            with anyio.fail_after(30):
                await asked.wait()
            await until_status(session, mcp_task.task_id, "input_required")
            answer_now.set()
            await until_status(session, mcp_task.task_id, "working", "decline")
            state = await anyio.to_thread.run_sync(
                lambda: approval_state(store_dir, store_url, task, approval)
            )
            assert state == "pending"

        # A client without elicitation: the blocking wait, the queue, nothing asked.
        async with agent_session(store_dir, store_url) as session:
            waited = await tool(
                session, "wait_for_approval", task_id=task, approval_id=approval, timeout_seconds=1
            )
            assert waited["timed_out"] is True
            assert waited["result"]["state"] == "pending"

    anyio.run(scenario)


def test_the_server_speaks_the_versions_it_states(store_dir: Path, store_url: str | None) -> None:
    """An older client gets its own version back; 2026-07-28 comes through server/discover."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", *_where(store_dir, store_url), "--actor", "agent:writer"],
        env=_env(),
        cwd=str(ROOT),
    )

    async def scenario() -> None:
        for version in ("2025-06-18", "2025-03-26"):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                init = await s._dispatcher.send_raw_request(
                    "initialize",
                    {
                        "protocolVersion": version,
                        "capabilities": {},
                        "clientInfo": {"name": "older", "version": "1"},
                    },
                )
                assert init["protocolVersion"] == version
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            found = await s.discover()
            assert "2026-07-28" in found.supported_versions
            assert s.protocol_version == "2026-07-28"

    anyio.run(scenario)
