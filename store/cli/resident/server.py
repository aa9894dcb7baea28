"""The resident `boris`: imports the command layer once, then forks a child per command.

Each child is a whole `boris` process of its own, made to be the caller's: the caller's
stdin, stdout and stderr (passed as file descriptors), working directory, environment,
umask and command line; it runs `store.cli.entry.main`, the same code a `boris` run on
its own runs, and exits with its status, which goes back to the caller. Nothing is written
here that the child does not write itself, so there is one write path, not two.

What is shared is only what importing left in memory: no connection, thread, engine or
cache is made before the fork. When idle, it forks the next command's child ahead, a spare
(store.cli.resident.spare) that copies the pages a command writes and waits; a command is
handed to it, else forked for as it comes. The process listens on a socket only this login
can reach (store.cli.resident.wire.home) and serves only callers of its own user id; it
ends after BORIS_RESIDENT_IDLE seconds (300) without a command, or, once any file it
imported changed on disk (an upgrade, a developer's edit), as soon as its running commands
end, saying "again" to new ones (its spare, of the old files, ended at once).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import gc
import importlib
import io
import os
import pkgutil
import selectors
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import IO, Any, NoReturn

from . import client, spare, wire

#: Packages a command imports itself when it is used: frameworks, the MCP SDK, the server.
NOT_PRELOADED = ("store.adapters", "store.mcp", "store.web", "store.cli.resident")
#: ... but for what `boris hook` runs before and after each of Claude Code's tool calls (no
#: framework of their own), the signing library (imported on first use), and the drivers.
PRELOADED = (
    "store.adapters.claude_code",
    "store.adapters.claude_code_permission",
    "nacl.signing",
    "nacl.encoding",
    "nacl.exceptions",
    "platformdirs",
    "getpass",
    "sqlalchemy.dialects.sqlite.pysqlite",
    "sqlalchemy.dialects.postgresql.psycopg",
    "psycopg",
)


@dataclass(frozen=True)
class Request:
    """One command, as the caller would have run it."""

    fds: tuple[int, int, int]
    umask: int
    cwd: str
    streams: str
    argv: list[str]
    environ: dict[str, str]
    #: The caller's connection, in the child: the command's status goes back on it as soon
    #: as the command has ended (`end`), not after the child's exit and reaping.
    reply: socket.socket | None = None


@dataclass
class Job:
    conn: socket.socket
    pid: int
    pidfd: int
    watching: bool = field(default=True)


def serve(path: str) -> Request | None:
    """Serve commands until idle; in each child this returns the child's request."""
    if wire.socket_path(os.path.dirname(path), wire.identity()) != path:
        return None  # started with other flags than its callers': it could not be theirs
    lock = open(path + ".lock", "ab")  # held for the process's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None  # another one serves this socket
    # Its pid, for whoever wants to stop it (`kill $(cat …lock)`).
    os.truncate(lock.fileno(), 0)
    os.write(lock.fileno(), f"{os.getpid()}\n".encode())
    pages = preload()
    watched = _watched_files()
    # What importing made stays put: the collector never walks it, in the server or in a
    # child, so a child neither pays a collection of it nor copies its pages by touching
    # them (the gc module's documented use of freeze before fork).
    gc.freeze()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    bound = os.stat(path).st_ino
    server = _Server(listener, lock, watched, wire.idle_seconds(os.environ), pages)
    try:
        return server.loop()
    finally:
        if not server.in_child:
            with contextlib.suppress(OSError):
                if os.stat(path).st_ino == bound:
                    os.unlink(path)


def preload() -> spare.Pages:
    """Import what commands use: the store's modules and its database drivers, then
    rehearse a hook's commands (`rehearse`); the pages a command writes, for the spares.
    Nothing left open: no file, connection or thread."""
    import store

    for module in pkgutil.walk_packages(store.__path__, "store.", onerror=lambda _: None):
        # A __main__ runs a program when imported: never here.
        if not module.name.startswith(NOT_PRELOADED) and not module.name.endswith("__main__"):
            with contextlib.suppress(Exception):
                importlib.import_module(module.name)
    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    from ..parser import build_ahead

    build_ahead()
    _build_models()
    with contextlib.suppress(OSError):  # no temporary directory: the children build it all
        return rehearse()
    return []


