"""The window's first look at a SQLite store (store.reads.peek): the inbox as the Store
lists it, read with the standard library before SQLAlchemy is loaded; never a write."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from store import Actor, Store
from store import commands as c
from store.reads.peek import peek_tasks
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")


def test_the_peek_lists_what_the_store_lists(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as s:
        fill_demo(s)
        root = s.blobs.root
        path = next(p for p in root.rglob("*") if p.is_file() and root / "tmp" not in p.parents)
        listed = s.tasks()
        assert peek_tasks(tmp_path / "s") == listed
        # A blob gone is missing to both alike.
        path.unlink()
        listed = s.tasks()
        assert any(t["needs"]["missing_blobs"] for t in listed)
        assert peek_tasks(tmp_path / "s") == listed


def test_the_peek_imports_neither_sqlalchemy_nor_pydantic(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as s:
        s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
    code = (
        "import sys; from store.reads.peek import peek_tasks; "
        f"rows = peek_tasks({str(tmp_path / 's')!r}); "
        "print(len(rows), 'sqlalchemy' in sys.modules, 'pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "False", "False"]


def test_a_missing_store_is_not_made(tmp_path: Path) -> None:
    assert peek_tasks(tmp_path / "nothing") is None
    assert not (tmp_path / "nothing").exists()


def test_a_store_at_another_schema_is_left_to_the_store(tmp_path: Path) -> None:
    import sqlite3

    with Store.open(tmp_path / "s") as s:
        s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
        db_file = s.location.sqlite_file
    assert db_file is not None
    with sqlite3.connect(db_file) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0007'")
    before = db_file.read_bytes()
    assert peek_tasks(tmp_path / "s") is None
    assert db_file.read_bytes() == before


def test_a_team_store_is_left_to_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store.open(tmp_path / "s") as s:
        s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
    monkeypatch.setenv("BORIS_STORE_URL", "postgresql+psycopg://u@h/db")
    assert peek_tasks(tmp_path / "s") is None


def test_a_damaged_file_is_left_to_the_store(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "boris.sqlite").write_bytes(b"not a database at all" * 100)
    assert peek_tasks(tmp_path / "s") is None


def test_a_writer_is_not_kept_waiting_by_a_peek(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as s:
        tid = s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
        assert peek_tasks(tmp_path / "s") is not None
        s.execute(c.RecordNote(task_id=tid, text="after"), AGENT)
        assert peek_tasks(tmp_path / "s") == s.tasks()
