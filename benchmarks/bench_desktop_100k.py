"""The paged inbox on 100,000 tasks (issue 36 part W; not part of the tests).

    .venv/bin/python benchmarks/bench_desktop_100k.py [--tasks 100000] [--events-per-task 20]
        [--full] [--runs 3] [--main-window]

The store is benchmarks/gen_big_store.py's, built once and cached. Each figure comes from
fresh processes:
1. first paint of a window holding the paged inbox (boris_desktop.inbox.pages) against an
   empty QMainWindow, alternating (goal: at most 1.5x), and the time until the first page
   of tasks is painted (goal: at most 3x the empty window's first paint, issue 44);
2. a heartbeat on the GUI thread (heartbeat.py) while the inbox fills, while the reviewer
   scrolls through 20 pages, and while they type a search: the longest pause (goal: at
   most 50 ms), and from the last keystroke to the search's rows shown (goal: 100 ms, issue 44);
3. the process's peak memory (goal: at most 300 MB).

`--main-window`: the same figures for the reviewer's real window (boris_desktop.main_window,
staged start-up, opened as `boris-desktop` opens it), which turns to the paged inbox by the
store's count of tasks (MainWindow.PAGED_FROM), its task pane, queue and history included;
and its decision queue, read in pages too (store.reads.queue_pages; the store's some 6,700
open decisions): the longest pause bringing it to the front and scrolling 20 of its pages.
First paint and tasks visible are measured as `boris-desktop DIR` opens the store (by
directory, the first page peeked at before the store is open); the pauses on the store
opened before the heartbeat starts (as the window opens it: runtime.jobs.open_store), the
task view built once beforehand (it is built for any store, and timed on its own). Each
drive runs `--runs` times: medians, the worst beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

EMPTY = """
import time; t0 = time.perf_counter()
from PySide6.QtWidgets import QApplication, QMainWindow
from PySide6.QtCore import QTimer
app = QApplication([])
w = QMainWindow(); w.resize(1280, 780); w.show()
def painted():
    print('{"first_paint": %f}' % ((time.perf_counter() - t0) * 1000)); app.quit()
