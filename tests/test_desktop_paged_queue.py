"""The decision queue in pages (issue 36 part B), on both engines.

store.reads.queue_pages reads the open decisions a page at a time, each kind sorted and
filtered by the database: every page read in turn is the whole read's queue
(store.reads.decisions), in its order, each decision once. The reviewer's real window on a
big store (its inbox in pages) reads its queue in pages too: it holds a page, scrolling
fetches more, the kind and task filters are the database's, the counts are the database's,
and selecting a queued decision shows its task below, on the part the decision concerns.
With pytest-qt as a reviewer uses it, on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from store import Store

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

#: gen_big_store makes one task in 20 need a person, six shapes in turn: 1,200 tasks hold
#: 80 open decisions (30 approvals, 20 effects to reconcile, 20 criteria to judge, 10 runs
#: to resume), three pages of the window's PAGE (set to 25 here).
TASKS = 1_200
PAGE = 25
WAIT_MS = 20_000


@pytest.fixture(params=["sqlite", "postgresql"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Store]:
    from gen_big_store import fill

    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    url = None if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))
    s = Store.open(tmp_path / "store", url=url)
    fill(s, TASKS, 6, report=lambda _: None)
    yield s
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    s.close()


def _every_page(
    store: Store, limit: int, **filters: Any
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    from store.api import decision_page

    rows: list[dict[str, Any]] = []
    got = decision_page(store, limit=limit, **filters)
    counts = got["counts"]
    rows += got["decisions"]
    while got["key"] is not None:
        got = decision_page(store, after=got["key"], limit=limit, count=False, **filters)
        assert len(got["decisions"]) <= limit
        rows += got["decisions"]
    return rows, counts


def test_the_pages_in_turn_are_the_whole_queue_in_its_order(store: Store) -> None:
    from store.api import decisions

    whole = decisions(store)["decisions"]
    kinds = {d["kind"] for d in whole}
    assert kinds == {"approval", "reconcile", "judge", "resume"}
    for limit in (7, 200):
        rows, counts = _every_page(store, limit)
        assert rows == whole  # the same rows, in the same order, each once
        approvals = sum(d["kind"] == "approval" for d in whole)
        assert counts == {"total": len(whole), "approvals": approvals, "matching": len(whole)}
    for kind in sorted(kinds):
        rows, counts = _every_page(store, 9, kind=kind)
        assert rows == [d for d in whole if d["kind"] == kind]
        assert counts["matching"] == len(rows) and counts["total"] == len(whole)
    task = whole[len(whole) // 2]["task_id"]
    rows, counts = _every_page(store, 9, task=task)
    assert rows == [d for d in whole if d["task_id"] == task] and counts["matching"] == len(rows)


def _window(qtbot: Any, store: Store, monkeypatch: pytest.MonkeyPatch) -> Any:
    from boris_desktop.main_window import MainWindow
    from boris_desktop.queue import decisions

    monkeypatch.setattr(decisions, "PAGE", PAGE)
    monkeypatch.setenv("BORIS_DESKTOP_PAGED_INBOX", "always")
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1200, 760)
    w.show()
    qtbot.waitUntil(lambda: w.queue.loaded and w.queue.counts is not None, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    return w


def _queued(w: Any) -> list[str]:
    return [r["id"] for r in w.queue.model.rows]


def test_the_window_reads_its_queue_in_pages_and_a_person_sees_a_decisions_task(
    qtbot: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from store.api import decisions

    whole = [d["id"] for d in decisions(store)["decisions"]]
    w = _window(qtbot, store, monkeypatch)
    q = w.queue
    assert w.paged and q.paged
    # A page held, every decision counted (by the database).
    assert _queued(w) == whole[:PAGE]
    assert q.summary.text().startswith(f"{len(whole)} open decisions (30 approvals)")
    assert w.views.tabText(1) == f"&Decisions ({len(whole)})"
    w.show_queue()
    # Scrolling to the end of what is held reads the next page, on a worker.
    while len(_queued(w)) < len(whole):
        held = len(_queued(w))
        q.table.scrollToBottom()
        qtbot.waitUntil(lambda h=held: len(_queued(w)) > h, timeout=WAIT_MS)
    assert _queued(w) == whole  # in the store's order, each once
    assert not q.model.canFetchMore()
    # A person selects a decision read with a later page: its task is below, on its part.
    row = next(i for i, d in enumerate(q.model.rows) if i >= 2 * PAGE and d["kind"] == "judge")
    d = q.model.rows[row]
    q.table.setCurrentIndex(q.proxy.index(row, 0))
    qtbot.waitUntil(lambda: w.task_view.task_id == d["task_id"], timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.task_view.bundle["task"]["id"] == d["task_id"], timeout=WAIT_MS)
    assert q.current_id() == d["id"]
    tabs = w.task_view.tabs
    assert tabs.currentWidget() is w.task_view.panel("Criteria")
    w.close()


def test_the_kind_and_task_filters_are_read_by_the_database(
    qtbot: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from store.api import decisions

    whole = decisions(store)["decisions"]
    w = _window(qtbot, store, monkeypatch)
    q = w.queue
    w.show_queue()
    judged = [d["id"] for d in whole if d["kind"] == "judge"]
    q.kind.setCurrentIndex(q.kind.findData("judge"))
    qtbot.waitUntil(
        lambda: _queued(w) == judged[:PAGE] and q.counts["matching"] == len(judged), timeout=WAIT_MS
    )
    assert f"{len(judged)} shown" in q.summary.text()
    q.kind.setCurrentIndex(0)
    qtbot.waitUntil(lambda: _queued(w) == [d["id"] for d in whole][:PAGE], timeout=WAIT_MS)
    # The task filter lists the tasks of the rows read; one of them, by SQL.
    task = whole[3]["task_id"]
    at = next(i for i, (_title, tid) in enumerate(q._tasks_listed) if tid == task)
    q.task.setCurrentIndex(at + 1)
    mine = [d["id"] for d in whole if d["task_id"] == task]
    qtbot.waitUntil(lambda: _queued(w) == mine, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.task_view.task_id == task, timeout=WAIT_MS)
    w.close()
