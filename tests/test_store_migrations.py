"""Schema versions: a store written by the first schema opens, migrates and carries on.

tests/fixtures/store-0001/ is a committed store written by schema revision 0001 (see
tests/fixtures/make_fixture_store.py; it is never regenerated here). Every test works on a
copy of it in tmp_path.

The migrate-with-backup path is exercised today, with no real revision after 0001 yet, by
test-only revisions written into a copy of the migrations directory.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_store_integrity import chain_problems

from store import Actor, MigrationFailed, Store, StoreError, StoreTooNew, migrate
from store import commands as c
from store.location import DB_NAME
from store.version import __version__

FIXTURE = Path(__file__).parent / "fixtures" / "store-0001"
FIXTURE_REV = "0001"
AGENT = Actor(kind="agent", id="agent-2", name="Resuming agent")

# What the fixture holds (tests/fixtures/make_fixture_store.py wrote it).
GUIDE_V1 = "# Install guide\n\n1. Run the installer as an administrator.\n"
GUIDE_V2 = GUIDE_V1 + "2. Reboot once.\n"
CHECK = "$ check-structure guide.md\n2 sections found\nOK\n"
GUIDE_HEAD = "70e532b061e23e93067f29141322e0e561742a4a3b0c35d7f5ebb3ae2e5c8001"
NOTE_HEAD = "70805295e8089f9112264e3654aca90ff58d80a959cb23eeb8c31234077c2119"

#: Each later revision is a stepping stone: the fixture is migrated to it, then on to HEAD.
#: With no revision after 0001 yet, the fixture is simply opened at HEAD.
LATER = migrate.REVISIONS[migrate.REVISIONS.index(FIXTURE_REV) + 1 :]
TARGETS = LATER or (FIXTURE_REV,)

# The events table's columns as revision 0001 made them; later revisions may add more.
EVENT_COLUMNS = (
    "id, task_id, seq, type, format, payload, actor_kind, actor_id, actor_name, at, prev_hash, hash"
)

TEST_REVISION = '''"""Test-only revision {rev}."""
import sqlalchemy as sa
from alembic import op

revision = {rev!r}
down_revision = {down!r}
branch_labels = None
depends_on = None


def upgrade() -> None:
{body}
'''
ADD_COLUMN = """\
op.add_column("store_meta", sa.Column("note", sa.Text, nullable=True))
op.execute("INSERT INTO store_meta (key, value) VALUES ('migrated', 'yes')")
"""
BREAKS = 'raise RuntimeError("test migration broke halfway")\n'


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _query(db_file: Path, sql: str, *args: Any, immutable: bool = False) -> list[Any]:
    """Rows read through a connection of our own; `immutable` for files that must not change
    and have no -wal (the committed fixture, a backup)."""
    uri = f"{db_file.as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")
    conn = sqlite3.connect(uri, uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _revision(db_file: Path, **kw: Any) -> str:
    return str(_query(db_file, "SELECT version_num FROM alembic_version", **kw)[0][0])


def _events(db_file: Path, **kw: Any) -> list[Any]:
    return _query(db_file, f"SELECT {EVENT_COLUMNS} FROM events ORDER BY id", **kw)


def _columns(db_file: Path, table: str, **kw: Any) -> list[str]:
    return [r[1] for r in _query(db_file, f"PRAGMA table_info({table})", **kw)]


def _backups(d: Path) -> list[Path]:
    b = d / "backups"
    return sorted(b.iterdir()) if b.is_dir() else []


def _copy_fixture(dest: Path) -> Path:
    shutil.copytree(FIXTURE, dest)
    return dest


FIXTURE_EVENTS = _events(FIXTURE / DB_NAME, immutable=True)


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return _copy_fixture(tmp_path / "store")


@pytest.fixture
def later_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[str, ...]]:
    """Make this program one that knows test-only revisions after its HEAD, one per body.
    `monkeypatch.undo()` turns it back into the program as shipped."""

    def install(*bodies: str) -> tuple[str, ...]:
        mig = tmp_path / "migrations"
        shutil.copytree(migrate.MIGRATIONS_DIR, mig, ignore=shutil.ignore_patterns("__pycache__"))
        down, revs = migrate.HEAD, []
        for i, body in enumerate(bodies, 1):
            rev = f"test{i}"
            (mig / "versions" / f"{rev}.py").write_text(
                TEST_REVISION.format(rev=rev, down=down, body=textwrap.indent(body, "    "))
            )
            down = rev
            revs.append(rev)
        monkeypatch.setattr(migrate, "MIGRATIONS_DIR", mig)
        monkeypatch.setattr(migrate, "REVISIONS", (*migrate.REVISIONS, *revs))
        monkeypatch.setattr(migrate, "HEAD", revs[-1])
        return tuple(revs)

    return install


# --- what the fixture holds, read back by the program at HEAD --------------------------------


def _check_fixture_state(s: Store, *, notes_added: int = 0) -> None:
    assert s.task_ids() == ["guide", "note"]
    guide = s.task("guide")
    assert guide["title"] == "Install guide from the admin notes"
    assert guide["owner"] == "maria"
    assert (guide["status"], guide["status_reason"]) == ("running", "")
    assert [(o["rev"], o["text"]) for o in guide["objective_revisions"]] == [
        (1, "Write an install guide for site administrators."),
        (2, "Write an install guide for site administrators; mention the reboot."),
    ]
    assert [
        (k["criterion_id"], k["text"], k["status"], k["artifact_id"], k["artifact_version"])
        for k in guide["criteria"]
    ] == [
        ("steps", "Every step is numbered.", "satisfied", "guide", 2),
        ("reboot", "The guide mentions the reboot.", "unverified", None, None),
    ]
    steps = guide["criteria"][0]
    assert steps["evidence_ids"] == ["check-1"]
    (evidence,) = steps["evidence"]
    assert (evidence["evidence_id"], evidence["kind"]) == ("check-1", "command_output")
    assert evidence["digest"] == _digest(CHECK)
    assert s.blobs.read(evidence["digest"]) == CHECK.encode()
    (art,) = guide["artifacts"]
    assert (art["artifact_id"], art["name"], art["role"], art["current_version"]) == (
        "guide",
        "guide.md",
        "draft",
        2,
    )
    assert [(v["version"], v["digest"], v["size"], v["note"]) for v in art["versions"]] == [
        (1, _digest(GUIDE_V1), len(GUIDE_V1), "first draft"),
        (2, _digest(GUIDE_V2), len(GUIDE_V2), "reboot added"),
    ]
    assert art["versions"][1]["digest"] == (
        "sha256:01c2f085f58534c0bd888fbe5edf2652d846f613e259459c1bc8ee853214c860"
    )
    assert s.blobs.read(art["current"]["digest"]) == GUIDE_V2.encode()
    assert [(b["counter"], b["limit_value"], b["used"]) for b in guide["budgets"]] == [
        ("model_calls", 50.0, 12.0)
    ]
    assert guide["problems"] == []
    assert (guide["last_seq"], guide["head_hash"]) == (10, GUIDE_HEAD)

    note = s.task("note")
    assert note["title"] == "Save the weekly project note"
    assert (note["status"], note["status_reason"]) == ("paused", "waiting for the meeting")
    assert [(k["criterion_id"], k["status"]) for k in note["criteria"]] == [("saved", "unverified")]
    assert note["last_seq"] == 3 + notes_added
    if not notes_added:
        assert note["head_hash"] == NOTE_HEAD


def _check_history_intact(db_file: Path) -> None:
    """Every event of the fixture is still there, byte for byte, and the chains verify."""
    assert _events(db_file)[: len(FIXTURE_EVENTS)] == FIXTURE_EVENTS
    assert chain_problems(db_file, "guide") == []
    assert chain_problems(db_file, "note") == []
    conn = sqlite3.connect(db_file)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("UPDATE events SET payload = '{}' WHERE task_id = 'guide'")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("DELETE FROM events WHERE task_id = 'note'")
    finally:
        conn.rollback()
        conn.close()


GUIDE_V3 = GUIDE_V2 + "3. To uninstall, run the installer again.\n"


def _resume(s: Store) -> None:
    """Carry on with both tasks; the new events go on the fixture's hash chains."""
    assert (
        s.execute(
            c.AmendObjective(
                task_id="guide",
                text="Write an install guide for site administrators; mention the reboot and "
                "how to uninstall.",
                reason="support asked for it",
            ),
            AGENT,
        )
        == 3
    )
    assert (
        s.execute(
            c.AddCriterion(
                task_id="guide", criterion_id="uninstall", text="The guide covers uninstalling."
            ),
            AGENT,
        )
        == "uninstall"
    )
    v3 = s.execute(
        c.RecordArtifact(
            task_id="guide",
            artifact_id="guide",
            name="guide.md",
            content=c.Content(text=GUIDE_V3, media_type="text/markdown"),
            note="uninstall added",
        ),
        AGENT,
    )
    assert (v3["version"], v3["digest"]) == (3, _digest(GUIDE_V3))
    s.execute_all(
        [
            c.AttachEvidence(
                task_id="guide",
                criterion_id="reboot",
                evidence_id="review-1",
                kind="review",
                content=c.Content(text="step 2 says to reboot"),
                description="read guide v3",
            ),
            c.JudgeCriterion(
                task_id="guide",
                criterion_id="reboot",
                status="satisfied",
                artifact_id="guide",
                artifact_version=3,
                evidence_ids=["review-1"],
            ),
            c.ChargeBudget(task_id="guide", counter="model_calls", amount=3),
        ],
        AGENT,
    )
    s.execute(c.SetStatus(task_id="note", status="running", reason="meeting held"), AGENT)


