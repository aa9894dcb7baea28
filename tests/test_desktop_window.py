"""The main window against a temp store, loaded the way it runs: on the worker thread."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS

from store import Actor, Store
from store import commands as c

AGENT = Actor(kind="agent", id="a")


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch) -> None:
    """The app's settings go to a temp file, never the reviewer's own."""
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


def _shown(window) -> str:
    """What the task view shows as text: header labels and the criteria rows."""
    tv = window.task_view
    h = tv.header
    parts = [h.title.text(), h.objective.text(), h.status.text(), h.owner.text()]
    model = tv.panel("Criteria").tree.records
    for row in range(model.rowCount()):
        parts += [str(model.index(row, col).data()) for col in range(model.columnCount())]
    return "\n".join(parts)


def _make_task(store: Store, task_id: str, title: str, objective: str) -> None:
    store.execute_all(
        [
            c.CreateTask(task_id=task_id, title=title, owner="o", objective=objective),
            c.AddCriterion(task_id=task_id, text=f"{title} criterion"),
        ],
        AGENT,
    )


@pytest.fixture
def window(qtbot, store: Store):
    from boris_desktop.main_window import MainWindow

    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1000, 600)
    w.show()
    yield w
    w.close()


def test_select_row_shows_title_and_objective(qtbot, store: Store, window) -> None:
    _make_task(store, "t1", "Write the guide", "Draft the reference guide")
    _make_task(store, "t2", "Tidy the notes", "Merge the project notes")
    window.reload()  # worker thread, like the timer
    qtbot.waitUntil(lambda: window.inbox.rowCount() == 2, timeout=WAIT_MS)
    row = next(i for i, r in enumerate(window.inbox.rows) if r["id"] == "t2")
    rect = window.table.visualRect(window.proxy.mapFromSource(window.inbox.index(row, 0)))
    qtbot.mouseClick(window.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: "Tidy the notes" in _shown(window), timeout=WAIT_MS)
    text = _shown(window)
    assert "Merge the project notes" in text
    assert "Tidy the notes criterion" in text


def test_first_row_selected_by_default(qtbot, store: Store, window) -> None:
    _make_task(store, "t1", "Only task", "The objective")
    window.reload()
    qtbot.waitUntil(lambda: "The objective" in _shown(window), timeout=WAIT_MS)
    assert window.table.selectionModel().selectedRows()[0].row() == 0


def test_inbox_model_passes_modeltester(qtbot, store: Store, window, qtmodeltester) -> None:
    _make_task(store, "t1", "A", "x")
    _make_task(store, "t2", "B", "y")
    window.reload()
    qtbot.waitUntil(lambda: window.inbox.rowCount() == 2, timeout=WAIT_MS)
    qtmodeltester.check(window.inbox)
    qtmodeltester.check(window.proxy)


def test_write_from_another_store_shows_up(qtbot, store: Store, window) -> None:
    _make_task(store, "t1", "Mine", "x")
    window.reload()
    qtbot.waitUntil(lambda: window.inbox.rowCount() == 1, timeout=WAIT_MS)
    other = Store.open(store.location.directory)
    try:
        _make_task(other, "t2", "From elsewhere", "y")
    finally:
        other.close()
    qtbot.waitUntil(lambda: window.inbox.rowCount() == 2, timeout=WAIT_MS)
    assert "From elsewhere" in [r["title"] for r in window.inbox.rows]


def test_html_in_objective_is_shown_literally(qtbot, store: Store, window) -> None:
    _make_task(store, "t1", "<i>Title</i>", "<b>bold</b> goal")
    window.reload()
    qtbot.waitUntil(lambda: "<b>bold</b> goal" in _shown(window), timeout=WAIT_MS)
    assert "<i>Title</i>" in _shown(window)


def test_screenshot_writes_png(tmp_path: Path, qapp) -> None:
    from boris_desktop.app import main

    png = tmp_path / "shot.png"
    assert main(["--store", str(tmp_path / "s"), "--screenshot", str(png)]) == 0
    assert png.stat().st_size > 1000


def test_idle_polls_do_not_reload_the_record(qtbot, store: Store, window, monkeypatch) -> None:
    _make_task(store, "t1", "Write the guide", "Draft the reference guide")
    window.reload()
    qtbot.waitUntil(lambda: "Draft the reference guide" in _shown(window), timeout=WAIT_MS)
    calls: list[int] = []
    real_tasks = store.tasks
    monkeypatch.setattr(store, "tasks", lambda: calls.append(1) or real_tasks())
    qtbot.wait(2500)  # two timer ticks with nothing new in the store
    assert calls == []
    store.execute(c.AmendObjective(task_id="t1", text="Draft it for auditors", reason="r"), AGENT)
    qtbot.waitUntil(lambda: "Draft it for auditors" in _shown(window), timeout=WAIT_MS)
    assert calls


def test_the_inbox_sorts_by_any_column_and_keeps_the_selection(qtbot, store: Store, window) -> None:
    """Sorting is the model's own (10,000 rows sort in milliseconds): most in need first by
    default, any column on a header click, and the selected task stays selected."""
    from boris_desktop.inbox.table import ID_ROLE, NEEDS, TITLE

    for tid, title in (("t1", "Charlie"), ("t2", "alpha"), ("t3", "Bravo")):
        _make_task(store, tid, title, "x")
    window.reload()
    qtbot.waitUntil(lambda: window.inbox.rowCount() == 3, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.selected is not None, timeout=WAIT_MS)
    chosen = window.selected

    def titles() -> list[str]:
        return [window.proxy.index(r, TITLE).data() for r in range(window.proxy.rowCount())]

    window.table.sortByColumn(TITLE, Qt.SortOrder.AscendingOrder)
    assert titles() == ["alpha", "Bravo", "Charlie"]
    window.table.sortByColumn(TITLE, Qt.SortOrder.DescendingOrder)
    assert titles() == ["Charlie", "Bravo", "alpha"]
    current = window.table.currentIndex()
    assert window.proxy.index(current.row(), 0).data(ID_ROLE) == chosen
    window.table.sortByColumn(NEEDS, Qt.SortOrder.DescendingOrder)
    with qtbot.waitSignal(window.searched, timeout=WAIT_MS):  # debounced, on a worker
        window.search.setText("bra")
    assert titles() == ["Bravo"]
    with qtbot.waitSignal(window.searched, timeout=WAIT_MS):  # debounced, on a worker
        window.search.clear()
    assert len(titles()) == 3
