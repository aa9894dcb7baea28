"""The window's processes end with it: after `kill PID` (SIGTERM) of a real boris-desktop,
and after a SIGKILL that leaves it no cleanup, neither the lexing process nor
multiprocessing's resource tracker stays behind. And highlighting without a usable
/dev/shm runs in the window's own process, said once, instead of killing the warm-up."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has exited; only its parent's wait is left


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _descendants(pid: int) -> set[int]:
    seen: set[int] = set()
    todo = [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table in /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_nothing_the_window_started_outlives_it(tmp_path: Path, signum: int) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env.update(
        QT_QPA_PLATFORM="offscreen",
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        BORIS_DESKTOP_SETTINGS=str(tmp_path / "settings.ini"),
    )
    # The reviewer is known, so no dialog waits for an answer at start-up.
    (tmp_path / "settings.ini").write_text("[reviewer]\nname=Rita\nid=rita\n")
    window = subprocess.Popen(
        [sys.executable, "-m", "boris_desktop", "--demo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # The inbox is loaded and the lexing process warmed: it and its resource tracker.
        deadline = time.monotonic() + 120
        started: set[int] = set()
        while len(started) < 2 and time.monotonic() < deadline:
            assert window.poll() is None, window.stderr.read() if window.stderr else ""
            time.sleep(0.2)
            started = {p for p in _descendants(window.pid) if _alive(p)}
        assert len(started) >= 2, started
        time.sleep(0.5)  # the worker's own start-up (its watch of the window) is done
        started = {p for p in _descendants(window.pid) if _alive(p)}
        window.send_signal(signum)
        window.wait(timeout=60)
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in started) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in started if _alive(p)] == []
        if signum == signal.SIGTERM:  # it quit as a close does
            assert window.returncode == 0
            assert window.stderr is not None
            assert b"Traceback" not in window.stderr.read()
    finally:
        if window.poll() is None:
            window.kill()
            window.wait(timeout=30)
        if window.stderr is not None:
            window.stderr.close()


def test_without_dev_shm_highlighting_runs_in_process_said_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from boris_desktop.runtime import lexing

    def no_semaphores(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "/dev/shm")

    monkeypatch.setattr(lexing, "ProcessPoolExecutor", no_semaphores)
    monkeypatch.setattr(lexing, "_executor", None)
    monkeypatch.setattr(lexing, "_unavailable", False)
    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    with caplog.at_level(logging.WARNING, logger=lexing.__name__):
        warming = threading.Thread(target=lexing.warm)
        warming.start()
        warming.join(30)
        assert died == []
        spans = lexing.lex('{"a": 1}', "json")
        lexing.lex("x = 1\n", None, "x.py")
    assert {s[2] for line in spans.values() for s in line} >= {"key", "number"}
    said = [r for r in caplog.records if r.name == lexing.__name__]
    assert len(said) == 1 and "/dev/shm" in said[0].getMessage()


#: A fresh interpreter (Pygments not yet imported) where the lexing process cannot start,
#: so four highlights run on four threads at once, each the first to ask for Pygments.
SIDE_BY_SIDE = """
import json, threading
from boris_desktop.runtime import lexing
lexing._unavailable = True  # as after "highlighting runs in the window's own process"
go, out = threading.Barrier(4), {}
def one(name):
    go.wait()
    try:
        out[name] = sorted({s[2] for line in lexing.lex("x = 1  # one\\n", None, name).values() for s in line})
    except Exception as exc:
        out[name] = repr(exc)
threads = [threading.Thread(target=one, args=(n,)) for n in ("a.py", "b.py", "c.py", "d.py")]
[t.start() for t in threads]
[t.join(60) for t in threads]
print(json.dumps(out))
"""


def test_first_highlights_on_four_threads_at_once_all_colour() -> None:
    # Pygments' lexers module replaces itself with a lazy one at the end of its first
    # import; a thread importing from it meanwhile got "cannot import name 'TextLexer'".
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", SIDE_BY_SIDE], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    coloured = json.loads(done.stdout)
    assert coloured == {n: ["comment", "number"] for n in ("a.py", "b.py", "c.py", "d.py")}
