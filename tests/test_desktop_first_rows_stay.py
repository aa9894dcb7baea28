"""The inbox's first rows, shown before the rest of the window is built (the staged start-up
on a big store, issue 44), appear where they stay: the tab bar and the split between the
inbox and the task are in place from the first paint, so the table neither moves down nor
grows when the queue, the history and the task pane come. With pytest-qt on a generated
store read in pages, opened by directory as `boris-desktop DIR` opens it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from big_stores import generated

TASKS = 600
WAIT_MS = 20_000


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated(tmp_path_factory, TASKS, 5)


def _table_place(w: Any) -> tuple[Any, ...]:
    """Where the inbox's table is in the window, its size, and which rows are in sight."""
    from PySide6.QtCore import QPoint

    table, view = w.table, w.table.viewport()
    top = table.mapTo(w, QPoint(0, 0))
    last = table.rowAt(view.height() - 1)
    return (
        (top.x(), top.y()),
        (table.width(), table.height()),
        view.height(),
        table.verticalHeader().defaultSectionSize(),
        (table.rowAt(0), last if last >= 0 else table.model().rowCount() - 1),
    )


@pytest.mark.parametrize("size", [(1366, 768), (1024, 700)])
def test_the_first_rows_appear_where_they_stay_once_the_window_is_built(
    qtbot: Any,
    big_store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    size: tuple[int, int],
) -> None:
    from boris_desktop.main_window import MainWindow
    from boris_desktop.main_window.opening import Opening

    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    monkeypatch.setenv("BORIS_DESKTOP_PAGED_INBOX", "always")
    monkeypatch.setattr(Opening, "HOLD_MS", 60_000)  # a slow machine: the rows come first
    directory = tmp_path / "store"
    shutil.copytree(big_store, directory)
    w = MainWindow(staged=True)
    qtbot.addWidget(w)
    painted: list[tuple[Any, ...]] = []
    peeked: list[tuple[bool, tuple[Any, ...]]] = []
    w.peeked.connect(lambda: peeked.append((w._built, _table_place(w))))
    tabs = w.views.isTabEnabled
    choosable: list[list[bool]] = []  # the Decisions and What I Decided tabs, until built
    w.peeked.connect(lambda: choosable.append([tabs(1), tabs(2)]))
    w.resize(*size)
    w.show()
    painted.append(_table_place(w)[:2])  # the first paint's frame, no rows yet
    w.open_store(str(directory))
    qtbot.waitUntil(lambda: bool(peeked), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w._task_view is not None and bool(w.task_view.task_id), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    built_then, first = peeked[0]
    assert not built_then  # shown before the rest of the window was built
    assert first[4][1] > first[4][0] + 4  # a screenful of rows, not a strip
    assert _table_place(w) == first  # the same place, size and rows in sight, built whole
    assert painted == [first[:2]]  # and where the first paint put the empty table
    assert choosable == [[False, False]] and tabs(1) and tabs(2)  # greyed until built
    assert w.views.tabText(1).startswith("&Decisions") and w.views.widget(1) is w.queue
    assert w.views.widget(2) is w.history and w.views.currentWidget() is w.left
    w.close()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    assert w.store is not None
    w.store.close()


def test_a_split_the_reviewer_left_is_in_place_from_the_first_paint(
    qtbot: Any, big_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The split as the reviewer dragged it last time (saved on closing) is the first
    paint's too: the rows come where the built window keeps them, in the inbox's height
    the reviewer chose."""
    from boris_desktop import settings
    from boris_desktop.main_window import MainWindow
    from boris_desktop.main_window.opening import Opening

    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    monkeypatch.setenv("BORIS_DESKTOP_PAGED_INBOX", "always")
    monkeypatch.setattr(Opening, "HOLD_MS", 60_000)
    directory = tmp_path / "store"
    shutil.copytree(big_store, directory)
    w = MainWindow(staged=True)
    qtbot.addWidget(w)
    w.resize(1366, 768)
    w.show()
    qtbot.waitUntil(lambda: w._built and not w.room.split_timer.isActive(), timeout=WAIT_MS)
    total = sum(w.split.sizes())
    w.split.setSizes([300, total - 300])  # the reviewer's drag, saved on closing
    w.close()
    assert settings.layout("main/split") is not None

    w = MainWindow(staged=True)
    qtbot.addWidget(w)
    peeked: list[tuple[bool, tuple[Any, ...]]] = []
    w.peeked.connect(lambda: peeked.append((w._built, _table_place(w))))
    w.resize(1366, 768)
    w.show()
    w.open_store(str(directory))
    qtbot.waitUntil(lambda: bool(peeked), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w._task_view is not None and bool(w.task_view.task_id), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    built_then, first = peeked[0]
    assert not built_then and w.split.sizes()[0] == 300
    assert _table_place(w) == first
    w.close()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    assert w.store is not None
    w.store.close()
