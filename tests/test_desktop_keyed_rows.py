"""Re-reads change the decision queue's and the inbox's rows in place: no model reset, the
selection kept, rows gone removed and new ones inserted at their place in the order."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QTableView
from test_desktop_actions import WAIT_MS

from boris_desktop.ui import keyed_rows
from store.reads.decisions import order_key

ROOT = Path(__file__).resolve().parent.parent


def _decision(fields: dict[str, Any]) -> Any:
    """A queue row as the store reads it (store.api.Decision)."""
    from store.api import Decision

    return Decision.model_validate(fields)


def _approval(n: int, expires: str, what: str = "") -> Any:
    return _decision({
        "id": f"approval:t{n}:ap{n}",
        "kind": "approval",
        "task_id": f"t{n}",
        "task_title": f"Task {n}",
        "owner": "o",
        "key": f"ap{n}",
        "what": what or f"send message {n}",
        "why": "approve or reject",
        "since": "2026-12-04T10:00:00.000000Z",
        "expires_at": expires,
        "requester": {"kind": "agent", "id": "a"},
    })  # fmt: skip


def _queue_rows() -> list[Any]:
    rows = [_approval(n, f"2026-12-04T1{n}:00:00.000000Z") for n in range(5)]
    return sorted(rows, key=order_key)  # the store's order, asked of the store


class _Watch:
    """What a model told its views."""

    def __init__(self, model: Any) -> None:
        self.resets = 0
        self.inserted: list[tuple[int, int]] = []
        self.removed: list[tuple[int, int]] = []
        self.changed: list[tuple[int, int]] = []
        model.modelReset.connect(self._reset)
        model.rowsInserted.connect(lambda _p, a, b: self.inserted.append((a, b)))
        model.rowsRemoved.connect(lambda _p, a, b: self.removed.append((a, b)))
        model.dataChanged.connect(lambda a, b, *_: self.changed.append((a.row(), b.row())))

    def _reset(self) -> None:
        self.resets += 1


@pytest.fixture
def queue_view(qtbot):
    from boris_desktop.queue.decisions import DecisionFilter, DecisionModel

    model = DecisionModel()
    proxy = DecisionFilter()
    proxy.setSourceModel(model)
    view = QTableView()
    view.setModel(proxy)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    qtbot.addWidget(view)
    model.set_rows(_queue_rows(), "2026-12-04T09:00:00.000000Z")
    return model, proxy, view


def _select(view: QTableView, row: int) -> None:
    """Through the selection model: a view's own selectRow follows the keyboard modifiers
    an earlier test may have left pressed."""
    from PySide6.QtCore import QItemSelectionModel

    flags = QItemSelectionModel.SelectionFlag
    index = view.model().index(row, 0)
    view.selectionModel().setCurrentIndex(index, flags.ClearAndSelect | flags.Rows)


def _selected_id(view: QTableView) -> str:
    from boris_desktop.queue.decisions import ID_ROLE

    return str(view.currentIndex().data(ID_ROLE))


def test_a_reread_that_changes_one_row_keeps_the_selection_and_resets_nothing(
    qtbot, queue_view, qtmodeltester
) -> None:
    model, _proxy, view = queue_view
    _select(view, 2)
    chosen = _selected_id(view)
    watch = _Watch(model)
    rows = _queue_rows()
    rows[3] = rows[3].model_copy(update={"what": "send a different message"})
    model.set_rows(rows, "2026-12-04T09:00:05.000000Z")
    assert watch.resets == 0 and not watch.inserted and not watch.removed
    assert (3, 3) in watch.changed  # the row that changed is redrawn
    assert model.rows[3]["what"] == "send a different message"
    assert _selected_id(view) == chosen
    assert view.selectionModel().isRowSelected(2, QModelIndex())
    qtmodeltester.check(model)


def test_a_decided_decision_disappears_and_the_selection_stays(qtbot, queue_view) -> None:
    model, _proxy, view = queue_view
    _select(view, 3)
    chosen = _selected_id(view)
    watch = _Watch(model)
    rows = _queue_rows()
    gone = rows.pop(1)
    model.set_rows(rows, "2026-12-04T09:00:05.000000Z")
    assert watch.resets == 0 and watch.removed == [(1, 1)]
    assert gone["id"] not in {r["id"] for r in model.rows}
    assert _selected_id(view) == chosen


def test_an_arrived_decision_is_inserted_in_expiry_order(qtbot, queue_view) -> None:
    model, _proxy, view = queue_view
    _select(view, 0)
    chosen = _selected_id(view)
    watch = _Watch(model)
    arrived = _approval(9, "2026-12-04T12:30:00.000000Z")
    rows = sorted([*_queue_rows(), arrived], key=order_key)
    model.set_rows(rows, "2026-12-04T09:00:05.000000Z")
    at = [r["id"] for r in rows].index(arrived["id"])
    assert at == 3  # between the approvals expiring at 12:00 and 13:00
    assert watch.resets == 0 and watch.inserted == [(at, at)] and not watch.removed
    assert [r["id"] for r in model.rows] == [r["id"] for r in rows]
    assert _selected_id(view) == chosen


def test_thousands_of_new_decisions_come_in_slices(qtbot) -> None:
    from boris_desktop.queue.decisions import DecisionModel

    model = DecisionModel()
    watch = _Watch(model)
    rows = sorted(
        (_approval(n, f"2026-12-05T00:00:{n % 60:02d}.{n:06d}Z") for n in range(1000)),
        key=order_key,
    )
    with qtbot.waitSignal(model.synced, timeout=WAIT_MS):
        model.set_rows(rows, "2026-12-04T09:00:00.000000Z")
        assert model.pending and len(model.rows) == DecisionModel.SLICE
    assert model.rows == rows and not model.pending
    assert watch.resets == 0
    assert all(b - a + 1 <= DecisionModel.SLICE for a, b in watch.inserted)


def test_plan_and_sync_bring_any_rows_to_any_fresh_rows(qtbot) -> None:
    class Model(QAbstractTableModel):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[dict[str, Any]] = []

        def rowCount(self, parent: Any = QModelIndex()) -> int:  # noqa: B008
            return len(self.rows)

        def columnCount(self, parent: Any = QModelIndex()) -> int:  # noqa: B008
            return 2

        def data(self, index: Any, role: int = 0) -> Any:
            return None

    rnd = random.Random(20)
    model = Model()
    for _ in range(300):
        old = [{"id": k, "v": rnd.randint(0, 2)} for k in rnd.sample(range(30), rnd.randint(0, 20))]
        new = [{"id": k, "v": rnd.randint(0, 2)} for k in rnd.sample(range(30), rnd.randint(0, 20))]
        model.rows = [dict(r) for r in old]
        keyed_rows.apply(model, model.rows, keyed_rows.plan(list(model.rows), new, _id), 2)
        assert model.rows == new
        model.rows = [dict(r) for r in old]
        for _step in range(50):
            _changes, done = keyed_rows.sync(model, model.rows, new, _id, 2, limit=3)
            if done:
                break
        assert model.rows == new


def _id(r: dict[str, Any]) -> Any:
    return r["id"]


def task_row(task_id: str, *, title: str = "", attention: int = 0, n: int = 0) -> Any:
    """An inbox row as the store reads it (store.api.TaskRow)."""
    from store.api import RunStatus, TaskNeeds, TaskRow
    from store.rules import BudgetStanding

    needs = TaskNeeds(
        pending_approvals=1 if attention else 0, unresolved_effects=0, effects_to_reconcile=0,
        stale_criteria=0, failed_criteria=0, open_criteria=0, heads=1, budget_use=0.1,
        budget=BudgetStanding.WITHIN, missing_blobs=0, late_changes=0,
    )  # fmt: skip
    return TaskRow(
        id=task_id, title=title or task_id, owner="o", status=RunStatus.RUNNING,
        updated_at=f"2026-12-04T10:00:{n:02d}.000000Z", last_seq=n, needs=needs,
        forked=False, attention=attention, lease=None,
    )  # fmt: skip


def _task(n: int, attention: int, title: str = "") -> Any:
    return task_row(f"t{n}", title=title or f"Task {n}", attention=attention, n=n)


def test_the_inbox_takes_a_reread_in_place_and_a_moved_task_keeps_its_selection(qtbot) -> None:
    from boris_desktop.inbox.table import ID_ROLE, InboxFilter, InboxModel

    model = InboxModel()
    proxy = InboxFilter()
    proxy.setSourceModel(model)
    view = QTableView()
    view.setModel(proxy)
    qtbot.addWidget(view)
    model.set_rows([_task(n, n) for n in range(6)])
    assert [r["id"] for r in model.rows] == ["t5", "t4", "t3", "t2", "t1", "t0"]  # most need first
    view.setCurrentIndex(proxy.index(2, 0))  # t3
    watch = _Watch(model)
    moved: list[int] = []
    model.layoutChanged.connect(lambda *_: moved.append(1))
    model.set_rows([_task(n, n, "Renamed" if n == 1 else "") for n in range(6)])
    assert watch.resets == 0 and not moved and watch.changed == [(4, 4)]
    assert view.currentIndex().data(ID_ROLE) == "t3"
    # t0 now needs the reviewer most: it moves to the top, t3 stays selected.
    model.set_rows([_task(n, 99 if n == 0 else n) for n in range(6)])
    assert watch.resets == 0 and moved
    assert model.rows[0]["id"] == "t0" and view.currentIndex().data(ID_ROLE) == "t3"
    # The filter is Qt's own match of each row's filter text.
    proxy.set_text("task 4")
    assert [proxy.index(r, 0).data(ID_ROLE) for r in range(proxy.rowCount())] == ["t4"]
    proxy.set_text("")
    proxy.set_status(InboxFilter.NEEDS_YOU)
    assert proxy.rowCount() == 6
    model.set_rows([_task(n, 0 if n == 2 else n + 1) for n in range(6)])
    assert "t2" not in {proxy.index(r, 0).data(ID_ROLE) for r in range(proxy.rowCount())}


def test_jobs_running_at_exit_finish_before_teardown_and_say_nothing(tmp_path: Path) -> None:
    """The loader's jobs still running when the interpreter exits finish first (they once
    ran into the teardown: "'_Job' object has no attribute 'relay'" on stderr)."""
    marker = tmp_path / "finished"
    script = f"""
