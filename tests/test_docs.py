"""The front page and the manual hold together (issue 39).

The blocks themselves run through Sybil (conftest.py at the checkout's root). Here: the
README stays a front page; the manual builds as a site with strict link and anchor checks;
every fence says its language, so no block escapes the runner by being untagged; the
command reference is what `boris` prints today; and every refusal code, rule and JSON field a
page names in backticks is one the program has (`boris schema`, the refusal classes, the
rules), so a renamed field or code fails here, not in a reader's script.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from store.cli import reference

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BIN = Path(sys.executable).parent

#: Fence languages: run by the Sybil runner, or only shown.
RUN = {"sh", "python", "json"}
SHOWN = {"text", "sql", "toml", "yaml", "diff"}

#: Words in backticks that look like codes or fields but name something else: the window's
#: package, a framework's names the agent guides quote (anything else a page names must be
#: in the program).
NOT_RECORD_NAMES = {
    "boris_desktop",
    "create_agent",
    "send_email",
    "get_tuple",
    "final_output",
    "interrupt_on",
    "human_in_the_loop",
    "function_tool",
    "input_required",
    "taskSupport",
}


def _fences(text: str) -> Iterator[str]:
    inside = False
    for line in text.splitlines():
        m = re.match(r"^\s*(`{3,}|~{3,})(.*)$", line)
        if m:
            if not inside:
                yield m.group(2).strip()
            inside = not inside


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move the rest to docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fence_says_its_language(page: Path) -> None:
    for info in _fences(page.read_text()):
        language = info.split()[0] if info else ""
        assert language in RUN | SHOWN, f"{page.name}: a fence tagged {info!r}"


def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "mkdocs"), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "agents" / "openai-agents" / "index.html").exists()


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in PAGES[1:]:
        name = str(page.relative_to(ROOT / "docs"))
        assert name in nav, f"docs/{name} is not in mkdocs.yml's nav"


def test_the_command_reference_is_what_boris_prints() -> None:
    page = (ROOT / "docs" / "cli-reference.md").read_text()
    assert page == reference.markdown(), (
        "docs/cli-reference.md is stale: .venv/bin/python -m store.cli.reference "
        "> docs/cli-reference.md"
    )


# --- the names a page uses ----------------------------------------------------------------


def _schema() -> dict[str, Any]:
    done = subprocess.run(
        [str(BIN / "boris"), "schema"], capture_output=True, text=True, timeout=120, check=True
    )
    schema: dict[str, Any] = json.loads(done.stdout)
    return schema


def _names_in(value: Any) -> Iterator[str]:
    """Every property name, definition name, enum value and constant of a JSON Schema."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in ("properties", "$defs", "x-authority", "x-outputs", "x-errors"):
                assert isinstance(inner, dict)
                yield from inner
            if key in ("enum", "const"):
                yield from (str(v) for v in (inner if isinstance(inner, list) else [inner]))
            yield from _names_in(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _names_in(inner)


def _program_names() -> set[str]:
    """Every snake_case name the store's source spells out: a refusal's `code` and `rule`, a
    verify finding's code, an MCP tool's name, a JSON key it writes, a column it reads. A
    code or field renamed in the program and not on the page is missing from here."""
    names: set[str] = set()
    for path in (ROOT / "store").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.update(re.findall(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", node.value))
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
    # A page may name a module or package of either program by its path (`main_window/`).
    for root in ("store", "boris_desktop"):
        for path in (ROOT / root).rglob("*.py"):
            names.update(p.removesuffix(".py") for p in path.relative_to(ROOT).parts)
    return names


def _snake_names(text: str) -> Iterator[str]:
    """Backticked snake_case words: what a page names as a code, a rule or a field."""
    for span in re.findall(r"`([^`\n]+)`", text):
        yield from re.findall(r"(?<![\w./:-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(.])", span)


def test_every_code_and_field_a_page_names_exists() -> None:
    known = set(_names_in(_schema())) | _program_names() | NOT_RECORD_NAMES
    unknown: dict[str, list[str]] = {}
    for page in PAGES:
        text = page.read_text()
        # Code blocks are run; the prose's names are what a reader takes on trust.
        prose = re.sub(r"(?ms)^```.*?^```", "", text)
        for word in _snake_names(prose):
            if word not in known:
                unknown.setdefault(word, []).append(str(page.relative_to(ROOT)))
    assert not unknown, f"names the program does not have: {unknown}"
