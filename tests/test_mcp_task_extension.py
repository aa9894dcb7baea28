"""The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`) beside the 2025-11-25 tasks.

Checked against the extension's text (modelcontextprotocol/ext-tasks,
specification/2026-07-28/tasks.md): a client that declares the extension in its request's
capabilities gets `resultType: "task"` for a call that waits on a person; `tasks/get` answers
the DetailedTask (`ttlMs`, `pollIntervalMs`, the result inlined once completed);
`tasks/update` and `tasks/cancel` answer an empty acknowledgement; there is no `tasks/list`;
a client that does not declare the extension gets the blocking call, and -32021 for tasks/*.

Driven by the official SDK's public client (`mcp.Client`, which negotiates 2026-07-28 through
server/discover) with a `ClientExtension` claiming the `task` result: `Client.call_tool`
hands a claimed result to the claim's resolver, which polls `tasks/get` as the extension says
and answers the CallToolResult. On a signed store as `boris init` makes it, the real
`boris mcp` and the real `boris approve`; the task outlives a killed server here too.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from signed_default import ROOT, Signed, signed_default_store
from test_mcp_task_restart import _server_pids

AGENT = "agent:writer"
TASKS = "io.modelcontextprotocol/tasks"


class TaskHandle(types.Result):
    """The extension's CreateTaskResult (`Result & Task`, resultType "task")."""

    result_type: Literal["task"]
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    """The extension's GetTaskResult (`Result & DetailedTask`)."""

    result_type: str
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class Ack(types.Result):
    result_type: str


class UpdateParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class UpdateTaskRequest(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"


async def get(session: Any, task_id: str) -> DetailedTask:
    return await session.send_request(
        types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), DetailedTask
    )


async def until_done(session: Any, task_id: str) -> DetailedTask:
    for _ in range(600):
        task = await get(session, task_id)
        if task.status in ("completed", "failed", "cancelled"):
            return task
        await anyio.sleep((task.poll_interval_ms or 1000) / 1000 / 10)
    raise AssertionError(f"task {task_id} never ended")


async def resolve(handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
    """A task's end, polled with tasks/get; the CallToolResult it carries."""
    done = await until_done(ctx.session, handle.task_id)
    assert done.status == "completed", done
    return types.CallToolResult.model_validate(done.result, by_name=False)


class Tasks(ClientExtension):
    identifier = TASKS

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=TaskHandle, resolve=resolve),)


@pytest.fixture
def signed(tmp_path: Path) -> Signed:
    return signed_default_store(tmp_path / "home", AGENT)


def client(signed: Signed, *, tasks: bool = True) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", "--actor", AGENT],
        env=signed.env(agent=True),
        cwd=str(ROOT),
    )
    return Client(params, extensions=[Tasks()] if tasks else None)


async def ok(c: Client, name: str, **arguments: Any) -> Any:
    result = await c.call_tool(name, arguments)
    assert result.structured_content is not None and result.structured_content["ok"], result
    return result.structured_content["result"]


async def pending(c: Client, ws: Path) -> tuple[str, str]:
    task = await ok(
        c, "create_task", title="Note", owner="rita", objective="Write", scope_paths=[str(ws)]
    )
    effect = await ok(
        c,
        "plan_effect",
        task_id=task,
        kind="file_write",
        target=str(ws / "NOTE.md"),
        consequence="overwrite NOTE.md",
        content={"text": "# Week 49\n"},
        requires_approval=True,
        policy="file writes need a reviewer",
    )
    approval = await ok(c, "request_approval", task_id=task, effect_id=effect, policy="review")
    return str(task), str(approval)


