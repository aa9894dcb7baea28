"""Keyboard: Tab leaves the inbox, Ctrl+Tab and Ctrl+PgUp/PgDn move between the task's parts,
Help › Keyboard Shortcuts lists every shortcut, the selection stays in view."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from test_desktop_actions import WAIT_MS

from store import Actor, Store
from store import commands as c
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


@pytest.fixture
def demo(qtbot, store: Store):
    from boris_desktop.main_window import MainWindow

    fill_demo(store)
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1280, 780)
    w.show()
    qtbot.waitExposed(w, timeout=WAIT_MS)
    w.activateWindow()
    qtbot.waitActive(w, timeout=WAIT_MS)
    w.reload_now()
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    yield w
    w.close()


def test_tab_leaves_the_inbox_without_changing_the_task(qtbot, demo) -> None:
    demo.table.setFocus()
    qtbot.waitUntil(demo.table.hasFocus, timeout=WAIT_MS)
    selected = demo.selected
    qtbot.keyClick(demo.table, Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: not demo.table.hasFocus(), timeout=WAIT_MS)
    assert demo.selected == selected
    assert demo.table.currentIndex().column() == 0


def test_ctrl_tab_and_ctrl_page_keys_move_between_parts(qtbot, demo) -> None:
    tabs = demo.task_view.tabs
    tabs.setCurrentIndex(0)
    demo.table.setFocus()  # from the inbox too, not only inside the tabs
    qtbot.waitUntil(demo.table.hasFocus, timeout=WAIT_MS)
    qtbot.keyClick(demo.table, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert tabs.currentIndex() == 1
    qtbot.keyClick(demo.table, Qt.Key.Key_PageDown, Qt.KeyboardModifier.ControlModifier)
    assert tabs.currentIndex() == 2
    qtbot.keyClick(demo.table, Qt.Key.Key_PageUp, Qt.KeyboardModifier.ControlModifier)
    assert tabs.currentIndex() == 1
    shift_ctrl = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    qtbot.keyClick(demo.table, Qt.Key.Key_Backtab, shift_ctrl)
    assert tabs.currentIndex() == 0
    qtbot.keyClick(demo.table, Qt.Key.Key_PageUp, Qt.KeyboardModifier.ControlModifier)
    assert tabs.currentIndex() == tabs.count() - 1  # wraps around
    # Inside a part's detail pane as well.
    pane = demo.task_view.panel("Criteria").detail
    tabs.setCurrentIndex(0)
    pane.setFocus()
    qtbot.waitUntil(pane.hasFocus, timeout=WAIT_MS)
    qtbot.keyClick(pane, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert tabs.currentIndex() == 1


def test_keyboard_shortcuts_lists_every_action_with_keys(qtbot, demo) -> None:
    from PySide6.QtGui import QAction, QKeySequence

    dialog = demo.menu_actions.show_shortcuts()
    qtbot.addWidget(dialog)
    shown = {keys for keys, _what, _menu in dialog.rows()}
    actions = [a for a in demo.findChildren(QAction) if a.shortcuts()]
    assert len(actions) >= 15
    for act in actions:
        for key in act.shortcuts():
            text = key.toString(QKeySequence.SequenceFormat.NativeText)
            assert any(text in keys.split(" or ") for keys in shown), (act.text(), text)
    rows = {what: keys for keys, what, _menu in dialog.rows()}
    assert rows["Next Part of the Task"] == "Ctrl+Tab or Ctrl+PgDown"
    assert rows["Approve / Reject"] == "Ctrl+Return"
    assert "Tab" in shown
    # Read from the actions: a new one shows up without anyone editing a list.
    extra = QAction("Zoom &In", demo)
    extra.setShortcut(QKeySequence("Ctrl+="))
    demo.menuBar().actions()[1].menu().addAction(extra)
    assert ("Ctrl+=", "Zoom In", "View") in demo.menu_actions.show_shortcuts().rows()
    dialog.close()
    demo.menu_actions.shortcuts_dialog.close()


def test_selection_stays_in_view_after_sort_and_filter(qtbot, store: Store) -> None:
    from boris_desktop.inbox.table import TITLE
    from boris_desktop.main_window import MainWindow

    store.execute_all(
        [
            c.CreateTask(task_id=f"t{i:02d}", title=f"Task {i:02d}", owner="o", objective="x")
            for i in range(80)
        ],
        AGENT,
    )
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1280, 780)
    w.show()
    qtbot.waitExposed(w, timeout=WAIT_MS)
    w.reload_now()
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)

    def in_view() -> bool:
        rect = w.table.visualRect(w.table.currentIndex())
        return rect.isValid() and w.table.viewport().rect().contains(rect)

    w.table.sortByColumn(TITLE, Qt.SortOrder.AscendingOrder)
    last = w.proxy.index(w.proxy.rowCount() - 1, 0)
    w.table.setCurrentIndex(last)
    w.table.scrollTo(last)
    qtbot.waitUntil(lambda: w.selected == "t79", timeout=WAIT_MS)
    assert in_view()
    w.table.sortByColumn(TITLE, Qt.SortOrder.DescendingOrder)  # now the first row
    QApplication.processEvents()
    qtbot.waitUntil(in_view, timeout=WAIT_MS)
    w.table.scrollToBottom()
    assert not in_view()
    with qtbot.waitSignal(w.searched, timeout=WAIT_MS):  # debounced, on a worker
        w.search.setText("Task 7")  # t07 and t70…t79: the selected one stays, in sight
    qtbot.waitUntil(in_view, timeout=WAIT_MS)
    assert w.selected == "t79"
    w.search.clear()
    qtbot.waitUntil(in_view, timeout=WAIT_MS)
    w.close()
