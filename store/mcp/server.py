"""The MCP server: the tools of `store.mcp.tools` and the task resources, on the official SDK.

Store work runs in one worker thread at a time (`anyio.to_thread`), so the event loop keeps
answering (a `wait_for_approval` in progress does not hold anything up) and the store sees
one caller, as from any other process. Every call acts as the server's configured agent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar, cast
from urllib.parse import unquote

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from ..adapters import claude_code
from ..errors import CommandRejected
from ..model import Actor
from ..services import answers
from ..store import Store
from ..version import __version__
from . import tasks, tools

T = TypeVar("T")
logger = logging.getLogger(__name__)
#: Refusal categories that are the caller's mistake (a bad URI, no such task): invalid params.
CALLERS_MISTAKE = frozenset({"usage", "not_found", "refused"})

#: How often a waiting call looks at the approval again, and tells its progress.
POLL_SECONDS = 0.2
PROGRESS_SECONDS = 2.0
Progress = Callable[[float, float, str], Awaitable[None]]
#: Run beside a wait on (task_id, approval_id), cancelled when the wait ends: how a waiting
#: call tells the client's user where a person decides it (store.mcp.tasks).
Notice = Callable[[str, str], Coroutine[Any, Any, None]]
#: The tools that wait on a person: they may run as MCP tasks (`execution.taskSupport`).
TASK_TOOLS = frozenset({tools.WAIT_TOOL, claude_code.PERMISSION_TOOL})
#: The protocol revisions the server speaks (the SDK's): through `initialize`, and the
#: stateless revision through `server/discover`.
PROTOCOL_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
DESCRIPTION = (
    "The durable record of an agent's long-running task. Speaks MCP "
    + ", ".join(reversed(PROTOCOL_VERSIONS))
    + f"; calls that wait on a person may run as tasks ({tasks.TASKS_VERSION} tasks, "
    "through initialize)."
)
TASK_URI = "boris://tasks/{task_id}"
BRIEF_URI = "boris://tasks/{task_id}/brief"

INSTRUCTIONS = (
    "Boris keeps the durable record of your task. Record an effect's intent (plan_effect) "
    "before doing anything to the world; when it needs approval, request_approval then "
    "wait_for_approval; dispatch_effect before you run the executor, record_response with "
    "what it reported, then observe_effect and reconcile_effect: only an observation settles "
    "what happened. A refused call is an error whose structured content names the code and "
    "the rule; nothing was written. Resume from resume_brief, never from your own narrative."
)


class BorisServer:
    """One store, one agent identity, the tools and resources over it."""

    def __init__(
        self,
        store: Store,
        actor: Actor,
        *,
        max_wait_seconds: float = 900.0,
        prompts: claude_code.PromptSettings | None = None,
    ) -> None:
        if actor.kind != "agent":
            raise CommandRejected(
                f"boris mcp acts for an agent, not a {actor.kind}: give --actor agent:ID"
            )
        self.store = store
        self.actor = actor
        # Signed as the agent by the one rule (signing.keys.signer_for): the key given
        # (`boris mcp --key`) or BORIS_KEY's; without one a signed store refuses each write
        # naming the `boris keys` lines that fix it, and the permission prompt denies with it.
        store.sign_as(actor)
        self.max_wait_seconds = max_wait_seconds
        self.specs = {s.name: s for s in tools.tool_specs(max_wait_seconds)}
        # Claude Code's permission prompt (store.adapters.claude_code), for the task it names.
        self.prompts = prompts or claude_code.PromptSettings()
        self.specs[claude_code.PERMISSION_TOOL] = PERMISSION_SPEC
        self._one = anyio.CapacityLimiter(1)
        # Calls run as MCP tasks (store.mcp.tasks), for as long as this server runs.
        self.board = tasks.TaskBoard()

    async def _in_store(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._one)

    # --- tools -----------------------------------------------------------------------------

    def tool_list(self) -> list[types.Tool]:
        return [
            types.Tool(
                name=s.name,
                description=s.description,
                input_schema=s.input_schema,
                annotations=types.ToolAnnotations(
                    read_only_hint=s.read_only, destructive_hint=False
                ),
                # A call that waits on a person may run as a task; without one it blocks.
                execution=types.ToolExecution(task_support="optional")
                if s.name in TASK_TOOLS
                else None,
            )
            for s in self.specs.values()
        ]

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        notice: Notice | None = None,
    ) -> dict[str, Any]:
        """The tool's answer object: `answers.ok(...)` or `answers.refusal(...)`."""
        spec = self.specs.get(name)
        if spec is None:
            return answers.refusal(answers.UsageError(f"no tool named {name!r}"))
        try:
            if spec.command is not None:
                return await self._in_store(
                    tools.run_command, self.store, self.actor, spec, arguments
                )
            if spec.name == tools.WAIT_TOOL:
                return await self._beside(
                    self.wait_for_approval(arguments, progress),
                    notice,
                    str(arguments.get("task_id") or ""),
                    str(arguments.get("approval_id") or ""),
                )
            if spec.name == claude_code.PERMISSION_TOOL:
                return answers.ok(await self.permission_prompt(arguments, progress, notice))
            return await self._in_store(tools.read, self.store, spec, arguments)
        except Exception as exc:  # every failure crosses as a refusal object, typed
            return answers.refusal(exc)

    async def wait_for_approval(
        self, arguments: dict[str, Any], progress: Progress | None = None
    ) -> dict[str, Any]:
        """Poll the approval until a person decides it (or it expires, goes stale, is
        revoked), for at most `timeout_seconds`. Cancelling the call ends the wait. While it
        waits, `progress` is told every few seconds (a client that asked for progress keeps
        its request timer alive that way)."""
        task_id = str(arguments.get("task_id") or "")
        approval_id = str(arguments.get("approval_id") or "")
        if not task_id or not approval_id:
            raise answers.UsageError("wait_for_approval needs task_id and approval_id")
        timeout = arguments.get("timeout_seconds", min(300.0, self.max_wait_seconds))
        # A number as the schema says: not a text that float() happens to read, nor a bool.
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            shown = json.dumps(timeout, default=str)[:40]
            raise answers.UsageError(f"timeout_seconds must be a number of seconds, not {shown}")
        if not 0 <= timeout <= self.max_wait_seconds:  # nan fails this too
            raise answers.UsageError(
                f"timeout_seconds must be between 0 and {self.max_wait_seconds:g}"
            )
        started = time.monotonic()
        told = started
        while True:
            now = await self._in_store(
                tools.approval_now,
                self.store,
                task_id,
                approval_id,
                arguments.get("lease_token"),
                self.actor,
            )
            waited = round(time.monotonic() - started, 3)
            if now["decided"] or waited >= timeout:
                return answers.ok(now, timed_out=not now["decided"], waited_seconds=waited)
            if progress is not None and time.monotonic() - told >= PROGRESS_SECONDS:
                told = time.monotonic()
                await progress(waited, timeout, f"approval {approval_id} is {now['state']}")
            await anyio.sleep(min(POLL_SECONDS, max(timeout - waited, 0.0)))

    async def _beside(
        self, wait: Awaitable[T], notice: Notice | None, task_id: str, approval_id: str
    ) -> T:
        """The wait, with the notice beside it (cancelled once the wait ends): a notice never
        holds up the wait, nor outlives it."""
        if notice is None or not task_id or not approval_id:
            return await wait
        async with anyio.create_task_group() as beside:
            beside.start_soon(notice, task_id, approval_id)
            result = await wait
            beside.cancel_scope.cancel()
        return result

    async def permission_prompt(
        self,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        notice: Notice | None = None,
    ) -> dict[str, Any]:
        """Claude Code's permission prompt: the call's intent recorded, an approval of exactly
        its input asked for, a person's decision waited for (at most the configured time),
        and Claude Code's answer, `allow` with the approved input or `deny` with why. Never
        an error: whatever fails denies, so nothing runs that Boris did not record."""
        prompts = self.prompts
        timeout = min(prompts.timeout_seconds, self.max_wait_seconds)

        async def wait(task_id: str, approval_id: str, _: float) -> tuple[dict[str, Any], bool]:
            waited = await self._beside(
                self.wait_for_approval(
                    {"task_id": task_id, "approval_id": approval_id, "timeout_seconds": timeout},
                    progress,
                ),
                notice,
                task_id,
                approval_id,
            )
            return dict(waited["result"]), bool(waited["timed_out"])

        return await claude_code.answer_prompt(
            self.store,
            self.actor,
            dataclasses.replace(prompts, timeout_seconds=timeout),
            arguments,
            in_store=self._in_store,
            wait=wait,
        )

    # --- resources -------------------------------------------------------------------------

    def resource_list(self) -> list[types.Resource]:
        out = []
        for task in self.store.tasks():
            tid = task.id
            out.append(
                types.Resource(
                    uri=TASK_URI.format(task_id=tid),
                    name=f"{tid} state",
                    title=f"{task.title} — state",
                    mime_type="application/json",
                )
            )
            out.append(
                types.Resource(
                    uri=BRIEF_URI.format(task_id=tid),
                    name=f"{tid} brief",
                    title=f"{task.title} — resume brief",
                    mime_type="application/json",
                )
            )
        return out

    async def _resource_step(self, fn: Callable[..., T], *args: Any) -> T:
        """Store work for a resource request; a failure is a JSON-RPC error with its code
        (the caller's: invalid params; the store's: internal) and the refusal object as
        `data`, never the SDK's catch-all (code 0 and a traceback on stderr)."""
        try:
            return await self._in_store(fn, *args)
        except Exception as exc:
            error = answers.refusal(exc)["error"]
            if error["category"] == "internal":  # a bug: keep its traceback for the report
                logger.exception("resource request failed")
            code = (
                types.INVALID_PARAMS
                if error["category"] in CALLERS_MISTAKE
                else types.INTERNAL_ERROR
            )
            raise MCPError(code=code, message=error["message"], data=error) from None

    def read_resource(self, uri: str) -> str:
        prefix = "boris://tasks/"
        if not uri.startswith(prefix):
            raise answers.UsageError(f"no resource {uri!r}: boris://tasks/ID[/brief]")
        rest = uri[len(prefix) :]
        brief = rest.endswith("/brief")
        task_id = unquote(rest[: -len("/brief")] if brief else rest)
        value: Any
        if brief:
            from ..services.resume import resume_brief

            value = resume_brief(self.store, task_id)
        else:
            value = self.store.task(task_id)
        return json.dumps(answers.jsonable(value), default=str, sort_keys=True)

    # --- the SDK's server ----------------------------------------------------------------

    def sdk_server(self) -> Server[Any]:
        async def list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self.tool_list())

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

            notice = self._notice(ctx.session, ctx.request_id, None)
            arguments = dict(params.arguments or {})
            return await self.tool_result(params.name, arguments, progress, notice)

        async def list_resources(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListResourcesResult:
            return types.ListResourcesResult(
                resources=await self._resource_step(self.resource_list)
            )

        async def list_templates(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListResourceTemplatesResult:
            return types.ListResourceTemplatesResult(
                resource_templates=[
                    types.ResourceTemplate(
                        uri_template=TASK_URI,
                        name="task state",
                        description="A task's whole current state (JSON)",
                        mime_type="application/json",
                    ),
                    types.ResourceTemplate(
                        uri_template=BRIEF_URI,
                        name="resume brief",
                        description="A task's resume brief (JSON)",
                        mime_type="application/json",
                    ),
                ]
            )

        async def read_resource(
            ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
        ) -> types.ReadResourceResult:
            uri = str(params.uri)
            text = await self._resource_step(self.read_resource, uri)
            return types.ReadResourceResult(
                contents=[
                    types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
                ]
            )

        server = _TaskServer(
            "boris",
            version=__version__,
            title="Boris: the durable record of an agent's task",
            description=DESCRIPTION,
            instructions=INSTRUCTIONS,
            lifespan=self._lifespan,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
        )
        self._serve_tasks(server)
        return server

    # --- MCP tasks and elicitation (store.mcp.tasks) ------------------------------------

    async def tool_result(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        notice: Notice | None = None,
    ) -> types.CallToolResult:
        """A tool call's MCP result, whether it is answered at once or as a task."""
        if name == claude_code.PERMISSION_TOOL:
            # Claude Code reads one text content holding the decision's JSON, exactly.
            decision = await self.permission_prompt(arguments, progress, notice)
            return types.CallToolResult(content=[types.TextContent(text=json.dumps(decision))])
        answer = await self.call(name, arguments, progress, notice)
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(answer, default=str, sort_keys=True))],
            structured_content=json.loads(json.dumps(answer, default=str)),
            is_error=not answer["ok"],
        )

    @contextlib.asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with self.board.running():
            yield {}

    def _notice(self, session: Any, request_id: Any, task: tasks.Running | None) -> Notice | None:
        """Beside a wait: when the client declared elicitation, its user is told what waits
        and where a person decides it (the answer decides nothing: store.mcp.tasks says why);
        a task's status says where the decision stands. None when there is nothing to do."""
        elicit = tasks.can_elicit(session)
        if not elicit and task is None:
            return None

        async def notice(task_id: str, approval_id: str) -> None:
            now = await self._in_store(tools.approval_now, self.store, task_id, approval_id)
            if now["decided"]:
                return
            queue = f"approval {approval_id} waits for a person in Boris Desktop's queue"
            if task is not None:
                task.say("working", queue)
            if not elicit:
                return
            text = await self._in_store(tasks.notice_text, self.store, task_id, approval_id)
            if task is not None:
                task.say("input_required", f"{queue}; the client's user is told where to decide")
            related = None if task is not None else request_id
            action = await tasks.offer_to_person(
                session, text, related, None if task is None else task.task_id
            )
            if task is not None:
                task.say("working", f"{queue} (the client's user answered: {action})")

        return notice

    def _serve_tasks(self, server: Server[Any]) -> None:
        """The 2025-11-25 tasks: a task-augmented `tools/call` of a tool that waits on a
        person answers with a task at once; tasks/get, tasks/result, tasks/list, tasks/cancel."""

        async def task_augmented(
            ctx: ServerRequestContext[Any], call_next: CallNext
        ) -> HandlerResult:
            params = ctx.params if isinstance(ctx.params, Mapping) else {}
            asked = params.get("task")
            if (
                ctx.method != "tools/call"
                or not isinstance(asked, Mapping)
                # 2026-07-28 moved tasks out of the core protocol: the SDK's own handling there.
                or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            ):
                return await call_next(ctx)
            name = str(params.get("name") or "")
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
            ttl = asked.get("ttl")
            session, request_id = ctx.session, ctx.request_id

            async def work(task: tasks.Running) -> dict[str, Any]:
                result = await self.tool_result(
                    name, arguments, None, self._notice(session, request_id, task)
                )
                return dict(result.model_dump(by_alias=True, mode="json", exclude_none=True))

            task = self.board.start(name, ttl if isinstance(ttl, int) else None, work)
            return {"task": task.wire()}

        async def get_task(
            ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams
        ) -> dict[str, Any]:
            return self.board.get(params.task_id).wire()

        async def task_result(
            ctx: ServerRequestContext[Any], params: types.GetTaskPayloadRequestParams
        ) -> dict[str, Any]:
            return await self.board.result(params.task_id)

        async def list_tasks(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
        ) -> dict[str, Any]:
            return {"tasks": self.board.listed()}

        async def cancel_task(
            ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams
        ) -> dict[str, Any]:
            return self.board.cancel(params.task_id)

        server.middleware.append(task_augmented)
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, get_task)
        server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, task_result)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, list_tasks)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, cancel_task)


