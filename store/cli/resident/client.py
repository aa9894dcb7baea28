"""A `boris` process handing its command to the resident one, or saying it cannot.

`hand_over` returns the command's exit status when the resident process ran it, and None
when nothing ran there (no resident process yet, one of another interpreter, switched
off, a stream closed): the caller then runs the command itself, as before. With no
resident process it starts one for the next command, so the first `boris` of a session
pays the imports once and every later one a fork.
"""

from __future__ import annotations

import os
import sys

from . import wire

try:  # The C modules beneath `signal` and `socket`: their Python wrappers import enum,
    # functools and selectors for names a caller never uses (~10 ms of CPU, a third of a
    # handed-over command's own start).
    import _signal as signal  # type: ignore[import-not-found, unused-ignore]
    import _socket as socket
except ImportError:  # an interpreter without them
    import signal
    import socket  # type: ignore[no-redef]

#: The signals a terminal or a supervisor sends a command; each is passed on to the
#: process running it, and a command one of them ended ends this process the same way.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def hand_over(argv: list[str]) -> int | None:
    environ = os.environ
    if not wire.enabled(environ):
        return None
    try:
        directory = wire.home(environ)
        streams = _streams()
        cwd = os.getcwd()
    except (OSError, ValueError):
        return None  # a directory not ours, a closed stream, a working directory gone
    path = wire.socket_path(directory, wire.identity())
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        _start(path)
        return None
    try:
        umask = os.umask(0o022)
        os.umask(umask)
        body = wire.pack([sys.argv[0], *argv], cwd, dict(environ), umask, streams)
        try:
            _send_streams(conn, wire.HEADER.pack(len(body)))
            conn.sendall(body)
            answers = wire.Lines(conn)
            started = answers.next()
        except OSError:
            return None  # it went away before running anything
        if not started.startswith("started "):
            return None  # "again": nothing ran, run it here
        return _wait(conn, answers)
    finally:
        conn.close()


def _send_streams(conn: socket.socket, data: bytes) -> None:
    """`data` with this process's stdin, stdout and stderr (socket.send_fds's message)."""
    import array

    fds = array.array("i", wire.STDIO)
    conn.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])


def _streams() -> str:
    """The encodings and error handlers of stdin, stdout and stderr, which the process
    running the command gives its own; ValueError when one is closed (None)."""
    parts = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        if stream is None:
            raise ValueError("a standard stream is closed")
        parts.append(f"{stream.encoding}:{stream.errors}")
    return ";".join(parts)


def _wait(conn: socket.socket, answers: wire.Lines) -> int:
    """The command's end, passing on what signals this process is sent meanwhile."""

    def forward(signum: int, _frame: object) -> None:
        try:  # noqa: SIM105 - contextlib is not imported on a command's start
            conn.send(bytes([signum]))
        except OSError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    try:
        answer = answers.next()
    except OSError:
        answer = ""
    kind, _, value = answer.partition(" ")
    if kind == "exit":
        return int(value)
    if kind == "signal":
        # Ended by a signal: end by it too, so whoever waits on `boris` sees what a
        # shell would (a Ctrl-C'd command's 130, a killed one's 137).
        ended_by = int(value)
        if ended_by in FORWARDED:  # the others cannot be caught: their default stands
            signal.signal(ended_by, signal.SIG_DFL)
        os.kill(os.getpid(), ended_by)
        return 128 + ended_by
    print(
        "boris: the resident boris process ended before the command did; "
        "what it wrote is in the record (boris events)",
        file=sys.stderr,
    )
    return 1


#: The resident process's program: this import path before any import, so it runs the
#: very modules this process would (`-m` would put its own directory first).
START = "import sys; sys.path[:] = sys.argv[2:]; from store.cli.resident import __main__"


def _start(path: str) -> None:
    """Start the resident process for the next command, detached: its own session, no
    terminal, none of this process's streams, the same import path."""
    import subprocess

    try:  # noqa: SIM105 - contextlib is not imported on a command's start
        subprocess.Popen(
            [sys.executable, "-c", START, path, *wire.import_path()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            start_new_session=True,
        )
    except OSError:
        pass  # this command runs here all the same
