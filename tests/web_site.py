"""`boris serve` for the decision page's tests: a signed default store (tests/signed_default.py,
rita its root person), an agent's pending e-mail approval, and the real server in a process of
its own on a free loopback port; `Client` speaks to it as the page's script does."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from signed_default import ROOT, Signed

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
