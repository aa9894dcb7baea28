"""Room: a queue-sized inbox, every column in sight at 1024×700, the split and the columns
remembered, and details as readable forms with the raw JSON one toggle away."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS

from store import Actor, Store
from store import commands as c
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


def open_window(qtbot, store: Store, size: tuple[int, int]):
    from boris_desktop.main_window import MainWindow

    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(*size)
    w.show()
    qtbot.waitExposed(w, timeout=WAIT_MS)
    w.reload_now()
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    return w


def many_tasks(store: Store, n: int) -> None:
    store.execute_all(
        [
            c.CreateTask(task_id=f"t{i:02d}", title=f"Task number {i}", owner="o", objective="x")
            for i in range(n)
        ],
        AGENT,
    )


def rows_in_sight(w) -> float:
    return w.table.viewport().height() / w.table.verticalHeader().defaultSectionSize()


def test_inbox_shows_a_queue_at_1280x780(qtbot, store: Store) -> None:
    many_tasks(store, 30)
    w = open_window(qtbot, store, (1280, 780))
    qtbot.waitUntil(lambda: rows_in_sight(w) >= 8, timeout=WAIT_MS)
    # …and the task keeps the room its parts need.
    assert w.right.height() >= w.task_view.minimumSizeHint().height()


def test_every_column_in_sight_at_1024x700(qtbot, store: Store) -> None:
    from boris_desktop.inbox.table import BUDGET, NEEDS, STATUS

    fill_demo(store)
    many_tasks(store, 10)
    w = open_window(qtbot, store, (1024, 700))
    qtbot.wait(50)
    assert not w.table.horizontalScrollBar().isVisible()
    header = w.table.horizontalHeader()
    width = w.table.viewport().width()
    fm = w.table.fontMetrics()
    for col, widest in ((STATUS, "awaiting approval"), (BUDGET, "100% exhausted"), (NEEDS, "")):
        assert header.sectionViewportPosition(col) + header.sectionSize(col) <= width
        # The words fit beside their icon.
        assert header.sectionSize(col) >= fm.horizontalAdvance(widest) + 24
    assert rows_in_sight(w) >= 6


def test_split_and_columns_remembered_across_restarts(qtbot, store: Store) -> None:
    from boris_desktop.inbox.table import STATUS, TITLE

    many_tasks(store, 5)
    w = open_window(qtbot, store, (1280, 780))
    total = sum(w.split.sizes())
    w.split.setSizes([300, total - 300])
    w.table.horizontalHeader().resizeSection(STATUS, 200)
    w.table.sortByColumn(TITLE, Qt.SortOrder.AscendingOrder)
    w.close()

    again = open_window(qtbot, store, (1280, 780))
    assert again.split.sizes()[0] == 300
    header = again.table.horizontalHeader()
    assert header.sectionSize(STATUS) == 200
    assert header.sortIndicatorSection() == TITLE
    titles = [again.proxy.index(r, TITLE).data() for r in range(again.proxy.rowCount())]
    assert titles == sorted(titles, key=str.casefold)


def form_rows(panel) -> dict[str, str]:
    m = panel.form.records

    def walk(parent, out):
        for r in range(m.rowCount(parent)):
            ix = m.index(r, 0, parent)
            out.setdefault(str(ix.data()), str(m.index(r, 1, parent).data()))
            walk(ix, out)
        return out

    from PySide6.QtCore import QModelIndex

    return walk(QModelIndex(), {})


@pytest.fixture
def demo(qtbot, store: Store):
    fill_demo(store)
    w = open_window(qtbot, store, (1280, 780))
    yield w
    w.close()


def select_task(qtbot, w, task_id: str) -> None:
    row = w.inbox.row_of(task_id)
    w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
    qtbot.waitUntil(lambda: w.task_view.task_id == task_id, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)


def test_effect_detail_is_a_form_with_raw_json_one_toggle_away(qtbot, demo) -> None:
    select_task(qtbot, demo, "note")
    panel = demo.task_view.panel("Effects")
    panel.tree.setCurrentIndex(panel.tree.index_at(("save-note",)))
    fields = form_rows(panel)
    assert fields["What you can do"] == "Reconcile: observe the file and decide (Ctrl+R)"
    assert fields["Consequence"] == "Overwrite notes/project-note.md with this week's decisions"
    assert fields["Requires approval"] == "no"
    assert fields["Pre state"].startswith("sha256:3e155e65") and fields["Pre state"].endswith(
        "36 B"
    )
    assert panel.detail_stack.currentWidget() is panel.form
    panel.raw.click()
    assert panel.detail_stack.currentWidget() is panel.detail
    assert '"idempotency_key": "note:save-note"' in panel.detail.toPlainText()
    # The choice holds for the next row.
    panel.tree.setCurrentIndex(panel.tree.index_at(("mail-note",)))
    assert panel.detail_stack.currentWidget() is panel.detail
    panel.raw.click()
    assert form_rows(panel)["Kind"] == "send"


def test_checkpoint_and_dependency_details_are_forms(qtbot, demo) -> None:
    tabs = demo.task_view
    cp = tabs.panel("Checkpoints")
    cp.tree.setCurrentIndex(cp.tree.index_at(("ckpt-initial", "ckpt-handoff")))
    fields = form_rows(cp)
    assert fields["Reason"] == "handoff"
    assert fields["Author"].startswith("Drafting agent (resumed session)")
    assert cp.detail_stack.currentWidget() is cp.form
    # A diff has no form: the text pane shows it, and the toggle has nothing to switch.
    cp.compare.setCurrentIndex(cp.compare.findData("ckpt-initial"))
    qtbot.waitUntil(lambda: cp.detail.toPlainText().startswith("--- ckpt-initial"), timeout=WAIT_MS)
    assert cp.detail_stack.currentWidget() is cp.detail and not cp.raw.isEnabled()

    ph = tabs.panel("Dependencies")
    ph.tree.setCurrentIndex(ph.tree.index_at(("review",)))
    fields = form_rows(ph)
    assert fields["Readiness"] == "ready"
    assert fields["Blocked by"] == "none"
