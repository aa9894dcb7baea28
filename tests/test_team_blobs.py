"""Team store blobs: content in PostgreSQL, each machine's blob directory only a cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from store import Actor, BlobProblem, Store
from store import commands as c
from store import schema as t
from store.blobs import CHUNK

AGENT = Actor(kind="agent", id="a1", name="Agent")


def test_a_blob_written_through_one_cache_is_read_through_another(
    tmp_path: Path, pg_url: str
) -> None:
    body = b"0123456789abcdef" * (CHUNK // 16 * 2 + 7)  # three chunks, the last one short
    with Store.open(tmp_path / "machine-a", url=pg_url) as a:
        tid = a.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
        r = a.execute(
            c.RecordArtifact(task_id=tid, name="big", content=c.Content(text=body.decode())),
            AGENT,
        )
    with Store.open(tmp_path / "machine-b", url=pg_url) as b:
        assert not list((tmp_path / "machine-b" / "blobs").rglob("*/*"))  # an empty cache
        assert b.blobs.read(r["digest"]) == body
        assert b.blobs.path_of(r["digest"]).read_bytes() == body
        assert b.task(tid)["problems"] == []


def test_a_damaged_chunk_is_named(tmp_path: Path, pg_url: str) -> None:
    body = b"x" * (CHUNK + 10)
    with Store.open(tmp_path / "s", url=pg_url) as s:
        tid = s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
        r = s.execute(
            c.RecordArtifact(task_id=tid, name="a", content=c.Content(text=body.decode())), AGENT
        )
        with s.engine.begin() as conn:
            conn.execute(
                sa.update(t.blob_chunks)
                .where(t.blob_chunks.c.digest == r["digest"], t.blob_chunks.c.n == 1)
                .values(data=b"y" * 10)
            )
        with pytest.raises(BlobProblem, match=r"chunk 1 does not match") as info:
            s.blobs.read(r["digest"], owner="artifact a v1")
        assert info.value.digest == r["digest"]
        assert "artifact a v1" in str(info.value)
        assert (
            s.blobs.problem(r["digest"], verify=True)
            == "corrupt (chunk 1 does not match its digest)"
        )


def test_a_large_blob_streams_in_and_out_with_bounded_memory(tmp_path: Path, pg_url: str) -> None:
    import os
    import tracemalloc

    size = 64 * CHUNK  # 64 MiB; memory must not grow with it (a 1 GB artifact alike)
    source = tmp_path / "big.bin"
    with open(source, "wb") as f:
        for _ in range(size // CHUNK):
            f.write(os.urandom(CHUNK))
    with Store.open(tmp_path / "s", url=pg_url) as s:
        tracemalloc.start()
        try:
            digest, stored = s.blobs.put_file(source)
            _, peak_in = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            got = sum(len(piece) for piece in s.blobs.open_verified(digest))
            _, peak_out = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert stored == got == size
    # A few chunks in flight at most (the piece, its copy for the driver), never the blob.
    assert peak_in < 8 * CHUNK, peak_in
    assert peak_out < 8 * CHUNK, peak_out
