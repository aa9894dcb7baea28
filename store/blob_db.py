"""Blobs of a team store, kept in the database itself; the local directory is only a cache.

On PostgreSQL everyone sharing the URL must read the same artifacts, so a blob's bytes are
rows: `blob_contents` (digest, size, number of chunks) and `blob_chunks` (1 MiB each, with the
chunk's own sha256). A write streams a file in chunk by chunk inside one transaction of its
own, committed before the event that references it (an unreferenced blob is only garbage; a
referenced one that is missing would be a loss), so memory stays bounded by one chunk
whatever the blob's size. A read checks every chunk against its digest (naming the damaged
chunk) and the whole against the blob's digest.

`path_of` gives a local file for readers that need one (previews, exports): the blob is
copied into the cache directory, verified, on first use. The cache is never trusted for
content: `read`, `open_verified` and `problem` always ask the database, and whoever reads a
cached file checks its digest (as exports do).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from . import schema as t
from .blobs import CHUNK, PREFIX, BlobStore, hash_file, write_error
from .errors import BlobProblem, StoreError

CORRUPT = "corrupt (content does not match its digest)"


def _chunk_corrupt(n: int) -> str:
    return f"corrupt (chunk {n} does not match its digest)"


class ServerBlobStore(BlobStore):
    """The blob store of a PostgreSQL store: content in the database, `root` a cache."""

    def __init__(self, root: Path, engine: Engine) -> None:
        super().__init__(root)
        self.engine = engine
        # Digests whose content this process has hashed whole: content never changes
        # under a digest, so later checks need only ask whether it is still there.
        self._verified: dict[str, tuple[Any, ...]] = {}
        self._verified_lock = threading.Lock()

    def _cache_path(self, digest: str) -> Path:
        return super().path_of(digest)

    # --- what the database holds ---------------------------------------------------------

    def _row(self, conn: Connection, digest: str) -> tuple[int, int] | None:
        r = conn.execute(
            sa.select(t.blob_contents.c.size, t.blob_contents.c.chunks).where(
                t.blob_contents.c.digest == digest
            )
        ).first()
        return None if r is None else (int(r.size), int(r.chunks))

    def has(self, digest: str) -> bool:
        self._cache_path(digest)  # refuses what is not a digest, as the file store does
        with self.engine.connect() as conn:
            return self._row(conn, digest) is not None

    def size_of(self, digest: str, owner: str = "") -> int:
        with self.engine.connect() as conn:
            row = self._row(conn, digest)
        if row is None:
            raise BlobProblem(digest, "missing", owner)
        return row[0]

    # --- writing -------------------------------------------------------------------------

    def put_bytes(self, data: bytes) -> tuple[str, int]:
        digest = PREFIX + hashlib.sha256(data).hexdigest()
        if not self.has(digest):
            self._store(digest, len(data), _pieces(data))
        return digest, len(data)

    def put_file(self, source: Path) -> tuple[str, int]:
        """Hash the file, then (unless the store has it) stream it in; a file that changed
        between the two passes is refused rather than stored under the wrong name."""
        digest, size = hash_file(source)
        if self.has(digest):
            return digest, size
        with open(source, "rb") as src:
            self._store(digest, size, _file_pieces(src))
        return digest, size

    def _store(self, digest: str, size: int, pieces: Iterator[bytes]) -> None:
        # Here, not at the top: every store imports this module, and PostgreSQL's dialect
        # (with asyncpg's) is 20 ms of a SQLite store's open (bench_desktop.py).
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        whole = hashlib.sha256()
        n = 0
        try:
            with self.engine.begin() as conn:
                for piece in pieces:
                    whole.update(piece)
                    conn.execute(
                        pg_insert(t.blob_chunks)
                        .values(
                            digest=digest,
                            n=n,
                            sha256=hashlib.sha256(piece).hexdigest(),
                            data=piece,
                        )
                        .on_conflict_do_nothing()
                    )
                    n += 1
                if PREFIX + whole.hexdigest() != digest:
                    raise StoreError(
                        f"the file changed while it was being stored (it was {digest}); "
                        "nothing was written"
                    )
                conn.execute(
                    pg_insert(t.blob_contents)
                    .values(digest=digest, size=size, chunks=n)
                    .on_conflict_do_nothing()
                )
        except sa.exc.DBAPIError as exc:
            raise StoreError(f"cannot store blob {digest}: {exc.orig}") from exc

    def discard(self, created: list[Path]) -> None:
        """Nothing to undo: blobs are committed before the write that references them and
        may already be referenced by another writer's."""

    def remove(self, digest: str) -> None:
        """Forget a blob (as pruning by hand would): its content and any cached copy."""
        with self.engine.begin() as conn:
            conn.execute(sa.delete(t.blob_contents).where(t.blob_contents.c.digest == digest))
            conn.execute(sa.delete(t.blob_chunks).where(t.blob_chunks.c.digest == digest))
        self._cache_path(digest).unlink(missing_ok=True)

    # --- reading -------------------------------------------------------------------------

    def open_verified(self, digest: str, owner: str = "") -> Iterator[bytes]:
        """The blob's chunks in order, each checked as it arrives; the whole is checked when
        the stream ends. One chunk is in memory at a time."""
        with self.engine.connect() as conn:
            row = self._row(conn, digest)
            if row is None:
                raise BlobProblem(digest, "missing", owner)
            size, chunks = row
            whole = hashlib.sha256()
            got = 0
            for n in range(chunks):
                r = conn.execute(
                    sa.select(t.blob_chunks.c.sha256, t.blob_chunks.c.data).where(
                        t.blob_chunks.c.digest == digest, t.blob_chunks.c.n == n
                    )
                ).first()
                if r is None:
                    raise BlobProblem(digest, f"incomplete (chunk {n} is missing)", owner)
                data = bytes(r.data)
                if hashlib.sha256(data).hexdigest() != r.sha256:
                    raise BlobProblem(digest, _chunk_corrupt(n), owner)
                whole.update(data)
                got += len(data)
                yield data
        if got != size or PREFIX + whole.hexdigest() != digest:
            raise BlobProblem(digest, CORRUPT, owner)

    def read(self, digest: str, owner: str = "") -> bytes:
        return b"".join(self.open_verified(digest, owner))

    def problem(self, digest: str, *, verify: bool) -> str | None:
        if not verify:
            return None if self.has(digest) else "missing"
        try:
            for _ in self.open_verified(digest):
                pass
        except BlobProblem as exc:
            return exc.problem
        return None

    def _fingerprint(self, digest: str) -> tuple[Any, ...] | None:
        """What changes when the blob's rows change, read without its content: the chunks'
        count, total length and newest row version (PostgreSQL's xmin moves on any UPDATE).
        None when the blob is missing."""
        chunk = t.blob_chunks.c
        query = sa.select(
            sa.func.count(),
            sa.func.sum(sa.func.octet_length(chunk.data)),
            sa.func.max(sa.cast(sa.literal_column("blob_chunks.xmin"), sa.Text)),
        ).where(chunk.digest == digest)
        with self.engine.connect() as conn:
            if self._row(conn, digest) is None:
                return None
            row = conn.execute(query).one()
        return tuple(row)

    def remembered_problem(self, digest: str) -> str | None:
        """`problem(verify=True)`, hashing each blob's content once per process while its
        rows stay as they were hashed (a row damaged later is hashed, and found, again)."""
        self._cache_path(digest)  # refuses what is not a digest
        fingerprint = self._fingerprint(digest)
        if fingerprint is None:
            return "missing"
        with self._verified_lock:
            if self._verified.get(digest) == fingerprint:
                return None
        problem = self.problem(digest, verify=True)
        if problem is None:
            with self._verified_lock:
                if len(self._verified) > 100_000:
                    self._verified.clear()
                self._verified[digest] = fingerprint
        return problem

    def path_of(self, digest: str) -> Path:
        """A local file with the blob's content: the cached copy, fetched (and verified) from
        the database when absent or no longer right. A blob the database lacks gives a path
        that does not exist, as the file store's would."""
        path = self._cache_path(digest)
        if path.is_file():  # verified when it was placed; readers of content verify again
            return path
        try:
            self._fetch(digest, path)
        except BlobProblem as exc:
            if exc.problem != "missing":
                raise
        return path

    def local_file(self, digest: str, owner: str = "") -> Path:
        """Like `path_of`, but a blob the database lacks is a BlobProblem naming its owner."""
        path = self._cache_path(digest)
        if path.is_file():
            return path
        self._fetch(digest, path, owner)
        return path

    def _fetch(self, digest: str, path: Path, owner: str = "") -> None:
        self.ensure()
        fd, tmp_name = self._temp()
        tmp = Path(tmp_name)
        try:
            out = os.fdopen(fd, "wb")
            try:
                for data in self.open_verified(digest, owner):
                    self._write(out, data)
                self._sync(out)
            finally:
                with contextlib.suppress(OSError):
                    out.close()
            path.unlink(missing_ok=True)  # a damaged cached copy
            self._place(tmp, path)
        except OSError as exc:
            raise write_error(exc, "caching a blob") from exc
        finally:
            tmp.unlink(missing_ok=True)


def _pieces(data: bytes) -> Iterator[bytes]:
    view = memoryview(data)
    for at in range(0, len(data), CHUNK):
        yield bytes(view[at : at + CHUNK])


def _file_pieces(src: BinaryIO) -> Iterator[bytes]:
    while piece := src.read(CHUNK):
        yield piece
