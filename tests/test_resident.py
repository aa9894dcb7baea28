"""The resident `boris` (store.cli.resident): the installed `boris`, as a user runs it.

A command handed to the resident process answers exactly as one run by itself (stdout,
stderr, exit status, the caller's working directory, environment and stdin); a long one is a
child of the resident process, ends with its caller's signals and dies with its caller; an
edited module retires the resident process; a directory that is not the login's own, or
BORIS_RESIDENT=off, leaves every command to run by itself. Each test has an XDG_RUNTIME_DIR of
its own (short: a socket's name is capped at 107 bytes), so its resident process is its own,
stopped at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BORIS = str(Path(sys.executable).with_name("boris"))
PERSON = "person:rita"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the resident process is Linux's")


@dataclass
class Login:
    home: Path
    runtime: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_RUNTIME_DIR=str(self.runtime),
            BORIS_RESIDENT_IDLE="60",
        )
        env.update(extra)
        return env

    def boris(
        self,
        *argv: str,
        cwd: Path | None = None,
        stdin: bytes = b"",
        umask: int = -1,
        **extra: str,
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [BORIS, *argv],
            env=self.env(**extra),
            cwd=cwd or self.home,
            input=stdin,
            capture_output=True,
            timeout=60,
            umask=umask,
        )

    @property
    def directory(self) -> Path:
        return self.runtime / "boris"

    def resident(self, *, other_than: int | None = None) -> int:
        """The pid of the running resident process (started by an earlier command)."""
        for _ in range(600):
            for lock in self.directory.glob("*.lock"):
                text = lock.read_text().strip()
                sockets = list(self.directory.glob("*.sock"))
                if text and sockets and int(text) != other_than and _alive(int(text)):
                    return int(text)
            time.sleep(0.05)
        raise AssertionError(f"no resident process in {self.directory}")

    def stop(self) -> None:
        for lock in self.directory.glob("*.lock") if self.directory.exists() else ():
            text = lock.read_text().strip()
            if text and _alive(int(text)):
                os.kill(int(text), signal.SIGTERM)


def _alive(pid: int) -> bool:
    # The process may be reaped between any two of these steps: gone at
    # either one is gone.
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
    except (ProcessLookupError, FileNotFoundError):
        return False
    return state != "Z"


def _directory(pid: int) -> Path | None:
    """The process's working directory, or None once it has ended (a child of an earlier
    command may end between the listing and this read)."""
    try:
        return Path(f"/proc/{pid}/cwd").resolve(strict=True)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def _spare(resident: int) -> int:
    """The child the resident process forked ahead of the next command: the one child still
    in its directory, "/" (a command's child is in its caller's)."""
    for _ in range(600):
        spares = [c for c in _children(resident) if _directory(c) == Path("/") and _alive(c)]
        if len(spares) == 1:
            return spares[0]
        time.sleep(0.05)
    raise AssertionError(f"no spare among {_children(resident)}")


def _gone(pid: int) -> bool:
    for _ in range(200):
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def login(tmp_path: Path) -> Iterator[Login]:
    (tmp_path / "home").mkdir()
    runtime = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))  # 0700, as a login's own
    login = Login(tmp_path / "home", runtime)
    yield login
    login.stop()
    shutil.rmtree(runtime, ignore_errors=True)


def _signed_task(login: Login) -> None:
    assert login.boris("init", "--actor", PERSON).returncode == 0
    made = login.boris(
        "--actor", PERSON, "create-task", "--id", "t1", "--title", "Resident <b>",
        "--owner", "rita", "--objective", "the same answers", "--destination", "file://./out/",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr


def _timeless(stdout: bytes) -> object:
    """The output, with the read's own clock reading (`now`) left out of a JSON answer."""

    def drop(value: object) -> object:
        if isinstance(value, dict):
            return {k: drop(v) for k, v in value.items() if k != "now"}
        if isinstance(value, list):
            return [drop(v) for v in value]
        return value

    return drop(json.loads(stdout)) if stdout.startswith(b"{") else stdout


