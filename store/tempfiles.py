"""Temporary files that a writer renames into place, and the sweep of those a crash left.

A blob or an exported package is written under a temporary name, then renamed; a writer
killed in between leaves the temporary file forever. The writer holds an advisory lock
(flock) on its temporary file from the moment it exists until it closes it, so a sweep
removes only files whose lock it can take, i.e. whose writer is gone. A file is also spared
while it is younger than `STALE_AFTER`: that covers the instant between the writer's close
and its rename, and a file whose lock was not yet taken. Where there is no flock (Windows)
only files older than a day are removed. A directory a process stages work in (an import's
copy of the task) is swept the same way, by its locked `owner` file: `private_directory`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
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


#: The file in a private directory that names its process and stays locked while it lives.
OWNER = "owner"


@contextlib.contextmanager
def private_directory(prefix: str) -> Iterator[Path]:
    """`tempfile.TemporaryDirectory(prefix=...)` whose leftovers are swept: a process killed
    before it could remove the directory (an import staging a whole task, SIGKILLed) leaves
    it behind, and the next call with the same prefix removes those whose process is gone.
    The directory's `owner` file holds the pid and is locked (flock) for its whole life; it
    is locked before it gets its name, so a visible unlocked `owner` means a dead owner."""
    sweep_directories(Path(tempfile.gettempdir()), prefix)
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        fd, name = create(Path(tmp), f".{OWNER}-")
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
            os.replace(name, Path(tmp) / OWNER)
            yield Path(tmp)
        finally:
            os.close(fd)  # releases the lock; the directory goes right after


def sweep_directories(parent: Path, prefix: str) -> list[Path]:
    """Remove the directories `parent/prefix*` of this user whose owner is gone (see
    `private_directory`); one without an `owner` file (the instant before it is written,
    or an older version's) only once it is older than `STALE_WITHOUT_LOCKS`. Never raises."""
    import glob
    import shutil

    removed: list[Path] = []
    try:
        candidates = sorted(parent.glob(glob.escape(prefix) + "*"))
    except OSError:
        return removed
    for path in candidates:
        with contextlib.suppress(OSError):
            if _directory_abandoned(path, time.time()):
                shutil.rmtree(path)
                removed.append(path)
    return removed


def _directory_abandoned(path: Path, now: float) -> bool:
    import stat

    st = os.lstat(path)  # a symlink named like one is never followed, nor removed
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != getattr(os, "getuid", lambda: st.st_uid)():
        return False
    owner = path / OWNER
    if fcntl is None or not owner.exists():
        return now - st.st_mtime > STALE_WITHOUT_LOCKS
    fd = os.open(owner, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its process is alive and holds it
    finally:
        os.close(fd)
    return True
