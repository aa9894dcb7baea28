"""The resource scope: which paths and destinations a task may touch.

A path is judged after `..`, absolute paths and symbolic links are resolved, so a link inside
the scope that points outside it is outside.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ScopeViolation
from .model import Scope


def make_scope(paths: list[str] | tuple[str, ...], destinations: tuple[str, ...] = ()) -> Scope:
    roots = tuple(os.path.realpath(os.path.expanduser(p)) for p in paths)
    return Scope(paths=roots, destinations=tuple(destinations))


def workspace(scope: Scope) -> Path | None:
    """The first scope root: where a relative path in a command is taken from."""
    return Path(scope.paths[0]) if scope.paths else None


def resolve_path(scope: Scope, path: str) -> Path:
    """The real path of `path`, or ScopeViolation when it lies outside every root."""
    raw = os.path.expanduser(path)
    if not os.path.isabs(raw):
        base = workspace(scope)
        if base is None:
            raise ScopeViolation(f"{path!r} is relative and the task's scope has no paths")
        raw = os.path.join(base, raw)
    real = os.path.realpath(raw)
    for root in scope.paths:
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return Path(real)
    raise ScopeViolation(f"{path!r} resolves to {real}, outside the task's scope")


def relative_label(scope: Scope, real: Path) -> str:
    """How a path inside the scope is recorded: relative to the workspace when it can be."""
    base = workspace(scope)
    if base is not None:
        try:
            return real.relative_to(base).as_posix()
        except ValueError:
            pass
    return str(real)


def is_destination(target: str) -> bool:
    return "://" in target


def check_target(scope: Scope, target: str) -> str:
    """A normalized effect target: a destination URL inside the scope, or a scoped path."""
    if is_destination(target):
        if any(target.startswith(prefix) for prefix in scope.destinations):
            return target
        raise ScopeViolation(f"destination {target!r} is outside the task's scope")
    return str(resolve_path(scope, target))
