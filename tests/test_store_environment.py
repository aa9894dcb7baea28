"""The store in a hostile environment: read-only, full disk, crashed writers' temp files.

Some of these need root to make the environment real (a read-only mount, a small tmpfs, a
second user): they are skipped, saying why, where that is impossible.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from store import Actor, Store, StoreFull, StoreReadOnly, tempfiles
from store import commands as c
from store.cli import main

AGENT = Actor(kind="agent", id="a1")
BORIS = [sys.executable, "-m", "store.cli"]


def _make_store(where: Path, scope: Path) -> None:
    with Store.open(where) as s:
        s.execute(
            c.CreateTask(
                task_id="t", title="T", owner="o", objective="x", scope_paths=[str(scope)]
            ),
            AGENT,
        )
        s.execute(c.AddCriterion(task_id="t", text="a", criterion_id="a"), AGENT)
        s.execute(c.RecordArtifact(task_id="t", name="n", content=c.Content(text="body")), AGENT)


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


@contextlib.contextmanager
def _read_only_view(source: Path, view: Path) -> Iterator[Path]:
    """`source` seen through a read-only bind mount at `view`: what root cannot write either."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only mount needs root")
    view.mkdir()
    try:
        _mount("--bind", str(source), str(view))
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot bind-mount here: {exc.stderr.decode().strip()}")
    try:
        _mount("-o", "remount,bind,ro", str(view))
        yield view
    finally:
        subprocess.run(["umount", str(view)], check=False)


# --- read-only -------------------------------------------------------------------------------


def test_a_store_on_a_read_only_mount_reads_and_refuses_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scope = tmp_path / "ws"
    scope.mkdir()
    _make_store(tmp_path / "src", scope)
    with _read_only_view(tmp_path / "src", tmp_path / "ro") as ro:
        before = sorted(p.name for p in ro.rglob("*"))
        with Store.open(ro) as s:
            assert s.read_only
            assert [r["id"] for r in s.tasks()] == ["t"]
            assert s.task("t")["criteria"][0]["criterion_id"] == "a"
            artifact = s.task("t")["artifacts"][0]["current"]
            assert s.blobs.read(artifact["digest"]) == b"body"
            with pytest.raises(StoreReadOnly, match="read-only"):
                s.execute(c.AddCriterion(task_id="t", text="b"), AGENT)
        assert main(["--store", str(ro), "tasks"]) == 0
        assert "t " in capsys.readouterr().out
        assert main(["--store", str(ro), "show", "t"]) == 0
        assert "criterion a" in capsys.readouterr().out
        write = ["--actor", "person:tester", "add-criterion", "t", "--text", "b"]
        assert main(["--store", str(ro), *write]) == 6  # the store cannot be written here
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "read-only" in err
        assert sorted(p.name for p in ro.rglob("*")) == before


def test_a_store_kept_open_by_a_writer_is_read_through_a_read_only_mount(
    tmp_path: Path,
) -> None:
    """With the writer still open the -wal and -shm files exist: the reader shares them."""
    scope = tmp_path / "ws"
    scope.mkdir()
    _make_store(tmp_path / "src", scope)
    # The writer closes before the view is unmounted: SQLite keeps a closed reader's
    # descriptor open while another connection of the process locks the same file.
    with (
        _read_only_view(tmp_path / "src", tmp_path / "ro") as ro,
        Store.open(tmp_path / "src") as writer,
    ):
        writer.execute(c.AddCriterion(task_id="t", text="b", criterion_id="b"), AGENT)
        assert (tmp_path / "src" / "boris.sqlite-shm").exists()
        with Store.open(ro) as s:
            assert s.read_only
            ids = [cr["criterion_id"] for cr in s.task("t")["criteria"]]
            assert ids == ["a", "b"]


def _nobody() -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' to run as")
    return entry.pw_uid, entry.pw_gid