import os, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtWidgets import QApplication, QWidget
from boris_desktop.runtime.loader import Loader

app = QApplication([])
window = QWidget()
loader = Loader(window)

def slow():
    end = time.monotonic() + 0.4
    n = 0
    while time.monotonic() < end:
        n += 1
    open({str(marker)!r}, "w").write("done")
    return n

for i in range(3):
    loader.submit(f"read:{{i}}", slow, lambda _r: None)
time.sleep(0.05)
window.close()
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "done"  # the running job finished
    assert "Error calling Python override" not in done.stderr
    assert "has no attribute" not in done.stderr


def test_the_queue_filters_by_kind_task_and_mine_as_the_rules_say(qtbot) -> None:
    from boris_desktop.queue.decisions import ID_ROLE, DecisionFilter, DecisionModel, may_decide

    rows = _queue_rows()
    rows[1] = _decision({**rows[1].to_json(), "requester": {"kind": "person", "id": "rita"}})
    judge = {"kind": "judge", "id": "judge:t7:c1", "expires_at": None}
    rows.append(_decision({**_approval(7, "").to_json(), **judge}))  # not rita's own
    model = DecisionModel()
    proxy = DecisionFilter()
    proxy.setSourceModel(model)
    with qtbot.waitSignal(model.synced, timeout=WAIT_MS):
        model.set_rows(rows, "2026-12-04T09:00:00.000000Z")

    def shown() -> list[str]:
        return [proxy.index(i, 0).data(ID_ROLE) for i in range(proxy.rowCount())]

    assert shown() == [r["id"] for r in rows]  # no filter: every row
    proxy.set(kind="judge")
    assert shown() == ["judge:t7:c1"]
    proxy.set(kind=None, task="t3")
    assert shown() == [rows[3]["id"]]
    proxy.set(task=None, mine=True, reviewer_id="rita")
    # What she may decide is the rules' word (her own request is not hers to decide).
    assert shown() == [r["id"] for r in rows if may_decide(r, "rita")]
    assert rows[1]["id"] not in shown() and len(shown()) == len(rows) - 1
    proxy.set(reviewer_id="sam")
    assert rows[1]["id"] in shown()


