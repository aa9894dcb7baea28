"""The inbox's search on many tasks (issue 32): the changes a search makes are worked out in
one walk (the same as keyed_rows.plan's, without its cost), and a keystroke drops the search
still on a worker for the words typed before it. Its speed is benchmarks/bench_search.py's,
never a timed test."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS
from test_desktop_keyed_rows import task_row

from store import Actor, Store
from store import commands as c

AGENT = Actor(kind="agent", id="a")


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


def _shown(model: Any) -> list[str]:
    return [r["id"] for r in model.rows]


def test_a_searchs_changes_are_keyed_rows_plan_in_one_walk() -> None:
    from boris_desktop.inbox.table import narrowing_plan, task_key
    from boris_desktop.ui.keyed_rows import plan

    rnd = random.Random(32)
    every = [task_row(f"t{i}", title=str(i)) for i in range(300)]
    for _ in range(200):
        held = [r for r in every if rnd.random() < rnd.random()]
        showing = [r for r in every if rnd.random() < rnd.random()]
        fast, slow = narrowing_plan(every, held, showing), plan(held, showing, task_key)
        assert (fast.gone, fast.inserts, fast.changed, fast.moved) == (
            slow.gone,
            slow.inserts,
            slow.changed,
            slow.moved,
        )
        assert (fast.absent, fast.added, fast.where) == (slow.absent, slow.added, slow.where)


def test_rows_not_picked_from_every_in_its_order_get_the_full_plan() -> None:
    from boris_desktop.inbox.table import narrowing_plan

    every = [task_row(f"t{i}") for i in range(5)]
    held = [every[3], every[1]]  # a reload sorted them anew meanwhile
    p = narrowing_plan(every, held, [every[1], every[3]])
    assert p.moved and p.where == {"t1": 0, "t3": 1}


def test_a_keystroke_drops_the_search_still_on_a_worker(qtbot, store: Store) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.main_window import MainWindow

    store.execute_all(
        [
            c.CreateTask(task_id=f"t{i}", title=word, owner="o", objective="x")
            for i, word in enumerate(("alpha", "bravo", "charlie"))
        ],
        AGENT,
    )
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.inbox.rowCount() == 3, timeout=WAIT_MS)
    applied: list[tuple[str, ...]] = []
    w.searched.connect(lambda: applied.append(w.inbox.search))
    w.search.setText("alpha")
    w._search_due.stop()
    w._search()  # on a worker for "alpha" …
    w.search.setText("alphabet")  # … when the next key comes
    assert w._search_due.isActive()  # the pause starts again
    with qtbot.waitSignal(w.searched, timeout=WAIT_MS):
        pass
    qtbot.wait(50)
    assert applied == [("alphabet",)]  # "alpha"'s rows were never shown
    assert _shown(w.inbox) == []
    w.close()
