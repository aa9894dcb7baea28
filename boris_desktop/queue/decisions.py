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

The package's parts: the rows and their filter (`queue.rows`), what a worker reads
(`queue.reading`), the task filter (`queue.task_filter`) and the dialog each kind of decision
opens (`queue.dialogs`); this module is the view that puts them together.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from boris_desktop import settings
from boris_desktop.host import Host
from boris_desktop.queue.dialogs import dialog_for
from boris_desktop.queue.escalations import EscalationTimer
from boris_desktop.queue.reading import QueueRead, read_queue, tasks_of
from boris_desktop.queue.rows import (
    COLUMNS,
    EXPIRES,
    FILTER_ROLE,
    ID_ROLE,
    KIND,
    KIND_ICON,
    KIND_WORDS,
    TASK,
    WAITING,
    WHAT,
    WHY,
    DecisionFilter,
    DecisionModel,
    expires_in,
    may_decide,
    waited,
)
from boris_desktop.queue.task_filter import TaskFilter
from boris_desktop.runtime.follow import Follower
from boris_desktop.ui import text as t
from boris_desktop.ui.cells import RowsTable
from boris_desktop.ui.icons import icon
from store import api

if TYPE_CHECKING:
    from store.api import Decision, DecisionPage, QueueCounts, TaskState

# The names the window and the tests import from here (and KIND_PART, made on first use).
__all__ = [
    "COLUMNS",
    "EXPIRES",
    "FILTER_ROLE",
    "ID_ROLE",
    "KIND",
    "KIND_ICON",
    "KIND_WORDS",
    "PAGE",
    "TASK",
    "WAITING",
    "WHAT",
    "WHY",
    "DecisionFilter",
    "DecisionModel",
    "DecisionQueue",
    "expires_in",
    "may_decide",
    "waited",
]

#: Shows a decision's task, then calls back with the task's record (see DecisionQueue.pane).
Pane = Callable[["Decision", Callable[["TaskState"], None]], None]


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


def __getattr__(name: str) -> dict[str, str]:
    if name == "KIND_PART":
        parts: dict[str, str] = _kind_part()
        setattr(sys.modules[__name__], name, parts)  # made once: asked for again, it is there
        return parts
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Decisions a worker reads at a time when the queue is paged: a few screens' worth.
PAGE = 200