def _run_as(uid: int, gid: int, argv: list[str], home: Path) -> tuple[int, str, str]:
    """`boris argv` as another user, in a forked child of this process: the child has every
    module it needs already imported, so it runs wherever the checkout lies (a clean clone
    in root's private temporary directory is not readable by that user)."""

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        return _fork_as(uid, gid, argv, home, out, err)


def _fork_as(
    uid: int, gid: int, argv: list[str], home: Path, out: Any, err: Any
) -> tuple[int, str, str]:
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 70
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            os.environ["HOME"] = str(home)
            sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
            sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
            try:
                code = main(argv) or 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback

            traceback.print_exc(file=sys.stderr)
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    out.seek(0)
    err.seek(0)
    return os.waitstatus_to_exitcode(status), out.read().decode(), err.read().decode()


def test_a_store_this_user_cannot_write_is_read_only_for_them(tmp_path: Path) -> None:
    """Permission bits, not a mount: another user (root ignores the bits) reads the store
    and is told, in one line, that it cannot write it."""
    if os.geteuid() != 0:
        pytest.skip("running as another user needs root")
    uid, gid = _nobody()
    # The same commands as root first, on a copy: whatever they import lazily is imported
    # before the child, which may not be able to read the checkout, runs them.
    _make_store(tmp_path / "warm", tmp_path)
    with contextlib.redirect_stdout(io.StringIO()):
        write = ["--actor", "person:tester", "add-criterion", "t", "--text", "b"]
        for args in (["tasks"], ["show", "t"], write):
            main(["--store", str(tmp_path / "warm"), *args])
    # pytest's tmp_path is private to root: the other user needs a directory it can enter.
    base = Path(tempfile.mkdtemp(prefix="boris-perm-"))
    try:
        base.chmod(0o755)
        where = base / "store"
        _make_store(where, base)
        for p in [where, *where.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)

        def run(*args: str) -> tuple[int, str, str]:
            return _run_as(uid, gid, ["--store", str(where), *args], base)

        code, out, err = run("tasks")
        assert code == 0, err
        assert out.startswith("t ")
        code, out, err = run("show", "t")
        assert code == 0 and "criterion a" in out, err
        code, out, err = run(*write)
        assert code == 6
        assert err.count("\n") == 1 and "read-only" in err, err
        assert "Traceback" not in err
    finally:
        shutil.rmtree(base)


# --- full disk -------------------------------------------------------------------------------


