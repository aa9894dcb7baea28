"""The decision queue: every open decision across tasks, beside the task inbox.

What is open is the store's word (`store.reads.decisions`, over `store.rules`), read on a worker
and followed (`follow.Follower`): a decision written by another process shows within a
second, and an approval leaves the queue the moment it expires. Enter opens the decision's
own dialog; when that dialog is done the next decision's opens, so a reviewer clears the
queue from the keyboard. Filters: mine (those the rules let this reviewer decide) or
everyone's, by kind, by task.

On a big store (the window's inbox in pages, MainWindow.PAGED_FROM) the queue is read in
pages too (store.reads.queue_pages): the database sorts each kind of decision and filters
by kind and task; the model holds the pages the reviewer scrolled to (Qt's
canFetchMore/fetchMore, each page read on a worker), and the counts are the database's.
"""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRegularExpression,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from boris_desktop import settings
from boris_desktop.host import Host
from boris_desktop.runtime.follow import Follower
from boris_desktop.ui import keyed_rows
from boris_desktop.ui import text as t
from boris_desktop.ui.cells import (
    CellsInOneCall,
    FlatIndex,
    ListedRows,
    RowsTable,
    WholeCellsThrough,
)
from boris_desktop.ui.icons import icon
from store import api

Index = QModelIndex | QPersistentModelIndex
#: Shows a decision's task, then calls back with the task's record (see DecisionQueue.pane).
Pane = Callable[[dict[str, Any], Callable[[dict[str, Any]], None]], None]

KIND, TASK, WHAT, WHY, WAITING, EXPIRES = range(6)
COLUMNS = ("Decision", "Task", "What", "Why it needs a person", "Waiting", "Expires in")
KIND_WORDS = {
    "approval": "Approve / reject",
    "reconcile": "Reconcile",
    "conflict": "Decide a conflict",
    "judge": "Judge a criterion",
    "resume": "Resume a run",
    "wait": "Cancel a wait",
    "late_changes": "Changed after completion",
}
KIND_ICON = {
    "approval": "approval",
    "reconcile": "unknown",
    "conflict": "attention",
    "judge": "attention",
    "resume": "stopped",
    "wait": "pending",
    "late_changes": "attention",
}


#: The part of the task view each kind of decision is about: the pane below the queue shows
#: the selected decision's task on that part, its row current (a run to resume: its brief).
#: `KIND_PART`, made on first use (`__getattr__`): `api.DecisionKind` lives beside the
#: queue's SQL, and naming it here imported SQLAlchemy on the GUI thread while the staged
#: start-up warmed up, 0.6-1 s before the first page of a big store could be peeked at.
def _kind_part() -> dict[str, str]:
    return {
        api.DecisionKind.APPROVAL: "Approvals",
        api.DecisionKind.RECONCILE: "Effects",
        api.DecisionKind.CONFLICT: "Effects",
        api.DecisionKind.JUDGE: "Criteria",
        api.DecisionKind.RESUME: "Brief",
        api.DecisionKind.WAIT: "Waits",
        # The brief says what changed after completion (issue 35 part L).
        api.DecisionKind.LATE: "Brief",
    }


def __getattr__(name: str) -> Any:
    if name == "KIND_PART":
        parts = globals()["KIND_PART"] = _kind_part()
        return parts
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ID_ROLE = Qt.ItemDataRole.UserRole + 1
#: What the filter matches: "kind \x1f task id \x1f 1 if this reviewer may decide it".
FILTER_ROLE = Qt.ItemDataRole.UserRole + 2
#: Decisions a worker reads at a time when the queue is paged: a few screens' worth.
PAGE = 200


def _decision_id(row: dict[str, Any]) -> str:
    return str(row["id"])


def may_decide(d: dict[str, Any], reviewer_id: str | None) -> bool:
    """Whether this reviewer (a person) may make the decision: the store's rule
    (`store.rules.may_decide`), which `boris decisions --mine` asks too."""
    if reviewer_id is None:
        return False
    return api.may_decide(d["kind"], d.get("requester"), "person", reviewer_id)


