"""`boris serve` for the decision page's tests: a signed default store (tests/signed_default.py,
rita its root person), an agent's pending e-mail approval, and the real server in a process of
its own on a free loopback port; `Client` speaks to it as the page's script does."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from signed_default import ROOT, Signed
from web_authenticator import SoftAuthenticator

MESSAGE = (
    "From: drafter@example.org\nTo: team@example.org\nSubject: Week 49 <status>\n\n"
    "All green. <script>alert(1)</script>\n"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def mail_approval(
    signed: Signed, task: str, text: str = MESSAGE, expires: int = 3600
) -> tuple[str, str]:
    """The agent plans a mail and asks for approval: (effect id, approval id)."""
    effect = signed.ok(
        "plan-effect", task, "--kind", "send", "--target", "mailto:team@example.org",
        "--consequence", "mail the team the week's status", "--text", text,
        "--requires-approval", "--policy", "mail is reviewed", agent=True,
    ).strip()  # fmt: skip
    approval = signed.ok(
        "request-approval", task, "--effect", effect, "--policy", "mail is reviewed",
        "--expires-in", str(expires), agent=True,
    ).strip()  # fmt: skip
    return effect, approval


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    origin: str
    register_url: str

    clients: list[Client] = field(default_factory=list)

    def client(self) -> Client:
        made = Client(self.origin)
        self.clients.append(made)
        return made

    def register(self, origin: str = "") -> tuple[Client, SoftAuthenticator]:
        """The person registers a passkey through the server's one-time link, on an
        authenticator of `origin` (the server's own by default): signed in."""
        client, auth = self.client(), SoftAuthenticator(origin or self.origin)
        token = self.register_url.split("token=")[1]
        assert client.page(f"/register?token={token}").status_code == 200
        key, options = client.begin("/auth/register/begin", {"token": token})
        done = client.post(
            "/auth/register/finish",
            {"key": key, "token": token, "credential": auth.create(options)},
        )
        assert done.status_code == 200, done.text
        return client, auth

    def stop(self) -> str:
        """Stop the server; what it wrote on stderr."""
        for c in self.clients:
            c.http.close()
        self.process.terminate()
        try:
            _out, err = self.process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _out, err = self.process.communicate()
        return err.decode()


def serve(signed: Signed, *extra: str, scheme: str = "http") -> Server:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "store.cli",
            "serve",
            "--actor",
            "person:rita",
            "--port",
            str(port),
            *extra,
        ],
        env=signed.env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    lines = [proc.stdout.readline().decode(), proc.stdout.readline().decode()]
    found = re.search(rf"({scheme}://localhost:\d+/register\?token=\S+)", lines[1])
    assert found, [*lines, proc.stderr.read().decode() if proc.poll() is not None else ""]
    origin = f"{scheme}://localhost:{port}"
    for _ in range(100):
        try:
            httpx.get(origin + "/static/boris.css", timeout=1, verify=False)
            break
        except httpx.TransportError:
            time.sleep(0.05)
    return Server(proc, origin, found.group(1))


@dataclass
class Client:
    """The page's script over HTTP: its session cookie, its CSRF token, its ceremonies."""

    origin: str
    cookie: str = ""
    csrf: str = ""
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=20))

    def _keep(self, r: httpx.Response) -> None:
        for value in r.headers.get_list("set-cookie"):
            self.cookie = value.split(";", 1)[0]

    def page(self, path: str) -> httpx.Response:
        r = self.http.get(self.origin + path, headers={"cookie": self.cookie})
        self._keep(r)
        found = re.search(r'name=csrf-token content="([^"]*)"', r.text)
        if found:
            self.csrf = found.group(1)
        return r

    def post(self, path: str, body: dict[str, Any], *, csrf: bool = True) -> httpx.Response:
        headers = {"cookie": self.cookie, "content-type": "application/json"}
        if csrf:
            headers["x-csrf-token"] = self.csrf
        r = self.http.post(self.origin + path, content=json.dumps(body), headers=headers)
        self._keep(r)
        return r

    def begin(self, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        r = self.post(path, body)
        assert r.status_code == 200, r.text
        answer = r.json()
        return answer["key"], json.loads(answer["options"])


class WaitingAgent(threading.Thread):
    """The agent over MCP (the official client over `boris mcp`, with the agent's key): asks
    for the approval, then waits on it (`wait_for_approval`); `result` is what it is told."""

    def __init__(
        self,
        signed: Signed,
        payload: dict[str, Any],
        consequence: str = "mail the team the week's status",
        **asked: Any,
    ) -> None:
        super().__init__(daemon=True)
        self.signed, self.payload, self.consequence = signed, payload, consequence
        self.extra = asked  # e.g. expires_in_seconds
        self.asked = threading.Event()
        self.approval = ""
        self.result: dict[str, Any] = {}
        self.failed: BaseException | None = None

    def run(self) -> None:
        import anyio

        try:
            anyio.run(self._scenario)
        except BaseException as exc:  # shown by the test's assertion
            self.failed = exc
            self.asked.set()

    async def _scenario(self) -> None:
        from mcp import ClientSession, StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "store.cli", "mcp", "--actor", self.signed.agent],
            env=self.signed.env(agent=True),
            cwd=str(ROOT),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            asked = await session.call_tool(
                "request_approval",
                {
                    "task_id": "weekly",
                    "payload": self.payload,
                    "consequence": self.consequence,
                    "policy": "mail is reviewed",
                    **self.extra,
                },
            )
            assert not asked.is_error, asked
            self.approval = asked.structured_content["result"]
            self.asked.set()
            got = await session.call_tool(
                "wait_for_approval",
                {"task_id": "weekly", "approval_id": self.approval, "timeout_seconds": 90},
            )
            self.result = dict(got.structured_content or {})

    def told(self, timeout: float = 90) -> dict[str, Any]:
        """What the agent was told, once its wait has ended."""
        self.join(timeout)
        assert self.failed is None and not self.is_alive(), self.failed
        return self.result
