"""A new SQLite store is made from store/migrations/sqlite_head.json in one step: that file
must be exactly what the migrations make, so a store made either way is the same store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from store import migrate
from store.api import Store


def _schema(db_file: Path) -> list[tuple[str, str, str, str]]:
    with sqlite3.connect(db_file) as conn:
        return sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))


def _rows(db_file: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(db_file) as conn:
        tables = [
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"')) for t in tables}


def test_the_snapshot_is_what_the_migrations_make() -> None:
    snapshot = json.loads(migrate.SNAPSHOT.read_text(encoding="utf-8"))
    assert snapshot["revision"] == migrate.HEAD, (
        "store/migrations/sqlite_head.json is of another revision: run .venv/bin/python -m store.migrate"
    )
    assert snapshot["statements"] == migrate.migrated_sqlite_schema(), (
        "store/migrations/sqlite_head.json is not what the migrations make: "
        "run .venv/bin/python -m store.migrate"
    )


def test_a_store_made_from_the_snapshot_is_the_migrated_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Store.open(tmp_path / "snapshot").close()
    monkeypatch.setattr(migrate, "SNAPSHOT", tmp_path / "none.json")  # the migrations, step by step
    Store.open(tmp_path / "migrated").close()
    made, migrated = tmp_path / "snapshot" / "boris.sqlite", tmp_path / "migrated" / "boris.sqlite"
    assert _schema(made) == _schema(migrated)
    assert _rows(made) == _rows(migrated)
    # ... the append-only guards on events among it.
    assert {"trigger"} <= {kind for kind, _, table, _ in _schema(made) if table == "events"}


def test_a_snapshot_of_another_revision_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"revision": "0001", "statements": ["CREATE TABLE wrong (x)"]}))
    monkeypatch.setattr(migrate, "SNAPSHOT", stale)
    Store.open(tmp_path / "store").close()
    tables = {row[1] for row in _schema(tmp_path / "store" / "boris.sqlite")}
    assert "wrong" not in tables and "events" in tables