def test_a_command_in_the_resident_process_answers_as_one_run_by_itself(login: Login) -> None:
    _signed_task(login)
    login.resident()
    work = login.home / "work"
    work.mkdir()
    (work / "lines.jsonl").write_text("")
    for argv, stdin in (
        (["show", "t1", "--json"], b""),
        (["tasks"], b""),
        (["show", "nope"], b""),  # exit 4, one line on stderr
        (["--store", "./elsewhere", "tasks"], b""),  # relative to the caller's directory
        (["--actor", PERSON, "ingest", "--task", "t1"], b'{"kind": "not a command"}\n'),
        (["--json", "events", "t1"], b""),
    ):
        alone = login.boris(*argv, cwd=work, stdin=stdin, BORIS_RESIDENT="off")
        handed = login.boris(*argv, cwd=work, stdin=stdin)
        assert (handed.returncode, _timeless(handed.stdout), handed.stderr) == (
            alone.returncode,
            _timeless(alone.stdout),
            alone.stderr,
        ), argv
    assert json.loads(login.boris("show", "t1", "--json").stdout)["result"]["title"] == (
        "Resident <b>"
    )
    assert not (login.home / "elsewhere").exists()  # `--store ./elsewhere` refused alike


def test_a_long_command_is_the_resident_process_child_and_ends_with_its_caller(
    login: Login,
) -> None:
    _signed_task(login)
    resident = login.resident()
    work = login.home / "work"
    work.mkdir()
    env = login.env(BORIS_ACTOR="agent:a")

    def mcp() -> tuple[subprocess.Popen[bytes], int]:
        spare = _spare(resident)
        caller = subprocess.Popen(
            [BORIS, "mcp", "--task", "t1"], env=env, cwd=work, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        for _ in range(400):
            # Forked, it becomes the caller's process: its directory is the caller's.
            for child in _children(resident):
                if _directory(child) == work.resolve():
                    # ... and it is the spare forked before the command was given.
                    assert child == spare
                    return caller, child
            time.sleep(0.05)
        caller.kill()
        caller.communicate()  # its pipes closed, not left to the next test's collector
        raise AssertionError("the command did not run in the resident process")

    # Its stdin closed, `boris mcp` ends: the caller's exit status is the command's.
    caller, child = mcp()
    # While it runs, another spare waits for the next command (a hook's, beside the MCP
    # server an agent keeps running).
    assert _spare(resident) != child
    caller.communicate(timeout=30)
    assert caller.returncode == 0
    # SIGTERM to the caller is passed on; the caller ends as the command did.
    caller, child = mcp()
    caller.send_signal(signal.SIGTERM)
    caller.communicate(timeout=30)
    assert caller.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM, 0, 1)
    assert not _alive(child)
    # The caller killed outright: the command goes with it, as it would have by itself.
    caller, child = mcp()
    caller.kill()
    caller.communicate(timeout=30)
    for _ in range(200):
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child)
    assert _alive(resident)


def test_a_spare_runs_the_next_command_as_one_run_by_itself(login: Login) -> None:
    """Each command here is given to the spare forked before it (a child made ready ahead,
    holding nothing of anyone's): its answer, the files it makes and their modes are those
    of the command run by itself, in the caller's directory, environment and umask."""
    _signed_task(login)
    resident = login.resident()
    work = login.home / "work"
    work.mkdir()
    key = str(login.home / "agent.pem")
    assert login.boris("keys", "new", key).returncode == 0
    assert login.boris("keys", "add", key, "--for", "agent:a", "--actor", PERSON).returncode == 0
    hooks_task = login.boris(
        "--actor", PERSON, "create-task", "--id", "t2", "--title", "Hooks", "--owner", "rita",
        "--objective", "tool calls", "--destination", "claude-code://tools/",
    )  # fmt: skip
    assert hooks_task.returncode == 0, hooks_task.stderr
    hook_env = {"BORIS_ACTOR": "agent:a", "BORIS_TASK": "t2", "BORIS_KEY": key}
    call = json.loads((ROOT / "tests/fixtures/claude_code/pre_tool_use.json").read_text())
    call["tool_use_id"] = "toolu_RUN"  # each run records a call of its own
    for argv, stdin, umask, extra in (
        (["tasks"], b"", 0o022, {"BORIS_STORE": "./elsewhere"}),  # env and directory
        (["--store", "./made", "init", "--actor", PERSON], b"", 0o077, {}),  # umask
        (["--store", "./made", "init", "--actor", PERSON], b"", 0o002, {}),
        (["hook", "pre-tool-use"], json.dumps(call).encode(), 0o022, hook_env),
        (["show", "nope"], b"", 0o022, {}),  # exit 4, one line on stderr
    ):
        answers = []
        for resident_on in ("off", "on"):
            spare = _spare(resident)
            given = stdin.replace(b"toolu_RUN", f"toolu_{resident_on}".encode())
            done = login.boris(
                *argv, cwd=work, stdin=given, umask=umask, BORIS_RESIDENT=resident_on, **extra
            )
            made = sorted((p.name, p.stat().st_mode) for p in work.rglob("*"))
            if umask == 0o077:  # the store made is the caller's alone
                assert made and all(mode & 0o077 == 0 for _, mode in made)
            answers.append((done.returncode, _timeless(done.stdout), done.stderr, made))
            for path in sorted(work.rglob("*"), reverse=True):
                path.rmdir() if path.is_dir() else path.unlink()
            if resident_on == "on":
                assert _gone(spare), argv  # the spare ran it: reaped once it ended
                assert _spare(resident) != spare  # ... and another is forked for the next
        assert answers[0] == answers[1], argv
    assert answers[0][0] == 4
    # The hook's call, recorded by each (exit 0), in the task its environment named.
    events = login.boris("--json", "events", "t2").stdout
    assert b"toolu_off" in events and b"toolu_on" in events


