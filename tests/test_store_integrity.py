"""What the store does when its files are tampered with, damaged, too new, or not a store."""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from blob_damage import damage_blob, lose_blob

from store import Actor, BlobProblem, Store, StoreCorrupt, StoreTooNew
from store import commands as c
from store.canonical import GENESIS_HASH, chain_hash
from store.location import DB_NAME
from store.migrate import HEAD
from store.record import stored_body
from store.version import __version__

AGENT = Actor(kind="agent", id="agent-1")


def _populated(s: Store) -> str:
    tid = s.execute(c.CreateTask(title="T", owner="o", objective="obj"), AGENT)
    cid = s.execute(c.AddCriterion(task_id=tid, text="crit"), AGENT)
    s.execute(
        c.RecordArtifact(task_id=tid, artifact_id="a", name="a", content=c.Content(text="A")), AGENT
    )
    s.execute(
        c.AttachEvidence(task_id=tid, criterion_id=cid, kind="review", content=c.Content(text="E")),
        AGENT,
    )
    s.execute(c.ChargeBudget(task_id=tid, counter="tool_calls", amount=1), AGENT)
    return tid


_CHAIN_ROWS = (
    "SELECT task_id, seq, type, format, payload, actor_kind, actor_id, actor_name, at,"
    " prev_hash, hash FROM events WHERE task_id = :task_id ORDER BY seq"
)


def chain_problems(db: Path | Store, task_id: str) -> list[int]:
    """Seqs whose stored hash or prev link does not match a recomputation from stored rows:
    read from an SQLite file with sqlite3, or from a store (either engine) with its own reads."""
    if isinstance(db, Store):
        import sqlalchemy as sa

        with db.read() as sa_conn:
            rows = [tuple(r) for r in sa_conn.execute(sa.text(_CHAIN_ROWS), {"task_id": task_id})]
    else:
        conn = sqlite3.connect(db)
        try:
            rows = conn.execute(_CHAIN_ROWS, {"task_id": task_id}).fetchall()
        finally:
            conn.close()
    bad: list[int] = []
    prev = GENESIS_HASH
    for tid, seq, typ, fmt, payload, ak, aid, aname, at, prev_hash, h in rows:
        body = stored_body(
            tid, seq, typ, fmt, json.loads(payload), Actor(kind=ak, id=aid, name=aname), at
        )
        if prev_hash != prev or chain_hash(prev_hash, body) != h:
            bad.append(seq)
        prev = h
    return bad


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- 4. append-only and the hash chain -----------------------------------------------------


def test_events_table_refuses_update_and_delete(s: Store) -> None:
    import sqlalchemy as sa

    tid = _populated(s)
    for sql in (
        "UPDATE events SET payload = '{}' WHERE task_id = :tid AND seq = 1",
        "DELETE FROM events WHERE task_id = :tid",
    ):
        # Straight through a connection of the engine, around every command of the store.
        with pytest.raises(sa.exc.DatabaseError, match="append-only"), s.engine.begin() as conn:
            conn.execute(sa.text(sql), {"tid": tid})
    assert len(s.events(tid)) >= 5
    assert chain_problems(s, tid) == []


@pytest.mark.sqlite_only
def test_hash_chain_verifies_and_detects_tampering(s: Store) -> None:
    tid = _populated(s)
    db_file = s.location.sqlite_file
    assert db_file is not None
    assert chain_problems(db_file, tid) == []
    state = s.task(tid)
    conn = sqlite3.connect(db_file)
    try:
        last_hash = conn.execute(
            "SELECT hash FROM events WHERE task_id = ? ORDER BY seq DESC LIMIT 1", (tid,)
        ).fetchone()[0]
    finally:
        conn.close()
    assert state["head_hash"] == last_hash
    s.close()

    conn = sqlite3.connect(db_file)
    try:
        conn.execute("DROP TRIGGER events_no_update")
        (payload,) = conn.execute(
            "SELECT payload FROM events WHERE task_id = ? AND seq = 2", (tid,)
        ).fetchone()
        data = json.loads(payload)
        data["text"] = "a different criterion"
        conn.execute(
            "UPDATE events SET payload = ? WHERE task_id = ? AND seq = 2",
            (json.dumps(data), tid),
        )
        conn.commit()
    finally:
        conn.close()
    assert chain_problems(db_file, tid) == [2]


def test_chain_links_each_event_to_the_previous(s: Store) -> None:
    tid = _populated(s)
    evs = s.events(tid)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    assert evs[0]["prev_hash"] == GENESIS_HASH
    for a, b in itertools.pairwise(evs):
        assert b["prev_hash"] == a["hash"]


# --- 5. blobs ------------------------------------------------------------------------------


def test_corrupt_blob_is_never_returned(s: Store) -> None:
    tid = s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
    r = s.execute(
        c.RecordArtifact(task_id=tid, name="a", content=c.Content(text="good bytes")), AGENT
    )
    digest = r["digest"]
    damage_blob(s, digest, b"evil bytes")
    with pytest.raises(BlobProblem) as info:
        s.blobs.read(digest)
    assert info.value.digest == digest
    assert digest in str(info.value)
    assert "corrupt" in str(info.value)
    with pytest.raises(BlobProblem):
        b"".join(s.blobs.open_verified(digest))
    assert s.blobs.problem(digest, verify=True) is not None