def _check_resumed(s: Store, db_file: Path) -> None:
    guide_events = s.events("guide")
    assert [e["seq"] for e in guide_events] == list(range(1, 17))
    assert guide_events[9]["hash"] == GUIDE_HEAD
    assert guide_events[10]["prev_hash"] == GUIDE_HEAD
    assert [e["type"] for e in guide_events[10:]] == [
        "objective.amended",
        "criterion.added",
        "artifact.version_recorded",
        "evidence.attached",
        "criterion.judged",
        "budget.charged",
    ]
    note_events = s.events("note")
    assert [e["seq"] for e in note_events] == [1, 2, 3, 4]
    assert note_events[3]["prev_hash"] == NOTE_HEAD
    _check_history_intact(db_file)

    guide = s.task("guide")
    assert (guide["last_seq"], guide["head_hash"]) == (16, guide_events[-1]["hash"])
    assert guide["objective"]["rev"] == 3
    by_id = {k["criterion_id"]: k for k in guide["criteria"]}
    assert list(by_id) == ["steps", "reboot", "uninstall"]
    assert (by_id["reboot"]["status"], by_id["reboot"]["artifact_version"]) == ("satisfied", 3)
    assert by_id["uninstall"]["status"] == "unverified"
    (art,) = guide["artifacts"]
    assert art["current_version"] == 3
    assert s.blobs.read(art["current"]["digest"]) == GUIDE_V3.encode()
    assert guide["budgets"][0]["used"] == 15.0
    assert guide["problems"] == []
    note = s.task("note")
    assert (note["status"], note["last_seq"]) == ("running", 4)