def test_a_spare_ends_with_its_server(login: Login) -> None:
    """The spare holds nothing and waits only for its server: killed outright, the server
    takes its spare with it, and the next command starts a new one."""
    assert login.boris("init", "--actor", PERSON).returncode == 0
    resident = login.resident()
    spare = _spare(resident)
    os.kill(resident, signal.SIGKILL)
    assert _gone(spare)
    assert login.boris("tasks").stdout == b"(no tasks)\n"
    assert login.resident(other_than=resident) != resident


def test_an_edited_module_retires_the_resident_process(login: Login, tmp_path: Path) -> None:
    """A copy of the store package first on the import path stands for an upgrade or a
    developer's edit: once a module changes, the next command runs by itself (right all the
    same) and the one after it in a new resident process, of the new files."""
    lib = tmp_path / "lib"
    shutil.copytree(ROOT / "store", lib / "store", ignore=shutil.ignore_patterns("__pycache__"))
    login_env = {"PYTHONPATH": str(lib)}
    assert login.boris("init", "--actor", PERSON, **login_env).returncode == 0
    first = login.resident()
    assert login.boris("tasks", **login_env).stdout == b"(no tasks)\n"
    spare = _spare(first)
    module = lib / "store" / "cli" / "app.py"
    later = module.stat().st_mtime + 5
    os.utime(module, (later, later))
    assert login.boris("tasks", **login_env).stdout == b"(no tasks)\n"
    assert _gone(first)
    assert _gone(spare)  # discarded with its server: a spare of the old files runs nothing
    assert login.boris("tasks", **login_env).stdout == b"(no tasks)\n"
    assert login.resident(other_than=first) != first


def test_a_directory_not_the_logins_own_or_the_switch_leaves_commands_alone(
    login: Login,
) -> None:
    login.directory.mkdir(mode=0o755)
    login.directory.chmod(0o755)  # whatever the umask: others may enter
    assert login.boris("init", "--actor", PERSON).returncode == 0
    assert login.boris("tasks").stdout == b"(no tasks)\n"
    assert list(login.directory.iterdir()) == []
    login.directory.rmdir()
    assert login.boris("tasks", BORIS_RESIDENT="off").stdout == b"(no tasks)\n"
    assert not login.directory.exists()


def test_both_answers_in_one_read_are_both_read() -> None:
    """A quick command's `started` and `exit` can reach the caller in one read (a loaded
    machine makes it likely): the second line is the command's status, not a lost server."""
    import socket

    from store.cli.resident import wire

    server, caller = socket.socketpair()
    with server, caller:
        server.sendall(b"started 41\nexit 3\n")
        server.close()
        answers = wire.Lines(caller)
        assert (answers.next(), answers.next(), answers.next()) == ("started 41", "exit 3", "")
