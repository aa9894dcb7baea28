"""Damage a test store's blobs where they live: files on SQLite, rows on PostgreSQL.

Tests use these to stand for a disk that lost or flipped bytes; the store's own code never
damages anything (`Store.blobs.remove` is the one deliberate way to forget a blob).
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa

from store import Store
from store import schema as t
from store.blob_db import ServerBlobStore


def lose_blob(s: Store, digest: str) -> None:
    s.blobs.remove(digest)


def damage_blob(s: Store, digest: str, data: bytes) -> None:
    """Make the blob named `digest` hold `data` instead (it may be missing before)."""
    if not isinstance(s.blobs, ServerBlobStore):
        path = s.blobs.path_of(digest)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.chmod(0o644)
        path.write_bytes(data)
        return
    s.blobs.path_of(digest).unlink(missing_ok=True)  # a good cached copy would hide it
    with s.engine.begin() as conn:
        chunk = t.blob_chunks.c
        updated = conn.execute(
            sa.update(t.blob_chunks).where(chunk.digest == digest, chunk.n == 0).values(data=data)
        ).rowcount
        if not updated:  # a blob lost before: it comes back with the wrong content
            conn.execute(sa.insert(t.blob_contents).values(digest=digest, size=len(data), chunks=1))
            conn.execute(
                sa.insert(t.blob_chunks).values(
                    digest=digest, n=0, sha256=hashlib.sha256(data).hexdigest(), data=data
                )
            )
