"""Room reserved ahead in SQLite's write-ahead log, so a durable commit overwrites, never grows.

Each commit appends its pages to the `-wal` file and fsyncs it (synchronous=FULL). While the
file grows, every one of those syncs must also write the file's new size to the file
system's journal: a second flush. Once SQLite's automatic checkpoint has copied the log into
the database, it writes the log again from the start over the same bytes, and the sync is
one flush of data. Measured here (PLATFORM.md's machine, 3-page commits): about 520 µs a
commit while the log grows, 310–350 µs once it is overwritten.

So a store that keeps writing reserves the log's steady size up front, once: zeros from
the log's end up to the size at which SQLite checkpoints, written and synced in one go, the
way PostgreSQL fills a WAL segment before using it. It is safe because

- it happens inside a write transaction (BEGIN IMMEDIATE holds SQLite's WAL write lock), so
  no writer in any process is appending frames while the file is extended, and a
  checkpoint that could shrink the file (RESTART or TRUNCATE) needs that lock too;
- only bytes past the file's end are written, where SQLite has no frame;
- SQLite reads a log frame by frame and stops at the first whose salt and checksum do not
  match its header: a frame of zeros never does, exactly like the stale frames a reused log
  already carries past its end.

A one-off writer (a CLI command, a reviewer's action) never pays for it: the room is
reserved on a store's `RESERVE_AFTER`-th write transaction. SQLite deletes the log when the
last connection closes, so a reopened store reserves again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: A store's write transaction after which it is taken to keep writing.
RESERVE_AFTER = 4
_CHUNK = 1 << 20
# Frames a commit may add past the checkpoint threshold before SQLite checkpoints.
_SLACK_FRAMES = 64
_WAL_HEADER, _FRAME_HEADER = 32, 24


class WalReserve:
    """Counts one store's write transactions and, once, reserves its log's steady size."""

    def __init__(self, db_file: Path) -> None:
        self.wal = Path(f"{db_file}-wal")
        self._writes = 0
        self._target: int | None = None

    def in_write_transaction(self, run: Any) -> None:
        """Called right after BEGIN IMMEDIATE; `run(sql)` runs a statement and returns rows."""
        self._writes += 1
        if self._writes < RESERVE_AFTER:
            return
        try:
            size = os.stat(self.wal).st_size
        except FileNotFoundError:
            return
        if self._target is None:
            ((page_size,),) = run("PRAGMA page_size")
            ((frames,),) = run("PRAGMA wal_autocheckpoint")
            if frames <= 0:
                self._target = 0  # checkpoints are someone else's: the log's size is theirs
                return
            self._target = _WAL_HEADER + (frames + _SLACK_FRAMES) * (page_size + _FRAME_HEADER)
        if size == 0 or size >= self._target:
            # Empty: SQLite has not written the log's header yet; nothing to extend from.
            return
        extend(self.wal, self._target)


def extend(path: Path, target: int) -> None:
    """Zeros from the end of `path` up to `target` bytes, synced."""
    with open(path, "r+b") as f:
        end = os.fstat(f.fileno()).st_size
        f.seek(end)
        zeros = bytes(_CHUNK)
        while end < target:
            n = min(_CHUNK, target - end)
            f.write(zeros[:n])
            end += n
        f.flush()
        os.fsync(f.fileno())
