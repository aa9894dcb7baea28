"""What the resident `boris` and its callers agree on: where the socket is, and the bytes.

Imported by every `boris` process before anything else, so it imports only what a Python
start has loaded already, and `struct`.

A request is one message: a header (its length) carrying the caller's stdin, stdout and
stderr as file descriptors (SCM_RIGHTS), then the body: the caller's umask, working
directory, streams' encodings, command line and environment, each string length-prefixed. The answers are one line each: `started PID`, then `exit N` or
`signal N`; `again` before `started` means nothing ran and the caller runs the command
itself. After `started` the caller may send one byte, a signal number, for each signal it
is sent, and its connection closing means it is gone.
"""

from __future__ import annotations

import os
import struct
import sys

TYPE_CHECKING = False  # typing unimported, as in store/__init__.py
if TYPE_CHECKING:
    import _socket

#: Off switch: BORIS_RESIDENT=off runs every command in its own process, as before.
SWITCH = "BORIS_RESIDENT"
#: Seconds without a command after which the resident process ends (BORIS_RESIDENT_IDLE).
IDLE_SECONDS = 300.0
HEADER = struct.Struct("!I")
#: No command line and environment together reach this (Linux's ARG_MAX is 2 MiB).
MAX_BODY = 16 * 1024 * 1024
STDIO = (0, 1, 2)


def enabled(environ: os._Environ[str] | dict[str, str]) -> bool:
    """Whether this process may hand its command over: on Linux (a pidfd per child and
    SCM_RIGHTS), not frozen into one executable (there is no `python -m` to start the
    resident one with), and not switched off."""
    return (
        sys.platform == "linux"
        and hasattr(os, "pidfd_open")
        and not getattr(sys, "frozen", False)
        and environ.get(SWITCH, "").lower() not in {"off", "0", "no", "false"}
    )


def idle_seconds(environ: os._Environ[str] | dict[str, str]) -> float:
    try:
        seconds = float(environ.get("BORIS_RESIDENT_IDLE", IDLE_SECONDS))
    except ValueError:
        return IDLE_SECONDS
    return seconds if 0 < seconds < 86400 else IDLE_SECONDS


def home(environ: os._Environ[str] | dict[str, str]) -> str:
    """The directory of this login's resident processes: $XDG_RUNTIME_DIR/boris, else
    $TMPDIR/boris-UID, else (no TMPDIR, or one too deep for a socket's name, which the
    kernel caps at 107 bytes) /tmp/boris-UID. Made private (0700); one somebody else owns
    or can enter is refused (PermissionError)."""
    uid = os.getuid()
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        path = os.path.join(runtime, "boris")
    else:
        path = os.path.join(environ.get("TMPDIR") or "/tmp", f"boris-{uid}")
    if len(os.fsencode(socket_path(path, "0" * 16))) > 107:
        path = f"/tmp/boris-{uid}"
    try:  # noqa: SIM105 - contextlib is not imported on a command's start
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if info.st_uid != uid or (info.st_mode & 0o077) or not os.path.isdir(path):
        raise PermissionError(f"{path} is not this login's own private directory")
    return path


def import_path() -> list[str]:
    """This process's import path as the resident process takes it: a first entry that is
    the working directory (`python -m`, `python -c`) becomes "", Python's own name for
    "the working directory, whichever it is", so callers in different directories share
    one resident process and each command still imports from its own directory first."""
    path = list(sys.path)
    if path and path[0] and path[0] == os.getcwd():
        path[0] = ""
    return path


def identity() -> str:
    """What the resident process must share with its caller to run a command as the caller
    would have: the interpreter, its import path, its flags and encodings. Each different
    set of these has its own resident process (its own socket)."""
    import zlib  # built in: no file to read

    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parts = (
        sys.executable,
        sys.version,
        package,
        repr(import_path()),
        repr(tuple(sys.flags)),
        sys.getfilesystemencoding(),
        repr(sys.warnoptions),
    )
    text = "\0".join(parts).encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(text):08x}{zlib.adler32(text):08x}"


def socket_path(directory: str, ident: str) -> str:
    return os.path.join(directory, f"resident-{ident}.sock")


def pack(argv: list[str], cwd: str, environ: dict[str, str], umask: int, streams: str) -> bytes:
    """The request's body: each string length-prefixed, so an empty argument survives."""
    items = [str(umask), cwd, streams, str(len(argv)), *argv]
    for key, value in environ.items():
        items += (key, value)
    out = bytearray()
    for item in items:
        data = os.fsencode(item)
        out += HEADER.pack(len(data)) + data
    return bytes(out)


def unpack(body: bytes) -> tuple[int, str, str, list[str], dict[str, str]]:
    """The request's parts; ValueError when the bytes are not a request."""
    items: list[str] = []
    at = 0
    while at < len(body):
        (size,) = HEADER.unpack_from(body, at)
        at += HEADER.size
        if at + size > len(body):
            raise ValueError("a request cut short")
        items.append(os.fsdecode(body[at : at + size]))
        at += size
    umask, cwd, streams, count, *rest = items
    argv, env = rest[: int(count)], rest[int(count) :]
    if len(env) % 2:
        raise ValueError("an environment variable without its value")
    return int(umask), cwd, streams, argv, dict(zip(env[::2], env[1::2], strict=True))


class Lines:
    """The answer lines of one connection, each whole: `started` and `exit` may come in one
    read when the command is quick, so what follows a line is kept for the next."""

    def __init__(self, conn: _socket.socket) -> None:
        self.conn = conn
        self.buffer = b""

    def next(self) -> str:
        """The next line, '' when the other side has gone first."""
        while b"\n" not in self.buffer:
            chunk = self.conn.recv(64)
            if not chunk:
                return ""
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("ascii").strip()