# --- the fixture, migrated through every later revision, then worked on -----------------------


@pytest.mark.parametrize("stepping_stone", TARGETS)
def test_fixture_migrates_and_work_resumes(
    stepping_stone: str, store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_file = store_dir / DB_NAME
    assert _revision(db_file) == FIXTURE_REV
    head = migrate.HEAD

    # A program whose newest schema is the stepping stone opens the store first...
    with monkeypatch.context() as m:
        m.setattr(
            migrate, "REVISIONS", migrate.REVISIONS[: migrate.REVISIONS.index(stepping_stone) + 1]
        )
        m.setattr(migrate, "HEAD", stepping_stone)
        Store.open(store_dir, create=False).close()
    assert _revision(db_file) == stepping_stone
    _check_history_intact(db_file)
    if stepping_stone == FIXTURE_REV:
        assert _backups(store_dir) == []
    else:
        (backup,) = _backups(store_dir)
        assert backup.name.startswith(f"boris-schema{FIXTURE_REV}-")
        assert _revision(backup, immutable=True) == FIXTURE_REV
        assert _events(backup, immutable=True) == FIXTURE_EVENTS

    # ...then this program, at HEAD, opens it and carries on.
    with Store.open(store_dir, create=False) as s:
        assert _revision(db_file) == head
        assert (s.migrated_from_backup is None) == (stepping_stone == head)
        _check_fixture_state(s)
        for tid in ("guide", "note"):
            dump = s.projection_dump(tid)
            s.rebuild(tid)
            assert s.projection_dump(tid) == dump, "migrated projections differ from a re-fold"
        _resume(s)
        _check_resumed(s, db_file)
    backups = _backups(store_dir)
    with Store.open(store_dir, create=False) as s:
        assert s.migrated_from_backup is None
        _check_resumed(s, db_file)
    assert _backups(store_dir) == backups, "a store at HEAD is not backed up again"


def test_revisions_match_the_shipped_migration_scripts() -> None:
    """`REVISIONS` is the program's word on what it can read: it must name exactly the
    shipped scripts, oldest first, so the upgrade target (HEAD) is the scripts' one head."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(migrate.MIGRATIONS_DIR))
    scripts = ScriptDirectory.from_config(cfg)
    assert scripts.get_heads() == [migrate.HEAD]
    chain = [r.revision for r in scripts.walk_revisions("base", "heads")]
    assert tuple(reversed(chain)) == migrate.REVISIONS
    assert migrate.REVISIONS[0] == FIXTURE_REV


def test_migrations_build_exactly_the_schema_module(tmp_path: Path) -> None:
    """A store made by running every migration has the tables, columns, types, keys and
    indexes `store.schema` declares (Alembic's own comparison finds nothing to change), and
    the checkpoints and signatures tables are clustered on their keys as 0004 and 0008 made
    them."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from store import schema

    with Store.open(tmp_path / "store") as s, s.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), schema.metadata) == []
        for table in ("checkpoints", "signatures"):
            sql = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = ?", (table,)
            ).scalar_one()
            assert sql.rstrip().endswith("WITHOUT ROWID"), table