class DecisionQueue(QWidget):
    """The queue's view; `host` is the window (loader, store, reload, statusBar)."""

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
        self.dialog: QDialog | None = None
        self._chain = False  # a decision was just made: open the next one when read
        self._chain_row = 0
        self._done_id: str | None = None
        self._keep: str | None = None  # the selected decision when a read came in
        self._told: tuple[str, str] | None = None  # (decision id, task id) last told
        #: Read in pages (store.reads.queue_pages), filtered by kind and task by the database.
        self.paged = False
        self._reading = 0  # a page read for an older reading is dropped when it comes
        self._sql_filters: tuple[str | None, str | None] = (None, None)  # kind, task
        self.counts: QueueCounts | None = None  # paged: the database's counts
        self.model.read_more = self._read_more
        #: Shows a decision's task in the pane, then calls back with the task's record as the
        #: pane shows it (MainWindow.show_decision): Enter's dialog is built from that record,
        #: so it is always about the task on screen. Without a pane the queue reads the task.
        self.pane: Pane | None = None
        self.table = self._table()
        # Waiting and Expires in count on between reads: the cells in sight are painted
        # again each second (a repaint asks only them; no dataChanged for 2,000 rows).
        self.ticker = QTimer(self)
        self.ticker.setInterval(1000)
        self.ticker.timeout.connect(self._tick)
        self.ticker.start()
        self.whose, self.kind, self.task = self._filters()
        self.summary = QLabel("Reading the open decisions…")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        # Wrapped when narrow: on one line, a big store's counts and the hint made the queue,
        # and so the window, 1,080 pixels wide at least (wider than a 1024-pixel screen).
        self.summary.setWordWrap(True)
        bar = QHBoxLayout()
        bar.addWidget(self.summary, 1)
        bar.addWidget(self.whose)
        bar.addWidget(self.kind)
        bar.addWidget(self.task)
        # Several approvals in one pass: the batch table (issue 42, queue.batch).
        self.batch_button = QPushButton("Decide several…")
        self.batch_button.setAutoDefault(False)
        self.batch_button.clicked.connect(self.open_batch)
        bar.addWidget(self.batch_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 0)
        lay.addLayout(bar)
        lay.addWidget(self.table, 1)
        self.follower = Follower(host, "", self._got, self, fetch=self._read)
        # The escalations that come due are recorded by the open window too (issue 42).
        self.escalations = EscalationTimer(host, lambda _done: self.refresh(), self)

    def _table(self) -> RowsTable:
        """The table of decisions; Enter (or Return) opens the current decision's dialog."""
        table = RowsTable("Open decisions", stretch=(WHAT, WHY))
        table.setModel(self.proxy)
        table.setColumnWidth(KIND, 170)
        table.setColumnWidth(TASK, 220)
        table.setColumnWidth(WAITING, 110)
        table.setColumnWidth(EXPIRES, 110)
        table.selectionModel().currentRowChanged.connect(self._current_changed)
        table.activated_by_key.connect(self.open_current)
        table.doubleClicked.connect(lambda _ix: self.open_current())
        return table

    def _filters(self) -> tuple[QComboBox, QComboBox, TaskFilter]:
        """Whose decisions, which kind, which task."""
        whose = QComboBox()
        whose.setAccessibleName("Whose decisions")
        whose.addItem("Everyone's", False)
        whose.addItem("Mine (I may decide)", True)
        whose.currentIndexChanged.connect(self._filters_changed)
        kind = QComboBox()
        kind.setAccessibleName("Filter decisions by kind")
        kind.addItem("All kinds", None)
        for k, w in KIND_WORDS.items():
            kind.addItem(icon(KIND_ICON[k]), w, k)
        kind.currentIndexChanged.connect(self._filters_changed)
        task = TaskFilter()
        task.currentIndexChanged.connect(self._filters_changed)
        return whose, kind, task

    def _tick(self) -> None:
        if self.model.rows and self.table.isVisible():
            self.model.tick()
            self.table.viewport().update()

    # --- following the store -------------------------------------------------------------

    def start(self) -> None:
        """Follow the (newly opened) store."""
        self.follower.stop()
        self.follower.start(None)
        self.follower.force()
        self.escalations.start()

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
            return self.counts.total
        return len(self.model.rows)

    def _read(self, store: Any) -> QueueRead:
        """On a worker: as many rows as are held when paged (a refresh does not take the
        scrolled-to rows away), by the database's filters as they are now."""
        paged = None
        if self.paged:
            paged = (self._reading, self._sql_filters, max(PAGE, len(self.model.rows)))
        return read_queue(store, self.model.snapshot(), paged)

    def _got(self, result: QueueRead) -> None:
        rows, now, paging = result.decisions, result.now, result.paging
        if (paging is not None) != self.paged or (
            paging is not None and (paging.reading, paging.filters) != self._current_reading()
        ):
            self.follower.force()  # read before the paging or the filters changed
            return
        tasks = result.tasks
        if paging is not None:
            self.model.next_key = paging.next_key
            self.counts = paging.counts
            # The task filter lists the tasks of every row read so far (not every task
            # with an open decision: on 100,000 tasks, thousands of items nobody reads).
            tasks = sorted({*self.task.listed, *tasks})
        if self._keep is None:
            self._keep = self.current_id()
        # `_synced` follows, now or once the rows are in.
        self.model.set_rows(rows, now, result.planned)
        self.task.set_tasks(tasks)
        soonest = min((r.expires_at for r in rows if r.expires_at), default=None)
        self.follower.at(soonest, now)
        self.updated.emit(rows, now)

    def _current_reading(self) -> tuple[int, tuple[str | None, str | None]]:
        return self._reading, self._sql_filters

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

    def _paged_in(self, result: tuple[int, DecisionPage]) -> None:
        reading, got = result
        if reading != self._reading or not self.paged or self.model.pending:
            return  # a page of a reading no longer shown
        self.model.next_key = got.key
        self.model.append(got.decisions)
        self.task.set_tasks(sorted({*self.task.listed, *tasks_of(got.decisions)}))
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
        if self._chain and self._done_id not in {r.id for r in self.model.rows}:
            self._chain = False
            self._open_next()

    @property
    def _tasks_listed(self) -> list[tuple[str, str]]:
        """The task filter's items, (title, id) sorted (TaskFilter.listed)."""
        return self.task.listed

    def task_filter(self) -> str | None:
        """The task the queue is filtered to, if any."""
        return self.task.task_id()

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
        approvals = sum(r.kind == api.DecisionKind.APPROVAL for r in self.model.rows)
        so_far = ""
        if self.paged and self.counts is not None:
            # The database's counts. "Mine" is each row's rules: counted as far as read.
            n, approvals = self.counts.total, self.counts.approvals
            if not self.proxy.mine:
                shown = self.counts.matching
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
        told = (d.id, d.task_id) if d is not None else None
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

    def current(self) -> Decision | None:
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
        task_id = d.task_id

        def opened(task: TaskState) -> None:
            # Only for the decision still selected: Enter, then a move before the task was
            # read, opens nothing over the task the reviewer moved to.
            if self.current_id() == d.id:
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

    def _open_dialog(self, d: Decision, task: TaskState) -> None:
        dialog = dialog_for(self.host, d, task)
        if dialog is None:
            self.refresh()
            return
        self.dialog = dialog
        dialog.finished.connect(lambda code, d=d: self._dialog_done(d, code))
        dialog.open()

    def _dialog_done(self, d: Decision, code: int) -> None:
        if code == QDialog.DialogCode.Accepted:
            # Decided: the next decision opens once the queue no longer lists this one.
            self._chain, self._done_id = True, d.id
            self.refresh()
        else:
            self.table.setFocus()

    def open_batch(self) -> QDialog:
        """The batch table over the approvals the queue shows now (its filters apply)."""
        from boris_desktop.queue.batch import BatchDialog

        shown = (self.model.rows[self.proxy.mapToSource(self.proxy.index(r, 0)).row()]
                 for r in range(self.proxy.rowCount()))  # fmt: skip
        refs = [(d.task_id, d.key) for d in shown if d.kind == api.DecisionKind.APPROVAL]
        self.batch = BatchDialog(self.host, refs)
        self.batch.finished.connect(lambda _code: self.refresh())
        self.batch.open()
        return self.batch

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
