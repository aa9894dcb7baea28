"""A content-addressed blob store: sha256 digests name files under `blobs/`.

A blob is written to a temporary file, fsynced, then renamed into place (and the directory
fsynced), so a crash leaves either no blob or a whole one. Reads verify the digest; a missing
or corrupt blob is reported by its digest and owner, never returned.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import BlobProblem

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

    def ensure(self) -> None:
        self._tmp.mkdir(parents=True, exist_ok=True)

    def path_of(self, digest: str) -> Path:
        hexpart = _hex(digest)
        return self.root / hexpart[:2] / hexpart[2:]

    def has(self, digest: str) -> bool:
        return self.path_of(digest).is_file()

    def put_bytes(self, data: bytes) -> tuple[str, int]:
        digest = PREFIX + hashlib.sha256(data).hexdigest()
        if not self.has(digest):
            self._install(digest, data)
        return digest, len(data)

    def put_file(self, source: Path) -> tuple[str, int]:
        """Copy a file in, hashing while copying, so the digest names exactly what was kept."""
        self.ensure()
        h = hashlib.sha256()
        size = 0
        fd, tmp_name = tempfile.mkstemp(dir=self._tmp, prefix="in-")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
                while chunk := src.read(CHUNK):
                    h.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
                out.flush()
                os.fsync(out.fileno())
            digest = PREFIX + h.hexdigest()
            final = self.path_of(digest)
            if final.is_file():
                tmp.unlink()
            else:
                final.parent.mkdir(exist_ok=True)
                os.replace(tmp, final)
                _fsync_dir(final.parent)
            return digest, size
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def _install(self, digest: str, data: bytes) -> None:
        self.ensure()
        final = self.path_of(digest)
        final.parent.mkdir(exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=self._tmp, prefix="in-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp_name, final)
            _fsync_dir(final.parent)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise

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