@contextlib.contextmanager
def _small_disk(where: Path, size: str = "2m") -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small file system needs root (mount -t tmpfs)")
    where.mkdir()
    try:
        _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where))
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def _fill(disk: Path, leave: int = 0) -> Path:
    """Fill the disk, then give back `leave` bytes (room to open a store, not to write)."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 4096)
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0")
        if leave:
            f.truncate(max(0, f.tell() - leave))
    return filler


def test_a_full_disk_is_store_full_and_the_same_store_recovers(tmp_path: Path) -> None:
    with _small_disk(tmp_path / "disk") as disk:
        scope = disk / "ws"
        scope.mkdir()
        _make_store(disk / "s", scope)
        with Store.open(disk / "s") as s:
            filler = _fill(disk)
            for _ in range(3):  # not once, but every time while the disk is full
                with pytest.raises(StoreFull, match="full"):
                    s.execute(c.AddCriterion(task_id="t", text="y" * 50_000), AGENT)
                with pytest.raises(StoreFull):
                    s.execute(
                        c.RecordArtifact(
                            task_id="t", name="big", content=c.Content(text="z" * 300_000)
                        ),
                        AGENT,
                    )
            assert [cr["criterion_id"] for cr in s.task("t")["criteria"]] == ["a"]
            filler.unlink()
            s.execute(c.AddCriterion(task_id="t", text="after", criterion_id="after"), AGENT)
            assert [cr["criterion_id"] for cr in s.task("t")["criteria"]] == ["a", "after"]
        assert not list((disk / "s" / "blobs" / "tmp").iterdir())


def test_the_cli_blames_the_full_disk_not_the_source_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scope = tmp_path / "ws"
    scope.mkdir()
    source = scope / "report.txt"
    source.write_bytes(os.urandom(400_000))
    with _small_disk(tmp_path / "disk") as disk:
        _make_store(disk / "s", scope)
        filler = _fill(disk)
        rc = main(["--store", str(disk / "s"), "tasks"])
        err = capsys.readouterr().err
        assert rc == 6 and err.count("\n") == 1 and "is full" in err, err
        filler.unlink()
        filler = _fill(disk, leave=128 * 1024)
        record = ["record-artifact", "t", "r", "--file", str(source), "--actor", "agent:a"]
        rc = main(["--store", str(disk / "s"), *record])
        err = capsys.readouterr().err
        assert rc == 6 and err.count("\n") == 1
        assert "disk holding the store is full" in err
        assert "cannot read" not in err and str(source) not in err
        # Checking needs (almost) no space: verify checks the store and says it could not
        # remember what it found, instead of "nothing was written".
        filler.unlink()
        filler = _fill(disk, leave=32 * 1024)
        assert main(["--store", str(disk / "s"), "verify"]) == 0
        out, err = capsys.readouterr()
        assert "ok" in out.splitlines() and "full" in out
        assert err == "boris: note: unsigned store: no signatures to check\n"
        assert "nothing was written" not in out


# --- temporary files left by crashes ------------------------------------------------------


_HOLDER = """
import sys, time
from pathlib import Path
from store import tempfiles
fd, name = tempfiles.create(Path(sys.argv[1]), sys.argv[2])
print(name, flush=True)
time.sleep(600)
"""


@contextlib.contextmanager
def _writer_holding(directory: Path, prefix: str) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """Another process in the middle of writing a temporary file (it never finishes)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(directory), prefix],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        path = Path(proc.stdout.readline().strip())
        yield proc, path
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_blob_temp_files_of_killed_writers_are_swept_on_open(tmp_path: Path) -> None:
    where = tmp_path / "s"
    Store.open(where).close()
    tmp = where / "blobs" / "tmp"
    with _writer_holding(tmp, "in-") as (proc, live):
        live.write_bytes(b"half a blob")
        _age(live, 3600)
        young = tmp / "in-young"
        young.write_bytes(b"just written, not yet renamed")
        dead = tmp / "in-dead"
        dead.write_bytes(b"left by a crash")
        _age(dead, 3600)
        Store.open(where).close()
        # The live writer's file and the young one stay; the abandoned one is gone.
        assert live.exists() and young.exists() and not dead.exists()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        Store.open(where).close()
        assert not live.exists()
        assert young.exists()
        _age(young, 3600)
        Store.open(where).close()
        assert not young.exists()


def test_partial_exports_of_killed_exports_are_swept_by_the_next_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scope = tmp_path / "ws"
    scope.mkdir()
    _make_store(tmp_path / "s", scope)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with _writer_holding(out_dir, "task.tar.gz.partial-") as (_proc, live):
        _age(live, 3600)
        dead = out_dir / "old.tar.gz.partial-abcd1234"
        dead.write_bytes(b"\x1f\x8b half a package")
        _age(dead, 3600)
        mine = out_dir / "notes.partial-keep"
        mine.write_text("not a package")
        _age(mine, 3600)
        rc = main(["--store", str(tmp_path / "s"), "export", "t", str(out_dir / "task.tar.gz")])
        assert rc == 0, capsys.readouterr().err
        assert live.exists() and not dead.exists() and mine.exists()
        assert (out_dir / "task.tar.gz").is_file()


def test_a_sweep_never_raises(tmp_path: Path) -> None:
    assert tempfiles.sweep(tmp_path / "absent", "in-*") == []
    (tmp_path / "in-dir").mkdir()
    _age(tmp_path / "in-dir", 3600)
    assert tempfiles.sweep(tmp_path, "in-*") == []
    assert (tmp_path / "in-dir").is_dir()