# --- a later revision: backup first, then migrate ----------------------------------------------


def test_migration_backs_up_with_vacuum_into_then_migrates(
    store_dir: Path, later_program: Callable[..., tuple[str, ...]]
) -> None:
    db_file = store_dir / DB_NAME
    # Open with the program as shipped and keep it open after a write: that event lives only
    # in the WAL, which a copy of the database file would miss.
    older = Store.open(store_dir, create=False)
    try:
        earlier = _backups(store_dir)  # the shipped program's own upgrade of the fixture
        older.execute(c.RecordNote(task_id="note", text="written just before the update"), AGENT)
        assert (store_dir / f"{DB_NAME}-wal").stat().st_size > 0
        before = _events(db_file)
        assert len(before) == len(FIXTURE_EVENTS) + 1
        (rev,) = later_program(ADD_COLUMN)

        with Store.open(store_dir, create=False) as s:
            assert s.migrated_from_backup is not None
            backup = Path(s.migrated_from_backup)
            assert _backups(store_dir) == sorted([*earlier, backup])
            assert backup.name.startswith(f"boris-schema{migrate.REVISIONS[-2]}-")
            # A whole database on its own: the rollback-journal header (not WAL's), no -wal or
            # -shm beside it, and every event, including the one that was only in the WAL.
            header = backup.read_bytes()[:20]
            assert header[:16] == b"SQLite format 3\x00"
            assert (header[18], header[19]) == (1, 1)
            assert not Path(f"{backup}-wal").exists()
            assert not Path(f"{backup}-shm").exists()
            assert _query(backup, "PRAGMA integrity_check", immutable=True) == [("ok",)]
            assert _revision(backup, immutable=True) == migrate.REVISIONS[-2]
            assert _events(backup, immutable=True) == before
            assert "note" not in _columns(backup, "store_meta", immutable=True)
            assert not [p for p in backup.parent.iterdir() if p.name.endswith(".partial")]

            # The migrated store: at the new revision, stamped by this program, still working.
            assert _revision(db_file) == rev
            assert "note" in _columns(db_file, "store_meta")
            meta = dict(_query(db_file, "SELECT key, value FROM store_meta"))
            assert meta == {"written_by": __version__, "migrated": "yes"}
            assert _events(db_file) == before
            _check_fixture_state(s, notes_added=1)
            _resume(s)
            assert [e["type"] for e in s.events("note")][3:] == [
                "note.recorded",
                "run.status_changed",
            ]
            assert chain_problems(db_file, "guide") == []
            assert chain_problems(db_file, "note") == []
    finally:
        older.close()


