"""What a killed import leaves in the temporary directory (a staged copy of the whole task) is
swept by the next import; what a live one is using is not."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from store import Actor, Store, tempfiles
from store import commands as c
from store.services import archive as ar

BOT = Actor(kind="agent", id="bot")


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _left_by(parent: Path, name: str, pid: int) -> Path:
    """A staging directory as a SIGKILLed import leaves it: the owner file names its pid and
    nobody holds its lock, and a staged store beside it."""
    left = parent / name
    (left / "staging").mkdir(parents=True)
    (left / "staging" / "boris.sqlite").write_bytes(b"a whole copy of the task" * 1000)
    (left / tempfiles.OWNER).write_text(f"{pid}\n")
    return left


@pytest.fixture
def tmpdir_(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$TMPDIR for this test alone."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def test_the_next_import_sweeps_what_a_killed_one_left(
    store: Store, ws: Path, tmp_path: Path, tmpdir_: Path
) -> None:
    tid = store.execute(c.CreateTask(title="T", owner="rita", objective="x"), BOT)
    pkg = ar.export_task(store, tid, tmp_path / "task.tar.gz")
    dead = _left_by(tmpdir_, "boris-import-killed", _dead_pid())
    # One a live import holds (its owner file locked), and one not ours to judge.
    live = _left_by(tmpdir_, "boris-import-live", os.getpid())
    held = os.open(live / tempfiles.OWNER, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)
    other = tmpdir_ / "boris-other-x"
    other.mkdir()
    try:
        result = ar.import_package(store, pkg)  # into the same store: already here, harmless
        assert result["task_id"] == tid
        assert not dead.exists()
        assert live.exists() and other.exists()
        # The import's own directory is gone once it returns.
        assert sorted(p.name for p in tmpdir_.iterdir()) == ["boris-import-live", "boris-other-x"]
    finally:
        os.close(held)


def test_a_directory_without_an_owner_is_swept_only_when_old(tmpdir_: Path) -> None:
    young = tmpdir_ / "boris-import-young"
    old = tmpdir_ / "boris-import-old"
    young.mkdir()
    old.mkdir()
    long_ago = time.time() - tempfiles.STALE_WITHOUT_LOCKS - 60
    os.utime(old, (long_ago, long_ago))
    link = tmpdir_ / "boris-import-link"
    link.symlink_to(old)
    assert tempfiles.sweep_directories(tmpdir_, "boris-import-") == [old]
    assert young.exists() and link.is_symlink()


def test_a_private_directory_is_named_by_its_owner_while_it_lives(tmpdir_: Path) -> None:
    with tempfiles.private_directory("boris-import-") as here:
        assert (here / tempfiles.OWNER).read_text() == f"{os.getpid()}\n"
        # Another process's sweep (this one's, with its own descriptor) spares it.
        assert tempfiles.sweep_directories(tmpdir_, "boris-import-") == []
        assert here.exists()
    assert not here.exists()
