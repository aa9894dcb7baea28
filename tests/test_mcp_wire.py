"""`boris mcp` on the wire: malformed lines get JSON-RPC 2.0 errors, nesting is bounded, and
errors carry their codes. The server is the real process, written to with raw bytes (the SDK's
client cannot send a malformed message); the usage error goes through the real client."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from mcp_types import JSONRPCError
from test_mcp_e2e import ROOT, Agent, _env, _store_args, mcp_session

from store.limits import MAX_DEPTH
from store.mcp.wire import MAX_MESSAGE_DEPTH, depth_exceeds, screen

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


class RawClient:
    """`boris mcp` over stdio, one line of bytes at a time."""

    def __init__(self, store_dir: Path, store_url: str | None) -> None:
        argv = [sys.executable, "-m", "store.cli", "mcp", *_store_args(store_dir, store_url)]
        self.proc = subprocess.Popen(
            [*argv, "--actor", "agent:raw"],
            cwd=ROOT,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.stdout: IO[bytes] = self.proc.stdout
        self.buffer = b""  # read from the pipe, not yet a whole line

    def send(self, line: bytes) -> None:
        self.stdin.write(line + b"\n")
        self.stdin.flush()

    def answer(self, within: float = 20.0) -> dict[str, Any]:
        """The next line from the pipe, whole (two may come in one read: both are kept)."""
        deadline = time.monotonic() + within
        while b"\n" not in self.buffer:
            ready, _, _ = select.select(
                [self.stdout], [], [], max(0.0, deadline - time.monotonic())
            )
            assert ready, f"no answer within {within} s"
            chunk = os.read(self.stdout.fileno(), 1 << 16)
            assert chunk, "the server closed its output"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, line: bytes) -> dict[str, Any]:
        self.send(line)
        return self.answer()

    def start(self) -> None:
        assert "result" in self.ask(json.dumps(INITIALIZE).encode())
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def finish(self) -> str:
        """Close stdin; the server exits 0. Its stderr."""
        self.stdin.close()
        assert self.proc.wait(timeout=30) == 0
        assert self.proc.stderr is not None
        stderr = self.proc.stderr.read().decode()
        self.stdout.close()
        self.proc.stderr.close()
        return stderr


DEEP = b"[" * 100_000 + b"]" * 100_000
MALFORMED = [
    (b"this is not json", -32700),
    (b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"caf\xe9"}}', -32700),
    (b'{"jsonrpc":"2.0","id":6,', -32700),
    (b'[{"jsonrpc":"2.0","id":7,"method":"ping"}]', -32600),
    (b"[]", -32600),
    (b'"ping"', -32600),
    (b'{"id":8,"method":"ping"}', -32600),
    (b'{"jsonrpc":"1.0","id":9,"method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":10}', -32600),
    (
        b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"record_note",'
        b'"arguments":{"task_id":"t","text":' + DEEP + b"}}}",
        -32600,
    ),
]


def test_every_malformed_line_is_answered_with_its_json_rpc_error(
    tmp_path: Path, store_dir: Path, store_url: str | None
) -> None:
    client = RawClient(store_dir, store_url)
    try:
        client.start()
        for line, code in MALFORMED:
            started = time.monotonic()
            answer = client.ask(line)
            assert answer["jsonrpc"] == "2.0", line[:60]
            # The id where the line is a JSON-RPC 2.0 request naming one (the deep request's,
            # read without recursion), else null (issue 40; tests/test_mcp_hostile.py).
            assert answer["id"] == (11 if line.startswith(b'{"jsonrpc":"2.0","id":11,') else None)
            assert answer["error"]["code"] == code, (line[:60], answer)
            assert time.monotonic() - started < 5, line[:60]  # the deep one too, at once
        # The server goes on serving; a blank line between messages is not a message.
        client.send(b"")
        assert client.ask(b'{"jsonrpc":"2.0","id":12,"method":"ping"}') == {
            "jsonrpc": "2.0",
            "id": 12,
            "result": {},
        }
        # A malformed line just before the end of input is still answered.
        client.send(b"{oops")
        client.stdin.close()
        assert client.answer()["error"]["code"] == -32700
    finally:
        if not client.stdin.closed:
            client.stdin.close()
        client.proc.wait(timeout=30)
    assert client.proc.returncode == 0
    assert client.proc.stderr is not None
    assert b"Traceback" not in client.proc.stderr.read()
    client.stdout.close()
    client.proc.stderr.close()


def test_a_resource_error_has_its_code_and_the_refusal_and_no_traceback(
    tmp_path: Path, store_dir: Path, store_url: str | None
) -> None:
    client = RawClient(store_dir, store_url)
    try:
        client.start()
        for n, uri in enumerate(["boris://tasks/nope", "boris://elsewhere/x"]):
            request = {"jsonrpc": "2.0", "id": 20 + n, "method": "resources/read"}
            request["params"] = {"uri": uri}
            answer = client.ask(json.dumps(request).encode())
            assert answer["id"] == 20 + n
            assert answer["error"]["code"] == -32602, answer  # invalid params, not 0
            assert answer["error"]["data"]["category"] in {"not_found", "usage"}
        assert answer["error"]["data"]["code"] == "usage"
    finally:
        stderr = client.finish()
    assert "Traceback" not in stderr, stderr


def test_a_timeout_that_is_not_a_number_is_a_usage_error(
    tmp_path: Path, store_dir: Path, store_url: str | None, ws: Path
) -> None:
    async def scenario() -> None:
        async with mcp_session(store_dir, store_url) as session:
            agent = Agent(session)
            task = (
                await agent(
                    "create_task", title="T", owner="o", objective="x", scope_paths=[str(ws)]
                )
            )["result"]
            apr = (
                await agent(
                    "request_approval",
                    task_id=task,
                    payload={"send": "x"},
                    consequence="send x",
                    policy="p",
                )
            )["result"]
            for bad in ["abc", "5", True, None, [1]]:
                refused = await agent.refused(
                    "wait_for_approval", task_id=task, approval_id=apr, timeout_seconds=bad
                )
                assert refused["error"]["category"] == "usage", (bad, refused)
                assert refused["error"]["exit_code"] == 2
                assert "timeout_seconds" in refused["error"]["message"]

    anyio.run(scenario)


@pytest.mark.parametrize(
    ("line", "passes"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', True),
        (b'  {"jsonrpc":"2.0","method":"notifications/initialized"}\r', True),
        (b"  \r", None),
        (b"\xff", False),
    ],
)
def test_screen_passes_messages_and_skips_blank_lines(line: bytes, passes: bool | None) -> None:
    verdict = screen(line)
    if passes is None:
        assert verdict is None
    else:
        assert isinstance(verdict, str) is passes


def test_depth_is_bounded_at_the_commands_limit_plus_the_envelope() -> None:
    def nested(levels: int) -> Any:
        value: Any = 1
        for _ in range(levels):
            value = [value]
        return value

    # nested(n): arrays at levels 0 .. n-1
    assert not depth_exceeds(nested(MAX_MESSAGE_DEPTH + 1), MAX_MESSAGE_DEPTH)
    assert depth_exceeds(nested(MAX_MESSAGE_DEPTH + 2), MAX_MESSAGE_DEPTH)
    assert depth_exceeds(nested(50_000), MAX_MESSAGE_DEPTH)  # no recursion, no RecursionError

    def message(deep: Any) -> bytes:
        params = {"name": "record_note", "arguments": {"deep": deep}}
        return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x", "params": params}).encode()

    # What a command may hold (store.limits.MAX_DEPTH, counted from its arguments) passes the
    # wire, for the command layer to judge; deeper than the limit is refused on the wire.
    assert isinstance(screen(message(nested(MAX_DEPTH - 1))), str)
    assert isinstance(screen(message(nested(MAX_DEPTH))), str)
    refused = screen(message(nested(MAX_DEPTH + 1)))
    assert isinstance(refused, JSONRPCError) and refused.error.code == -32600
