"""A headless install: `pip install .` with no extras, as on an agent's machine, gives the
record (`boris`, `boris mcp`, the adapters) without Qt, and `boris-desktop` there says in one
line what to install instead of a traceback.

The install is real: a fresh virtual environment of this interpreter's base Python, into which
pip installs (not editable) a copy of the checkout, so nothing is built inside the checkout.
It takes about half a minute with pip's cache warm (most of it pip's); a cold cache downloads
the dependencies once (the venv is about 115 MB installed, against about 1 GB with the window
and the test tools).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from boris_desktop import app

ROOT = Path(__file__).resolve().parent.parent
#: Top-level modules `boris` and `boris mcp` must never import: the window and its Qt.
WINDOW_MODULES = ("PySide6", "shiboken6", "boris_desktop")


def _checkout_files() -> list[str]:
    """The checkout's files as a clone would have them, plus new ones not yet committed."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout: the install copies the files git tracks")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [f for f in listed.split("\0") if f and (ROOT / f).is_file()]


@dataclass(frozen=True)
class Headless:
    venv: Path
    home: Path
    env: dict[str, str]

    def bin(self, name: str) -> Path:
        return self.venv / "bin" / name

    def run(self, *argv: str | Path, profile: bool = False) -> subprocess.CompletedProcess[str]:
        """A command of the venv, in a directory outside the checkout. profile: Python logs
        every module imported to stderr (PYTHONPROFILEIMPORTTIME)."""
        env = dict(self.env, PYTHONPROFILEIMPORTTIME="1") if profile else self.env
        return subprocess.run(
            [str(a) for a in argv],
            cwd=self.home,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )


def _window_imports(importtime_log: str) -> list[str]:
    """The window's modules named in a PYTHONPROFILEIMPORTTIME log (`import time: … | name`)."""
    names = (
        line.rpartition("|")[2].strip()
        for line in importtime_log.splitlines()
        if line.startswith("import time:")
    )
    return sorted({n for n in names if n.split(".")[0] in WINDOW_MODULES})


def _install(base: Path) -> Headless:
    """Copy the checkout, make the venv, install the copy with no extras."""
    source = base / "checkout"
    for name in _checkout_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    venv = base / "venv"
    # Run from this (test) venv, `-m venv` makes a venv of the base interpreter: it sees
    # neither this venv's packages nor the checkout.
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # pip as the machine configures it (its cache, indexes and wheel directories), but
    # nothing of the developer's own environment leaks in.
    pip_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(source)],
        env=pip_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    home = base / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("BORIS_", "PYTHON", "QT_")) and k not in ("DISPLAY", "WAYLAND_DISPLAY")
    }
    # The person's keys and default store go to this test's directories, never the user's.
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        LOGNAME="tester",
        USER="tester",
        VIRTUAL_ENV=str(venv),
        PATH=str(venv / "bin") + os.pathsep + os.environ.get("PATH", ""),
    )
    return Headless(venv=venv, home=home, env=env)


def test_a_headless_install_runs_the_record_and_not_the_window(tmp_path: Path) -> None:
    # One test, one install: split into several, pytest-xdist's workers would each install.
    headless = _install(tmp_path)
    _no_qt_and_runs_from_the_venv(headless)
    _boris_inits_a_signed_store_and_creates_a_task_without_qt(headless)
    _boris_mcp_answers_over_stdio_without_qt(headless)
    _the_window_says_in_one_line_what_to_install(headless, [headless.bin("boris-desktop")])
    _the_window_says_in_one_line_what_to_install(
        headless, [headless.bin("python"), "-m", "boris_desktop"]
    )


def _no_qt_and_runs_from_the_venv(headless: Headless) -> None:
    no_qt = headless.run(headless.bin("python"), "-c", "import PySide6")
    assert no_qt.returncode != 0
    assert "No module named 'PySide6'" in no_qt.stderr
    where = headless.run(headless.bin("python"), "-c", "import store; print(store.__file__)")
    assert where.returncode == 0, where.stderr
    # The installed copy, not the checkout.
    assert Path(where.stdout.strip()).is_relative_to(headless.venv)


def _boris_inits_a_signed_store_and_creates_a_task_without_qt(headless: Headless) -> None:
    helped = headless.run(headless.bin("boris"), "--help", profile=True)
    assert helped.returncode == 0, helped.stderr
    assert "create-task" in helped.stdout
    assert _window_imports(helped.stderr) == []

    init = headless.run(headless.bin("boris"), "init", profile=True)
    assert init.returncode == 0, init.stderr
    assert "(signatures required)" in init.stdout
    assert _window_imports(init.stderr) == []
    # Signed by default, as the person logged in: their key is in this test's config dir.
    assert (headless.home / ".config" / "boris" / "keys" / "person-tester.pem").is_file()

    created = headless.run(
        headless.bin("boris"),
        "create-task",
        "--actor",
        "person:tester",
        "--title",
        "Headless",
        "--owner",
        "tester",
        "--objective",
        "work on a machine without Qt",
        "--json",
        profile=True,
    )
    assert created.returncode == 0, created.stderr
    assert _window_imports(created.stderr) == []
    task = json.loads(created.stdout)["result"]
    listed = headless.run(headless.bin("boris"), "tasks", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [t["id"] for t in json.loads(listed.stdout)["result"]] == [task]


def _boris_mcp_answers_over_stdio_without_qt(headless: Headless) -> None:
    log = headless.home / "mcp-stderr.log"
    params = StdioServerParameters(
        command=str(headless.bin("boris")),
        args=["mcp", "--actor", "agent:headless"],
        env=dict(headless.env, PYTHONPROFILEIMPORTTIME="1"),
        cwd=str(headless.home),
    )
    names: set[str] = set()

    async def scenario() -> None:
        with log.open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                assert init.server_info.name
                names.update(t.name for t in (await session.list_tools()).tools)

    anyio.run(scenario)
    assert {"create_task", "plan_effect", "wait_for_approval"} <= names
    assert _window_imports(log.read_text()) == []


def _the_window_says_in_one_line_what_to_install(
    headless: Headless, argv: list[Path | str]
) -> None:
    """`boris-desktop` (the gui-script) or `python -m boris_desktop`: one line, exit 2."""
    done = headless.run(*argv)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == app.NO_QT + "\n"


def test_main_without_pyside6_prints_the_line_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # None in sys.modules: `import PySide6` raises ModuleNotFoundError, as where it is absent.
    monkeypatch.setitem(sys.modules, "PySide6", None)
    assert app.main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == app.NO_QT + "\n"
    assert "\n" not in app.NO_QT and "pip install '.[desktop]'" in app.NO_QT
