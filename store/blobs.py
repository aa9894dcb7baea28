"""A content-addressed blob store: sha256 digests name files under `blobs/`.

A blob is written to a temporary file, fsynced, then linked into place (and the directory
fsynced), so a crash leaves either no blob or a whole one; a temporary file a crash left is
swept on a later open (store.tempfiles). Reads verify the digest; a missing or corrupt blob is
reported by its digest and owner, never returned.

Blobs are shared by content, so the store knows which blobs a write *created*: when its
transaction fails, those (and only those) can be removed again (`BlobStore.creating`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from . import tempfiles
from .errors import BlobProblem, StoreError, StoreFull, StoreReadOnly

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

CHUNK = 1 << 20
PREFIX = "sha256:"


def hash_file(path: Path, chunk: int = CHUNK) -> tuple[str, int]:
    """Digest and size of a file, streamed in 1 MiB chunks."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(chunk)
        view = memoryview(buf)
        while n := f.readinto(buf):
            h.update(view[:n])
            size += n
    return PREFIX + h.hexdigest(), size


def _hex(digest: str) -> str:
    if not digest.startswith(PREFIX):
        raise BlobProblem(digest, "not a sha256 digest")
    hexpart = digest[len(PREFIX) :]
    if len(hexpart) != 64 or any(c not in "0123456789abcdef" for c in hexpart):
        raise BlobProblem(digest, "not a sha256 digest")
    return hexpart


