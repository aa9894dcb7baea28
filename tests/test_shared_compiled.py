"""The SQLite stores of one process share SQLAlchemy's compiled statements (issue 44): a
store opened after another (each command of the resident `boris`, whose child opens the
user's store after the rehearsal's) runs the statements the first compiled from the cache,
and each store's answers are its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa

from store import Actor, Store
from store import commands as c

AGENT = Actor(kind="agent", id="bench")


def _core_statements(store: Store) -> list[tuple[str, Any]]:
    """Each Core statement the store's engine runs from now on: its text and cache verdict."""
    seen: list[tuple[str, Any]] = []

    def after(_conn: Any, _cursor: Any, statement: str, _p: Any, context: Any, _m: Any) -> None:
        if context is not None and context.compiled is not None:
            seen.append((statement, context.cache_hit))

    sa.event.listen(store.engine, "after_cursor_execute", after)
    return seen


def _write_and_read(store: Store, title: str) -> str:
    tid = store.execute(c.CreateTask(title=title, owner="o", objective="x"), AGENT)
    store.execute(c.RecordNote(task_id=tid, text="tick"), AGENT)
    assert store.task(tid).title == title
    assert [t.title for t in store.tasks()] == [title]
    return str(tid)


def test_a_second_store_runs_what_the_first_compiled_and_reads_its_own_rows(
    tmp_path: Path,
) -> None:
    with Store.open(tmp_path / "first") as first:
        _write_and_read(first, "first's")
    with Store.open(tmp_path / "second") as second:
        seen = _core_statements(second)
        _write_and_read(second, "second's")
    assert len(seen) > 5
    compiled_again = [text for text, verdict in seen if verdict != sa.Dialect.CACHE_HIT]
    assert compiled_again == []


def test_the_engines_of_one_process_keep_one_cache_of_their_kind(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a") as a, Store.open(tmp_path / "b") as b:
        assert a.engine.dialect is not b.engine.dialect
        cache = a.engine.get_execution_options()["compiled_cache"]
        assert cache is b.engine.get_execution_options()["compiled_cache"]
        _write_and_read(a, "a")
        size = len(cache)
        _write_and_read(b, "b")
        assert len(cache) == size  # nothing compiled anew for the second engine