@pytest.mark.sqlite_only
def test_the_task_filter_follows_arrivals_and_keeps_its_choice(qtbot, store) -> None:
    from test_desktop_actions import open_window

    from store import Actor
    from store import commands as c
    from store.commands import approvals as ap

    agent = Actor(kind="agent", id="a")
    for n in (1, 2):
        store.execute_all(
            [
                c.CreateTask(task_id=f"t{n}", title=f"Task {n}", owner="o", objective="x"),
                ap.RequestApproval(task_id=f"t{n}", approval_id=f"ap{n}", payload={},
                                   consequence=f"send {n}", policy="p", expires_in_seconds=600),
            ],
            agent,
        )  # fmt: skip
    w = open_window(qtbot, store)
    q = w.queue
    qtbot.waitUntil(lambda: q.loaded and q.task.count() == 3, timeout=WAIT_MS)
    assert [q.task.itemText(i) for i in range(q.task.count())] == ["All tasks", "Task 1", "Task 2"]
    q.task.setCurrentIndex(2)
    assert q.task_filter() == "t2" and q.proxy.rowCount() == 1
    store.execute_all(
        [
            c.CreateTask(task_id="t0", title="A first task", owner="o", objective="x"),
            ap.RequestApproval(task_id="t0", approval_id="ap0", payload={},
                               consequence="send 0", policy="p", expires_in_seconds=900),
        ],
        agent,
    )  # fmt: skip
    qtbot.waitUntil(lambda: q.task.count() == 4, timeout=WAIT_MS)
    assert q.task.itemText(1) == "A first task"  # in its place, by title
    assert q.task.currentText() == "Task 2" and q.task_filter() == "t2"
    assert q.proxy.rowCount() == 1


