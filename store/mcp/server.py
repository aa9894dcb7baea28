"""The MCP server: the tools of `store.mcp.tools` and the task resources, on the official SDK.

Store work runs in one worker thread at a time (`anyio.to_thread`), so the event loop keeps
answering (a `wait_for_approval` in progress does not hold anything up) and the store sees
one caller, as from any other process. Every call acts as the server's configured agent.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast
from urllib.parse import unquote

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from ..adapters import claude_code
from ..errors import CommandRejected
from ..model import Actor
from ..services import answers
from ..store import Store
from ..version import __version__
from . import tools

T = TypeVar("T")
logger = logging.getLogger(__name__)
#: Refusal categories that are the caller's mistake (a bad URI, no such task): invalid params.
CALLERS_MISTAKE = frozenset({"usage", "not_found", "refused"})

#: How often a waiting call looks at the approval again, and tells its progress.
POLL_SECONDS = 0.2
PROGRESS_SECONDS = 2.0
Progress = Callable[[float, float, str], Awaitable[None]]
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
        self.max_wait_seconds = max_wait_seconds
        self.specs = {s.name: s for s in tools.tool_specs(max_wait_seconds)}
        # Claude Code's permission prompt (store.adapters.claude_code), for the task it names.
        self.prompts = prompts or claude_code.PromptSettings()
        self.specs[claude_code.PERMISSION_TOOL] = PERMISSION_SPEC
        self._one = anyio.CapacityLimiter(1)

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
            )
            for s in self.specs.values()
        ]

    async def call(
        self, name: str, arguments: dict[str, Any], progress: Progress | None = None
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
                return await self.wait_for_approval(arguments, progress)
            if spec.name == claude_code.PERMISSION_TOOL:
                return answers.ok(await self.permission_prompt(arguments, progress))
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
            now = await self._in_store(tools.approval_now, self.store, task_id, approval_id)
            waited = round(time.monotonic() - started, 3)
            if now["decided"] or waited >= timeout:
                return answers.ok(now, timed_out=not now["decided"], waited_seconds=waited)
            if progress is not None and time.monotonic() - told >= PROGRESS_SECONDS:
                told = time.monotonic()
                await progress(waited, timeout, f"approval {approval_id} is {now['state']}")
            await anyio.sleep(min(POLL_SECONDS, max(timeout - waited, 0.0)))

    async def permission_prompt(
        self, arguments: dict[str, Any], progress: Progress | None = None
    ) -> dict[str, Any]:
        """Claude Code's permission prompt: the call's intent recorded, an approval of exactly
        its input asked for, a person's decision waited for (at most the configured time),
        and Claude Code's answer, `allow` with the approved input or `deny` with why. Never
        an error: whatever fails denies, so nothing runs that Boris did not record."""
        prompts = self.prompts
        try:
            asked = await self._in_store(
                claude_code.ask, self.store, self.actor, prompts, arguments
            )
            if asked.decision is not None:
                return asked.decision
            task_id = str(prompts.task_id)
            timeout = min(prompts.timeout_seconds, self.max_wait_seconds)
            try:
                waited = await self.wait_for_approval(
                    {
                        "task_id": task_id,
                        "approval_id": asked.approval_id,
                        "timeout_seconds": timeout,
                    },
                    progress,
                )
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):  # nobody will run it: say so in the record
                    await self._in_store(
                        claude_code.cancel_unanswered, self.store, self.actor, task_id, asked
                    )
                raise
            settle = functools.partial(
                claude_code.settle,
                tool_name=str(arguments.get("tool_name")),
                timed_out=bool(waited["timed_out"]),
                waited_for=timeout,
            )
            return await self._in_store(
                settle, self.store, self.actor, task_id, asked, waited["result"]
            )
        except Exception as exc:
            error = answers.refusal(exc)["error"]
            if error["category"] == "internal":
                logger.exception("permission prompt failed")
            return claude_code.deny(
                f"Boris could not record this call, so it was not run: {error['message']}"
            )

    # --- resources -------------------------------------------------------------------------

    def resource_list(self) -> list[types.Resource]:
        out = []
        for task in self.store.tasks():
            tid = str(task["id"])
            out.append(
                types.Resource(
                    uri=TASK_URI.format(task_id=tid),
                    name=f"{tid} state",
                    title=f"{task['title']} — state",
                    mime_type="application/json",
                )
            )
            out.append(
                types.Resource(
                    uri=BRIEF_URI.format(task_id=tid),
                    name=f"{tid} brief",
                    title=f"{task['title']} — resume brief",
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
        if brief:
            from ..services.resume import resume_brief

            value = resume_brief(self.store, task_id)
        else:
            value = self.store.task(task_id)
        return json.dumps(value, default=str, sort_keys=True)

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

            if params.name == claude_code.PERMISSION_TOOL:
                # Claude Code reads one text content holding the decision's JSON, exactly.
                decision = await self.permission_prompt(dict(params.arguments or {}), progress)
                return types.CallToolResult(content=[types.TextContent(text=json.dumps(decision))])
            answer = await self.call(params.name, dict(params.arguments or {}), progress)
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps(answer, default=str, sort_keys=True))],
                structured_content=json.loads(json.dumps(answer, default=str)),
                is_error=not answer["ok"],
            )

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

        return Server(
            "boris",
            version=__version__,
            title="Boris: the durable record of an agent's task",
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
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
    lines = ScreenedLines(anyio.wrap_file(sys.stdin.buffer))
    # stdio_server only iterates its stdin (`async for line in stdin`), as ScreenedLines allows.
    async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read, write):
        lines.answer_through(write.send)
        await sdk.run(read, write, sdk.create_initialization_options())


LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def serve_http(server: BorisServer, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp, on loopback only (anyone who can reach the
    port acts as this agent). `ready` is told the address once the socket listens."""
    import uvicorn

    if host not in LOOPBACK:
        raise answers.UsageError(
            f"boris mcp serves HTTP on loopback only (127.0.0.1, ::1, localhost), not {host!r}"
        )
    app = server.sdk_server().streamable_http_app(host=host)
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
