"""Every block the documentation shows runs, as written, on the defaults a new user gets.

Sybil (https://sybil.readthedocs.io) collects README.md and every page of docs/ as tests: each
document is one test module, its blocks are its tests, run in the document's order. The
conventions a page is written to:

- A ```sh block runs in bash (`set -eo pipefail`) in the document's own workspace, a fresh
  temporary directory that is the current directory, with HOME, XDG_CONFIG_HOME and
  XDG_DATA_HOME inside it (so `boris init` makes the default store there, signed, with the
  person's key in that config dir, exactly as on a new user's machine) and this checkout's
  `boris` first on PATH. Whatever a block exports and the directory it ends in carry over to
  the document's next blocks, as in one terminal. A command that is meant to fail says so
  on its line (`boris … || echo "exit $?: why"`).
- A ```python block runs in the document's namespace (blocks share it, in order) with that
  same environment and current directory; a `Store` it leaves open is closed at the end.
- A ```json block must parse. Preceded by `<!-- save-as: PATH -->` it is also written to
  PATH in the workspace, where a later block uses it (a `.mcp.json`, a hooks file).
- `<!-- skip: next "why" -->` (Sybil's) skips the next block and must say why: it opens the
  window, needs a model's network, needs Claude Code itself, installs system packages.
- `<!-- invisible-code: sh -->` or `<!-- invisible-code: python -->` blocks (a comment holding
  the code) run like visible ones but are not shown: what stands in for what the reader
  brings (a scripted model in place of theirs, a person deciding "in another terminal").
- A document's blocks are one sequence: the suite runs with `--dist loadfile` (pyproject's
  addopts), so under xdist a document goes to one worker, in order; the documents go first
  (`pytest_collection_modifyitems` below).
- ```text, ```console-output and other blocks are shown, not run; tests/test_docs.py checks
  that every fence is tagged with a language it knows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from sybil import Document, Example, Region, Sybil
from sybil.evaluators.python import PythonEvaluator
from sybil.parsers.markdown import CodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
#: How long one block may run before it is taken as hung (a server left waiting on stdin).
BLOCK_TIMEOUT_S = 600

#: Languages a fence may carry: those run (sh, python, json) and those only shown.
RUN = ("sh", "python", "json")
SHOWN = ("text", "console-output", "sql", "toml", "yaml", "ini", "diff")


class Workspace:
    """One document's terminal: a directory, an environment, a current directory."""

    def __init__(self, name: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"boris-doc-{name}-"))
        home = self.root / "home"
        (home / ".config").mkdir(parents=True)
        (home / ".local" / "share").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
        env.update(
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_DATA_HOME=str(home / ".local" / "share"),
            PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            # The checkout, where a page says "in the Boris checkout".
            BORIS_CHECKOUT=str(ROOT),
            PYTHONDONTWRITEBYTECODE="1",
        )
        self.env = env
        self.cwd = self.root
        # A page that says "in the checkout" runs `.venv/bin/…` and `packaging/…` from it.
        for name in (".venv", "packaging"):
            (self.root / name).symlink_to(ROOT / name)

    def run_sh(self, source: str) -> None:
        state = self.root / ".block-state"
        script = (
            "set -eo pipefail\n"
            f"cd {_quote(str(self.cwd))}\n"
            f"trap 'pwd > {_quote(str(state))}.pwd; env -0 > {_quote(str(state))}.env' EXIT\n"
            f"{source}\n"
        )
        done = subprocess.run(
            ["bash", "-c", script],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            raise AssertionError(
                f"the block exited {done.returncode}\n--- block ---\n{source}\n"
                f"--- stdout ---\n{done.stdout[-4000:]}\n--- stderr ---\n{done.stderr[-4000:]}"
            )
        raw = Path(f"{state}.env").read_bytes().decode()
        self.env = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
        self.cwd = Path(Path(f"{state}.pwd").read_text().strip())

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _workspace(example: Example) -> Workspace:
    ws = example.namespace.get("_workspace")
    if not isinstance(ws, Workspace):
        ws = example.namespace["_workspace"] = Workspace(
            re.sub(r"\W", "-", Path(example.path).stem)
        )
    return ws


def _evaluate_sh(example: Example) -> None:
    _workspace(example).run_sh(str(example.parsed))


class _InWorkspace:
    """Run a Python block with the workspace's environment and current directory, then put
    the test process's own back."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def __enter__(self) -> None:
        self.saved_env = dict(os.environ)
        self.saved_cwd = os.getcwd()
        os.environ.clear()
        os.environ.update(self.ws.env)
        os.chdir(self.ws.cwd)

    def __exit__(self, *exc: object) -> None:
        self.ws.env = dict(os.environ)
        self.ws.cwd = Path(os.getcwd())
        os.environ.clear()
        os.environ.update(self.saved_env)
        os.chdir(self.saved_cwd)


class _PythonInWorkspace(PythonEvaluator):
    def __call__(self, example: Example) -> Any:
        with _InWorkspace(_workspace(example)):
            return super().__call__(example)


def _evaluate_json(example: Example) -> None:
    save_as, text = example.parsed
    json.loads(text)
    if save_as:
        ws = _workspace(example)
        path = Path(ws.cwd, os.path.expanduser(save_as))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


_JSON_BLOCK = re.compile(
    r"(?:<!--\s*save-as:\s*(?P<path>\S+)\s*-->\s*\n)?"
    r"^```json[^\n]*\n(?P<body>.*?)^```",
    re.MULTILINE | re.DOTALL,
)


def _json_blocks(document: Document) -> Iterable[Region]:
    for m in _JSON_BLOCK.finditer(document.text):
        yield Region(m.start(), m.end(), (m.group("path"), m.group("body")), _evaluate_json)


def _teardown(namespace: dict[str, Any]) -> None:
    for value in list(namespace.values()):
        close = getattr(value, "close", None)
        if type(value).__name__ == "Store" and callable(close):
            close()
    ws = namespace.pop("_workspace", None)
    if isinstance(ws, Workspace):
        ws.close()


pytest_collect_file = Sybil(
    parsers=[
        CodeBlockParser(language="sh", evaluator=_evaluate_sh),
        CodeBlockParser(language="python", evaluator=_PythonInWorkspace()),
        _json_blocks,
        SkipParser(),
    ],
    patterns=["*.md"],
    teardown=_teardown,
).pytest()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files are handed to xdist's workers (`--dist loadfile`) longest first, as far as is
    known before they run: the bundle's module (its build, under BORIS_SLOW=1), the
    documents (the suite's longest sequences), then the test
    modules marked `early` (a long sequence of processes, such as each part of
    tests/test_cli_table.py's command table), then the rest by their number of tests (xdist's
    own order; `--no-loadscope-reorder` in pyproject leaves the order to this). A long file
    started last keeps one worker busy while the other has nothing left to do. Each file's
    own tests keep their order."""
    files: dict[Path, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.path, []).append(item)

    def rank(path: Path) -> tuple[int, int]:
        first = files[path][0]
        if any(item.get_closest_marker("slow") for item in files[path]):
            # The bundle's build (BORIS_SLOW=1, CI) is the longest sequence of all; skipped
            # otherwise, it costs nothing to go first.
            return -1, 0
        kind = 0 if path.suffix == ".md" else 1 if first.get_closest_marker("early") else 2
        return kind, -len(files[path])

    items[:] = [item for path in sorted(files, key=rank) for item in files[path]]
