"""What `boris verify` last found clean, kept outside the database it vouches for.

A head remembered inside the database (table `verified_heads`) goes back in time with the
database: restore an older copy of `boris.sqlite*` and the old table comes back with it, so
the lost events are never missed. The witness therefore lives in a small JSON file of its
own, per task the seq and chain hash verify last found clean, and verify compares the log
with it.

Where: in the store's directory, never matching `boris.sqlite*` (so a restore of the
database files leaves it alone). The default SQLite store of a directory uses
`verified-heads.json`; any other database URL (a PostgreSQL team store, an SQLite file named
by URL) uses `verified-heads-<key>.json`, `<key>` a digest of the URL without its password,
so one directory serving several databases keeps their witnesses apart and a changed
password keeps the witness. For PostgreSQL this is the local store directory (the blob
cache) rather than a table: a witness inside the server would be rolled back by the very
restore (pg_restore, point-in-time recovery) it exists to notice. Each machine thus keeps
its own witness of what it verified.

Written atomically and durably (a temporary file, fsync, rename, fsync of the directory),
under an advisory lock so two verify runs do not lose each other's heads; a head never moves
back: a run that read an older snapshot than the one already remembered leaves the newer
one. To accept a rollback on purpose (an older backup restored knowingly), delete the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from ..errors import StoreError
from ..location import DB_NAME, Location

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the atomic rename still keeps the file whole
    fcntl = None  # type: ignore[assignment]

FORMAT = 1


@dataclass(frozen=True)
class VerifiedHead:
    seq: int
    hash: str
    verified_at: str

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "hash": self.hash, "verified_at": self.verified_at}


def witness_path(location: Location) -> Path:
    """The file that holds what verify last found clean for this store."""
    if location.sqlite_file == location.directory / DB_NAME:
        return location.directory / "verified-heads.json"
    # The password masked: the same database whatever the password of the day.
    url = make_url(location.url).render_as_string(hide_password=True)
    key = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return location.directory / f"verified-heads-{key}.json"


def load(location: Location) -> dict[str, VerifiedHead]:
    """Every remembered head; empty when the file does not exist yet."""
    return _read(witness_path(location))


def remember(location: Location, heads: Mapping[str, VerifiedHead]) -> None:
    """Record `heads` (found clean), keeping every other task's head and, for a task already
    remembered at a later seq, that later head."""
    path = witness_path(location)
    # A team store's directory is only this machine's cache: on a machine that has not used
    # it yet it does not exist, and the witness is the first thing written there.
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path):
        current = _read(path)
        for task_id, head in heads.items():
            old = current.get(task_id)
            if old is None or head.seq > old.seq or (head.seq == old.seq and head.hash == old.hash):
                current[task_id] = head
        _write(path, current, location)


def _read(path: Path) -> dict[str, VerifiedHead]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
        return {
            str(tid): VerifiedHead(int(h["seq"]), str(h["hash"]), str(h["verified_at"]))
            for tid, h in data["tasks"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StoreError(
            f"{path} (the heads verify last found clean) is damaged ({type(exc).__name__}); "
            "move it aside to start over, and verify will compare with nothing"
        ) from exc


def _write(path: Path, heads: Mapping[str, VerifiedHead], location: Location) -> None:
    url = make_url(location.url).render_as_string(hide_password=True)
    data = {
        "format": FORMAT,
        "store": url,
        "tasks": {tid: heads[tid].to_json() for tid in sorted(heads)},
    }
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    if os.name == "posix":  # the rename itself must survive a power cut
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