class _TaskServer(Server[Any]):
    """The SDK's server, also stating the task support it serves (the SDK has the
    capability's type but derives capabilities only from the spec methods it serves)."""

    def get_capabilities(self, *args: Any, **kwargs: Any) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(*args, **kwargs)
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


PERMISSION_SPEC = tools.ToolSpec(
    claude_code.PERMISSION_TOOL,
    "Claude Code's permission prompt, for `claude -p --permission-prompt-tool "
    "mcp__boris__permission_prompt` (not for agents to call): records the tool call's intent "
    "in the task `boris mcp --task` names, asks a person in Boris to approve exactly its input, "
    "waits for the decision and answers {behavior: allow, updatedInput} with the approved "
    "input (a person's edit when they made one) or {behavior: deny, message}.",
    {
        "type": "object",
        "properties": {
            "tool_name": {"type": "string", "description": "The tool requesting permission"},
            "input": {"type": "object", "description": "The input for the tool"},
            "tool_use_id": {"type": "string", "description": "The tool use request's id"},
        },
        "required": ["tool_name", "input"],
    },
    None,
    False,
)


async def serve_stdio(server: BorisServer) -> None:
    """MCP over stdin/stdout. The SDK reads stdin through `wire.ScreenedLines`, which answers
    malformed lines itself (the SDK drops them unanswered); stdout stays the SDK's. The store
    starts no child process and reads no stdin, so fd 0 needs no diversion."""
    from mcp.server.stdio import stdio_server

    from .wire import ScreenedLines

    sdk = server.sdk_server()
    lines = ScreenedLines(sys.stdin.buffer)  # each line read with the cap of store.limits
    # stdio_server only iterates its stdin (`async for line in stdin`), as ScreenedLines allows.
    async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read, write):
        lines.answer_through(write.send)
        await sdk.run(read, write, sdk.create_initialization_options())


LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def serve_http(server: BorisServer, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp, on loopback only (anyone who can reach the
    port acts as this agent). `ready` is told the address once the socket listens."""
    if host not in LOOPBACK:
        raise answers.UsageError(
            f"boris mcp serves HTTP on loopback only (127.0.0.1, ::1, localhost), not {host!r}: "
            "to serve agents elsewhere, each with its own token, run boris mcp --http --team"
        )
    serve_asgi(server.sdk_server().streamable_http_app(host=host), host, port, ready)


def serve_asgi(app: Any, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Serve the ASGI `app` at HOST:PORT until the process is stopped; `ready` is told its
    http://HOST:PORT/mcp address once the socket listens (the team server's too:
    store.mcp.team)."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(http.serve)
            while not http.started:
                if http.should_exit:
                    return
                await anyio.sleep(0.02)
            bound = http.servers[0].sockets[0].getsockname()
            ready(f"http://{host if ':' not in host else f'[{host}]'}:{bound[1]}/mcp")

    anyio.run(run)
