"""The MCP server: the tools of `store.mcp.tools` and the task resources, on the official SDK.

Store work runs in one worker thread at a time (store.mcp.worker), so the event loop keeps
answering (a `wait_for_approval` in progress does not hold anything up) and the store sees
one caller, as from any other process. Every call acts as the server's configured agent.

`BorisServer` composes the parts: the tools (the ledger's writes and reads, store.mcp.tools),
the calls that wait on a person (store.mcp.waits), the resources (store.mcp.resources), and
the SDK's server over them with its MCP tasks (store.mcp.sdk).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

import anyio
import mcp_types as types
from mcp.server import Server

from ..adapters import claude_code
from ..errors import CommandRejected
from ..model import Actor
from ..services import answers
from ..store import Store
from . import sdk, tasks, tools
from .board import age_seconds as board_age
from .resources import BRIEF_URI, TASK_URI, Resources
from .sdk import DESCRIPTION, INSTRUCTIONS, PROTOCOL_VERSIONS
from .waits import (
    PERMISSION_SPEC,
    POLL_SECONDS,
    PROGRESS_SECONDS,
    TASK_TOOLS,
    Notice,
    Progress,
    Waits,
)
from .worker import StoreWorker

__all__ = [
    "BRIEF_URI",
    "DESCRIPTION",
    "INSTRUCTIONS",
    "LOOPBACK",
    "PERMISSION_SPEC",
    "POLL_SECONDS",
    "PROGRESS_SECONDS",
    "PROTOCOL_VERSIONS",
    "TASK_TOOLS",
    "TASK_URI",
    "BorisServer",
    "Notice",
    "Progress",
    "serve_asgi",
    "serve_http",
    "serve_stdio",
]

T = TypeVar("T")


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
        self.worker = StoreWorker(store, actor)
        self.waits = Waits(self.worker, max_wait_seconds, self.prompts)
        self.resources = Resources(self.worker)
        # Calls run as MCP tasks (store.mcp.tasks), kept in the store (store.mcp.board).
        self.board = tasks.TaskBoard(self.worker, self.resume_task)

    async def _in_store(self, fn: Callable[..., T], *args: Any) -> T:
        return await self.worker.run(fn, *args)

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
                return await self.waits.beside(
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

    # --- the calls that wait on a person (store.mcp.waits) --------------------------------

    async def wait_for_approval(
        self, arguments: dict[str, Any], progress: Progress | None = None
    ) -> dict[str, Any]:
        """Poll the approval until a person decides it (store.mcp.waits.Waits)."""
        return await self.waits.wait_for_approval(arguments, progress)

    async def permission_prompt(
        self,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        notice: Notice | None = None,
    ) -> dict[str, Any]:
        """Claude Code's permission prompt, answered (store.mcp.waits.Waits)."""
        return await self.waits.permission_prompt(arguments, progress, notice)

    def resume_task(self, task: tasks.Running) -> tasks.Work | None:
        """A recorded task no server runs now (its server stopped), taken up again: a wait
        for a person's decision waits on with what is left of its timeout (the approval was
        in the store all along). Claude Code's permission prompt is not taken up again (it
        would record its call a second time): None."""
        if task.tool != tools.WAIT_TOOL:
            return None
        arguments = dict(task.arguments)
        asked = arguments.get("timeout_seconds", min(300.0, self.max_wait_seconds))
        if isinstance(asked, int | float) and not isinstance(asked, bool):
            arguments["timeout_seconds"] = max(0.0, float(asked) - board_age(task))

        async def work(running: tasks.Running) -> dict[str, Any]:
            return await sdk.call_as_task(
                self, task.tool, arguments, self.waits.notice(None, None, running)
            )

        return work

    # --- resources (store.mcp.resources) and the SDK's server (store.mcp.sdk) ------------

    def resource_list(self) -> list[types.Resource]:
        return self.resources.resource_list()

    def read_resource(self, uri: str) -> str:
        return self.resources.read_resource(uri)

    def sdk_server(self) -> Server[Any]:
        return sdk.sdk_server(self)


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
