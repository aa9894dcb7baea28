"""The task contract end to end through the command layer, and its refusals."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from store import Actor, CommandRejected, ScopeViolation, Store, StoreCorrupt, StoreTooNew
from store import commands as c
from store.canonical import GENESIS_HASH, chain_hash
from store.record import stored_body

AGENT = Actor(kind="agent", id="a1")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


@pytest.fixture
def store(tmp_path: Path):
    s = Store.open(tmp_path / "store")
    yield s
    s.close()


def _task(store: Store, ws: Path) -> str:
    return store.execute(
        c.CreateTask(title="T", owner="me", objective="do it", scope_paths=[str(ws)]), AGENT
    )


def test_criterion_goes_stale_when_artifact_gets_a_new_version(store: Store, ws: Path) -> None:
    tid = _task(store, ws)
    store.execute(c.AmendObjective(task_id=tid, text="do it well", reason="owner asked"), AGENT)
    (ws / "g.md").write_text("v1")
    store.execute(
        c.RecordArtifact(task_id=tid, artifact_id="g", name="g.md", content=c.Content(path="g.md")),
        AGENT,
    )
    cid = store.execute(c.AddCriterion(task_id=tid, text="good"), AGENT)
    eid = store.execute(
        c.AttachEvidence(
            task_id=tid, criterion_id=cid, kind="review", content=c.Content(text="ok")
        ),
        AGENT,
    )
    store.execute(
        c.JudgeCriterion(
            task_id=tid, criterion_id=cid, status="satisfied", artifact_id="g", evidence_ids=[eid]
        ),
        AGENT,
    )
    assert store.task(tid)["criteria"][0]["status"] == "satisfied"
    (ws / "g.md").write_text("v2")
    store.execute(
        c.RecordArtifact(task_id=tid, artifact_id="g", name="g.md", content=c.Content(path="g.md")),
        AGENT,
    )
    state = store.task(tid)
    assert state["criteria"][0]["status"] == "stale"
    assert [r["text"] for r in state["objective_revisions"]] == ["do it", "do it well"]
    assert state["artifacts"][0]["current_version"] == 2


def test_rejected_command_writes_nothing(store: Store, ws: Path) -> None:
    tid = _task(store, ws)
    cid = store.execute(c.AddCriterion(task_id=tid, text="good"), AGENT)
    before = store.data_version()
    with pytest.raises(CommandRejected, match="evidence"):
        store.execute(
            c.JudgeCriterion(task_id=tid, criterion_id=cid, status="satisfied", artifact_id="x"),
            AGENT,
        )
    with pytest.raises(CommandRejected, match="reason"):
        store.execute(c.JudgeCriterion(task_id=tid, criterion_id=cid, status="waived"), AGENT)
    with pytest.raises(CommandRejected, match="cannot complete"):
        store.execute(c.SetStatus(task_id=tid, status="completed"), AGENT)
    assert store.data_version() == before


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "link/secret"])
def test_scope_escapes_are_refused(store: Store, ws: Path, path: str) -> None:
    tid = _task(store, ws)
    outside = ws.parent / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    (ws.parent / "outside.txt").write_text("s")
    (ws / "link").symlink_to(outside)
    with pytest.raises(ScopeViolation):
        store.execute(c.RecordArtifact(task_id=tid, name="x", content=c.Content(path=path)), AGENT)


def test_events_are_append_only_and_chained(store: Store, ws: Path) -> None:
    tid = _task(store, ws)
    store.execute(c.AddCriterion(task_id=tid, text="good"), AGENT)
    db = sqlite3.connect(store.location.sqlite_file)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("UPDATE events SET payload = '{}' WHERE seq = 2")
    db.execute("DROP TRIGGER events_no_update")
    db.execute("""UPDATE events SET payload = '{"criterion_id":"C1","text":"bad"}' WHERE seq = 2""")
    db.commit()
    prev, broken = GENESIS_HASH, []
    for row in db.execute(
        "SELECT task_id, seq, type, format, payload, actor_kind, actor_id, actor_name, at, hash FROM events ORDER BY seq"
    ):
        actor = Actor(kind=row[5], id=row[6], name=row[7])
        h = chain_hash(
            prev, stored_body(row[0], row[1], row[2], row[3], json.loads(row[4]), actor, row[8])
        )
        if h != row[9]:
            broken.append(row[1])
        prev = row[9]
    assert broken == [2]


def test_missing_blob_is_named_on_load(store: Store, ws: Path) -> None:
    tid = _task(store, ws)
    res = store.execute(
        c.RecordArtifact(task_id=tid, name="log", content=c.Content(text="x")), AGENT
    )
    store.blobs.path_of(res["digest"]).unlink()
    problems = store.task(tid)["problems"]
    assert problems == [
        {"kind": "artifact_version", "id": "log v1", "digest": res["digest"], "problem": "missing"}
    ]


def test_rebuild_equals_incremental(store: Store, ws: Path) -> None:
    tid = _task(store, ws)
    store.execute_all(
        [
            c.AddCriterion(task_id=tid, text="a"),
            c.RecordArtifact(task_id=tid, artifact_id="g", name="g", content=c.Content(text="1")),
            c.SetBudget(task_id=tid, counter="tool_calls", limit=3),
            c.ChargeBudget(task_id=tid, counter="tool_calls", amount=4),
            c.RecordArtifact(task_id=tid, artifact_id="g", name="g", content=c.Content(text="2")),
        ],
        AGENT,
    )
    assert store.task(tid)["status"] == "budget_exhausted"
    before = store.projection_dump(tid)
    store.rebuild(tid)
    assert store.projection_dump(tid) == before


def test_newer_store_is_refused_unchanged(tmp_path: Path) -> None:
    Store.open(tmp_path).close()
    db = sqlite3.connect(tmp_path / "boris.sqlite")
    db.execute("UPDATE alembic_version SET version_num = '9999'")
    db.commit()
    db.close()
    with pytest.raises(StoreTooNew, match="9999"):
        Store.open(tmp_path)


def test_not_a_store_is_refused(tmp_path: Path) -> None:
    (tmp_path / "boris.sqlite").write_text("hello")
    with pytest.raises(StoreCorrupt):
        Store.open(tmp_path)


def test_store_never_imports_qt() -> None:
    code = "import store, store.cli, store.demo, sys; print(any(m.startswith(('PySide6','boris_desktop')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cli_ingest_is_all_or_nothing(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from store.cli import main

    st = str(tmp_path / "s")
    assert (
        main(
            [
                "--store",
                st,
                "create-task",
                "--id",
                "t1",
                "--title",
                "T",
                "--owner",
                "o",
                "--objective",
                "x",
                "--scope",
                str(ws),
            ]
        )
        == 0
    )
    lines = tmp_path / "cmds.jsonl"
    lines.write_text(
        '{"type": "add_criterion", "task_id": "t1", "text": "a"}\n'
        '{"type": "add_criterion", "task_id": "t1"}\n'
    )
    assert main(["--store", st, "ingest", str(lines)]) == 1
    assert "line 2" in capsys.readouterr().err
    assert main(["--store", st, "show", "t1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["criteria"] == []
    assert main(["--store", st, "demo"]) == 0
    capsys.readouterr()
    assert main(["--store", st, "tasks", "--json"]) == 0
    ids = {t["id"] for t in json.loads(capsys.readouterr().out)}
    assert {"t1", "guide", "note"} <= ids