def test_a_cell_is_painted_with_one_call_that_answers_every_role(qtbot) -> None:
    from PySide6.QtCore import QModelRoleData, QModelRoleDataSpan, Qt

    from boris_desktop.inbox.table import InboxModel
    from boris_desktop.queue.decisions import DecisionModel

    class Counting(DecisionModel):
        def __init__(self) -> None:
            super().__init__()
            self.cells = 0

        def multiData(self, index: Any, roleDataSpan: Any) -> None:
            self.cells += 1
            super().multiData(index, roleDataSpan)

    queue = Counting()
    with qtbot.waitSignal(queue.synced, timeout=WAIT_MS):
        queue.set_rows(_queue_rows(), "2026-12-04T09:00:00.000000Z")
    inbox = InboxModel()
    inbox.set_rows([_task(n, n) for n in range(3)])
    for model in (queue, inbox):
        for row in range(model.rowCount()):
            for col in range(model.columnCount()):
                index = model.index(row, col)
                for role in (
                    Qt.ItemDataRole.DisplayRole,
                    Qt.ItemDataRole.DecorationRole,
                    Qt.ItemDataRole.ToolTipRole,
                    Qt.ItemDataRole.ForegroundRole,
                ):
                    one = QModelRoleData(int(role))
                    model.multiData(index, QModelRoleDataSpan(one))
                    expected = model.data(index, role)
                    got = one.data()
                    if expected is None:
                        assert got is None
                    elif isinstance(expected, str):
                        assert got == expected
                    else:  # an icon or a brush, as Qt holds it
                        assert type(got) is type(expected)
    view = QTableView()
    view.setModel(queue)
    view.resize(900, 300)
    qtbot.addWidget(view)
    view.show()
    queue.cells = 0
    view.grab()
    assert queue.cells >= queue.columnCount()  # Qt's delegate asked for whole cells


