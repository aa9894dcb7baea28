"""The code's shape holds: no module of the store or the desktop imports one that (through
others) imports it back, and every module of the store sits in a layer of the import-linter contract, so a new module is
placed deliberately rather than slipping past the layers check.

Imports under `if TYPE_CHECKING:` count: a cycle that only the type checker follows still
ties the two modules together for a reader and for mypy."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "store"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: Path = STORE) -> dict[str, Path]:
    return {
        _module_name(p): p
        for p in package.rglob("*.py")
        if "migrations" not in p.relative_to(package).parts
    }


def _imported(module: str, path: Path, known: set[str]) -> Iterator[str]:
    """The store modules `module` imports, anywhere in its body (functions, TYPE_CHECKING)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in candidates:
            if name in known and name != module:
                yield name


def _graph(package: Path = STORE) -> dict[str, set[str]]:
    modules = _modules(package)
    known = set(modules)
    graph = {m: set(_imported(m, p, known)) for m, p in modules.items()}
    # A package's __init__ re-exporting its children is not a dependency of the children on
    # it: importing `store.rules` runs `store/__init__` first whatever either imports.
    for m in graph:
        graph[m] = {t for t in graph[m] if not m.startswith(t + ".")}
        graph[m] = {t for t in graph[m] if not (t.startswith(m + ".") and _is_package(m))}
    return graph


def _is_package(module: str) -> bool:
    return (ROOT / Path(*module.split(".")) / "__init__.py").exists()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


@pytest.mark.parametrize("package", ["store", "boris_desktop"])
def test_no_import_cycles(package: str) -> None:
    graph = _graph(ROOT / package)
    assert len(graph) > 20  # the walk found the package's modules
    assert _cycles(graph) == []


def test_a_cycle_is_found_when_there_is_one() -> None:
    # The check itself must see a cycle, or its silence above means nothing.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layered = [c for c in contracts if c["type"] == "layers"]
    assert len(layered) == 1, "the store's layers contract is missing from pyproject.toml"
    return [
        {name.strip() for part in layer.split("|") for name in part.split(":")}
        for layer in layered[0]["layers"]
    ]


def test_every_store_module_is_in_a_layer() -> None:
    placed = set().union(*_layers())
    unplaced = sorted(
        m
        for m in _modules()
        if m != "store" and not any(m == p or m.startswith(p + ".") for p in placed)
    )
    assert unplaced == [], f"add these to a layer in pyproject.toml: {unplaced}"


def test_the_layers_name_only_modules_that_exist() -> None:
    modules = set(_modules())
    stale = sorted(name for layer in _layers() for name in layer if name not in modules)
    assert stale == []


# --- the window and the store: one typed face ---------------------------------------------

DESKTOP = ROOT / "boris_desktop"


def _store_imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, what) for every import of the store in a desktop module, in any body."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "store":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "store":
                for alias in node.names:
                    yield node.lineno, f"store.{alias.name}"
            elif node.module.split(".")[0] == "store":
                yield node.lineno, node.module


def test_the_window_imports_the_store_only_through_its_public_face() -> None:
    wrong = [
        f"{p.relative_to(ROOT)}:{line}: {what}"
        for p in DESKTOP.rglob("*.py")
        for line, what in _store_imports(p)
        if what != "store.api"
    ]
    assert wrong == []


def test_the_import_contract_forbids_every_store_module_but_the_face() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["source_modules"] == ["boris_desktop"] and c["type"] == "forbidden"
    )
    children = {
        f"store.{p.stem if p.is_file() else p.name}"
        for p in STORE.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
    }
    assert set(contract["forbidden_modules"]) == children - {"store.api"}


def test_the_face_lists_what_it_lends() -> None:
    from store import api

    assert sorted(api.__all__) == sorted(api._WHERE)
    for name in api.__all__:
        assert getattr(api, name) is not None


def _state_words() -> set[str]:
    """Every state the store names with an enum: what the window must not spell itself."""
    from enum import StrEnum

    from store import rules, status
    from store.reads import signers

    words: set[str] = set()
    for module in (rules, status, signers):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, StrEnum) and value is not StrEnum:
                words |= {str(m) for m in value}
    words |= set(status.STATUSES) if hasattr(status, "STATUSES") else set()
    return words


def _compared_words(tree: ast.AST, words: set[str]) -> Iterator[tuple[int, str]]:
    """String constants the code compares against (==, !=, in, not in; match cases)."""

    def constants(node: ast.AST) -> Iterator[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value
        elif isinstance(node, ast.Set | ast.Tuple | ast.List):
            for elt in node.elts:
                yield from constants(elt)

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                for value in constants(side):
                    if value in words:
                        yield node.lineno, value
        elif isinstance(node, ast.MatchValue):
            for value in constants(node.value):
                if value in words:
                    yield node.lineno, value


def test_the_window_compares_no_state_the_store_names() -> None:
    words = _state_words()
    assert {"approved", "stale", "satisfied", "dispatched", "unknown"} <= words
    found = [
        f"{p.relative_to(ROOT)}:{line}: {value!r}"
        for p in DESKTOP.rglob("*.py")
        for line, value in _compared_words(ast.parse(p.read_text(encoding="utf-8")), words)
    ]
    assert found == []


def test_a_state_string_compared_in_the_window_is_found() -> None:
    tree = ast.parse('if a["state"] == "approved" or s in ("stale", "x"):\n    pass\n')
    assert [v for _, v in _compared_words(tree, _state_words())] == ["approved", "stale"]


def test_every_type_ignore_in_the_window_says_why() -> None:
    """mypy is strict on the window too; where Qt's stubs are wrong, the line says so."""
    import re

    unexplained = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in DESKTOP.rglob("*.py")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if (m := re.search(r"# type: ignore\[[^\]]*\](.*)$", line))
        and not re.search(r"#\s*(?!noqa)\w.{8,}", m.group(1).replace("# noqa: B008", ""))
    ]
    assert unexplained == []
