"""The official SDK's server over a `BorisServer` (store.mcp.server): its tools and
resources as the SDK's handlers, and the 2025-11-25 MCP tasks (store.mcp.tasks) a call that
waits on a person may run as."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from ..adapters import claude_code
from ..version import __version__
from . import mrtr, tasks, tools
from .resources import TEMPLATES, Resources
from .waits import TASK_TOOLS, Notice, Progress, Waits

#: The protocol revisions the server speaks (the SDK's): through `initialize`, and the
#: stateless revision through `server/discover`.
PROTOCOL_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
DESCRIPTION = (
    "The durable record of an agent's long-running task. Speaks MCP "
    + ", ".join(reversed(PROTOCOL_VERSIONS))
    + f"; calls that wait on a person may run as tasks ({tasks.TASKS_VERSION} tasks through "
    "initialize; the io.modelcontextprotocol/tasks extension at 2026-07-28), kept in the "
    "store across restarts."
)
INSTRUCTIONS = (
    "Boris keeps the durable record of your task. Record an effect's intent (plan_effect) "
    "before doing anything to the world; when it needs approval, request_approval then "
    "wait_for_approval; dispatch_effect before you run the executor, record_response with "
    "what it reported, then observe_effect and reconcile_effect: only an observation settles "
    "what happened. A refused call is an error whose structured content names the code and "
    "the rule; nothing was written. Resume from resume_brief, never from your own narrative."
)
_Handler = Callable[..., Awaitable[Any]]


class Served(Protocol):
    """What the SDK's server serves (a `BorisServer`): its tools, resources, waits and the
    calls running as MCP tasks."""

    board: tasks.TaskBoard
    resources: Resources
    waits: Waits
    prompts: claude_code.PromptSettings

    def tool_list(self) -> list[types.Tool]: ...

    async def tool_result(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        notice: Notice | None = None,
    ) -> types.CallToolResult: ...


def sdk_server(served: Served) -> Server[Any]:
    """The SDK's server answering for `served`: tools, resources and MCP tasks."""
    list_tools, call_tool = _tool_handlers(served)
    list_resources, list_templates, read_resource = _resource_handlers(served.resources)

    @contextlib.asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with served.board.running():
            yield {}

    server = _TaskServer(
        "boris",
        version=__version__,
        title="Boris: the durable record of an agent's task",
        description=DESCRIPTION,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )
    _serve_tasks(served, server)
    return server


def _tool_handlers(served: Served) -> tuple[_Handler, _Handler]:
    """tools/list and tools/call; a call's progress goes to the client when it asked (a
    progress token), and a wait's notice to its user."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=served.tool_list())

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        meta: Mapping[str, Any] = ctx.meta or {}
        token = meta.get("progress_token", meta.get("progressToken"))
        progress: Progress | None = None
        if token is not None:

            async def progress(done: float, total: float, message: str) -> None:
                await ctx.session.send_progress_notification(
                    token,
                    done,
                    total,
                    message,
                    related_request_id=None if ctx.request_id is None else str(ctx.request_id),
                )

        notice = served.waits.notice(ctx.session, ctx.request_id, None)
        arguments = dict(params.arguments or {})
        return await served.tool_result(params.name, arguments, progress, notice)

    return list_tools, call_tool


def _resource_handlers(resources: Resources) -> tuple[_Handler, _Handler, _Handler]:
    """resources/list, resources/templates/list and resources/read."""

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await resources.step(resources.resource_list))

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=list(TEMPLATES))

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        text = await resources.step(resources.read_resource, uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    return list_resources, list_templates, read_resource


#: The tasks extension of 2026-07-28 (modelcontextprotocol/ext-tasks,
#: specification/2026-07-28/tasks.md, "Extension Identifier" and "Capability Negotiation"):
#: the client declares it in each request's `_meta` capabilities, the server in server/discover's.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
#: "-32021 (Missing Required Client Capability)", the extension's "Error Handling".
MISSING_CLIENT_CAPABILITY = -32021


def _declares_tasks(params: Mapping[str, Any]) -> bool:
    """Whether this request's `_meta` client capabilities declare the tasks extension."""
    meta = params.get("_meta")
    capabilities = meta.get(CLIENT_CAPABILITIES) if isinstance(meta, Mapping) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def _record_in(served: Served, name: str, arguments: Mapping[str, Any]) -> str | None:
    """The Boris task an MCP task is kept in: the one the wait names, or the permission
    prompt's (`boris mcp --task`)."""
    if name == tools.WAIT_TOOL:
        task_id = arguments.get("task_id")
        return task_id if isinstance(task_id, str) and task_id else None
    return served.prompts.task_id


def _outside_the_extension(ctx: ServerRequestContext[Any], params: Mapping[str, Any]) -> None:
    """At 2026-07-28, what the extension does not serve: tasks/* from a client whose request
    does not declare it, and the 2025-11-25 methods it dropped."""
    if ctx.method in EXTENSION_METHODS and not _declares_tasks(params):
        # The extension's "Error Handling": "Servers MUST return this error for
        # non-declaring clients issuing tasks/get, tasks/update, and tasks/cancel".
        raise MCPError(
            code=MISSING_CLIENT_CAPABILITY,
            message="Missing required client capability",
            data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        )
    if ctx.method in ("tasks/list", "tasks/result"):
        # The extension "introduces three methods: tasks/get, tasks/update, and
        # tasks/cancel": no tasks/list, and no blocking tasks/result (the result is in
        # tasks/get's answer).
        raise MCPError(
            code=types.METHOD_NOT_FOUND,
            message=f"{ctx.method} is not served at {ctx.protocol_version}: the tasks "
            "extension has tasks/get, tasks/update and tasks/cancel",
        )


