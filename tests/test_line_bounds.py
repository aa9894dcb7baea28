"""Every line is read with a cap (issue 40): `boris ingest` and `boris mcp` read at most
`MAX_LINE_BYTES` + 1 bytes of a line and refuse it beyond, counting its JSON values before
any parser sees it, so a line over the limit is refused having held about the limit, never
the line. Measured on the real processes, on the default signed store `boris init` makes,
as their peak resident memory (the kernel's maximum RSS of the one child, from wait4).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from signed_default import PERSON, Signed, signed_default_store

from store.limits import MAX_LINE_BYTES, MAX_LINE_ITEMS
from store.signing.keys import MAX_KEY_FILE_BYTES

ROOT = Path(__file__).resolve().parent.parent


def signed_with_task(home: Path) -> Signed:
    """The default signed store `boris init` makes in `home` (tests/signed_default.py), with
    agent:a1's key trusted, and a task t1 rita made that may send to team@example.org."""
    made = signed_default_store(home, "agent:a1")
    made.ok(
        "--actor",
        PERSON,
        "create-task",
        "--id",
        "t1",
        "--title",
        "T",
        "--owner",
        "rita",
        "--objective",
        "o",
        "--destination",
        "mailto:team@example.org",
    )
    return made


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def session_lines(*lines: bytes) -> list[bytes]:
    """The lines that open an MCP session (initialize, initialized), then `lines`."""
    return [
        json.dumps(INITIALIZE).encode() + b"\n",
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        *lines,
    ]


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_with_task(tmp_path_factory.mktemp("home"))