def _exhausted_counter(task: dict[str, Any]) -> str | None:
    """The counter whose exhaustion stopped a budget_exhausted run, by the store's word (the
    task's budgets say which are exhausted); None for any other run."""
    if task["status"] != api.RunStatus.BUDGET_EXHAUSTED:
        return None
    return next((str(b["counter"]) for b in task["budgets"] if b.get("exhausted")), None)


def waited(since: str | None, now: str) -> str:
    if not since or not now:
        return "—"
    return t.duration((t.parse(now) - t.parse(since)).total_seconds())


def expires_in(at: str | None, now: str) -> str:
    if not at or not now:
        return ""
    return t.duration((t.parse(at) - t.parse(now)).total_seconds())


class DecisionModel(ListedRows, CellsInOneCall, FlatIndex, QAbstractTableModel):
    """The open decisions, kept by id: a read changes only the rows that changed (rows gone
    removed, new ones inserted at their place in the store's order, changed ones redrawn), so
    the selection stays and the view never asks for every row again. Many new rows (the
    first read of thousands) are taken in SLICE at a time, one turn of the event loop each;
    `synced` says the rows are the last read's."""

    #: Rows taken in per turn of the event loop (2,000 at once held the window ~50 ms).
    SLICE = 250
    columns = COLUMNS

    synced = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[dict[str, Any]] = []
        self.now = ""
        #: The database clock at the last read, and the monotonic time it came: the time
        #: columns follow the clock between reads (`tick`), an idle store is not read again.
        self._read_clock: tuple[Any, float] | None = None
        self.revision = 0  # counts changes of `rows`, twice each (see `snapshot`)
        self.reviewer_id: str | None = None  # whose "mine" FILTER_ROLE tells (DecisionFilter)
        self._fresh: list[dict[str, Any]] = []
        self._more = QTimer(self)
        self._more.setSingleShot(True)
        self._more.setInterval(0)
        self._more.timeout.connect(self._step)
        #: Paged: where the next page starts (None: every row is here), and what reads it.
        self.next_key: Any = None
        self.read_more: Callable[[], None] | None = None

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        return (
            not parent.isValid()
            and self.next_key is not None
            and self.read_more is not None
            and not self.pending
        )

    def fetchMore(self, parent: Index = QModelIndex()) -> None:  # noqa: B008
        if self.canFetchMore(parent) and self.read_more is not None:
            self.read_more()

    def append(self, rows: list[dict[str, Any]]) -> None:
        """A further page's rows, after those held (the ones held already left out)."""
        held = {r["id"] for r in self.rows}
        rows = [r for r in rows if r["id"] not in held]
        if not rows:
            return
        first = len(self.rows)
        self.revision += 1
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
        self.rows = [*self.rows, *rows]  # never changed in place: `snapshot` copies it
        self.endInsertRows()
        self.revision += 1

    def tick(self) -> None:
        """Move `now` on by the time since the last read; the views repaint what they show
        (the rows keep their order: every Waiting and Expires-in moves by the same time)."""
        if self._read_clock is not None:
            at, read = self._read_clock
            now = at + timedelta(seconds=time.monotonic() - read)
            self.now = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    @property
    def pending(self) -> bool:
        """Whether some of the last read's rows are still to be taken in."""
        return self._more.isActive()

    def set_rows(
        self,
        rows: list[dict[str, Any]],
        now: str,
        planned: tuple[int, keyed_rows.Plan] | None = None,
    ) -> None:
        """`planned`: (revision, plan), the changes worked out on the worker that read
        `rows` (`snapshot`, `DecisionQueue._read`); used if the model is still as it was."""
        clock_moved = now != self.now
        self.now, self._fresh = now, rows
        self._read_clock = (t.parse(now), time.monotonic()) if now else None
        if clock_moved and self.rows:
            # The time columns follow the clock; the rows themselves only if they changed.
            self.dataChanged.emit(
                self.index(0, WAITING), self.index(len(self.rows) - 1, len(COLUMNS) - 1)
            )
        if (
            planned is not None
            and planned[0] == self.revision
            and sum(len(new) for _, new in planned[1].inserts) <= self.SLICE
        ):
            self.revision += 1  # odd while the rows change: a snapshot taken now is not used
            keyed_rows.apply(self, self.rows, planned[1], len(COLUMNS))
            self.revision += 1
            self._more.stop()
            self.synced.emit()
            return
        self._step()

    def snapshot(self) -> tuple[int, list[dict[str, Any]]] | None:
        """(revision, a copy of the rows) for a worker to plan against, or None while the
        rows are being changed. Safe from any thread: the rows are never changed in place."""
        before = self.revision
        rows = list(self.rows)
        return (before, rows) if before == self.revision and before % 2 == 0 else None

    def _step(self) -> None:
        self.revision += 1
        _changes, done = keyed_rows.sync(
            self, self.rows, self._fresh, _decision_id, len(COLUMNS), limit=self.SLICE
        )
        self.revision += 1
        if done:
            self._more.stop()
            self.synced.emit()
        else:
            self._more.start()

    def row_of(self, decision_id: str | None) -> int:
        for i, r in enumerate(self.rows):
            if r["id"] == decision_id:
                return i
        return -1

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        cell = self.row_at(index)
        if cell is None:
            return None
        r, col = cell
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return (
                KIND_WORDS.get(r["kind"], r["kind"]),
                r["task_title"],
                r["what"],
                r["why"],
                waited(r["since"], self.now),
                expires_in(r["expires_at"], self.now),
            )[col]
        if role == Qt.ItemDataRole.DecorationRole and col == KIND:
            return icon(KIND_ICON.get(r["kind"], "attention"))
        if role == Qt.ItemDataRole.ToolTipRole:
            return t.tip(
                f"{KIND_WORDS.get(r['kind'], r['kind'])} {r['key']} in {r['task_title']} "
                f"({r['task_id']}, owner {r['owner']})\n{r['what']}\n{r['why']}"
            )
        if role == ID_ROLE:
            return r["id"]
        if role == FILTER_ROLE:
            mine = may_decide(r, self.reviewer_id)
            return f"{r['kind']}\x1f{r['task_id']}\x1f{int(mine)}"
        return None