def write_error(exc: OSError, what: str) -> StoreError:
    """The store's own disk refused a write: say so in the user's words (never blame the
    file being read)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreFull(f"the disk holding the store is full ({what}); nothing was written")
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreReadOnly(f"the store is read-only here ({what}); nothing was written")
    return StoreError(f"cannot write to the store ({what}: {exc.strerror}); nothing was written")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class BlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._tmp = root / "tmp"
        self._local = threading.local()

    def ensure(self) -> None:
        try:
            self._tmp.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_error(exc, f"creating {self._tmp}") from exc

    def sweep(self) -> list[Path]:
        """Remove temporary files that writers killed mid-write left behind."""
        return tempfiles.sweep(self._tmp, "in-*")

    def path_of(self, digest: str) -> Path:
        hexpart = _hex(digest)
        return self.root / hexpart[:2] / hexpart[2:]

    def has(self, digest: str) -> bool:
        return self.path_of(digest).is_file()

    def within(self, conn: Connection) -> BlobStore:
        """This store as a write transaction on `conn` uses it: the same one. Writers on
        SQLite hold its write lock, so a blob found stored stays until the write ends
        (a removal, `Store.remove_blob`, takes the same lock)."""
        return self

    @contextlib.contextmanager
    def creating(self) -> Iterator[list[Path]]:
        """Collect the blob files this thread creates inside the block (not those that
        were already there, which others may reference)."""
        outer, created = self.start_creating()
        try:
            yield created
        finally:
            self.end_creating(outer, created)

    def start_creating(self) -> tuple[list[Path] | None, list[Path]]:
        """`creating`'s start, for a caller that is not a with block (store.writing's SQLite
        write): what was collected so far, and the list this thread's blobs now go to."""
        outer = getattr(self._local, "created", None)
        created: list[Path] = []
        self._local.created = created
        return outer, created

    def end_creating(self, outer: list[Path] | None, created: list[Path]) -> None:
        """`creating`'s end: collecting goes on where it was (`start_creating`'s `outer`)."""
        self._local.created = outer
        if outer is not None:
            outer.extend(created)

    def discard(self, created: list[Path]) -> None:
        """Remove blobs this program created for a write that was then rolled back."""
        for path in created:
            with contextlib.suppress(OSError):
                path.unlink()

    def put_bytes(self, data: bytes) -> tuple[str, int]:
        digest = PREFIX + hashlib.sha256(data).hexdigest()
        if not self.has(digest):
            self._install(digest, data)
        return digest, len(data)

    def put_file(self, source: Path) -> tuple[str, int]:
        """Copy a file in, hashing while copying, so the digest names exactly what was kept.

        An error reading `source` is an OSError (the caller names the file); an error writing
        the store is a StoreError (StoreFull, StoreReadOnly)."""
        with open(source, "rb") as src:
            self.ensure()
            h = hashlib.sha256()
            size = 0
            fd, tmp_name = self._temp()
            tmp = Path(tmp_name)
            try:
                out = os.fdopen(fd, "wb")
                try:
                    while chunk := src.read(CHUNK):
                        h.update(chunk)
                        self._write(out, chunk)
                        size += len(chunk)
                    self._sync(out)
                finally:
                    with contextlib.suppress(OSError):  # after a write error; data is synced
                        out.close()
                digest = PREFIX + h.hexdigest()
                self._place(tmp, self.path_of(digest))
                return digest, size
            finally:
                tmp.unlink(missing_ok=True)

    def _install(self, digest: str, data: bytes) -> None:
        self.ensure()
        fd, tmp_name = self._temp()
        try:
            out = os.fdopen(fd, "wb")
            try:
                self._write(out, data)
                self._sync(out)
            finally:
                with contextlib.suppress(OSError):
                    out.close()
            self._place(Path(tmp_name), self.path_of(digest))
        finally:
            Path(tmp_name).unlink(missing_ok=True)

    @staticmethod
    def _write(out: BinaryIO, data: bytes) -> None:
        try:
            out.write(data)
        except OSError as exc:
            raise write_error(exc, "writing a blob") from exc

    def _temp(self) -> tuple[int, str]:
        try:
            return tempfiles.create(self._tmp, "in-")
        except OSError as exc:
            raise write_error(exc, "writing a blob") from exc

    @staticmethod
    def _sync(out: BinaryIO) -> None:
        try:
            out.flush()
            os.fsync(out.fileno())
        except OSError as exc:
            raise write_error(exc, "writing a blob") from exc

    def _place(self, tmp: Path, final: Path) -> None:
        """Give the finished temporary file its digest's name, unless a blob already has it.
        A hard link fails when the name exists, so whether this call created the blob is
        exact even with another writer racing; the caller removes `tmp`."""
        try:
            final.parent.mkdir(exist_ok=True)
            try:
                os.link(tmp, final)
            except FileExistsError:
                return
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                    raise
                # No hard links here: a rename, judged by whether the name existed before.
                if final.is_file():
                    return
                os.replace(tmp, final)
            created = getattr(self._local, "created", None)
            if created is not None:
                created.append(final)
            _fsync_dir(final.parent)
        except OSError as exc:
            raise write_error(exc, "installing a blob") from exc

    def read(self, digest: str, owner: str = "") -> bytes:
        """The blob's bytes, verified against its digest."""
        path = self.path_of(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise BlobProblem(digest, "missing", owner) from None
        except OSError as exc:
            raise BlobProblem(digest, f"unreadable ({exc.strerror})", owner) from None
        if PREFIX + hashlib.sha256(data).hexdigest() != digest:
            raise BlobProblem(digest, "corrupt (content does not match its digest)", owner)
        return data

    def open_verified(self, digest: str, owner: str = "") -> Iterator[bytes]:
        """Stream a large blob; the digest is checked when the stream ends."""
        path = self.path_of(digest)
        try:
            f: BinaryIO = open(path, "rb")
        except FileNotFoundError:
            raise BlobProblem(digest, "missing", owner) from None
        h = hashlib.sha256()
        with f:
            while chunk := f.read(CHUNK):
                h.update(chunk)
                yield chunk
        if PREFIX + h.hexdigest() != digest:
            raise BlobProblem(digest, "corrupt (content does not match its digest)", owner)

    def size_of(self, digest: str, owner: str = "") -> int:
        try:
            return self.path_of(digest).stat().st_size
        except FileNotFoundError:
            raise BlobProblem(digest, "missing", owner) from None

    def local_file(self, digest: str, owner: str = "") -> Path:
        """A file holding the blob (its own, here); a missing blob is a BlobProblem."""
        path = self.path_of(digest)
        if not path.is_file():
            raise BlobProblem(digest, "missing", owner)
        return path

    def remove(self, digest: str) -> None:
        """Forget a blob, as pruning the blob directory by hand would."""
        self.path_of(digest).unlink(missing_ok=True)

    def problem(self, digest: str, *, verify: bool) -> str | None:
        """None when the blob is fine; otherwise what is wrong with it."""
        path = self.path_of(digest)
        try:
            path.stat()
        except FileNotFoundError:
            return "missing"
        except OSError as exc:
            return f"unreadable ({exc.strerror})"
        if not verify:
            return None
        try:
            got, _ = hash_file(path)
        except OSError as exc:
            return f"unreadable ({exc.strerror})"
        return None if got == digest else "corrupt (content does not match its digest)"