def _one_line(err: str, *words: str) -> None:
    assert err.startswith("boris: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, err


def _peak(
    argv: list[str],
    env: dict[str, str],
    feed: Callable[[IO[bytes]], None],
    *,
    answered: bytes | None = None,
) -> tuple[int, float, bytes, bytes]:
    """Run `boris ARGV`, writing stdin with `feed`; its exit code, its peak resident memory
    in MiB (the kernel's maximum RSS of that one child, from wait4), stdout and stderr.

    With `answered`, stdin stays open until a line of stdout holds it: closing stdin is how a
    stdio client ends an MCP session, and a request still in flight then may go unanswered
    (a loaded machine showed it), so the test waits for the answer it reads, not a margin."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "store.cli", *argv],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out: dict[str, bytes] = {}
    seen = threading.Event()

    def drain(name: str, stream: IO[bytes]) -> None:
        lines = []
        for line in iter(stream.readline, b""):
            lines.append(line)
            if answered is not None and answered in line:
                seen.set()
        out[name] = b"".join(lines)
        seen.set()  # the stream ended: nothing more will come

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout)),
        threading.Thread(target=drain, args=("err", proc.stderr)),
    ]
    for r in readers:
        r.start()
    try:
        feed(proc.stdin)
    except BrokenPipeError:
        pass  # the process refused and stopped reading: what it held is what is measured
    finally:
        if answered is not None:
            seen.wait(timeout=120)  # bounds a hang only
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    for r in readers:
        r.join(timeout=60)
    proc.stdout.close()
    proc.stderr.close()
    return proc.returncode, usage.ru_maxrss / 1024, out["out"], out["err"]


def _write_line(head: bytes, body: bytes, count: int, tail: bytes) -> Callable[[IO[bytes]], None]:
    """A feed writing `head`, `body` `count` times (never the whole line in this process's
    memory), then `tail`."""

    def feed(stdin: IO[bytes]) -> None:
        stdin.write(head)
        for _ in range(count):
            stdin.write(body)
        stdin.write(tail)
        stdin.flush()

    return feed


#: 60 MB in one line: a note's text (one string), or a payload of small numbers (the JSON
#: values that cost a parser most: the 60 MB of `0,` held 2.5 GB before it was refused).
HUGE = 60_000_000
CHUNK = 1_000_000
MiB = 1024 * 1024
#: What a refused line may cost above the same process given a small one: the line as read,
#: at most MAX_LINE_BYTES + 1 bytes in one buffer, and slack for the allocator, the pipe's
#: buffers and what a run on a busy machine adds (measured: 31 to 33 MiB above).
ALLOWED_MIB = MAX_LINE_BYTES / MiB + 24


@pytest.mark.parametrize("shape", ["text", "numbers"])
def test_ingest_refuses_a_huge_line_holding_about_the_limit(signed: Signed, shape: str) -> None:
    env = signed.env(agent=True)
    argv = ["ingest", "-"]
    events = len(signed.read("events", "t1"))
    head = b'{"type": "record_note", "task_id": "t1", "text": "'
    small = _peak(argv, env, _write_line(head, b"x", 10, b'"}\n'))
    assert small[0] == 0, small[3]
    if shape == "text":
        feed = _write_line(head, b"x" * CHUNK, HUGE // CHUNK, b'"}\n')
        said = f"more than the limit of {MAX_LINE_BYTES} bytes for one line"
    else:
        head = b'{"type": "request_approval", "task_id": "t1", "consequence": "c", '
        head += b'"policy": "p", "payload": {"n": [0'
        feed = _write_line(head, b",0" * (CHUNK // 2), 20, b"]}}\n")
        said = f"more than the limit of {MAX_LINE_ITEMS} JSON values for one line"
    rc, peak, _out, err = _peak(argv, env, feed)
    assert rc == 2, err[-400:]
    message = err.decode()
    _one_line(message, "line 1", said, "nothing was written")
    assert peak < small[1] + ALLOWED_MIB, (peak, small[1])
    assert len(signed.read("events", "t1")) == events + 1  # the small line's note only


@pytest.mark.parametrize("shape", ["text", "numbers"])
def test_mcp_refuses_a_huge_line_holding_about_the_limit_and_goes_on(
    signed: Signed, shape: str
) -> None:
    env = signed.env(agent=True)
    argv = ["mcp"]
    ping = b'{"jsonrpc":"2.0","id":9,"method":"ping"}\n'

    def feeding(big: Callable[[IO[bytes]], None] | None) -> Callable[[IO[bytes]], None]:
        def feed(stdin: IO[bytes]) -> None:
            for line in session_lines():
                stdin.write(line)
            if big is not None:
                big(stdin)
            stdin.write(ping)
            stdin.flush()

        return feed

    small = _peak(argv, env, feeding(None), answered=b'"id":9')
    assert small[0] == 0, small[3]
    head = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"record_note",'
    if shape == "text":
        head += b'"arguments":{"task_id":"t1","text":"'
        big = _write_line(head, b"x" * CHUNK, HUGE // CHUNK, b'"}}}\n')
        said = f"more than the limit of {MAX_LINE_BYTES} bytes"
    else:
        head += b'"arguments":{"task_id":"t1","text":"x","n":[0'
        big = _write_line(head, b",0" * (CHUNK // 2), 20, b"]}}}\n")
        said = f"more than the limit of {MAX_LINE_ITEMS} JSON values"
    rc, peak, out, err = _peak(argv, env, feeding(big), answered=b'"id":9')
    assert rc == 0, err[-400:]
    answers = [json.loads(line) for line in out.splitlines()]
    assert [a.get("id") for a in answers] == [0, 7, 9], answers
    refused_line = answers[1]
    assert refused_line["error"]["code"] == -32600
    assert said in refused_line["error"]["message"]
    assert answers[2]["result"] == {}  # the server read past the line and goes on
    assert b"Traceback" not in err
    assert peak < small[1] + ALLOWED_MIB, (peak, small[1])


@pytest.mark.parametrize("reader", ["hook", "manifest"])
def test_json_on_stdin_is_read_with_the_same_cap(signed: Signed, reader: str) -> None:
    """`boris hook` (Claude Code's hook input) and `boris record-manifest -` read stdin with
    the cap of a line too."""
    env = signed.env(agent=True)
    if reader == "hook":
        argv, refused, said = ["hook", "pre-tool-use", "--task", "t1"], 1, "boris hook: the "
    else:
        argv, refused, said = ["record-manifest", "t1", "-"], 2, "boris: - is "
    small = _peak(argv, env, _write_line(b"{", b"", 0, b"}"))
    assert small[0] == refused, small[3]  # refused too (no tool, no provider): the baseline
    head = b'{"tool_name": "Bash", "tool_input": {"command": "'
    rc, peak, _out, err = _peak(argv, env, _write_line(head, b"x" * CHUNK, HUGE // CHUNK, b'"}}'))
    assert rc == refused, err[-400:]
    message = err.decode()
    assert message.startswith(said) and message.count("\n") == 1, message
    assert f"more than the limit of {MAX_LINE_BYTES} bytes" in message, message
    assert peak < small[1] + ALLOWED_MIB, (peak, small[1])


def test_a_key_file_is_read_no_further_than_a_key_could_be(signed: Signed) -> None:
    """BORIS_KEY naming a file of any size (a mistake, /dev/zero) is refused having read
    64 KiB of it, not the file."""
    huge = signed.home / "not-a-key.pem"
    with huge.open("wb") as f:
        f.truncate(512 * 1024 * 1024)  # sparse: no disk, 512 MiB to whoever reads it whole
    argv = ["note", "t1", "hello"]
    small = _peak(argv, signed.env(agent=True), _write_line(b"", b"", 0, b""))
    assert small[0] == 0, small[3]
    rc, peak, _out, err = _peak(
        argv, signed.env(agent=True, BORIS_KEY=str(huge)), _write_line(b"", b"", 0, b"")
    )
    assert rc != 0 and rc != 70, err[-400:]
    message = err.decode()
    assert "not-a-key.pem" in message and str(MAX_KEY_FILE_BYTES) in message, message
    assert "Traceback" not in message
    assert peak < small[1] + 16, (peak, small[1])
