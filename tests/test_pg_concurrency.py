"""A team store under concurrent writers and concurrent first openers (issue 16).

Eight processes appending to one task see no error, and the log holds exactly what was
acknowledged, with its chain whole; three processes opening a new PostgreSQL store at once
migrate it once, without an error. Both engines, where it applies.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from concurrent_writers import log_problems, run_writers

from store import Actor, Store, StoreBusy, WriteConflict
from store import commands as c
from store import commands as cmds

AGENT = Actor(kind="agent", id="a1")
WRITERS = 8


def test_eight_writers_to_one_task_never_see_an_error(s: Store, store_engine: str) -> None:
    seconds = float(os.environ.get("BORIS_WRITERS_SECONDS", 10 if store_engine != "sqlite" else 4))
    tid = s.execute(c.CreateTask(title="busy", owner="o", objective="many writers"), AGENT)
    url = None if s.location.sqlite_file else s.location.url
    results = run_writers(s.location.directory, url, tid, WRITERS, seconds)
    errors = [e for r in results for e in r.errors]
    assert errors == [], f"{len(errors)} writes refused, e.g. {errors[:3]}"
    assert all(r.acknowledged for r in results), "a writer never got a write in"
    assert log_problems(s, tid, results) == []
    assert len(s.events(tid)) == 1 + sum(len(r.acknowledged) for r in results)


def _two_tasks(s: Store) -> tuple[str, str]:
    a = s.execute(c.CreateTask(title="a", owner="o", objective="x"), AGENT)
    b = s.execute(c.CreateTask(title="b", owner="o", objective="x"), AGENT)
    return a, b


def test_a_deadlock_is_a_write_conflict_not_busy(pg_url: str, tmp_path: Path) -> None:
    """Two transactions take two tasks in opposite orders; the server breaks the deadlock and
    the loser learns it collided with another writer (typed), not that the store is busy.
    (PostgreSQL only: SQLite serializes whole write transactions, so none can deadlock.)"""

    def open_store() -> Store:
        return Store.open(tmp_path / "store", url=pg_url)

    with open_store() as s:
        a, b = _two_tasks(s)
    both_hold_one = threading.Barrier(2, timeout=20)
    outcomes: dict[str, BaseException | None] = {}

    def write(name: str, first: str, second: str) -> None:
        with open_store() as mine:
            try:
                with mine.transaction() as tx:
                    cmds.execute(tx, c.RecordNote(task_id=first, text=name), AGENT)
                    both_hold_one.wait()
                    cmds.execute(tx, c.RecordNote(task_id=second, text=name), AGENT)
                outcomes[name] = None
            except BaseException as exc:
                outcomes[name] = exc

    threads = [
        threading.Thread(target=write, args=("ab", a, b)),
        threading.Thread(target=write, args=("ba", b, a)),
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    failed = [e for e in outcomes.values() if e is not None]
    assert len(outcomes) == 2 and len(failed) == 1, outcomes
    (exc,) = failed
    assert isinstance(exc, WriteConflict) and not isinstance(exc, StoreBusy)
    assert exc.kind == "deadlock"
    assert "collided with another writer (deadlock)" in str(exc)


def test_writers_taking_tasks_in_opposite_orders_all_succeed(s: Store, open_store: Any) -> None:
    """The same collision through `execute_all`: retried after a jittered pause, never seen."""
    a, b = _two_tasks(s)
    errors: list[BaseException] = []

    def write(first: str, second: str) -> None:
        with open_store() as mine:
            for i in range(15):
                try:
                    mine.execute_all(
                        [
                            c.RecordNote(task_id=first, text=f"{first}-{i}"),
                            c.RecordNote(task_id=second, text=f"{first}-{i}"),
                        ],
                        AGENT,
                    )
                except BaseException as exc:
                    errors.append(exc)

    threads = [threading.Thread(target=write, args=p) for p in ((a, b), (b, a), (a, b), (b, a))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert errors == []
    assert len(s.events(a)) == len(s.events(b)) == 1 + 4 * 15


def _open_fresh(store_dir: str, url: str, start_at: float) -> tuple[int, str]:
    """Open a store at a common moment; say how many migrations this process ran, or why
    it failed."""
    from store import migrate

    ran: list[str] = []
    upgrade = migrate._upgrade

    def counted(engine: Any) -> None:
        ran.append("upgrade")
        upgrade(engine)

    migrate._upgrade = counted
    time.sleep(max(0.0, start_at - time.time()))
    try:
        Store.open(store_dir, url=url).close()
    except Exception as exc:
        return len(ran), f"{type(exc).__name__}: {exc}"
    return len(ran), ""


@pytest.mark.parametrize("round_", range(4))
def test_three_first_openers_migrate_once_without_an_error(
    empty_pg_url: str, tmp_path: Path, round_: int
) -> None:
    ctx = mp.get_context("spawn")
    start_at = time.time() + 3.0
    with ctx.Pool(3) as pool:
        outcomes = pool.starmap(
            _open_fresh, [(str(tmp_path / f"store{i}"), empty_pg_url, start_at) for i in range(3)]
        )
    assert [why for _, why in outcomes if why] == []
    assert sum(ran for ran, _ in outcomes) == 1
    with Store.open(tmp_path / "after", url=empty_pg_url) as s:
        tid = s.execute(c.CreateTask(title="t", owner="o", objective="x"), AGENT)
        assert s.task(tid)["title"] == "t"