def _task_augmented(served: Served) -> ServerMiddleware[Any]:
    """The middleware answering a call that waits on a person with a task, in the form of
    the negotiated protocol version."""

    async def task_augmented(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if modern:
            _outside_the_extension(ctx, params)
        name = str(params.get("name") or "")
        asked = params.get("task")
        if modern and ctx.method == "tools/call":
            # 2026-07-28: the notice as a multi round-trip request first (store.mcp.mrtr).
            first = await mrtr.notice_first(served.waits.worker, name, params)
            if first is not None:
                return first
        if ctx.method != "tools/call" or (
            not (modern and _declares_tasks(params) and name in TASK_TOOLS)
            and not (not modern and isinstance(asked, Mapping))
        ):
            return await call_next(ctx)
        if name not in TASK_TOOLS:
            # 2025-11-25, tasks: a tool whose taskSupport is absent or "forbidden", called
            # as a task: "Servers SHOULD return a -32601 (Method not found) error".
            raise MCPError(
                code=types.METHOD_NOT_FOUND,
                message=f"tool {name!r} does not run as a task (its execution.taskSupport "
                "is forbidden): call it without `task`",
            )
        raw = params.get("arguments")
        arguments = dict(raw) if isinstance(raw, Mapping) else {}
        session, request_id = ctx.session, ctx.request_id
        # The extension's server decides the TTL ("The server is the sole decider"); a
        # 2025-11-25 client may ask for one.
        ttl = asked.get("ttl") if isinstance(asked, Mapping) else None

        async def work(task: tasks.Running) -> dict[str, Any]:
            # 2026-07-28 has no server-initiated requests: no elicitation beside the wait.
            notice = served.waits.notice(None if modern else session, request_id, task)
            return await call_as_task(served, name, arguments, notice)

        task = await served.board.start(
            name,
            ttl if isinstance(ttl, int) and not isinstance(ttl, bool) else None,
            work,
            arguments=arguments,
            record_in=_record_in(served, name, arguments),
            form=tasks.FORM_2026 if modern else tasks.FORM_2025,
        )
        if modern:
            # The extension's "Task Creation": `resultType: "task"`, the Task inlined.
            return {"resultType": "task", **task.detailed()}
        return {"task": task.wire()}

    return task_augmented


def _serve_tasks(served: Served, server: Server[Any]) -> None:
    """Tasks in both forms, by the negotiated protocol version: through `initialize`
    (2025-11-25), a `tools/call` with a `task` field; at 2026-07-28, the extension: a
    `tools/call` from a client whose request declares it. Either way a tool that waits on a
    person answers with a task at once, kept in the store (store.mcp.board)."""
    board = served.board

    async def get_task(ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams) -> Any:
        task = await board.get(params.task_id)
        # The extension's "Task Polling": a DetailedTask, its result or error inlined.
        return task.detailed() if _modern(ctx) else task.wire()

    async def task_result(
        ctx: ServerRequestContext[Any], params: types.GetTaskPayloadRequestParams
    ) -> dict[str, Any]:
        return await board.result(params.task_id)

    async def list_tasks(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        return {"tasks": await board.listed()}

    async def cancel_task(
        ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams
    ) -> dict[str, Any]:
        task = await board.cancel(params.task_id)
        # The extension's "Task Cancellation": "an empty result" (an acknowledgement).
        return {} if _modern(ctx) else task.wire()

    async def update_task(ctx: ServerRequestContext[Any], params: UpdateTaskParams) -> Any:
        # The extension's "Task Update Requests": Boris asks no input of the client (a
        # decision is a person's, in Boris), so no key is ever outstanding and every
        # response is ignored ("A server SHOULD ignore any inputResponses responses mapped
        # to a key that is not currently outstanding"); the task must exist (-32602).
        await board.get(params.task_id)
        return {}

    server.middleware.append(_task_augmented(served))
    server.add_request_handler("tasks/get", types.GetTaskRequestParams, get_task)
    server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, task_result)
    server.add_request_handler("tasks/list", types.PaginatedRequestParams, list_tasks)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, cancel_task)
    server.add_request_handler("tasks/update", UpdateTaskParams, update_task)


#: The extension's request methods (tasks/update is the extension's only).
EXTENSION_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})


class UpdateTaskParams(types.RequestParams):
    """tasks/update's params (the extension's UpdateTaskRequest): taskId, inputResponses."""

    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


def _modern(ctx: ServerRequestContext[Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


async def call_as_task(
    served: Served, name: str, arguments: dict[str, Any], notice: Notice | None
) -> dict[str, Any]:
    """The call's CallToolResult as a task keeps it (JSON, as the client reads it)."""
    result = await served.tool_result(name, arguments, None, notice)
    return dict(result.model_dump(by_alias=True, mode="json", exclude_none=True))


class _TaskServer(Server[Any]):
    """The SDK's server, also stating the task support it serves (the SDK has the
    capability's type but derives capabilities only from the spec methods it serves)."""

    def get_capabilities(self, *args: Any, **kwargs: Any) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(*args, **kwargs)
        if kwargs.get("protocol_version") in MODERN_PROTOCOL_VERSIONS:
            # The extension's "Capability Negotiation": in server/discover's capabilities,
            # `extensions: {"io.modelcontextprotocol/tasks": {}}`.
            extensions = {**(capabilities.extensions or {}), TASKS_EXTENSION: {}}
            return capabilities.model_copy(update={"extensions": extensions})
        return capabilities.model_copy(
            update={
                "tasks": types.ServerTasksCapability(
                    list=types.TasksListCapability(),
                    cancel=types.TasksCancelCapability(),
                    requests=types.ServerTasksRequestsCapability(
                        tools=types.TasksToolsCapability(call=types.TasksCallCapability())
                    ),
                )
            }
        )
