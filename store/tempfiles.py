"""Temporary files that a writer renames into place, and the sweep of those a crash left.

A blob or an exported package is written under a temporary name, then renamed; a writer
killed in between leaves the temporary file forever. The writer holds an advisory lock
(flock) on its temporary file from the moment it exists until it closes it, so a sweep
removes only files whose lock it can take, i.e. whose writer is gone. A file is also spared
while it is younger than `STALE_AFTER`: that covers the instant between the writer's close
and its rename, and a file whose lock was not yet taken. Where there is no flock (Windows)
only files older than a day are removed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

STALE_AFTER = 60.0  # seconds
STALE_WITHOUT_LOCKS = 86_400.0


def create(directory: Path, prefix: str) -> tuple[int, str]:
    """`tempfile.mkstemp` (readable by its owner only), locked until its descriptor closes."""
    fd, name = tempfile.mkstemp(dir=directory, prefix=prefix)
    if fcntl is not None:
        # A file system without flock: the age rule alone protects the writer.
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
    return fd, name


def sweep(directory: Path, pattern: str, *, now: float | None = None) -> list[Path]:
    """Remove the files matching `pattern` in `directory` that no live writer holds and that
    are old enough; returns those removed. Never raises: a sweep is housekeeping."""
    removed: list[Path] = []
    try:
        candidates = sorted(directory.glob(pattern))
    except OSError:
        return removed
    current = time.time() if now is None else now
    for path in candidates:
        with contextlib.suppress(OSError):
            if _abandoned(path, current):
                path.unlink()
                removed.append(path)
    return removed


def _abandoned(path: Path, now: float) -> bool:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not _is_regular(st.st_mode):
            return False
        age = now - st.st_mtime
        if fcntl is None:
            return age > STALE_WITHOUT_LOCKS
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live writer holds it
        return age > STALE_AFTER
    finally:
        os.close(fd)  # releases the lock taken here, if any


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def sweep_exports(out: Path) -> list[Path]:
    """Before writing the package `out`: remove the partial packages (`NAME.partial-…`, any
    `*.tar.gz.partial-…`) that killed exports left beside it."""
    import glob

    removed = sweep(out.parent, f"{glob.escape(out.name)}.partial-*")
    return removed + sweep(out.parent, "*.tar.gz.partial-*")
