"""The reviewer's window against a temp store: inbox, detail, plain text only, screenshot."""

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


def test_inbox_lists_tasks_and_detail_is_plain_text(qtbot, tmp_path: Path, qtmodeltester) -> None:
    from boris_desktop.main_window import MainWindow

    store = Store.open(tmp_path)
    store.execute(
        c.CreateTask(task_id="t1", title="First", owner="o", objective="<b>bold</b> goal"), AGENT
    )
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.reload_now()
    assert w.inbox.rowCount() == 1
    assert "<b>bold</b> goal" in w.task_view.header.objective.text()
    assert w.task_view.header.objective.textFormat() == Qt.TextFormat.PlainText
    qtmodeltester.check(w.inbox)
    other = Store.open(tmp_path)
    other.execute(c.CreateTask(task_id="t2", title="Second", owner="o", objective="x"), AGENT)
    other.close()
    qtbot.waitUntil(lambda: w.inbox.rowCount() == 2, timeout=WAIT_MS)
    w.close()
    store.close()


def test_screenshot_writes_png(tmp_path: Path, qapp) -> None:
    from boris_desktop.app import main

    png = tmp_path / "shot.png"
    assert main(["--store", str(tmp_path / "s"), "--screenshot", str(png)]) == 0
    assert png.stat().st_size > 1000
