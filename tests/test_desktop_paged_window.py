"""The reviewer's real window on a big store reads its inbox in pages (issue 36 part W2):
MainWindow turns to boris_desktop.inbox.pages when the store holds more than PAGED_FROM
tasks (counted on a worker), or when BORIS_DESKTOP_PAGED_INBOX says so. With pytest-qt as a
reviewer uses it: scrolling fetches more rows, the search and the status filter are the
database's, selecting a task opens it, a write by the real `boris` in another process
shows, and the status bar counts. SQLite, as the other desktop tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from big_stores import generated

from store import Store

ROOT = Path(__file__).resolve().parent.parent

TASKS = 3_000
WAIT_MS = 20_000


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store of TASKS generated tasks for the module; each test works on a copy."""
    return generated(tmp_path_factory, TASKS, 6)


@pytest.fixture
def store(big_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    directory = tmp_path / "store"
    shutil.copytree(big_store, directory)
    s = Store.open(directory)
    yield s
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    s.close()


def _window(qtbot: Any, store: Store) -> Any:
    from boris_desktop.main_window import MainWindow

    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1200, 760)
    w.show()
    qtbot.waitUntil(lambda: w._task_view is not None and bool(w.task_view.task_id), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    return w


def _ids(w: Any) -> list[str]:
    return [r["id"] for r in w.inbox.rows]


def _needy(store: Store) -> int:
    return sum(t["attention"] > 0 for t in store.tasks())


@pytest.fixture
def paged(qtbot: Any, store: Store, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("BORIS_DESKTOP_PAGED_INBOX", "always")
    w = _window(qtbot, store)
    yield w
    w.close()


def test_the_window_opens_paged_holding_a_page_and_counting_every_task(
    paged: Any, store: Store
) -> None:
    from boris_desktop.inbox.pages import PAGE, PagedInboxModel

    assert paged.paged and isinstance(paged.inbox, PagedInboxModel)
    assert paged.inbox.rowCount() == PAGE < TASKS  # memory bounded by what was read
    message = paged.statusBar().currentMessage()
    assert message.startswith(f"{TASKS:,} tasks, {_needy(store)} need you · ")
    # The first task, most in need of the reviewer, is selected and open below.
    assert paged.task_view.task_id == paged.selected == _ids(paged)[0]
    assert paged.table.currentIndex().row() == 0


def test_scrolling_fetches_more_rows(qtbot: Any, paged: Any) -> None:
    from boris_desktop.inbox.pages import PAGE

    paged.table.scrollToBottom()
    qtbot.waitUntil(lambda: paged.inbox.rowCount() >= 2 * PAGE, timeout=WAIT_MS)
    assert len(set(_ids(paged))) == paged.inbox.rowCount()
    assert paged.table.currentIndex().row() == 0  # the selection stayed on its task


def test_typing_in_search_shows_the_matching_tasks(qtbot: Any, paged: Any) -> None:
    wanted = "task-002917"  # far beyond the first page
    assert wanted not in _ids(paged)
    with qtbot.waitSignal(paged.searched, timeout=WAIT_MS):
        qtbot.keyClicks(paged.search, wanted)
    assert _ids(paged) == [wanted]
    # Counted after the rows are on screen (a scan of every title).
    qtbot.waitUntil(lambda: "(1 shown)" in paged.statusBar().currentMessage(), timeout=WAIT_MS)
    # The search hid the selected task: the one it shows is selected and opened.
    qtbot.waitUntil(lambda: paged.task_view.task_id == wanted, timeout=WAIT_MS)


def test_the_status_filter_reads_only_that_status(qtbot: Any, paged: Any) -> None:
    qtbot.waitUntil(lambda: paged.status_filter.findData("blocked") >= 0, timeout=WAIT_MS)
    with qtbot.waitSignal(paged.inbox.reloaded, timeout=WAIT_MS):
        paged.status_filter.setCurrentIndex(paged.status_filter.findData("blocked"))
    rows = paged.inbox.rows
    assert rows and {r["status"] for r in rows} == {"blocked"}
    qtbot.waitUntil(lambda: "shown)" in paged.statusBar().currentMessage(), timeout=WAIT_MS)


def test_selecting_a_task_opens_it(qtbot: Any, paged: Any) -> None:
    target = _ids(paged)[37]
    paged.table.setCurrentIndex(paged.proxy.index(37, 0))
    qtbot.waitUntil(lambda: paged.task_view.task_id == target, timeout=WAIT_MS)
    assert paged.task_view.bundle["task"]["id"] == target


def test_a_write_from_another_process_appears_keeping_the_selection(
    qtbot: Any, paged: Any, store: Store
) -> None:
    target = _ids(paged)[5]
    paged.table.setCurrentIndex(paged.proxy.index(5, 0))
    qtbot.waitUntil(lambda: paged.task_view.task_id == target, timeout=WAIT_MS)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "store.cli",
            "--store",
            str(store.location.directory),
            "--actor",
            "agent:drafter-7",
            "create-task",
            "--id",
            "fresh-from-cli",
            "--title",
            "Fresh from the command line",
            "--owner",
            "rita",
            "--objective",
            "Show in the open window",
            "--scope",
            str(store.location.directory),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    qtbot.waitUntil(
        lambda: paged.statusBar().currentMessage().startswith(f"{TASKS + 1:,} tasks"),
        timeout=WAIT_MS,
    )
    qtbot.waitUntil(lambda: not paged.loader._pending, timeout=WAIT_MS)
    assert paged.selected == target  # the refresh kept the reviewer's task
    assert _ids(paged)[paged.table.currentIndex().row()] == target
    with qtbot.waitSignal(paged.searched, timeout=WAIT_MS):
        qtbot.keyClicks(paged.search, "fresh from the command")
    assert _ids(paged) == ["fresh-from-cli"]


def test_a_big_store_is_paged_by_its_count_and_a_small_one_read_whole(
    qtbot: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from boris_desktop import main_window

    monkeypatch.delenv("BORIS_DESKTOP_PAGED_INBOX", raising=False)
    monkeypatch.setattr(main_window, "PAGED_FROM", TASKS - 1)
    w = _window(qtbot, store)
    assert w.paged and w.inbox.rowCount() < TASKS
    w.close()
    monkeypatch.setattr(main_window, "PAGED_FROM", TASKS)
    w = _window(qtbot, store)
    assert not w.paged and w.inbox.rowCount() == TASKS
    w.close()
    monkeypatch.setattr(main_window, "PAGED_FROM", 1)
    monkeypatch.setenv("BORIS_DESKTOP_PAGED_INBOX", "never")
    w = _window(qtbot, store)
    assert not w.paged and w.inbox.rowCount() == TASKS
    w.close()


def test_a_staged_window_peeks_at_the_first_page_while_it_is_built(
    qtbot: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened by directory, as `boris-desktop DIR` opens it (issue 36 part C): the first
    page is read (store.reads.peek, no SQLAlchemy) while the rest of the window is built,
    not after; it is the page the open store then shows, its top task opened."""
    from boris_desktop.main_window import MainWindow

    monkeypatch.setenv("BORIS_DESKTOP_PAGED_INBOX", "always")
    directory = str(store.location.directory)
    w = MainWindow(staged=True)
    qtbot.addWidget(w)
    asked: list[tuple[str, bool]] = []
    submit = w.loader.submit
    monkeypatch.setattr(
        w.loader, "submit", lambda kind, *a: (asked.append((kind, w._built)), submit(kind, *a))[1]
    )
    peeked: list[list[str]] = []
    w.peeked.connect(lambda: peeked.append(_ids(w)))
    w.resize(1200, 760)
    w.show()
    w.open_store(directory)
    qtbot.waitUntil(lambda: w.store is not None and bool(peeked), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w._task_view is not None and bool(w.task_view.task_id), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    assert ("peek", False) in asked  # asked before the window was built
    assert [kind for kind, _ in asked].count("peek") == 1  # and read once
    assert peeked[0] == _ids(w)[: len(peeked[0])] and peeked[0]
    assert w.task_view.task_id == w.selected == _ids(w)[0]
    w.close()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    w.store.close()


def _staged(qtbot: Any, store: Store, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[bool]]:
    """A staged window opened by directory (as `boris-desktop DIR`), and whether it was
    built whole each time it said its first rows were on screen."""
    from boris_desktop.main_window import MainWindow

    monkeypatch.setenv("BORIS_DESKTOP_PAGED_INBOX", "always")
    w = MainWindow(staged=True)
    qtbot.addWidget(w)
    built_when_peeked: list[bool] = []
    w.peeked.connect(lambda: built_when_peeked.append(w._built))
    w.resize(1200, 760)
    w.show()
    w.open_store(str(store.location.directory))
    return w, built_when_peeked


def _close(w: Any) -> None:
    w.close()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    if w.store is not None:
        w.store.close()


def test_a_staged_window_shows_the_first_page_before_the_rest_of_it_is_built(
    qtbot: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44: the staged start-up builds the inbox first and waits for the first look
    (read on a worker) before the rest of the window: the rows are on screen before the
    menus, the task pane and the queue are built, and the store opens after, as before."""
    from boris_desktop.main_window.opening import Opening

    monkeypatch.setattr(Opening, "HOLD_MS", 60_000)  # a slow machine: the look comes first
    w, built_when_peeked = _staged(qtbot, store, monkeypatch)
    qtbot.waitUntil(lambda: bool(built_when_peeked), timeout=WAIT_MS)
    assert built_when_peeked == [False]
    shown = _ids(w)
    assert len(shown) == 200 and w.table.model().rowCount() == 200
    qtbot.waitUntil(lambda: w._built and w.store is not None, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w._task_view is not None and bool(w.task_view.task_id), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    assert built_when_peeked == [False]  # said once
    assert _ids(w)[: len(shown)] == shown  # the open store's first page is the one peeked
    assert w.task_view.task_id == w.selected == shown[0]
    _close(w)


def test_the_staged_start_up_waits_for_the_first_look_no_longer_than_its_hold(
    qtbot: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first look that does not come (a store on a slow disk) holds the rest of the window
    back at most Opening.HOLD_MS; its rows are shown when they come, the store opened after."""
    import threading

    from boris_desktop.main_window.opening import Opening
    from boris_desktop.runtime import jobs

    monkeypatch.setattr(Opening, "HOLD_MS", 50)
    gate = threading.Event()
    peek = jobs.peek_inbox

    def slow_peek(*a: Any) -> Any:
        gate.wait(WAIT_MS / 1000)
        return peek(*a)

    monkeypatch.setattr(jobs, "peek_inbox", slow_peek)
    w, built_when_peeked = _staged(qtbot, store, monkeypatch)
    qtbot.waitUntil(lambda: w._built, timeout=WAIT_MS)
    assert built_when_peeked == [] and w.store is None  # built without it; the store waits
    gate.set()
    qtbot.waitUntil(lambda: w.store is not None and bool(_ids(w)), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    assert built_when_peeked == [True]
    _close(w)


def test_the_staged_start_up_imports_no_sqlalchemy_on_the_gui_thread() -> None:
    """The warm-up turns before the window is built (main_window.WARM_UP) and the paged
    inbox load no SQLAlchemy: the queue's module named the store's decision kinds at import,
    which imported it, 0.6-1 s on the GUI thread before the first page could be read."""
    code = (
        "import sys\n"
        "from PySide6.QtWidgets import QApplication\n"
        "app = QApplication([])\n"
        "import boris_desktop.main_window as mw\n"
        "for step in mw.WARM_UP: step()\n"
        "import boris_desktop.inbox.pages\n"
        "print(sorted(m for m in ('sqlalchemy', 'pydantic') if m in sys.modules))\n"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"