class DecisionFilter(WholeCellsThrough, QSortFilterProxyModel):
    """Mine (what this reviewer may decide) or everyone's; one kind or all; one task or all.

    Matched by Qt: a regular expression over each row's FILTER_ROLE ("kind, task, whether
    this reviewer may decide it"). With no filter set Qt takes every row without calling
    into Python, as a Python `filterAcceptsRow` would for each row inserted (and, with a
    worker reading, each such call waits for the interpreter lock)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.mine = False
        self.reviewer_id: str | None = None
        self.kind: str | None = None
        self.task: str | None = None
        self.setFilterRole(FILTER_ROLE)

    def set(self, **kw: Any) -> None:
        for k, v in kw.items():
            setattr(self, k, v)
        model = self.sourceModel()
        if isinstance(model, DecisionModel):
            model.reviewer_id = self.reviewer_id
        pattern = ""
        if self.kind is not None:
            pattern += f"(?={re.escape(self.kind)}\x1f)"
        if self.task is not None:
            pattern += f"(?=[^\x1f]*\x1f{re.escape(self.task)}\x1f)"
        if self.mine:
            pattern += "(?=[^\x1f]*\x1f[^\x1f]*\x1f1$)"
        self.beginFilterChange()
        self.setFilterRegularExpression(QRegularExpression("^" + pattern if pattern else ""))
        self.endFilterChange()


class DecisionQueue(QWidget):
    """The queue's view; `host` is the window (loader, store, reload, statusBar)."""

    def _tick(self) -> None:
        if self.model.rows and self.table.isVisible():
            self.model.tick()
            self.table.viewport().update()

    #: The open decisions after every read (rows, database clock): the notifications' input.
    updated = Signal(object, str)  # object: a list would be copied into Qt, 2,000 dicts in ~120 ms
    #: Show a task in the window. Every kind of decision has a dialog now (a run to resume
    #: opens the Resume dialog), so the queue itself does not emit it; the window listens.
    show_task = Signal(str)
    #: The selected decision (its row), or None: the pane below shows its task, on the part
    #: it concerns (KIND_PART). Told at every change, whatever made it: a key, a click, a
    #: filter, a decision done and the next selected, a read that reordered or removed rows.
    current_decision = Signal(object)

    def __init__(self, host: Host, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.model = DecisionModel(self)
        self.proxy = DecisionFilter(self)
        self.proxy.setSourceModel(self.model)
        self.model.synced.connect(self._synced)
        self.loaded = False
        self.dialog: Any = None
        self._chain = False  # a decision was just made: open the next one when read
        self._chain_row = 0
        self._done_id: str | None = None
        self._keep: str | None = None  # the selected decision when a read came in
        self._tasks_listed: list[tuple[str, str]] = []  # the task filter's items
        self._told: tuple[str, str] | None = None  # (decision id, task id) last told
        #: Read in pages (store.reads.queue_pages), filtered by kind and task by the database.
        self.paged = False
        self._reading = 0  # a page read for an older reading is dropped when it comes
        self._sql_filters: tuple[str | None, str | None] = (None, None)  # kind, task
        self.counts: dict[str, int] | None = None  # paged: the database's counts
        self.model.read_more = self._read_more
        #: Shows a decision's task in the pane, then calls back with the task's record as the
        #: pane shows it (MainWindow.show_decision): Enter's dialog is built from that record,
        #: so it is always about the task on screen. Without a pane the queue reads the task.
        self.pane: Pane | None = None

        # Enter (or Return) opens the current decision's dialog.
        self.table = RowsTable("Open decisions", stretch=(WHAT, WHY))
        self.table.setModel(self.proxy)
        self.table.setColumnWidth(KIND, 170)
        self.table.setColumnWidth(TASK, 220)
        self.table.setColumnWidth(WAITING, 110)
        self.table.setColumnWidth(EXPIRES, 110)
        self.table.selectionModel().currentRowChanged.connect(self._current_changed)
        # Waiting and Expires in count on between reads: the cells in sight are painted
        # again each second (a repaint asks only them; no dataChanged for 2,000 rows).
        self.ticker = QTimer(self)
        self.ticker.setInterval(1000)
        self.ticker.timeout.connect(self._tick)
        self.ticker.start()
        self.table.activated_by_key.connect(self.open_current)
        self.table.doubleClicked.connect(lambda _ix: self.open_current())

        self.whose = QComboBox()
        self.whose.setAccessibleName("Whose decisions")
        self.whose.addItem("Everyone's", False)
        self.whose.addItem("Mine (I may decide)", True)
        self.whose.currentIndexChanged.connect(self._filters_changed)
        self.kind = QComboBox()
        self.kind.setAccessibleName("Filter decisions by kind")
        self.kind.addItem("All kinds", None)
        for k, w in KIND_WORDS.items():
            self.kind.addItem(icon(KIND_ICON[k]), w, k)
        self.kind.currentIndexChanged.connect(self._filters_changed)
        self.task = QComboBox()
        self.task.setAccessibleName("Filter decisions by task")
        self.task.addItem("All tasks", None)
        self.task.currentIndexChanged.connect(self._filters_changed)
        self.summary = QLabel("Reading the open decisions…")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        bar = QHBoxLayout()
        bar.addWidget(self.summary, 1)
        bar.addWidget(self.whose)
        bar.addWidget(self.kind)
        bar.addWidget(self.task)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 0)
        lay.addLayout(bar)
        lay.addWidget(self.table, 1)

        self.follower = Follower(host, "", self._got, self, fetch=self._read)

    # --- following the store -------------------------------------------------------------

    def start(self) -> None:
        """Follow the (newly opened) store."""
        self.follower.stop()
        self.follower.start(None)
        self.follower.force()

    def refresh(self) -> None:
        self.follower.force()

    def set_paged(self, on: bool) -> None:
        """Read the queue in pages (a big store) or whole; read again if that changed."""
        if on == self.paged:
            return
        self.paged = on
        self._reading += 1
        self.model.next_key = None
        self.counts = None
        self._filters_changed()
        if self.follower.running:
            self.follower.force()

    def total(self) -> int:
        """How many decisions are open: the database's count when paged."""
        if self.paged and self.counts is not None:
            return self.counts["total"]
        return len(self.model.rows)

    def _read(self, store: Any) -> dict[str, Any]:
        """On a worker: the open decisions, what they change in the rows shown, and the
        task filter's items, so that the GUI thread only tells its views."""
        from boris_desktop.runtime.interpreter import paused
        from store.api import decision_page, decisions

        with paused():  # thousands of rows: no collection of the whole heap meanwhile
            if self.paged:
                # As many rows as are held (a refresh does not take the scrolled-to rows
                # away), by the database's filters as they are now.
                kind, task = filters = self._sql_filters
                limit = max(PAGE, len(self.model.rows))
                result = decision_page(store, kind=kind, task=task, limit=limit)
                result["paged"] = (self._reading, filters)
            else:
                result = decisions(store)
            rows = result["decisions"]
            shown = self.model.snapshot()
            if shown is not None:
                result["planned"] = (shown[0], keyed_rows.plan(shown[1], rows, _decision_id))
            result["tasks"] = sorted({(r["task_title"], r["task_id"]) for r in rows})
        return result

    def _got(self, result: dict[str, Any]) -> None:
        rows, now = result["decisions"], result["now"]
        if ("paged" in result) != self.paged or (
            self.paged and result["paged"] != (self._reading, self._sql_filters)
        ):
            self.follower.force()  # read before the paging or the filters changed
            return
        if self.paged:
            self.model.next_key = result["key"]
            self.counts = result["counts"]
            # The task filter lists the tasks of every row read so far (not every task
            # with an open decision: on 100,000 tasks, thousands of items nobody reads).
            result["tasks"] = sorted({*self._tasks_listed, *result["tasks"]})
        if self._keep is None:
            self._keep = self.current_id()
        # `_synced` follows, now or once the rows are in.
        self.model.set_rows(rows, now, result.get("planned"))
        self._task_items(result["tasks"])
        soonest = min((r["expires_at"] for r in rows if r["expires_at"]), default=None)
        self.follower.at(soonest, now)
        self.updated.emit(rows, now)

    def _read_more(self) -> None:
        """The view nears the last row held: the next page, read on a worker."""
        loader = self.host.loader
        store, key, reading = self.host.store, self.model.next_key, self._reading
        if store is None or key is None or loader.busy("queue-page"):
            return
        kind, task = self._sql_filters
        from store.api import decision_page

        loader.submit(
            "queue-page",
            lambda: (
                reading,
                decision_page(store, kind=kind, task=task, after=key, limit=PAGE, count=False),
            ),
            self._paged_in,
            lambda err: self.host.statusBar().showMessage(
                f"Could not read more decisions: {t.failure(err)}"
            ),
        )

    def _paged_in(self, result: tuple[int, dict[str, Any]]) -> None:
        reading, got = result
        if reading != self._reading or not self.paged or self.model.pending:
            return  # a page of a reading no longer shown
        self.model.next_key = got["key"]
        self.model.append(got["decisions"])
        self._task_items(
            sorted(
                {*self._tasks_listed, *((r["task_title"], r["task_id"]) for r in got["decisions"])}
            )
        )
        self._summary()

    def _synced(self) -> None:
        """The model holds the last read's rows."""
        self.loaded = True
        keep, self._keep = self._keep, None
        # The rows were changed in place, so the selection stayed with its row; it is lost
        # only when that row was taken out (moved in the order, or not there yet).
        if keep is not None and self.current_id() != keep:
            self.select(keep)
        if self.current_id() is None and self.isVisible():
            self.ensure_current()
        self._summary()
        self._tell()
        if self._chain and self._done_id not in {r["id"] for r in self.model.rows}:
            self._chain = False
            self._open_next()

    def _task_items(self, tasks: list[tuple[str, str]]) -> None:
        """The task filter lists the tasks with open decisions, (title, id) sorted: item
        i + 1 is `_tasks_listed[i]` (after "All tasks"). The first list goes in with one
        call; later an arrival in a new task adds one item."""
        listed = self._tasks_listed
        if tasks == listed:
            return
        keep = self.task_filter()
        self.task.blockSignals(True)
        if not listed:
            # (No merge: 2,000 turns of a Python loop are milliseconds of the GUI thread, and
            # each turn waits for the interpreter lock while a worker reads.)
            self._tasks_listed = listed = list(tasks)
            self.task.addItems([title for title, _tid in tasks])
        else:
            now = set(tasks)
            for i in range(len(listed) - 1, -1, -1):
                if listed[i] not in now:
                    self.task.removeItem(i + 1)
                    del listed[i]
            for item in tasks:
                i = bisect.bisect_left(listed, item)
                if i == len(listed) or listed[i] != item:
                    listed.insert(i, item)
                    self.task.insertItem(i + 1, item[0])
        at = next((i for i, (_title, tid) in enumerate(listed) if tid == keep), -1)
        self.task.setCurrentIndex(at + 1)
        self.task.blockSignals(False)

    def task_filter(self) -> str | None:
        """The task the queue is filtered to, if any."""
        i = self.task.currentIndex()
        return self._tasks_listed[i - 1][1] if 0 < i <= len(self._tasks_listed) else None

    def _filters_changed(self) -> None:
        who = settings.reviewer()
        kind, task = self.kind.currentData(), self.task_filter()
        if self.paged:
            # The database filters by kind and task (a new reading); "mine" is the rules'
            # word on each row read (store.rules.may_decide), the proxy's.
            if (kind, task) != self._sql_filters:
                self._sql_filters = (kind, task)
                self._reading += 1
                self.model.next_key = None
                self.model.set_rows([], self.model.now)
                self.refresh()
            kind = task = None
        self.proxy.set(
            mine=bool(self.whose.currentData()),
            reviewer_id=who[1] if who else None,
            kind=kind,
            task=task,
        )
        self._summary()
        self._tell()

    def _summary(self) -> None:
        n, shown = len(self.model.rows), self.proxy.rowCount()
        approvals = sum(r["kind"] == api.DecisionKind.APPROVAL for r in self.model.rows)
        so_far = ""
        if self.paged and self.counts is not None:
            # The database's counts. "Mine" is each row's rules: counted as far as read.
            n, approvals = self.counts["total"], self.counts["approvals"]
            if not self.proxy.mine:
                shown = self.counts["matching"]
            elif self.model.next_key is not None:
                so_far = " so far"
        text = f"{t.count(n, 'open decision', 'open decisions')}"
        text += f" ({t.count(approvals, 'approval', 'approvals')})"
        if shown != n:
            text += f", {shown:,} shown{so_far}"
        self.summary.setText(text + " · Enter opens one; the next follows when it is done")

    # --- selection -----------------------------------------------------------------------

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid() and not self.table.selectionModel().isRowSelected(
            current.row(), QModelIndex()
        ):
            # Made current without a selection (the view takes focus, a row removed under
            # it): the row is highlighted too, so what is current is what is seen.
            self.table.selectRow(current.row())
        self._tell()

    def _tell(self) -> None:
        """Say the current decision if it is not the one last said. (A model reset or a
        filter moves the current row without Qt's signal; each of those calls this.)"""
        d = self.current()
        told = (d["id"], d["task_id"]) if d is not None else None
        if told != self._told:
            self._told = told
            self.current_decision.emit(d)

    def ensure_current(self) -> None:
        """Shown with no decision selected: the first (the store's order puts the most
        pressing first), so the pane below is never a task the queue does not select."""
        if self.current_id() is None and self.proxy.rowCount():
            ix = self.proxy.index(0, 0)
            self.table.setCurrentIndex(ix)
            self.table.selectRow(0)

    def current_id(self) -> str | None:
        ix = self.table.currentIndex()
        return ix.data(ID_ROLE) if ix.isValid() else None

    def select(self, decision_id: str | None) -> bool:
        row = self.model.row_of(decision_id)
        ix = self.proxy.mapFromSource(self.model.index(row, 0)) if row >= 0 else QModelIndex()
        if not ix.isValid():
            return False
        self.table.setCurrentIndex(ix)
        self.table.selectRow(ix.row())
        self.table.scrollTo(ix)
        return True

    def current(self) -> dict[str, Any] | None:
        row = self.model.row_of(self.current_id())
        return self.model.rows[row] if row >= 0 else None

    # --- deciding ------------------------------------------------------------------------

    def open_decision(self, decision_id: str) -> None:
        if self.select(decision_id):
            self.open_current()

    def open_current(self) -> None:
        d = self.current()
        store = self.host.store
        if d is None or store is None:
            return
        self._chain_row = self.table.currentIndex().row()
        task_id = d["task_id"]

        def opened(task: dict[str, Any]) -> None:
            # Only for the decision still selected: Enter, then a move before the task was
            # read, opens nothing over the task the reviewer moved to.
            if self.current_id() == d["id"]:
                self._open_dialog(d, task)

        if self.pane is not None:
            self.pane(d, opened)
            return
        self.host.loader.submit(
            "queue:open",
            lambda: store.task(task_id),
            lambda task: self._open_dialog(d, task),
            lambda err: self.host.statusBar().showMessage(
                f"Could not read {task_id}: {t.failure(err)}"
            ),
        )

    def _open_dialog(self, d: dict[str, Any], task: dict[str, Any]) -> None:
        dialog: Any = None
        if d["kind"] == api.DecisionKind.APPROVAL:
            a = next((x for x in task["approvals"] if x["approval_id"] == d["key"]), None)
            if a is not None:
                from boris_desktop.decide.approve import ApproveDialog

                dialog = ApproveDialog(self.host, task["id"], a, task.get("now") or "")
        elif d["kind"] in {api.DecisionKind.RECONCILE, api.DecisionKind.CONFLICT}:
            e = next((x for x in task["effects"] if x["effect_id"] == d["key"]), None)
            if e is not None:
                from boris_desktop.decide.reconcile import ReconcileDialog

                dialog = ReconcileDialog(self.host, task["id"], e)
        elif d["kind"] == api.DecisionKind.JUDGE:
            c = next((x for x in task["criteria"] if x["criterion_id"] == d["key"]), None)
            if c is not None:
                from boris_desktop.decide.judge import JudgeDialog

                dialog = JudgeDialog(self.host, task, c)
        elif d["kind"] == api.DecisionKind.WAIT:
            w = next((x for x in task.get("waits") or [] if x["wait_id"] == d["key"]), None)
            if w is not None:
                from boris_desktop.decide.takeover import CancelWaitDialog

                dialog = CancelWaitDialog(self.host, task, w)
        elif d["kind"] == api.DecisionKind.RESUME and (spent := _exhausted_counter(task)):
            # Its budget ran out: raising that counter's limit is what lets it go on (the
            # store's rule); the dialog says so, and how to resume it as it is instead.
            from boris_desktop.decide.budget import BudgetDialog

            dialog = BudgetDialog(self.host, task, spent, raise_limit=True)
        elif d["kind"] == api.DecisionKind.RESUME and api.can_resume(task["status"]):
            from boris_desktop.decide.finish import ResumeDialog

            dialog = ResumeDialog(self.host, task)
        elif d["kind"] == api.DecisionKind.LATE and (task.get("late") or {}).get("count"):
            from boris_desktop.decide.late import LateChangesDialog

            dialog = LateChangesDialog(self.host, task)
        if dialog is None:
            self.refresh()
            return
        self.dialog = dialog
        dialog.finished.connect(lambda code, d=d: self._dialog_done(d, code))
        dialog.open()

    def _dialog_done(self, d: dict[str, Any], code: int) -> None:
        from PySide6.QtWidgets import QDialog

        if code == QDialog.DialogCode.Accepted:
            # Decided: the next decision opens once the queue no longer lists this one.
            self._chain, self._done_id = True, d["id"]
            self.refresh()
        else:
            self.table.setFocus()

    def _open_next(self) -> None:
        n = self.proxy.rowCount()
        if n == 0:
            self.host.statusBar().showMessage("No open decisions left: the queue is clear", 8000)
            self.table.setFocus()
            return
        ix = self.proxy.index(min(self._chain_row, n - 1), 0)
        self.table.setCurrentIndex(ix)
        self.table.selectRow(ix.row())
        self.open_current()