def test_the_extension_at_2026_07_28_with_the_public_client(signed: Signed, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    wait = "wait_for_approval"

    async def scenario() -> None:
        async with client(signed) as c:
            assert c.protocol_version == "2026-07-28"
            extensions = c.session.server_capabilities.extensions  # type: ignore[union-attr]
            assert extensions is not None and TASKS in extensions
            task, approval = await pending(c, ws)
            signed.tasks.append(task)
            arguments = {"task_id": task, "approval_id": approval, "timeout_seconds": 120}

            # The handle at once; tasks/get working; tasks/update acknowledged; no tasks/list.
            handle = await c.session.call_tool(wait, arguments, allow_claimed=True)
            assert isinstance(handle, TaskHandle)
            assert handle.status == "working" and handle.ttl_ms and handle.poll_interval_ms
            got = await get(c.session, handle.task_id)
            assert got.result_type == "complete" and got.status == "working"
            assert got.ttl_ms == handle.ttl_ms and got.result is None
            ack = await c.session.send_request(
                UpdateTaskRequest(
                    params=UpdateParams(
                        task_id=handle.task_id, input_responses={"k": {"action": "accept"}}
                    )
                ),
                Ack,
            )
            assert ack.result_type == "complete"
            assert (await get(c.session, handle.task_id)).status == "working"
            with pytest.raises(MCPError) as listed:
                await c.session.send_request(types.ListTasksRequest(), types.ListTasksResult)
            assert listed.value.error.code == types.METHOD_NOT_FOUND
            with pytest.raises(MCPError) as blocking_result:  # the result is in tasks/get's
                await c.session.send_request(
                    types.GetTaskPayloadRequest(
                        params=types.GetTaskPayloadRequestParams(task_id=handle.task_id)
                    ),
                    types.CallToolResult,
                )
            assert blocking_result.value.error.code == types.METHOD_NOT_FOUND

            # Client.call_tool resolves a task itself (the claim's resolver polls tasks/get):
            # a second call, decided by rita meanwhile.
            answered: list[types.CallToolResult] = []

            async def call() -> None:
                answered.append(await c.call_tool(wait, arguments))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(1.0)
                assert not answered
                await anyio.to_thread.run_sync(lambda: signed.approve(task, approval))
            (answer,) = answered
            assert answer.structured_content is not None
            assert answer.structured_content["result"]["state"] == "approved"
            assert answer.structured_content["result"]["decided_by"]["id"] == "rita"
            done = await until_done(c.session, handle.task_id)
            assert done.status == "completed" and done.result is not None
            assert done.result["structuredContent"]["result"]["state"] == "approved"

            # tasks/cancel: an empty acknowledgement; the task cancelled, the approval not.
            task2, approval2 = await pending(c, ws)
            signed.tasks.append(task2)
            second = await c.session.call_tool(
                wait, {"task_id": task2, "approval_id": approval2}, allow_claimed=True
            )
            assert isinstance(second, TaskHandle)
            cancelled = await c.session.send_request(
                types.CancelTaskRequest(
                    params=types.CancelTaskRequestParams(task_id=second.task_id)
                ),
                Ack,
            )
            assert cancelled.result_type == "complete"
            assert (await get(c.session, second.task_id)).status == "cancelled"
            assert [r["state"] for r in signed.read("approvals", task2)] == ["pending"]

        # Without the extension: the blocking call, and -32021 for tasks/*.
        async with client(signed, tasks=False) as plain:
            assert plain.protocol_version == "2026-07-28"
            blocking = await plain.call_tool(
                wait, {"task_id": task2, "approval_id": approval2, "timeout_seconds": 0.5}
            )
            assert blocking.structured_content is not None
            assert blocking.structured_content["timed_out"] is True
            with pytest.raises(MCPError) as missing:
                await get(plain.session, handle.task_id)
            assert missing.value.error.code == -32021

    anyio.run(scenario)
    signed.assert_signed()


def test_an_extension_task_survives_a_killed_server(signed: Signed, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()

    async def scenario() -> None:
        before = _server_pids()
        async with client(signed) as c:
            task, approval = await pending(c, ws)
            signed.tasks.append(task)
            handle = await c.session.call_tool(
                "wait_for_approval",
                {"task_id": task, "approval_id": approval, "timeout_seconds": 120},
                allow_claimed=True,
            )
            assert isinstance(handle, TaskHandle)
            (server,) = _server_pids() - before
            os.kill(server, signal.SIGKILL)
            with anyio.fail_after(30):
                while server in _server_pids():
                    await anyio.sleep(0.1)
            with suppress(Exception):
                await c.session.send_ping()
        await anyio.to_thread.run_sync(lambda: signed.approve(task, approval))
        async with client(signed) as c:
            done = await until_done(c.session, handle.task_id)
            assert done.status == "completed", done
            assert done.created_at == handle.created_at and done.ttl_ms == handle.ttl_ms
            assert done.result is not None
            decided = done.result["structuredContent"]["result"]
            assert decided["state"] == "approved" and decided["decided_by"]["id"] == "rita"

    anyio.run(scenario)
    signed.assert_signed()


def test_where_to_decide_as_a_multi_round_trip_request(signed: Signed, tmp_path: Path) -> None:
    """2026-07-28: no server-initiated elicitation; a client that declares elicitation gets an
    InputRequiredResult first (the notice: where a person decides). Its "accept" decides
    nothing: the retry waits until rita approves in Boris, and then answers as a task's."""
    ws = tmp_path / "ws"
    ws.mkdir()
    asked: list[types.ElicitRequestParams] = []

    async def says_approve(context: Any, params: types.ElicitRequestParams) -> Any:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"seen": True})

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", "--actor", AGENT],
        env=signed.env(agent=True),
        cwd=str(ROOT),
    )

    async def scenario() -> None:
        async with Client(params, extensions=[Tasks()], elicitation_callback=says_approve) as c:
            assert c.protocol_version == "2026-07-28"
            task, approval = await pending(c, ws)
            signed.tasks.append(task)
            arguments = {"task_id": task, "approval_id": approval, "timeout_seconds": 120}

            # The raw round: an InputRequiredResult with the one elicitation, no requestState.
            first = await c.session.call_tool(
                "wait_for_approval", arguments, allow_input_required=True, allow_claimed=True
            )
            assert isinstance(first, types.InputRequiredResult)
            assert first.request_state is None and first.input_requests is not None
            (key,) = first.input_requests
            request = first.input_requests[key]
            assert isinstance(request, types.ElicitRequest)
            assert f"boris approve {task} {approval}" in request.params.message

            # Client.call_tool answers it through its elicitation callback and retries.
            answered: list[types.CallToolResult] = []

            async def call() -> None:
                answered.append(await c.call_tool("wait_for_approval", arguments))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                with anyio.fail_after(30):
                    while not asked:
                        await anyio.sleep(0.1)
                await anyio.sleep(1.0)
                assert not answered  # "accept" in the client decided nothing
                assert [r["state"] for r in signed.read("approvals", task)] == ["pending"]
                await anyio.to_thread.run_sync(lambda: signed.approve(task, approval))
            (answer,) = answered
            assert answer.structured_content is not None
            assert answer.structured_content["result"]["state"] == "approved"
            assert answer.structured_content["result"]["decided_by"]["id"] == "rita"

            # Decided: nothing is asked any more.
            asked.clear()
            again = await c.call_tool("wait_for_approval", arguments)
            assert again.structured_content is not None and not asked

    anyio.run(scenario)
    signed.assert_signed()