def test_deleted_blob_listed_in_problems(s: Store) -> None:
    tid = s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
    cid = s.execute(c.AddCriterion(task_id=tid, text="k"), AGENT)
    r = s.execute(
        c.RecordArtifact(task_id=tid, artifact_id="doc", name="doc", content=c.Content(text="doc")),
        AGENT,
    )
    eid = s.execute(
        c.AttachEvidence(
            task_id=tid, criterion_id=cid, kind="review", content=c.Content(text="ev")
        ),
        AGENT,
    )
    assert s.task(tid)["problems"] == []
    lose_blob(s, r["digest"])
    problems = s.task(tid)["problems"]
    assert len(problems) == 1
    (p,) = problems
    assert p["kind"] == "artifact_version"
    assert p["digest"] == r["digest"]
    assert p["problem"] == "missing"
    assert p["id"] == "doc v1"
    with pytest.raises(BlobProblem, match="missing"):
        s.blobs.read(r["digest"])
    # evidence blob missing too
    ev_digest = next(e for e in s.task(tid)["criteria"][0]["evidence"] if e["evidence_id"] == eid)[
        "digest"
    ]
    lose_blob(s, ev_digest)
    kinds = sorted(p["kind"] for p in s.task(tid)["problems"])
    assert kinds == ["artifact_version", "evidence"]


def test_bad_digest_is_refused() -> None:
    from store.blobs import BlobStore

    b = BlobStore(Path("/nonexistent"))
    with pytest.raises(BlobProblem, match="not a sha256"):
        b.path_of("md5:abc")
    with pytest.raises(BlobProblem, match="not a sha256"):
        b.path_of("sha256:../../etc/passwd")


# --- 9. store too new / not a store ----------------------------------------------------------


def test_store_too_new_is_refused_and_untouched(tmp_path: Path) -> None:
    d = tmp_path / "store"
    s = Store.open(d)
    s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
    s.close()
    db_file = d / DB_NAME
    conn = sqlite3.connect(db_file)
    conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.commit()
    # fold the WAL into the main file so its bytes are the whole store
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = {p.name: _sha(p) for p in d.iterdir() if p.is_file()}
    with pytest.raises(StoreTooNew) as info:
        Store.open(d)
    msg = str(info.value)
    assert "9999" in msg
    assert __version__ in msg
    assert HEAD in msg
    after = {p.name: _sha(p) for p in d.iterdir() if p.is_file() and p.name in before}
    assert after[DB_NAME] == before[DB_NAME]
    assert not (d / "backups").exists() or not any((d / "backups").iterdir())


def test_non_sqlite_file_is_corrupt(tmp_path: Path) -> None:
    d = tmp_path / "store"
    d.mkdir()
    (d / DB_NAME).write_bytes(b"this is not a database, just some text\n" * 10)
    before = _sha(d / DB_NAME)
    with pytest.raises(StoreCorrupt):
        Store.open(d)
    assert _sha(d / DB_NAME) == before


def test_foreign_sqlite_database_is_corrupt(tmp_path: Path) -> None:
    d = tmp_path / "store"
    d.mkdir()
    conn = sqlite3.connect(d / DB_NAME)
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreCorrupt, match="not a Boris store"):
        Store.open(d)


def test_reopen_keeps_data(open_store: Callable[..., Store]) -> None:
    with open_store() as s:
        tid = s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
        v = s.data_version()
    with open_store(create=False) as s2:
        assert s2.task(tid)["title"] == "T"
        assert s2.data_version() == v


# --- 10. headless -------------------------------------------------------------------------


def test_store_never_imports_qt_or_desktop() -> None:
    code = (
        "import sys, importlib\n"
        "import store, store.commands\n"
        "try:\n    import store.cli\nexcept ImportError:\n    pass\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'boris_desktop'))\n"
        "print(repr(bad))\n"
        "assert 'store.commands' in sys.modules\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_too_new_store_in_rollback_journal_mode_is_left_byte_identical(tmp_path: Path) -> None:
    # The engine switches a store to WAL on connect; the refusal must come before that.
    Store.open(tmp_path).close()
    db_file = tmp_path / "boris.sqlite"
    db = sqlite3.connect(db_file)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("UPDATE alembic_version SET version_num = '9999'")
    db.commit()
    db.close()
    before = _sha(db_file)
    with pytest.raises(StoreTooNew, match="9999"):
        Store.open(tmp_path)
    assert _sha(db_file) == before
    assert not (tmp_path / "boris.sqlite-wal").exists()


def test_inbox_flags_a_task_whose_evidence_blob_is_gone(s: Store, ws: Path) -> None:
    agent = Actor(kind="agent", id="a")
    quiet = s.execute(c.CreateTask(title="quiet", owner="o", objective="x"), agent)
    tid = s.execute(
        c.CreateTask(title="guide", owner="o", objective="x", scope_paths=[str(ws)]), agent
    )
    s.execute(c.AddCriterion(task_id=tid, text="tests pass", criterion_id="tests"), agent)
    s.execute(
        c.AttachEvidence(
            task_id=tid,
            criterion_id="tests",
            kind="command_output",
            content=c.Content(text="12 passed"),
            evidence_id="log",
        ),
        agent,
    )
    digest = s.task(tid)["criteria"][0]["evidence"][0]["digest"]
    lose_blob(s, digest)
    rows = {r["id"]: r for r in s.tasks()}
    assert rows[tid]["needs"]["missing_blobs"] == 1
    assert rows[quiet]["needs"]["missing_blobs"] == 0
    assert s.tasks()[0]["id"] == tid
    problems = s.task(tid)["problems"]
    assert problems == [
        {
            "kind": "evidence",
            "id": "log",
            "digest": digest,
            "problem": "missing",
            "owner": {"criterion_id": problems[0]["owner"]["criterion_id"], "evidence_id": "log"},
        }
    ]