@pytest.mark.parametrize(
    "bodies",
    [(ADD_COLUMN + BREAKS,), (ADD_COLUMN, BREAKS)],
    ids=["fails-in-its-only-step", "fails-in-the-second-step"],
)
def test_failed_migration_leaves_the_store_as_it_was(
    bodies: tuple[str, ...],
    store_dir: Path,
    later_program: Callable[..., tuple[str, ...]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db_file = store_dir / DB_NAME
    shipped_head = migrate.HEAD
    revs = later_program(*bodies)

    with pytest.raises(MigrationFailed) as info:
        Store.open(store_dir, create=False)
    assert isinstance(info.value, StoreError)
    msg = str(info.value)
    assert "RuntimeError: test migration broke halfway" in msg
    assert f"from schema {FIXTURE_REV} to {revs[-1]}" in msg
    assert f"left unchanged at schema {FIXTURE_REV}" in msg
    (backup,) = _backups(store_dir)
    assert str(backup) in msg
    assert _revision(backup, immutable=True) == FIXTURE_REV
    assert _events(backup, immutable=True) == FIXTURE_EVENTS

    # Nothing of any step was kept, not even of a step that had succeeded.
    assert _revision(db_file) == FIXTURE_REV
    assert "note" not in _columns(db_file, "store_meta")
    # written_by is still the program that wrote the fixture, not this one.
    assert dict(_query(db_file, "SELECT key, value FROM store_meta")) == {"written_by": "0.1.0"}
    _check_history_intact(db_file)

    # The program as shipped still opens it and carries on.
    monkeypatch.undo()
    assert shipped_head == migrate.HEAD
    with Store.open(store_dir, create=False) as s:
        _check_fixture_state(s)
        _resume(s)
        _check_resumed(s, db_file)


# --- a store written by a newer program ------------------------------------------------------


def test_fixture_marked_newer_is_refused_naming_both_versions(store_dir: Path) -> None:
    # tests/test_store_integrity.py checks the refusal leaves the bytes alone; this one checks
    # the message names the newer writer's version as well as ours.
    db_file = store_dir / DB_NAME
    conn = sqlite3.connect(db_file)
    conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.execute("UPDATE store_meta SET value = '7.3.0' WHERE key = 'written_by'")
    conn.commit()
    conn.close()
    before = {p.relative_to(store_dir): p.read_bytes() for p in store_dir.rglob("*") if p.is_file()}
    with pytest.raises(StoreTooNew) as info:
        Store.open(store_dir, create=False)
    msg = str(info.value)
    for part in ("schema 9999", "Boris 7.3.0", f"Boris {__version__}", f"up to {migrate.HEAD}"):
        assert part in msg
    after = {p.relative_to(store_dir): p.read_bytes() for p in store_dir.rglob("*") if p.is_file()}
    assert after == before


def test_two_programs_opening_an_old_store_at_once_migrate_it_once(
    store_dir: Path, later_program: Callable[..., tuple[str, ...]]
) -> None:
    # The slow step holds the write lock; the other opener waits for it, then finds the store
    # at HEAD. Run twice, the step would fail (the column and the row would already exist).
    (rev,) = later_program(ADD_COLUMN + "import time\ntime.sleep(0.3)\n")
    results: list[object] = []

    def open_it() -> None:
        try:
            with Store.open(store_dir, create=False) as s:
                results.append(s.task("guide")["last_seq"])
        except Exception as exc:
            results.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [10, 10]
    db_file = store_dir / DB_NAME
    assert _revision(db_file) == rev
    assert dict(_query(db_file, "SELECT key, value FROM store_meta")) == {
        "written_by": __version__,
        "migrated": "yes",
    }
    _check_history_intact(db_file)


# --- 0004: checkpoints read the same after their state moved out of the row --------------------

LINEAGE = Path(__file__).parent / "fixtures" / "lineage-0003"


def test_checkpoints_read_the_same_after_schema_0004(tmp_path: Path) -> None:
    """A store written at 0003 whose lineages fork, merge and stop: after the upgrade every
    task's checkpoints, heads and forks read exactly as 0003 read them, the head reads agree,
    the record verifies, and the next checkpoint continues from the head."""
    from store.commands.checkpoints import WriteCheckpoint
    from store.services.verify import verify

    store_dir = tmp_path / "store"
    store_dir.mkdir()
    shutil.copy(LINEAGE / DB_NAME, store_dir / DB_NAME)
    expected = json.loads((LINEAGE / "expected.json").read_text())
    assert _revision(store_dir / DB_NAME) == "0003"
    with Store.open(store_dir, create=False) as s:
        assert _revision(store_dir / DB_NAME) == migrate.HEAD
        for tid, lineage in expected.items():
            assert s.task(tid).checkpoints.to_json() == lineage
            head = s.head_checkpoint(tid)
            assert head is not None
            newest = [c for c in lineage["checkpoints"] if not c["superseded"]][-1]
            assert head["checkpoint_id"] == newest["checkpoint_id"]
            assert head["state"] == newest["state"]
        assert expected["lineage"]["heads"] == ["ck-m2"]
        assert expected["forked"]["forks"] == []  # the stop merged the fork
        # The fixture keeps no blobs (its one artifact's is missing); nothing else is wrong.
        assert {p.kind for p in verify(s).problems} == {"blob_missing"}
        new = s.execute(WriteCheckpoint(task_id="lineage", reason="milestone"), AGENT)
        after = s.task("lineage")["checkpoints"]
        assert after["heads"] == [new] and after["checkpoints"][-1]["supersedes"] == ["ck-m2"]


def test_many_programs_opening_a_rollback_journal_store_at_once_all_open_it(
    tmp_path: Path,
) -> None:
    # The fixture predates WAL. Switching a database to WAL takes a lock that SQLite does not
    # wait for through busy_timeout, so openers racing to switch it saw "database is locked"
    # (measured: 14 of 300 rounds of three bare connections). Store.open serializes that step.
    for round_ in range(8):
        store_dir = _copy_fixture(tmp_path / f"store{round_}")
        start = threading.Barrier(4)
        results: list[object] = []

        def open_it(
            d: Path = store_dir,
            start: threading.Barrier = start,
            results: list[object] = results,
        ) -> None:
            start.wait()
            try:
                with Store.open(d, create=False) as s:
                    results.append(s.task("guide")["last_seq"])
            except Exception as exc:
                results.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [10, 10, 10, 10], f"round {round_}"
        assert _revision(store_dir / DB_NAME) == migrate.HEAD
        assert len(_backups(store_dir)) == 1  # migrated once, backed up once
