"""Blobs of a team store, kept in the database itself; the local directory is only a cache.

On PostgreSQL everyone sharing the URL must read the same artifacts, so a blob's bytes are
rows: `blob_contents` (digest, size, number of chunks) and `blob_chunks` (1 MiB each, with the
chunk's own sha256). A write streams a file in chunk by chunk, so memory stays bounded by one
chunk whatever the blob's size. A read checks every chunk against its digest (naming the
damaged chunk) and the whole against the blob's digest.

A write stores its blobs in its own transaction (`within`: the store as the write's
connection sees it), and a blob it finds already stored it holds there: its
`blob_contents` row is locked FOR KEY SHARE until the write commits. Removing a blob
(`remove_unused`, for `boris expire` and `boris delete-task`) locks the same row FOR UPDATE,
asks again whether anything live names the digest, and deletes it, in one transaction of
its own: so it waits for a writer that found the blob and then sees that writer's item, or
the writer waits for it and then finds the blob gone and stores it again. No acknowledged
item ever names a blob that a concurrent removal took (issue 40).

`path_of` gives a local file for readers that need one (previews, exports): the blob is
copied into the cache directory, verified, on first use. The cache is never trusted for
content: `read`, `open_verified` and `problem` always ask the database, and whoever reads a
cached file checks its digest (as exports do).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from . import db
from . import schema as t
from .blobs import CHUNK, PREFIX, BlobStore, hash_file, write_error
from .errors import BlobProblem, StoreError

CORRUPT = "corrupt (content does not match its digest)"


def _chunk_corrupt(n: int) -> str:
    return f"corrupt (chunk {n} does not match its digest)"


class _Statements:
    """The write path's blob statements, compiled once (`db.Prepared`). Built on first use:
    PostgreSQL's dialect is 20 ms of a SQLite store's open (bench_desktop.py)."""

    def __init__(self) -> None:
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        contents, chunks = t.blob_contents, t.blob_chunks
        digest = sa.bindparam("digest", type_=sa.String)
        # The blob found, and held for the write's transaction: a removal waits for it.
        self.claim = db.Prepared(
            sa.select(contents.c.digest)
            .where(contents.c.digest == digest)
            .with_for_update(read=True, key_share=True)
        )
        # Answered (RETURNING) so that `run` sends it at once: one chunk in memory at a
        # time. The last one is queued (`send`) with the write's next exchange.
        self.chunk = db.Prepared(
            pg_insert(chunks)
            .values(
                digest=digest,
                n=sa.bindparam("n", type_=sa.Integer),
                sha256=sa.bindparam("sha256", type_=sa.String),
                data=sa.bindparam("data", type_=sa.LargeBinary),
            )
            .on_conflict_do_nothing()
            .returning(chunks.c.n)
        )
        # Inserted first, before the chunks; nothing returned: another write stored the
        # blob (`_store_within` then holds theirs).
        self.whole = db.Prepared(
            pg_insert(contents)
            .values(
                digest=digest,
                size=sa.bindparam("size", type_=sa.BigInteger),
                chunks=sa.bindparam("chunks", type_=sa.Integer),
            )
            .on_conflict_do_nothing()
            .returning(contents.c.digest)
        )


_STATEMENTS: _Statements | None = None


def _statements() -> _Statements:
    global _STATEMENTS
    if _STATEMENTS is None:
        _STATEMENTS = _Statements()
    return _STATEMENTS


#: How often a write tries again to store or hold a blob that a removal took between the two
#: (each time another write stored it first and a removal then took it: never, in practice).
_STORE_TRIES = 5


class ServerBlobStore(BlobStore):
    """The blob store of a PostgreSQL store: content in the database, `root` a cache."""

    def __init__(self, root: Path, engine: Engine) -> None:
        super().__init__(root)
        self.engine = engine
        #: The write transaction this store writes in (`within`); None: its own ones.
        self._conn: Connection | None = None
        # Digests whose content this process has hashed whole: content never changes
        # under a digest, so later checks need only ask whether it is still there.
        self._verified: dict[str, tuple[Any, ...]] = {}
        self._verified_lock = threading.Lock()

    def within(self, conn: Connection) -> ServerBlobStore:
        """This store as the write transaction on `conn` uses it: a blob it finds is held
        (FOR KEY SHARE) until the write ends, one it lacks is stored in that transaction, so
        the blob and the item naming it commit together, or neither does."""
        bound = copy.copy(self)  # the cache and what was verified stay shared
        bound._conn = conn
        return bound

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
        """Whether the store holds the blob. Inside a write (`within`) the blob found is
        also held until the write ends: no removal takes it from under the item the write
        is about to record."""
        self._cache_path(digest)  # refuses what is not a digest, as the file store does
        if self._conn is not None:
            return bool(_statements().claim.run(self._conn, {"digest": digest}))
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
        self._put(digest, len(data), lambda: _pieces(data))
        return digest, len(data)

    def put_file(self, source: Path) -> tuple[str, int]:
        """Hash the file, then (unless the store has it) stream it in; a file that changed
        between the two passes is refused rather than stored under the wrong name."""
        digest, size = hash_file(source)
        with contextlib.ExitStack() as files:

            def pieces() -> Iterator[bytes]:
                return _file_pieces(files.enter_context(open(source, "rb")))

            self._put(digest, size, pieces)
        return digest, size

    def _put(self, digest: str, size: int, pieces: Callable[[], Iterator[bytes]]) -> None:
        """Store the blob unless it is stored. Inside a write (`within`) in the write's own
        transaction, whose errors are the write's (what it queued goes with ours: store.Store
        names them); else in a transaction of its own."""
        if self._conn is not None:
            self._store_within(self._conn, digest, size, pieces)
            return
        if self.has(digest):
            return
        try:
            with self.engine.begin() as conn:
                if _statements().whole.run(conn, _whole(digest, size)):
                    self._insert_chunks(conn, digest, size, pieces())
        except sa.exc.DBAPIError as exc:
            raise StoreError(f"cannot store blob {digest}: {exc.orig}") from exc

    def _store_within(
        self, conn: Connection, digest: str, size: int, pieces: Callable[[], Iterator[bytes]]
    ) -> None:
        """The blob's row first: inserted, it is this write's (nobody sees it, or its chunks,
        before the write commits; another write storing the same content waits for ours);
        already there (another write's, committed), it is held instead (`has`). If a
        removal took it between the two (each waits for the one before), try again."""
        s = _statements()
        for _ in range(_STORE_TRIES):
            if s.whole.run(conn, _whole(digest, size)):
                self._insert_chunks(conn, digest, size, pieces())
                return
            if self.has(digest):
                return
        raise StoreError(f"cannot store blob {digest}: it was removed as often as stored")

    @staticmethod
    def _insert_chunks(conn: Connection, digest: str, size: int, pieces: Iterator[bytes]) -> None:
        """The chunks of a blob whose row this transaction just inserted, one in memory at a
        time; the last is queued, to go with the write's next exchange (in a write, the
        COMMIT). A file that is not what was hashed fails the transaction."""
        chunk = _statements().chunk
        whole = hashlib.sha256()
        n = got = 0
        piece = next(pieces, None)
        while piece is not None:
            whole.update(piece)
            got += len(piece)
            row = {
                "digest": digest,
                "n": n,
                "sha256": hashlib.sha256(piece).hexdigest(),
                "data": piece,
            }
            piece = next(pieces, None)
            if piece is None:
                chunk.send(conn, row)
            else:
                chunk.run(conn, row)
            n += 1
        if PREFIX + whole.hexdigest() != digest or got != size or n != _chunks(size):
            raise StoreError(
                f"the file changed while it was being stored (it was {digest}); nothing was written"
            )

    def discard(self, created: list[Path]) -> None:
        """Nothing to undo: a write's blobs are stored in its own transaction, which took
        them back when it rolled back."""

    def remove(self, digest: str) -> None:
        """Forget a blob (as pruning by hand would): its content and any cached copy."""
        with self.engine.begin() as conn:
            conn.execute(sa.delete(t.blob_contents).where(t.blob_contents.c.digest == digest))
            conn.execute(sa.delete(t.blob_chunks).where(t.blob_chunks.c.digest == digest))
        self._cache_path(digest).unlink(missing_ok=True)

    def remove_unused(self, digest: str, in_use: Callable[[Connection], bool]) -> bool:
        """Remove the blob unless `in_use` (asked on the removal's own connection, after the
        lock) says something live names it; whether it was removed. One transaction: the
        blob's row locked FOR UPDATE (a write holding it, `has` within a write, is waited
        for, and its item is then seen), the question asked, the rows deleted. READ
        COMMITTED whatever the server's default: the question must see what committed
        while the lock was awaited. The cached copy goes after the commit."""
        self._cache_path(digest)  # refuses what is not a digest
        contents, chunks = t.blob_contents, t.blob_chunks
        with (
            self.engine.connect().execution_options(isolation_level="READ COMMITTED") as conn,
            conn.begin(),
        ):
            held = conn.execute(
                sa.select(contents.c.digest).where(contents.c.digest == digest).with_for_update()
            ).first()
            if held is None or in_use(conn):
                return False
            conn.execute(sa.delete(chunks).where(chunks.c.digest == digest))
            conn.execute(sa.delete(contents).where(contents.c.digest == digest))
        self._cache_path(digest).unlink(missing_ok=True)
        return True

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


def _chunks(size: int) -> int:
    return -(-size // CHUNK)


def _whole(digest: str, size: int) -> dict[str, Any]:
    return {"digest": digest, "size": size, "chunks": _chunks(size)}


def _pieces(data: bytes) -> Iterator[bytes]:
    view = memoryview(data)
    for at in range(0, len(data), CHUNK):
        yield bytes(view[at : at + CHUNK])


def _file_pieces(src: BinaryIO) -> Iterator[bytes]:
    while piece := src.read(CHUNK):
        yield piece