QTimer.singleShot(0, painted)
app.exec()
"""


def _window(store_dir: str, heart: bool) -> tuple[object, object, object]:
    from PySide6.QtWidgets import QMainWindow, QVBoxLayout, QWidget

    from boris_desktop.runtime.jobs import open_store

    window = QMainWindow()
    window.resize(1280, 780)
    body = QWidget()
    window.setCentralWidget(body)
    layout = QVBoxLayout(body)
    window.show()
    return window, layout, open_store


def paint(store_dir: str) -> dict[str, float]:
    """One fresh process: first paint, then the first page of tasks painted."""
    t0 = time.perf_counter()
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from boris_desktop.runtime.interpreter import share_the_gil

    share_the_gil()  # as boris-desktop does at start
    app = QApplication(sys.argv[:1])
    window, layout, open_store = _window(store_dir, False)
    marks: dict[str, float] = {}

    def first() -> None:
        marks["first_paint"] = (time.perf_counter() - t0) * 1000

    QTimer.singleShot(0, first)

    def start() -> None:
        # As the window does: the first page peeked at (no SQLAlchemy) while the store
        # opens on a worker.
        from boris_desktop.inbox.pages import PagedInbox

        pane = PagedInbox(None)
        layout.addWidget(pane.search)  # type: ignore[attr-defined]
        layout.addWidget(pane.table)  # type: ignore[attr-defined]

        def shown() -> None:
            if "tasks_paint" not in marks:
                app.processEvents()
                marks["tasks_paint"] = (time.perf_counter() - t0) * 1000
            if pane.model.store is not None:  # the store's reading too: closed cleanly
                app.quit()

        pane.model.reloaded.connect(lambda: QTimer.singleShot(0, shown))
        pane.open(store_dir, open_store)
        window.pane = pane  # type: ignore[attr-defined]

    QTimer.singleShot(0, start)
    app.exec()
    return marks


def paint_main(store_dir: str) -> dict[str, float]:
    """As `paint`, for MainWindow: its first paint, then its first page of tasks painted."""
    t0 = time.perf_counter()
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from boris_desktop.runtime.interpreter import share_the_gil

    share_the_gil()
    app = QApplication(sys.argv[:1])
    from boris_desktop.main_window import MainWindow

    w = MainWindow(staged=True)
    w.resize(1280, 780)
    marks: dict[str, float] = {}

    def first() -> None:
        marks["first_paint"] = (time.perf_counter() - t0) * 1000

    def shown(flush: bool) -> None:
        if "tasks_paint" not in marks:
            if flush:
                app.processEvents()
            marks["tasks_paint"] = (time.perf_counter() - t0) * 1000
            marks["paged"] = float(w.paged)

    # A first look's rows are painted before the window says so (Opening._peeked and
    # Paging.read repaint it): the turn after, not after the events then pending (the staged
    # start-up, its inbox built first, goes on building the rest of the window then).
    w.peeked.connect(lambda: QTimer.singleShot(0, lambda: shown(False)))
    w.loaded.connect(lambda: (shown(True), app.quit()))
    w.show()
    QTimer.singleShot(0, first)
    w.open_store(store_dir)
    app.exec()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10000)
    return marks


def drive_main(store_dir: str) -> dict[str, float]:
    """As `drive`, for MainWindow as `boris-desktop` builds it (staged), its decision queue
    included. As `drive` does, the store is opened before the heartbeat starts (opening it
    by directory, the window's own way, is in `paint_main`'s "tasks visible")."""
    import resource

    from heartbeat import Heartbeat
    from PySide6.QtWidgets import QApplication

    from boris_desktop.runtime.interpreter import share_the_gil

    share_the_gil()
    app = QApplication(sys.argv[:1])
    heart = Heartbeat(app)
    from boris_desktop.main_window import MainWindow
    from boris_desktop.runtime import jobs

    w = MainWindow(staged=True)
    w.resize(1280, 780)
    w.show()
    heart.start()
    heart.spin(lambda: w._built)  # the window's own start-up: `paint_main` measures it
    # Opened as the window opens it (runtime.jobs.open_store: its imports included).
    opened = jobs.open_store(store_dir)
    # The task view is built once, when the first task is shown, whatever the store's size
    # (bench_desktop.py's "tasks visible" holds it): built here, timed on its own, so that
    # "filling" is the paged inbox's and queue's own.
    t_view = time.perf_counter()
    w.task_view  # noqa: B018
    view_ms = (time.perf_counter() - t_view) * 1000
    t0 = time.perf_counter()

    def filled() -> bool:
        # The first page of tasks, the first task open below it, the queue's first page.
        return bool(
            w.store is not None
            and w.paged
            and w._task_view is not None
            and w.task_view.task_id
            and w.queue.loaded
            and not w.loader._pending
        )

    fill_stall = heart.longest_stall(lambda: w.set_store(opened), filled)
    fill_ms = (time.perf_counter() - t0) * 1000

    def scroll_through() -> None:
        for _ in range(20):
            held = len(w.inbox.rows)
            w.table.scrollToBottom()
            heart.spin(lambda h=held: len(w.inbox.rows) > h or not w.inbox.canFetchMore())

    scroll_stall = heart.longest_stall(scroll_through, lambda: True)
    rows = len(w.inbox.rows)

    # The decision queue: to the front, then scrolled through 20 of its pages.
    q = w.queue
    queue_front = heart.longest_stall(w.show_queue, lambda: not w.loader._pending)

    def scroll_queue() -> None:
        for _ in range(20):
            held = len(q.model.rows)
            q.table.scrollToBottom()
            heart.spin(lambda h=held: len(q.model.rows) > h or not q.model.canFetchMore())

    queue_stall = heart.longest_stall(scroll_queue, lambda: not w.loader._pending)
    queue_rows = len(q.model.rows)
    queue_total = q.total()
    w.views.setCurrentWidget(w.left)
    heart.spin(lambda: not w.loader._pending)

    keystroke: list[float] = []
    results: list[float] = []
    w.searched.connect(lambda: results.append(time.perf_counter()))

    def type_words() -> None:
        for ch in "invoice 42":
            w.search.insert(ch)
            keystroke.append(time.perf_counter())
            pause = time.perf_counter() + 0.06  # a quick typist: 60 ms a key
            heart.spin(lambda p=pause: time.perf_counter() >= p)

    search_stall = heart.longest_stall(type_words, lambda: results and results[-1] > keystroke[-1])
    to_result = (results[-1] - keystroke[-1]) * 1000
    # The count, after the rows (once the typing pauses).
    heart.spin(lambda: not w.loader._pending and not w.pages._count_due.isActive())
    heart.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    matching = w.pages.counts["matching"]
    store = w.store
    w.close()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10000)
    if store is not None:
        store.close()
    return {
        "fill_ms": fill_ms,
        "fill_stall_ms": fill_stall,
        "task_view_ms": view_ms,
        "scroll_stall_ms": scroll_stall,
        "rows_after_scroll": rows,
        "queue_front_stall_ms": queue_front,
        "queue_stall_ms": queue_stall,
        "queue_rows": queue_rows,
        "queue_total": queue_total,
        "search_stall_ms": search_stall,
        "keystroke_to_result_ms": to_result,
        "matching": matching,
        "peak_mb": peak,
    }


def drive(store_dir: str) -> dict[str, float]:
    """One fresh process: the heartbeat while filling, scrolling and searching; memory."""
    import resource

    from heartbeat import Heartbeat
    from PySide6.QtWidgets import QApplication

    from boris_desktop.runtime.interpreter import share_the_gil

    share_the_gil()  # as boris-desktop does at start
    app = QApplication(sys.argv[:1])
    _win, layout, _ = _window(store_dir, True)
    heart = Heartbeat(app)
    from boris_desktop.inbox.pages import PagedInbox
    from store.api import Store

    store = Store.open(store_dir)
    pane = PagedInbox(store)
    layout.addWidget(pane.search)  # type: ignore[attr-defined]
    layout.addWidget(pane.table)  # type: ignore[attr-defined]
    heart.start()
    filled: list[bool] = []
    pane.model.reloaded.connect(lambda: filled.append(True))
    t0 = time.perf_counter()
    fill_stall = heart.longest_stall(pane.load, lambda: filled)
    fill_ms = (time.perf_counter() - t0) * 1000

    def scroll_through() -> None:
        for _ in range(20):
            held = len(pane.model.rows)
            pane.table.scrollToBottom()
            heart.spin(lambda h=held: len(pane.model.rows) > h or not pane.model.canFetchMore())

    scroll_stall = heart.longest_stall(scroll_through, lambda: True)
    rows = len(pane.model.rows)

    keystroke: list[float] = []
    results: list[float] = []
    pane.model.reloaded.connect(lambda: results.append(time.perf_counter()))

    def type_words() -> None:
        for ch in "invoice 42":
            pane.search.insert(ch)
            keystroke.append(time.perf_counter())
            pause = time.perf_counter() + 0.06  # a quick typist: 60 ms a key
            heart.spin(lambda p=pause: time.perf_counter() >= p)

    results.clear()
    search_stall = heart.longest_stall(type_words, lambda: results and results[-1] > keystroke[-1])
    to_result = (results[-1] - keystroke[-1]) * 1000
    heart.spin(  # the count, after the rows (once the typing pauses)
        lambda: not pane.loader.busy("inbox-count") and not pane.model._count_due.isActive()
    )
    heart.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10000)
    store.close()
    return {
        "fill_ms": fill_ms,
        "fill_stall_ms": fill_stall,
        "scroll_stall_ms": scroll_stall,
        "rows_after_scroll": rows,
        "search_stall_ms": search_stall,
        "keystroke_to_result_ms": to_result,
        "matching": pane.model.counts["matching"],
        "peak_mb": peak,
    }


def queue_reads(store_dir: str, runs: int) -> dict[str, float]:
    """The decision queue's reads on a worker, in this process (no window): its first page
    with the counts, a page further on, and the whole read it replaces, alternating."""
    from store.api import Store, decision_page, decisions

    first, later, whole = [], [], []
    with Store.open(store_dir) as s:
        for _ in range(runs):
            t0 = time.perf_counter()
            got = decision_page(s, limit=200)
            first.append((time.perf_counter() - t0) * 1000)
            for _page in range(15):  # past the approvals, into the merged kinds
                got = decision_page(s, after=got["key"], limit=200, count=False)
            t0 = time.perf_counter()
            decision_page(s, after=got["key"], limit=200, count=False)
            later.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            n = len(decisions(s)["decisions"])
            whole.append((time.perf_counter() - t0) * 1000)
    return {
        "first": statistics.median(first),
        "later": statistics.median(later),
        "whole": statistics.median(whole),
        "decisions": n,
    }


def floors(store_dir: str, runs: int) -> dict[str, float]:
    """The floors beside tasks visible and the search, in this process (no window): the
    peek (store.reads.inbox_pages.peek_first_page, what the window reads before its first
    page) whole, and its statements alone replayed through sqlite3 (execute and fetch, no
    Python around them); the search's first page ("invoice 42", as typed) read as the
    window reads it, and its statements alone."""
    import sqlite3

    from store.clock import system_now
    from store.reads import inbox_pages as ip

    db = f"file:{Path(store_dir) / 'boris.sqlite'}?mode=ro"
    conn = sqlite3.connect(db, uri=True)
    said: list[tuple[str, object]] = []

    def record(sql: str, params: object = ()) -> object:
        said.append((sql, params))
        return conn.execute(sql, params)  # type: ignore[arg-type]

    def replay(statements: list[tuple[str, object]]) -> float:
        t0 = time.perf_counter()
        for sql, params in statements:
            conn.execute(sql, params).fetchall()  # type: ignore[arg-type]
        return (time.perf_counter() - t0) * 1000

    # The peek's own statements, as its fetch is given them (each is sent wrapped in one
    # JSON row: `_in_one_row`), replayed bare.
    wrap = ip._in_one_row

    def recording(c: sqlite3.Connection) -> Any:
        fetch = wrap(c)

        def said_too(sql: str, params: Any) -> Any:
            said.append((sql, params))
            return fetch(sql, params)

        return said_too

    ip._in_one_row = recording  # type: ignore[assignment]
    try:
        ip.peek_first_page(store_dir, 200)
    finally:
        ip._in_one_row = wrap  # type: ignore[assignment]
    peek_sql = list(said)
    said.clear()
    now = system_now()
    base = ip.PagedInbox(record, now, lists=ip.JSON_EACH)
    said.clear()
    words = ("invoice", "42")
    view = ip.PagedInbox(
        record, now, words=words, needing=base.needing, like="LIKE", lists=ip.JSON_EACH
    )
    view.page(record, None, 60)  # pages.FIRST
    search_sql = list(said)
    peek, peek_raw, search, search_raw = [], [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        ip.peek_first_page(store_dir, 200)
        peek.append((time.perf_counter() - t0) * 1000)
        peek_raw.append(replay(peek_sql))
        t0 = time.perf_counter()
        v = ip.PagedInbox(
            conn.execute, now, words=words, needing=base.needing, like="LIKE", lists=ip.JSON_EACH
        )
        v.page(conn.execute, None, 60)
        search.append((time.perf_counter() - t0) * 1000)
        search_raw.append(replay(search_sql))
    conn.close()
    return {
        "peek": statistics.median(peek),
        "peek_raw": statistics.median(peek_raw),
        "statements": len(peek_sql),
        "search": statistics.median(search),
        "search_raw": statistics.median(search_raw),
    }


def _run(args: list[str], env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def _pause() -> int:
    """The pause the search waits after the last keystroke (paged: the inbox's own)."""
    from boris_desktop.inbox import pages

    return int(pages.SEARCH_PAUSE_MS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--events-per-task", type=int, default=20)
    ap.add_argument("--full", action="store_true", help="the 10,000,000-event store")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--main-window", action="store_true", help="the reviewer's real window")
    ap.add_argument("--paint", help=argparse.SUPPRESS)
    ap.add_argument("--drive", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.paint:
        print(json.dumps((paint_main if a.main_window else paint)(a.paint)))
        return
    if a.drive:
        print(json.dumps((drive_main if a.main_window else drive)(a.drive)))
        return
    from gen_big_store import cached

    store = str(cached(a.tasks, 100 if a.full else a.events_per_task))
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    me = [sys.executable, __file__, *(["--main-window"] if a.main_window else [])]
    empty, first, tasks = [], [], []
    _run([sys.executable, "-c", EMPTY], env), _run([*me, "--paint", store], env)  # warm
    for _ in range(a.runs):
        empty.append(_run([sys.executable, "-c", EMPTY], env)["first_paint"])
        marks = _run([*me, "--paint", store], env)
        first.append(marks["first_paint"])
        tasks.append(marks["tasks_paint"])
    e, f, t = (statistics.median(x) for x in (empty, first, tasks))
    print(f"store: {store}" + (" (MainWindow)" if a.main_window else ""))
    print(f"first paint {f:.0f} ms vs empty window {e:.0f} ms: {f / e:.2f}x (goal <= 1.5x)")
    print(f"tasks visible {t:.0f} ms: {t / e:.2f}x the empty window (goal <= 3x, issue 44)")
    drives = [_run([*me, "--drive", store], env) for _ in range(a.runs)]
    # The median of each figure over the runs, the worst beside it.
    d = {k: statistics.median(r[k] for r in drives) for k in drives[0]}
    worst = {k: max(r[k] for r in drives) for k in drives[0]}
    print(f"{a.runs} runs of each; medians, the worst run's figure in brackets")
    print(
        f"longest GUI pause: filling {d['fill_stall_ms']:.0f} [{worst['fill_stall_ms']:.0f}] ms, "
        f"scrolling {d['scroll_stall_ms']:.0f} [{worst['scroll_stall_ms']:.0f}] ms "
        f"({d['rows_after_scroll']:.0f} rows), searching {d['search_stall_ms']:.0f} "
        f"[{worst['search_stall_ms']:.0f}] ms (goal <= 50 ms)"
    )
    print(
        f"keystroke to result {d['keystroke_to_result_ms']:.0f} "
        f"[{worst['keystroke_to_result_ms']:.0f}] ms (goal <= 100 ms, issue 44; "
        f"{d['matching']:.0f} tasks match)"
    )
    if "task_view_ms" in d:
        print(f"the task view built (once a window, any store) {d['task_view_ms']:.0f} ms")
    if "queue_stall_ms" in d:
        print(
            f"decision queue ({d['queue_total']:.0f} open, read in pages): longest GUI pause "
            f"bringing it to the front {d['queue_front_stall_ms']:.0f} "
            f"[{worst['queue_front_stall_ms']:.0f}] ms, scrolling 20 pages "
            f"{d['queue_stall_ms']:.0f} [{worst['queue_stall_ms']:.0f}] ms "
            f"({d['queue_rows']:.0f} rows held) (goal <= 50 ms)"
        )
    print(
        f"peak memory {d['peak_mb']:.0f} [{worst['peak_mb']:.0f}] MB (goal <= 300 MB); "
        f"filled in {d['fill_ms']:.0f} ms"
    )
    fl = floors(store, a.runs)
    print(
        f"floors, this process: the peek (the first page's read before the store is open) "
        f"{fl['peek']:.0f} ms, its {fl['statements']:.0f} statements alone through sqlite3 "
        f"{fl['peek_raw']:.0f} ms: first paint + those {f + fl['peek_raw']:.0f} ms = "
        f"{(f + fl['peek_raw']) / e:.2f}x the empty window; the search's first page read "
        f"{fl['search']:.0f} ms, its statements alone {fl['search_raw']:.0f} ms (+ the "
        f"{_pause()} ms pause after the last keystroke)"
    )
    if a.main_window:
        r = queue_reads(store, a.runs)
        print(
            f"the queue's reads (a worker's): first page with the counts {r['first']:.0f} ms "
            f"({r['first'] / r['whole']:.2f}x), the 17th page {r['later']:.0f} ms "
            f"({r['later'] / r['whole']:.2f}x), vs the whole read of {r['decisions']:.0f} "
            f"decisions {r['whole']:.0f} ms"
        )


if __name__ == "__main__":
    main()