def _build_models() -> None:
    """The store's models build their validators on first use (defer_build: a window's first
    paint needs none); here they are built once, before the fork, not in every command."""
    from pydantic import BaseModel

    seen: set[type[BaseModel]] = set()
    stack = [BaseModel]
    while stack:
        for model in stack.pop().__subclasses__():
            if model not in seen:
                seen.add(model)
                stack.append(model)
    for model in seen:
        if model.__module__.startswith("store.") and not model.__pydantic_complete__:
            with contextlib.suppress(Exception):
                model.model_rebuild()


#: Seconds after a command started before a spare is forked while it still runs (a long
#: one: `boris mcp`, a hook waiting for a person); a quick one is let finish first, so the
#: spare's work does not take a core from it.
SPARE_AFTER = 0.05

#: What the rehearsal runs: a Claude Code hook's calls on a signed store as `boris init`
#: makes it, the commands run most often (one per tool call, before and after).
_REHEARSAL_CALL = {
    "session_id": "rehearsal",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "true", "description": "rehearsal"},
    "tool_use_id": "toolu_rehearsal",
}


def rehearse() -> spare.Pages:
    """Run a hook's commands once on a store of its own before serving: what a command
    builds on its first run in a process (validators, SQLAlchemy's statement constructs,
    the signer's and the keyring's readers, regular expressions) is then built here once
    rather than in every child (a recorded PreToolUse hook's command: 74 ms first in a
    process, 31 ms after). Nothing of it reaches a caller's store or home: a temporary home
    with its own store, removed after; its output goes nowhere. If it leaves a thread
    running, forking would copy a process in the middle of something, so the server stops
    (the commands then run where they are started, as with BORIS_RESIDENT=off).

    Then, what importing and the rehearsal made frozen (gc.freeze), a probe child runs the
    hook's commands again: the pages it wrote are returned, for each spare to copy ahead of
    its command (store.cli.resident.spare)."""
    import threading

    saved = (dict(os.environ), sys.stdin, sys.stdout, sys.stderr, os.getcwd())
    with tempfile.TemporaryDirectory(prefix="boris-rehearsal-") as home:
        key = os.path.join(home, "agent.pem")
        os.environ.clear()
        os.environ.update(
            HOME=home,
            XDG_CONFIG_HOME=os.path.join(home, "config"),
            XDG_DATA_HOME=os.path.join(home, "data"),
            BORIS_RESIDENT="off",
        )
        agent = {"BORIS_KEY": key, "BORIS_ACTOR": "agent:rehearsal", "BORIS_TASK": "rehearsal"}
        steps: list[tuple[list[str], dict[str, Any] | None]] = [
            (["init", "--actor", "person:rehearsal"], None),
            (["keys", "new", key], None),
            (["keys", "add", key, "--for", "agent:rehearsal", "--actor", "person:rehearsal"], None),
            (["--actor", "person:rehearsal", "create-task", "--id", "rehearsal", "--title", "-",
              "--owner", "-", "--objective", "-", "--destination", "claude-code://tools/"], None),
            *_hook_steps("toolu_rehearsal"),
            (["tasks"], None),
        ]  # fmt: skip
        try:
            os.chdir(home)
            for argv, call in steps:
                if call is not None:
                    os.environ.update(agent)
                _play(argv, call)
            if threading.active_count() != 1:
                raise SystemExit("boris: the rehearsal left a thread running; not serving")
            gc.freeze()
            return spare.written_pages(_hook_steps_played)
        finally:
            os.environ.clear()
            os.environ.update(saved[0])
            sys.stdin, sys.stdout, sys.stderr = saved[1:4]
            os.chdir(saved[4])


