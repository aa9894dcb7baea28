"""`boris mcp` refusing hostile input on the real wire (issue 40), on the default signed store
`boris init` makes, the agent signing with BORIS_KEY; raw JSON-RPC lines, as a client that
sends them would.

- A lone surrogate in a request (valid JSON, not UTF-8 text) is answered with the request's
  id: -32602 where it is in params, with the refusal object (a usage error, exit code 2) as
  `data`; nothing is written.
- A refused request is answered with its id wherever the id can be determined (the line
  parsed as a JSON-RPC 2.0 request: an object with "jsonrpc": "2.0", a method, a string or
  integer id), else with null, as JSON-RPC 2.0 says.
- A task-augmented call to a tool without task support is -32601, as the 2025-11-25 tasks
  spec says ("Servers SHOULD return a -32601 (Method not found) error").
- An elicitation answer that does not match the form asked for is ignored (2025-11-25,
  elicitation: "Servers SHOULD validate received data matches the requested schema").
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import IO, Any

import pytest
from signed_default import Signed
from test_line_bounds import INITIALIZE, ROOT, signed_with_task


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_with_task(tmp_path_factory.mktemp("home"))


# --- the real wire, raw lines ---------------------------------------------------------------


class Wire:
    """`boris mcp` on the default signed store as the agent (BORIS_KEY), one raw line at a
    time."""

    def __init__(self, signed: Signed) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "store.cli", "mcp"],
            cwd=ROOT,
            env=signed.env(agent=True),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.stdout: IO[bytes] = self.proc.stdout
        self.buffer = b""  # read from the pipe, not yet a whole line
        self.kept: list[dict[str, Any]] = []  # read while an `ask` waited for its answer

    def send(self, message: bytes | dict[str, Any]) -> None:
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.stdin.write(line + b"\n")
        self.stdin.flush()

    def read(self, within: float = 30.0) -> dict[str, Any]:
        """The next message, in the order the server sent it: one `ask` set aside first,
        then whole lines from the pipe (two lines may come in one read: both are kept)."""
        if self.kept:
            return self.kept.pop(0)
        deadline = time.monotonic() + within
        while b"\n" not in self.buffer:
            ready, _, _ = select.select(
                [self.stdout], [], [], max(0.0, deadline - time.monotonic())
            )
            assert ready, f"no message within {within} s"
            chunk = os.read(self.stdout.fileno(), 1 << 16)
            assert chunk, "the server closed its output"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def ask(self, message: bytes | dict[str, Any]) -> dict[str, Any]:
        self.send(message)
        skipped: list[dict[str, Any]] = []
        while True:  # notifications and the server's own requests may come first: kept
            answer = self.read()
            if "id" in answer and "method" not in answer:
                self.kept[:0] = skipped
                return answer
            skipped.append(answer)

    def start(self, capabilities: dict[str, Any] | None = None) -> None:
        init = json.loads(json.dumps(INITIALIZE))
        init["params"]["capabilities"] = capabilities or {}
        assert "result" in self.ask(init)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, n: int, tool: str, **arguments: Any) -> dict[str, Any]:
        answer = self.ask(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )
        content: dict[str, Any] = answer["result"]["structuredContent"]
        return content

    def finish(self) -> str:
        self.stdin.close()
        assert self.proc.wait(timeout=30) == 0
        assert self.proc.stderr is not None
        stderr = self.proc.stderr.read().decode()
        self.stdout.close()
        self.proc.stderr.close()
        return stderr


@pytest.fixture
def wire(signed: Signed) -> Iterator[Wire]:
    w = Wire(signed)
    try:
        yield w
    finally:
        if not w.stdin.closed:
            w.stdin.close()
        w.proc.wait(timeout=30)
        for pipe in (w.proc.stdout, w.proc.stderr):  # a failed test's too: none left open
            if pipe is not None and not pipe.closed:
                pipe.close()


def _raw_call(n: int, arguments: bytes, name: bytes = b"record_note") -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
        % (n, name, arguments)
    )


def test_mcp_refuses_a_lone_surrogate_in_tool_arguments_with_its_id(
    signed: Signed, wire: Wire
) -> None:
    events = len(signed.read("events", "t1"))
    wire.start()
    for n, arguments, name in (
        (21, b'{"task_id":"t1","text":"a\\ud800b"}', b"record_note"),
        (
            22,
            b'{"task_id":"t1","payload":{"\\udc80":1},"consequence":"c","policy":"p"}',
            b"request_approval",
        ),
        (23, b'{"task_id":"t1","text":"fine","kind":"\\udfff"}', b"record_note"),
    ):
        answer = wire.ask(_raw_call(n, arguments, name))
        assert answer["id"] == n, answer
        error = answer["error"]
        assert error["code"] == -32602, error  # invalid params: the message itself is whole
        assert "lone surrogate" in error["message"] and "\n" not in error["message"]
        assert error["data"]["category"] == "usage" and error["data"]["exit_code"] == 2
    # A surrogate pair is one character: recorded as any text.
    ok = wire.call(24, "record_note", task_id="t1", text="\U0001f600")
    assert ok["ok"] is True, ok
    assert "Traceback" not in wire.finish()
    assert len(signed.read("events", "t1")) == events + 1


DEEP = b"[" * 100_000 + b"]" * 100_000
PARSEABLY_DEEP = b"[" * 150 + b"]" * 150


def test_mcp_answers_a_refused_request_with_its_id_when_it_has_one(wire: Wire) -> None:
    wire.start()
    for line, code, id_ in (
        # Requests whose id is known: the error answers them.
        (_raw_call(31, b'{"task_id":"t1","text":' + DEEP + b"}"), -32600, 31),
        (_raw_call(32, b'{"task_id":"t1","text":' + PARSEABLY_DEEP + b"}"), -32600, 32),
        (b'{"jsonrpc":"2.0","id":"s-33","method":"ping","params":{"x":"\\ud800"}}', -32602, "s-33"),
        (b'{"jsonrpc":"2.0","method":"ping","id":34,"params":5}', -32600, 34),
        (b'{"jsonrpc":"2.0","id":35,"method":"\\ud800"}', -32600, 35),
        # No id to be had: null, as JSON-RPC 2.0 says.
        (b'{"jsonrpc":"2.0","id":36,', -32700, None),
        (b'{"jsonrpc":"2.0","id":37,"method":"ping"' + b"\xff}", -32700, None),
        (b'{"jsonrpc":"2.0","id":{"no":1},"method":"ping"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', -32600, None),
        (b'{"id":38,"method":"ping"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":39}', -32600, None),
        (b'[{"jsonrpc":"2.0","id":40,"method":"ping"}]', -32600, None),
        (b"[" + DEEP + b"]", -32600, None),
        (b'{"jsonrpc":"2.0","id":41,"method":"ping","x":' + DEEP[:-1] + b"}", -32700, None),
    ):
        started = time.monotonic()
        answer = wire.ask(line)
        assert answer["id"] == id_, (line[:70], answer)
        assert answer["error"]["code"] == code, (line[:70], answer)
        assert time.monotonic() - started < 5, line[:70]
    assert wire.ask(b'{"jsonrpc":"2.0","id":42,"method":"ping"}') == {
        "jsonrpc": "2.0",
        "id": 42,
        "result": {},
    }
    assert "Traceback" not in wire.finish()


def test_a_task_on_a_tool_that_runs_no_tasks_is_method_not_found(wire: Wire) -> None:
    wire.start({"tasks": {}})
    answer = wire.ask(
        {
            "jsonrpc": "2.0",
            "id": 51,
            "method": "tools/call",
            "params": {"name": "record_note", "arguments": {"task_id": "t1"}, "task": {}},
        }
    )
    assert answer["id"] == 51
    # 2025-11-25, tasks, tool-level negotiation: taskSupport absent or "forbidden", and the
    # client asks for a task anyway: "Servers SHOULD return a -32601 (Method not found)".
    assert answer["error"]["code"] == -32601, answer
    assert "task" in answer["error"]["message"]
    assert "Traceback" not in wire.finish()


def _pending_approval(wire: Wire) -> str:
    effect = wire.call(
        61,
        "plan_effect",
        task_id="t1",
        kind="send",
        target="mailto:team@example.org",
        consequence="mail the team",
        content={"text": "hello"},
        requires_approval=True,
        policy="mail needs a reviewer",
    )
    assert effect["ok"] is True, effect
    asked = wire.call(62, "request_approval", task_id="t1", effect_id=effect["result"], policy="r")
    assert asked["ok"] is True, asked
    return str(asked["result"])


@pytest.mark.parametrize(
    ("content", "heard"),
    [
        ({"seen": "yes"}, "did not match the form"),  # a string for a boolean
        ({"seen": 1}, "did not match the form"),
        ({"seen": True}, "answered: accept"),
        (None, "answered: accept"),  # nothing is required: an empty form is an answer
    ],
)
def test_an_elicitation_answer_that_does_not_match_its_form_is_ignored(
    signed: Signed, wire: Wire, content: Any, heard: str
) -> None:
    wire.start({"elicitation": {"form": {}}, "tasks": {}})
    approval = _pending_approval(wire)
    created = wire.ask(
        {
            "jsonrpc": "2.0",
            "id": 63,
            "method": "tools/call",
            "params": {
                "name": "wait_for_approval",
                "arguments": {"task_id": "t1", "approval_id": approval, "timeout_seconds": 60},
                "task": {"ttl": 60000},
            },
        }
    )
    task_id = created["result"]["task"]["taskId"]
    while True:  # the server asks the client's user
        message = wire.read()
        if message.get("method") == "elicitation/create":
            break
    result: dict[str, Any] = {"action": "accept"}
    if content is not None:
        result["content"] = content
    wire.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
    said = ""
    for n in range(200):
        got = wire.ask(
            {"jsonrpc": "2.0", "id": 100 + n, "method": "tasks/get", "params": {"taskId": task_id}}
        )
        said = got["result"].get("statusMessage", "")
        if "answered" in said or "did not match" in said:
            break
        time.sleep(0.05)
    assert heard in said, said
    if heard != "answered: accept":
        assert "accept" not in said, said
    # Whatever came back, the approval waits for a person.
    (row,) = [r for r in signed.read("approvals", "t1") if r["id"] == approval]
    assert row["state"] == "pending"
    wire.ask({"jsonrpc": "2.0", "id": 99, "method": "tasks/cancel", "params": {"taskId": task_id}})
    assert "Traceback" not in wire.finish()