def test_a_cell_behind_the_window_s_filter_is_still_one_call(qtbot) -> None:
    """The window's tables show their models through a QSortFilterProxyModel, whose own
    multiData asks data() once per role: every cell painted must reach the model as one
    multiData, every role answered inside it (cells.WholeCellsThrough), and no row count asked
    by Qt on its own (cells.FlatIndex answers index in one call)."""
    from boris_desktop.inbox.table import InboxFilter, InboxModel
    from boris_desktop.queue.decisions import DecisionFilter, DecisionModel

    def counting(base: Any) -> Any:
        class Counting(base):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                super().__init__()
                self.cells = self.alone = self.counts = 0
                self._inside = False

            def multiData(self, index: Any, roleDataSpan: Any) -> None:
                self.cells += 1
                self._inside = True
                try:
                    super().multiData(index, roleDataSpan)
                finally:
                    self._inside = False

            def data(self, index: Any, role: int = 0) -> Any:
                self.alone += not self._inside
                return super().data(index, role)

            def index(self, row: int, column: int, parent: Any = QModelIndex()) -> Any:  # noqa: B008
                self._inside = True
                try:
                    return super().index(row, column, parent)
                finally:
                    self._inside = False

            def rowCount(self, parent: Any = QModelIndex()) -> int:  # noqa: B008
                self.counts += not self._inside  # asked by Qt itself
                return int(super().rowCount(parent))

        return Counting()

    queue = counting(DecisionModel)
    with qtbot.waitSignal(queue.synced, timeout=WAIT_MS):
        queue.set_rows(_queue_rows(), "2026-12-04T09:00:00.000000Z")
    inbox = counting(InboxModel)
    inbox.set_rows([_task(n, n) for n in range(3)])
    for model, proxy in ((queue, DecisionFilter()), (inbox, InboxFilter())):
        proxy.setSourceModel(model)
        view = QTableView()
        view.setModel(proxy)
        view.resize(900, 300)
        qtbot.addWidget(view)
        view.show()
        model.cells = model.alone = model.counts = 0
        view.grab()
        painted = proxy.rowCount() * proxy.columnCount()
        assert model.cells >= painted  # every cell, through the filter, in one call
        assert model.alone == 0  # no role asked on its own
        assert model.counts == 0  # no row count asked by Qt on its own while painting
        assert proxy.index(0, 0).data() == model.index(0, 0).data()
        assert not model.index(model.rowCount(), 0).isValid()
        assert not model.index(0, model.columnCount()).isValid()
        assert not model.index(0, 0, model.index(0, 0)).isValid()


def test_a_record_tree_row_is_painted_one_call_per_cell(qtbot) -> None:
    """The task's panels (RecordTree) answer a cell's roles in one call, and leave `flags`
    to Qt (a Python one was one more call per cell painted)."""
    from boris_desktop.ui.cells import CellsInOneCall
    from boris_desktop.ui.records import Node, RecordTree, RecordTreeModel

    calls = {"data": 0, "alone": 0}
    real_data = RecordTreeModel.data
    one_call = CellsInOneCall.multiData.__code__

    def data(self: Any, index: Any, role: int = 0) -> Any:
        calls["data"] += 1
        calls["alone"] += sys._getframe(1).f_code is not one_call  # asked by Qt itself
        return real_data(self, index, role)

    RecordTreeModel.data = data  # type: ignore[method-assign]
    try:
        tree = RecordTree(["What", "When", "Who"], "Records")
        qtbot.addWidget(tree)
        kids = [Node(key=f"k{i}", cells=(f"child {i}", "now", "me")) for i in range(2)]
        tree.set_nodes(
            [Node(key="r", cells=("root", "then", "you"), status="running", children=kids)]
        )
        tree.resize(600, 300)
        tree.show()
        calls["data"] = calls["alone"] = 0
        tree.grab()
        assert calls["data"] >= 3 * 3  # three rows of three cells, every role inside one call
        assert calls["alone"] == 0
        model = tree.records
        root = model.index(0, 0)
        assert root.data() == "root" and model.index(0, 0, root).data() == "child 0"
        assert model.flags(root) & Qt.ItemFlag.ItemIsSelectable
        assert model.flags(root) & Qt.ItemFlag.ItemIsEnabled
    finally:
        RecordTreeModel.data = real_data  # type: ignore[method-assign]