def _hook_steps(tool_use_id: str) -> list[tuple[list[str], dict[str, Any] | None]]:
    """A tool call's two hooks, before and after."""
    call = dict(_REHEARSAL_CALL, tool_use_id=tool_use_id)
    response = {"stdout": "", "stderr": "", "interrupted": False}
    return [
        (["hook", "pre-tool-use"], call),
        (
            ["hook", "post-tool-use"],
            dict(call, hook_event_name="PostToolUse", tool_response=response),
        ),
    ]


def _hook_steps_played() -> None:
    for argv, call in _hook_steps("toolu_probe"):
        _play(argv, call)


def _play(argv: list[str], call: dict[str, Any] | None) -> None:
    """One rehearsed command: `call` on its stdin, its output nowhere, its failure ignored."""
    import json

    from ..entry import main

    given = json.dumps(call).encode() if call else b""
    sys.stdin = io.TextIOWrapper(io.BytesIO(given), encoding="utf-8")
    sys.stdout = sys.stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.suppress(Exception, SystemExit):
        main(argv)


def _watched_files() -> dict[str, int]:
    """What, changed on disk, makes this process out of date: each imported module of the
    store, and each directory packages are installed in (installing or removing a
    package changes it)."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if filename and filename.startswith(package):
            paths.append(filename)
    stamps = {}
    for path in paths:
        with contextlib.suppress(OSError):
            stamps[path] = os.stat(path).st_mtime_ns
    return stamps


class _Server:
    def __init__(
        self,
        listener: socket.socket,
        lock: IO[bytes],
        watched: dict[str, int],
        idle: float,
        pages: spare.Pages,
    ):
        self.idle = idle
        self.pages = pages
        #: The child forked ahead of the next command, if any (store.cli.resident.spare).
        self.spare: spare.Spare | None = None
        #: Whether to keep one: no longer once forking one failed.
        self.spares = True
        self.listener = listener
        self.lock = lock
        self.watched = watched
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ, None)
        self.jobs: dict[int, Job] = {}  # by pid
        self.accepting = True
        self.in_child = False
        self.started = 0.0  # when the last command was given its process (monotonic)

    def loop(self) -> Request | None:
        last = time.monotonic()
        while self.accepting or self.jobs:
            wait = min(self.idle, 30.0)
            if self.accepting and self.spare is None and self.spares:
                due = 0.0 if not self.jobs else self.started + SPARE_AFTER - time.monotonic()
                if due <= 0:
                    request = self._keep_spare()
                    if request is not None:
                        return request  # the spare, given its command
                else:
                    wait = due
            for key, _ in self.selector.select(timeout=wait):
                try:
                    if key.data is None:
                        request = self._accept()
                        if request is not None:
                            return request  # the child
                        last = time.monotonic()
                    elif key.data[1] == "spare":
                        self._spare_ended(key.data[0])
                    else:
                        job, what = key.data
                        if job.pid not in self.jobs or self.jobs[job.pid] is not job:
                            continue  # reaped earlier in this round: its events are old
                        if what == "pid":
                            self._reap(job)
                        else:
                            self._from_caller(job)
                except Exception:
                    if self.in_child:
                        raise
                    # One command's trouble (a descriptor limit, a fork refused) is that
                    # command's: the others go on. Kept for whoever wonders why.
                    self._log(traceback.format_exc())
            if self.accepting and not self.jobs and time.monotonic() - last > self.idle:
                self._stop_accepting()
        return None

    def _log(self, text: str) -> None:
        path = self.lock.name[: -len(".lock")] + ".log"
        with contextlib.suppress(OSError), open(path, "a") as log:
            if log.tell() < 1 << 20:
                log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {text}\n")

    def _stop_accepting(self) -> None:
        if self.accepting:
            self.accepting = False
            self.selector.unregister(self.listener)
            self.listener.close()
            self._discard_spare()

    def _accept(self) -> Request | None:
        conn, _ = self.listener.accept()
        fds: list[int] = []
        try:
            conn.settimeout(5.0)
            if _peer_uid(conn) != os.getuid():
                raise ValueError("a caller of another user")
            header, fds, _, _ = socket.recv_fds(conn, wire.HEADER.size, len(wire.STDIO))
            if len(header) != wire.HEADER.size or len(fds) != len(wire.STDIO):
                raise ValueError("a request without its streams")
            (size,) = wire.HEADER.unpack(header)
            if size > wire.MAX_BODY:
                raise ValueError("a request too long to be a command")
            body = _receive(conn, size)
            umask, cwd, streams, argv, environ = wire.unpack(body)
        except (OSError, ValueError, struct.error):
            _refuse(conn, fds)
            return None
        if self._out_of_date():
            self._stop_accepting()  # a new one, of the new files, starts on the next command
            with contextlib.suppress(OSError):
                conn.sendall(b"again\n")
            _refuse(conn, fds)
            return None
        if self.spare is not None and self._hand(conn, fds, body):
            return None
        request = Request((fds[0], fds[1], fds[2]), umask, cwd, streams, argv, environ)
        pid = os.fork()
        if pid == 0:
            self._become_child()
            return _started(request, conn)
        for fd in fds:
            os.close(fd)
        self._watch(conn, pid, os.pidfd_open(pid))
        return None

    def _hand(self, conn: socket.socket, fds: list[int], body: bytes) -> bool:
        """The command to the spare, which becomes its job: False when the spare is gone
        (the command is then forked for, as with no spare)."""
        given, self.spare = self.spare, None
        assert given is not None
        try:
            spare.hand(given, conn, fds, body)
        except OSError:
            self._end_spare(given)
            return False
        given.channel.close()
        for fd in fds:
            os.close(fd)
        self.selector.unregister(given.pidfd)
        self._watch(conn, given.pid, given.pidfd)
        return True

    def _keep_spare(self) -> Request | None:
        """Idle with no spare: fork one (store.cli.resident.spare), so the next command
        starts in a child made ready for it, off its caller's path. In the spare, once
        given its command: the request. Should forking one fail, commands are forked for
        as they come, as before."""
        try:
            return self._fork_spare()
        except Exception:
            if self.in_child:
                raise
            self.spares = False
            self._log(traceback.format_exc())
            return None

    def _fork_spare(self) -> Request | None:
        ours, theirs = socket.socketpair()
        ours.settimeout(5.0)  # a spare stopped (SIGSTOP) is given up, not waited on
        pid = os.fork()
        if pid == 0:
            ours.close()
            self._become_child()
            spare.populate(self.pages)
            given = spare.wait(theirs)
            if given is None:
                os._exit(0)  # the server ended, or discarded it
            theirs.close()
            conn, fds, body = given
            umask, cwd, streams, argv, environ = wire.unpack(body)
            request = Request((fds[0], fds[1], fds[2]), umask, cwd, streams, argv, environ)
            return _started(request, conn)
        theirs.close()
        self.spare = spare.Spare(pid, os.pidfd_open(pid), ours)
        self.selector.register(self.spare.pidfd, selectors.EVENT_READ, (self.spare, "spare"))
        return None

    def _spare_ended(self, ended: spare.Spare) -> None:
        """The spare ended before it was given a command (killed): the next idle moment
        forks another."""
        if self.spare is ended:
            self._discard_spare()

    def _discard_spare(self) -> None:
        if self.spare is not None:
            self._end_spare(self.spare)
            self.spare = None

    def _end_spare(self, given: spare.Spare) -> None:
        given.channel.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(given.pid, signal.SIGKILL)  # it holds nothing: nothing to let finish
        os.waitpid(given.pid, 0)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(given.pidfd)
        os.close(given.pidfd)

    def _watch(self, conn: socket.socket, pid: int, pidfd: int) -> None:
        self.started = time.monotonic()
        job = Job(conn, pid, pidfd)
        self.jobs[pid] = job
        self.selector.register(pidfd, selectors.EVENT_READ, (job, "pid"))
        try:
            conn.settimeout(None)
            self.selector.register(conn, selectors.EVENT_READ, (job, "caller"))
        except (OSError, ValueError):
            self._caller_gone(job)

    def _become_child(self) -> None:
        """Let go of everything the server holds: the child is the caller's process."""
        self.in_child = True
        self.selector.close()
        if self.accepting:
            self.listener.close()
        if self.spare is not None:
            self.spare.channel.close()
            os.close(self.spare.pidfd)
            self.spare = None
        for job in self.jobs.values():
            job.conn.close()
            os.close(job.pidfd)
        self.jobs.clear()
        self.lock.close()

    def _from_caller(self, job: Job) -> None:
        try:
            data = job.conn.recv(64)
        except OSError:
            data = b""
        if not data:
            self._caller_gone(job)
            return
        for signum in data:
            if signum in client.FORWARDED:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(job.pid, signum)

    def _caller_gone(self, job: Job) -> None:
        """The caller was killed: so is its command, as it would have been had it run there."""
        if job.watching:
            job.watching = False
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(job.conn)
        with contextlib.suppress(ProcessLookupError):
            os.kill(job.pid, signal.SIGKILL)

    def _reap(self, job: Job) -> None:
        _, status = os.waitpid(job.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        answer = f"exit {code}" if code >= 0 else f"signal {-code}"
        with contextlib.suppress(OSError):
            job.conn.sendall(answer.encode() + b"\n")
        self.selector.unregister(job.pidfd)
        os.close(job.pidfd)
        if job.watching:
            self.selector.unregister(job.conn)
        job.conn.close()
        del self.jobs[job.pid]

    def _out_of_date(self) -> bool:
        for path, stamp in self.watched.items():
            try:
                if os.stat(path).st_mtime_ns != stamp:
                    return True
            except OSError:
                return True
        return False


def _started(request: Request, conn: socket.socket) -> Request:
    """In the child: say it has started, and later how it ended (`end`), on the one
    connection: the two cannot pass each other, and a caller that reads anything else first
    knows nothing of its command ran. The server speaks on it again only once the child is
    reaped (a command ended by a signal)."""
    try:
        conn.settimeout(None)
        conn.sendall(f"started {os.getpid()}\n".encode())
    except OSError:
        os._exit(1)  # the caller went away before its command began
    return dataclasses.replace(request, reply=conn)


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def _receive(conn: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise ValueError("the caller went away mid-request")
        data += chunk
    return bytes(data)


def _refuse(conn: socket.socket, fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    conn.close()
    return None


def run(request: Request) -> int:
    """In the child: become the caller's process, then run its command."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
    for target, fd in zip(wire.STDIO, request.fds, strict=True):
        if fd != target:
            os.dup2(fd, target)
    for fd in set(request.fds) - set(wire.STDIO):
        os.close(fd)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.environ)
    time.tzset()  # the caller's TZ
    tempfile.tempdir = None  # the caller's TMPDIR, should anything have asked before the fork
    os.umask(request.umask)
    stdin, stdout, stderr = request.streams.split(";")
    sys.stdin = _stream(0, stdin)
    sys.stdout = _stream(1, stdout)
    sys.stderr = _stream(2, stderr)
    sys.argv = list(request.argv)
    from ..entry import main

    return main(sys.argv[1:])


def end(code: int, reply: socket.socket | None = None) -> NoReturn:
    """End the child as multiprocessing ends a forked child: its own cleanup (the command
    closed its store; the streams and logging are flushed here), then os._exit. Tearing
    down the modules it inherited would write to every page of them, copying the whole
    server's memory (~45 ms) for nothing. The caller is told the status first: everything
    the command did is done and flushed, and the kernel's unmapping of a copy of the server
    and the reaping after it need not be waited for."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if "logging" in sys.modules:
        import logging

        logging.shutdown()
    if reply is not None:
        with contextlib.suppress(OSError):
            reply.sendall(f"exit {code}\n".encode())
    os._exit(code)


def _stream(fd: int, spec: str) -> Any:
    """A standard stream as Python makes its own: line-buffered when it is a terminal (and
    stderr always), no newline translation, the caller's encoding and error handler."""
    encoding, _, errors = spec.rpartition(":")
    binary: Any = open(fd, "rb" if fd == 0 else "wb", closefd=False)
    return io.TextIOWrapper(
        binary,
        encoding=encoding,
        errors=errors,
        newline="\n",
        line_buffering=fd == 2 or (fd == 1 and os.isatty(fd)),
    )
