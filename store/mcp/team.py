"""`boris mcp --http --team`: one MCP server for every agent of a team store (issue 40).

Agents never hold the store's database login: this server does, and each agent
authenticates to it with a bearer token a person issued (`boris agent-token issue`,
store.team). Built on the MCP SDK's own authentication: its `BearerAuthBackend` asks
`AgentTokens` (a `TokenVerifier`) about the `Authorization: Bearer TOKEN` of every HTTP
request, and the token names the agent (`AccessToken.client_id` is `agent:ID`, its
`subject` the token's id). A request without a token the store issued and has not revoked
is answered 401 with one line saying what to send; nothing else is done for it.

Each agent gets a `BorisServer` of its own, made on its first request: its own store
connection (the server's login) signing with the agent's own key (`--keys DIR`, one
`agent-ID.pem` per agent; never BORIS_KEY, which names one key for one actor), its own MCP
sessions (the SDK binds a session to the token that opened it: another agent's token, or a
revoked one, cannot use it) and its own MCP tasks. So every call acts as the agent its
token names, through the command layer, and the database records the server's login as the
role that wrote it (an agents' role: store.team).

The token is checked on every request, so a revoked token stops working at its next
request; a call already running (a wait for a person) runs to its end.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .. import team
from ..adapters import claude_code
from ..model import Actor
from ..signing.keys import agent_key_path, load_key
from ..store import Store
from .server import LOOPBACK, BorisServer, serve_asgi

#: What a refused request is told, in one line (the body's error_description and the
#: WWW-Authenticate header's): what to send, and who makes it.
ISSUE = "a person issues one: boris agent-token issue agent:ID --actor person:YOU"
NO_TOKEN = (
    "boris mcp --team serves agents with a token only: send Authorization: Bearer TOKEN; " + ISSUE
)
BAD_TOKEN = (
    "boris mcp --team: this agent token is not one the store issued, or it was revoked; " + ISSUE
)


class AgentTokens:
    """The SDK's `TokenVerifier` over the store's agents' tokens (store.team): a token the
    store issued and has not revoked is the agent it names; anything else is None."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._one = anyio.CapacityLimiter(1)

    def _look_up(self, token: str) -> tuple[str, Actor] | None:
        with self.store.read() as conn:
            return team.token_agent(conn, token)

    async def verify_token(self, token: str) -> AccessToken | None:
        found = await anyio.to_thread.run_sync(self._look_up, token, limiter=self._one)
        if found is None:
            return None
        token_id, agent = found
        return AccessToken(
            token=token_id,  # the token's public id: the secret stays in the request
            client_id=f"agent:{agent.id}",
            subject=token_id,
            scopes=[],
            claims={"agent_id": agent.id, "agent_name": agent.name},
        )


@dataclass
class _Agent:
    store: Store
    server: BorisServer
    sessions: StreamableHTTPSessionManager


class TeamServer:
    """The ASGI endpoint at /mcp behind the SDK's bearer authentication: each request is
    handed to the MCP server of the agent its token names (made on its first request)."""

    def __init__(
        self,
        store: Store,
        *,
        host: str,
        keys: Path | None = None,
        max_wait_seconds: float = 900.0,
        prompts: claude_code.PromptSettings | None = None,
    ) -> None:
        self.store = store
        self.keys = keys
        self.max_wait_seconds = max_wait_seconds
        self.prompts = prompts
        # The SDK's DNS-rebinding protection on loopback, as its own app makes it; elsewhere
        # every request carries a bearer token, which a browser never sends by itself.
        self.security = (
            TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
            if host in LOOPBACK
            else None
        )
        self._agents: dict[str, _Agent] = {}
        self._opening = anyio.Lock()
        self._group: TaskGroup | None = None

    def key_path(self, agent_id: str) -> Path | None:
        """Where the agent's key is: `--keys DIR`/agent-ID.pem (the name `boris keys new` is
        suggested), or None without --keys."""
        return None if self.keys is None else self.keys / agent_key_path(agent_id).name

    def _open(self, actor: Actor) -> _Agent:
        path = self.key_path(actor.id)
        key = load_key(path) if path is not None and path.is_file() else None
        location = self.store.location
        store = Store.open(location.directory, url=location.url, create=False, signer=key)
        try:
            server = BorisServer(
                store, actor, max_wait_seconds=self.max_wait_seconds, prompts=self.prompts
            )
            sessions = StreamableHTTPSessionManager(
                app=server.sdk_server(), security_settings=self.security
            )
        except BaseException:
            store.close()
            raise
        return _Agent(store, server, sessions)

    async def _run(
        self, sessions: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]
    ) -> None:
        async with sessions.run():
            task_status.started()
            await anyio.sleep_forever()

    async def agent(self, token: AccessToken) -> _Agent:
        """The agent's MCP server, made and started on its first request."""
        claims = token.claims or {}
        actor = Actor(kind="agent", id=str(claims["agent_id"]), name=str(claims["agent_name"]))
        async with self._opening:
            found = self._agents.get(actor.id)
            if found is None:
                if self._group is None:
                    raise RuntimeError("the team server is not running (its lifespan)")
                found = await anyio.to_thread.run_sync(self._open, actor)
                try:
                    await self._group.start(self._run, found.sessions)
                except BaseException:
                    found.store.close()
                    raise
                self._agents[actor.id] = found
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            await _unauthorized(send, BAD_TOKEN if _bearer_sent(scope) else NO_TOKEN)
            return
        agent = await self.agent(user.access_token)
        await agent.sessions.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Starlette) -> AsyncIterator[None]:
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                try:
                    yield
                finally:
                    group.cancel_scope.cancel()
        finally:
            self._group = None
            agents, self._agents = self._agents, {}
            for agent in agents.values():
                agent.store.close()

    def app(self) -> Starlette:
        """The ASGI app: the SDK's bearer authentication (its backend asking `AgentTokens`,
        its context middleware), then this endpoint at /mcp."""
        return Starlette(
            routes=[Route("/mcp", endpoint=self)],
            middleware=[
                Middleware(
                    AuthenticationMiddleware, backend=BearerAuthBackend(AgentTokens(self.store))
                ),
                Middleware(AuthContextMiddleware),
            ],
            lifespan=self.lifespan,
        )


def _bearer_sent(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            return bytes(value).lower().startswith(b"bearer ")
    return False


async def _unauthorized(send: Send, line: str) -> None:
    """HTTP 401 with the line as the OAuth error's description (RFC 6750), in the body and
    the WWW-Authenticate header, as the SDK's own bearer check answers."""
    body = json.dumps({"error": "invalid_token", "error_description": line}).encode()
    challenge = f'Bearer error="invalid_token", error_description="{line}"'
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode("latin-1")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def serve_team(team_server: TeamServer, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Serve every agent at http://HOST:PORT/mcp until the process is stopped."""
    serve_asgi(team_server.app(), host, port, ready)


__all__ = ["AgentTokens", "TeamServer", "serve_team"]
