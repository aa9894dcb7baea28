"""The inbox's search (issue 32): it waits for a pause in the typing, picks the rows on a
worker, and drops a result a newer search superseded."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS

from store import Actor, Store
from store import commands as c

AGENT = Actor(kind="agent", id="a")


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


@pytest.fixture
def window(qtbot, store: Store):  # type: ignore[no-untyped-def]
    from boris_desktop.main_window import MainWindow

    store.execute_all(
        [
            c.CreateTask(task_id=f"t{i:02}", title=f"Task {i} {word}", owner="o", objective="x")
            for i, word in enumerate(("alpha", "bravo", "charlie", "bravado", "delta"))
        ],
        AGENT,
    )
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.inbox.rowCount() == 5, timeout=WAIT_MS)
    yield w
    w.close()


def _titles(w: Any) -> list[str]:
    return sorted(w.proxy.index(r, 0).data() for r in range(w.proxy.rowCount()))


def test_typing_asks_for_one_search_on_a_worker(window, qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.runtime import jobs

    asked: list[tuple[tuple[str, ...], bool]] = []
    real = jobs.search

    def search(every, wanted, held, revision):  # type: ignore[no-untyped-def]
        asked.append((wanted, threading.current_thread() is threading.main_thread()))
        return real(every, wanted, held, revision)

    monkeypatch.setattr(jobs, "search", search)
    with qtbot.waitSignal(window.searched, timeout=WAIT_MS):
        for ch in "brav":  # typed faster than the pause the search waits for
            qtbot.keyClick(window.search, ch)
        assert window.proxy.rowCount() == 5  # nothing filtered while typing
    assert asked == [(("brav",), False)]  # one search, off the GUI thread
    assert _titles(window) == ["Task 1 bravo", "Task 3 bravado"]
    chosen = window.selected
    assert chosen in ("t01", "t03")  # a task the search shows
    with qtbot.waitSignal(window.searched, timeout=WAIT_MS):
        window.search.clear()
    assert window.proxy.rowCount() == 5
    assert window.selected == chosen  # all shown again: still the reviewer's choice


def test_a_superseded_search_is_dropped(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.inbox.table import search_words

    window.search.setText("charlie")
    window._search_due.stop()
    window._search()  # in flight …
    window.search.setText("delta")
    window._search_due.stop()
    with qtbot.waitSignal(window.searched, timeout=WAIT_MS):
        window._search()  # … superseded by this one
    qtbot.wait(100)
    assert window.inbox.search == search_words("delta")
    assert _titles(window) == ["Task 4 delta"]


def test_a_reload_keeps_the_search(window, qtbot, store: Store) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(window.searched, timeout=WAIT_MS):
        window.search.setText("bravo")
    store.execute(c.CreateTask(task_id="t9", title="Bravo too", owner="o", objective="x"), AGENT)
    store.execute(c.CreateTask(task_id="t8", title="Echo", owner="o", objective="x"), AGENT)
    window.reload()
    qtbot.waitUntil(lambda: len(window.inbox.all_rows) == 7, timeout=WAIT_MS)
    assert _titles(window) == ["Bravo too", "Task 1 bravo"]
    assert window.proxy.sortOrder() in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder)


def test_a_search_over_many_rows_resets_once_and_selects_a_shown_task(qtbot, store: Store) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.inbox.table import SEARCH_EDITS
    from boris_desktop.main_window import MainWindow

    n = 4 * SEARCH_EDITS  # every other task matches: more runs than SEARCH_EDITS
    store.execute_all(
        [
            c.CreateTask(
                task_id=f"t{i:03}", title=("odd" if i % 2 else "even"), owner="o", objective="x"
            )
            for i in range(n)
        ],
        AGENT,
    )
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.inbox.rowCount() == n, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.selected is not None, timeout=WAIT_MS)
    hide = "odd" if store.task(w.selected)["title"] == "even" else "even"
    resets: list[int] = []
    w.inbox.modelReset.connect(lambda: resets.append(1))
    with qtbot.waitSignal(w.searched, timeout=WAIT_MS):
        w.search.setText(hide)
    assert resets == [1] and w.proxy.rowCount() == n // 2
    qtbot.waitUntil(lambda: w.inbox.row_of(w.selected) >= 0, timeout=WAIT_MS)
    assert w.table.currentIndex().isValid()
    w.close()
