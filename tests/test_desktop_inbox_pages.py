"""The inbox in pages in the window (issue 36 part W), with pytest-qt as a reviewer uses it:
scrolling fetches the next pages from a worker, the search is SQL on a worker after a pause
in the typing, the counts are the database's, and the selection stays on its task across
pages, searches and refreshes. Both engines."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from store import Actor, Store
from store import commands as c

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

TASKS = 700


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


@pytest.fixture
def inbox(qtbot: Any, store: Store) -> Any:
    from gen_big_store import fill

    from boris_desktop.inbox.pages import PagedInbox

    fill(store, TASKS, 6, report=lambda _: None)
    pane = PagedInbox(store)
    qtbot.addWidget(pane.table)
    pane.table.resize(900, 400)
    pane.table.show()
    with qtbot.waitSignal(pane.model.reloaded, timeout=20_000):
        pane.load()
    yield pane
    pane.loader.cancel("inbox-read")
    pane.loader.cancel("inbox-page")


def _ids(pane: Any) -> list[str]:
    return [r["id"] for r in pane.model.rows]


def test_scrolling_to_the_end_fetches_page_after_page_until_every_task(
    qtbot: Any, inbox: Any
) -> None:
    from boris_desktop.inbox.pages import PAGE

    assert len(inbox.model.rows) == PAGE < TASKS
    assert inbox.counts.text().startswith(f"{TASKS} tasks · ")
    needy = inbox.model.counts["needy"]
    assert needy > 0 and inbox.counts.text().endswith(f"{needy} need you")
    # The tasks that need a person come first, as in the whole inbox.
    assert all(r["attention"] > 0 for r in inbox.model.rows[:needy])
    for _ in range(10):
        if not inbox.model.canFetchMore():
            break
        held = len(inbox.model.rows)
        inbox.table.scrollToBottom()
        qtbot.waitUntil(lambda held=held: len(inbox.model.rows) > held, timeout=20_000)
    assert not inbox.model.canFetchMore()
    ids = _ids(inbox)
    assert len(ids) == len(set(ids)) == TASKS


def test_search_is_read_on_a_worker_after_a_pause_and_counted(qtbot: Any, inbox: Any) -> None:
    with qtbot.waitSignals([inbox.model.reloaded, inbox.model.counted], timeout=20_000):
        qtbot.keyClicks(inbox.search, "invoice 4")
    rows = list(inbox.model.rows)
    assert rows and all(
        "invoice" in r["title"].casefold() and "4" in (r["title"] + r["id"]) for r in rows
    )
    assert f"{inbox.model.counts['matching']} shown" in inbox.counts.text()
    with qtbot.waitSignal(inbox.model.reloaded, timeout=20_000):
        inbox.search.clear()
    assert len(inbox.model.rows) > len(rows)


def test_the_selection_stays_on_its_task_across_pages_searches_and_refreshes(
    qtbot: Any, inbox: Any, store: Store
) -> None:
    inbox.table.scrollToBottom()
    qtbot.waitUntil(lambda: len(inbox.model.rows) > 300, timeout=20_000)
    chosen = inbox.model.rows[250]["id"]
    inbox.table.selectRow(250)
    assert inbox.selected == chosen
    # A write elsewhere, then a refresh: the rows held are read again; the selection stays.
    other = inbox.model.rows[0]["id"]
    store.execute(c.RecordNote(task_id=other, text="a new fact"), Actor(kind="agent", id="a"))
    with qtbot.waitSignal(inbox.model.reloaded, timeout=20_000):
        inbox.model.reload()
    assert len(inbox.model.rows) > 250
    assert inbox.table.selectionModel().currentIndex().row() == inbox.model.row_of(chosen) >= 0
    # A search that keeps it, then back: still on it.
    title = inbox.model.rows[inbox.model.row_of(chosen)]["title"]
    with qtbot.waitSignal(inbox.model.reloaded, timeout=20_000):
        qtbot.keyClicks(inbox.search, title.split(":")[0])
    assert _ids(inbox) == [chosen]
    assert inbox.table.selectionModel().currentIndex().row() == 0
    assert inbox.selected == chosen


def test_sorting_by_a_column_is_a_new_reading_in_the_databases_order(
    qtbot: Any, inbox: Any
) -> None:
    from PySide6.QtCore import Qt

    from boris_desktop.inbox.pages import FIRST
    from boris_desktop.inbox.table import TITLE

    with qtbot.waitSignal(inbox.model.reloaded, timeout=20_000):
        inbox.model.sort(TITLE, Qt.SortOrder.AscendingOrder)
    titles = [r["title"] for r in inbox.model.rows]
    assert titles == sorted(titles) and len(titles) == FIRST
    inbox.table.scrollToBottom()
    qtbot.waitUntil(lambda: len(inbox.model.rows) > FIRST, timeout=20_000)
    titles = [r["title"] for r in inbox.model.rows]
    assert titles == sorted(titles) and len(titles) == len(set(titles))


def test_the_first_page_is_peeked_at_before_the_store_is_open(
    qtbot: Any, store: Store, store_dir: Path
) -> None:
    from gen_big_store import fill

    from boris_desktop.inbox.pages import PAGE, PagedInbox
    from boris_desktop.runtime.jobs import open_store

    fill(store, 300, 5, report=lambda _: None)
    pane = PagedInbox(None)
    qtbot.addWidget(pane.table)
    opened: list[Any] = []
    gate = qtbot.waitSignal(pane.model.reloaded, timeout=20_000)
    with gate:
        # The store opens only once the peek is on screen: its reading is the second.
        pane.model.peek(str(store_dir))
    assert len(pane.model.rows) == PAGE and not pane.model.canFetchMore()
    assert pane.counts.text().startswith("300 tasks · ")
    peeked = [r["id"] for r in pane.model.rows]
    with qtbot.waitSignal(pane.model.reloaded, timeout=20_000):
        pane.loader.submit(
            "open",
            lambda: open_store(str(store_dir)),
            lambda s: (opened.append(s), pane.model.set_store(s)),
        )
    assert [r["id"] for r in pane.model.rows] == peeked and pane.model.canFetchMore()
    pane.loader.cancel("inbox-page")
    opened[0].close()
