"""The inbox in pages, for a store of 100,000 tasks (issue 36 part W).

`InboxModel` holds every task, read whole and sorted in Python: right up to some ten
thousand tasks. `PagedInboxModel` holds only the pages the reviewer has scrolled to: the
database sorts, filters and counts (store.reads.inbox_pages), a worker reads each page
(Qt's canFetchMore/fetchMore, asked as the view nears its last row), and the GUI thread
only inserts the rows that came. Its cells are InboxModel's own.

`PagedInbox` is the part of a window around it: the search box (debounced, read on a
worker, a newer search dropping an older one), the counts ("N tasks · N need you") and the
selection, kept by task id across pages, searches and refreshes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import QAbstractItemView, QLabel, QLineEdit, QTableView

from boris_desktop.inbox.table import (
    ACTIVITY,
    NEEDS,
    STATUS,
    TITLE,
    InboxModel,
    activity_text,
    budget_text,
    needs_text,
    task_key,
)
from boris_desktop.runtime import jobs
from boris_desktop.runtime.job_results import FirstPage
from boris_desktop.runtime.keyed import Keyed
from boris_desktop.runtime.loader import Loader
from boris_desktop.ui import keyed_rows
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import words as status_words

if TYPE_CHECKING:
    from store.api import TaskRow

Index = QModelIndex | QPersistentModelIndex
#: Rows a worker reads at a time: a few screens' worth.
PAGE = 200
#: Rows a new search, filter or order shows first: a screenful and more, soon read (a search
#: with few matches scans the table until it has them); scrolling reads the rest.
FIRST = 60
#: The search waits this long after each keystroke (MainWindow's too when paged): keys that
#: come in one turn ask for one search. The read is SQL on a worker (15-65 ms for a page on
#: 100,000 tasks), a keystroke drops the read of the one before, and a count waits for the
#: typing to pause (COUNT_PAUSE_MS), so reading at each key costs the GUI thread a page's
#: rows each; the pause was 90-100 ms, which made the last keystroke's rows come in 131-152
#: ms (benchmarks/bench_desktop_100k.py).
SEARCH_PAUSE_MS = 10
#: A search's or filter's count waits this long after its rows (a newer reading restarts it).
COUNT_PAUSE_MS = 150
#: The database's word for the columns it can sort by (the others sort by last activity).
SQL_ORDER = {NEEDS: "needs", ACTIVITY: "activity", TITLE: "title", STATUS: "status"}


@dataclass(frozen=True)
class InboxCounts(Keyed):
    """What the counts say: every task, those the search and filter show, those that need
    a person (the database's counts)."""

    total: int = 0
    matching: int = 0
    needy: int = 0


class PagedInboxModel(InboxModel):
    """InboxModel's rows and cells, `rows` being the pages read so far of one reading."""

    #: A reading came (first page, counts): the window says the counts, puts back the selection.
    reloaded = Signal()
    #: A page came after the first.
    paged = Signal()
    #: The count of the tasks the search and filter show came (after the rows).
    counted = Signal()

    def __init__(self, store: Any, loader: Loader, parent: Any = None) -> None:
        super().__init__(parent)
        self.store = store
        self.loader = loader
        self.view: Any = None  # the reading (store.reads.inbox_pages.PagedInbox) shown
        self.next_key: Any = None  # where the next page starts; None: every row is here
        self.status: str | None = None
        self.counts = InboxCounts()
        self._needing: tuple[int, list[TaskRow]] | None = None
        self._reading = 0  # a page read for an older reading is dropped
        #: Each row's six texts, made once a second at most: a paint asks each cell, and
        #: InboxModel makes the row's six for each (six times the work, on the GUI thread).
        self._texts: dict[str, tuple[TaskRow, tuple[str, ...]]] = {}
        self._texts_at = 0
        self._count_due = QTimer(self)
        self._count_due.setSingleShot(True)
        self._count_due.setInterval(COUNT_PAUSE_MS)
        self._count_due.timeout.connect(self._count)

    # --- readings ------------------------------------------------------------------------

    def peek(self, directory: str | None, then: Callable[[], object] | None = None) -> None:
        """Show the first page read before the store is open (the window's first look, as
        MainWindow's peek); the store's first reading (`set_store`) takes its place.
        `then()`: called once the peek is done, shown or not."""

        def peeked(got: FirstPage | None) -> None:
            if got is not None and self.view is None:
                self._read(got)
            if then is not None:
                then()

        self.loader.submit(
            "inbox-peek",
            lambda: jobs.peek_inbox_page(directory, PAGE),
            peeked,
            lambda _: peeked(None),
        )

    def show_peeked(self, got: FirstPage) -> None:
        """A first page peeked by someone else (MainWindow's own first look)."""
        if self.view is None:
            self._read(got)

    def set_store(self, store: Any) -> None:
        self.store = store
        self.reload()

    def reload(self, keep_rows: bool = True) -> None:
        """Read again: the search, filter and order in force. `keep_rows`: as many rows as
        are held now (so a refresh does not take the reviewer's scrolled-to rows away)."""
        if self.store is None:
            return  # the store's first reading comes with `set_store`
        column, descending = self.order
        limit = max(PAGE, len(self.rows)) if keep_rows else FIRST
        store, needing = self.store, self._needing
        order, words, status = SQL_ORDER.get(column, "activity"), self.search, self.status
        fresh = not keep_rows
        self.loader.cancel("inbox-page")
        self.loader.submit(
            "inbox-read",
            lambda: jobs.inbox_first_page(
                store,
                order=order,
                descending=descending,
                words=words,
                status=status,
                limit=limit,
                needing=needing,
                fresh=fresh,
            ),
            self._read,
            None,
        )

    def _read(self, result: FirstPage) -> None:
        self._reading += 1
        self.view = result.view
        self.next_key = result.key
        if result.view is not None and result.version is not None:
            # (None: a peek's rows, before the store is open.)
            self._needing = (result.version, result.view.needing)
        self.counts = InboxCounts(result.total, result.total, result.needy)
        rows = result.rows
        self.all_rows = rows
        self._ids = {r.id for r in rows}
        plan = None if result.fresh else keyed_rows.plan(self.rows, rows, task_key)
        if plan is None or len(plan.gone) + len(plan.inserts) > 32:
            # A new search, filter or order, or rows all over the list changed: one reset
            # (no comparison of thousands of rows on the GUI thread); the window reselects.
            self.beginResetModel()
            self.rows = list(rows)
            self._pos = {r.id: i for i, r in enumerate(rows)}
            self.revision += 1
            self.endResetModel()
        else:
            self._show(rows, plan)  # persistent indexes (the selection) follow their task
        self.reloaded.emit()
        if (self.search or self.status) and self.view is not None:
            # Counted once the typing pauses: a count scans every title, and counts of words
            # typed on held the workers the next keystroke's rows waited for.
            self._count_due.start()

    def _count(self) -> None:
        if (self.search or self.status) and self.view is not None:
            store, view, reading = self.store, self.view, self._reading
            self.loader.submit(
                "inbox-count", lambda: (reading, jobs.inbox_matching(store, view)), self._counted
            )

    def _counted(self, result: tuple[int, int]) -> None:
        if result[0] == self._reading:
            self.counts = replace(self.counts, matching=result[1])
            self.counted.emit()

    # --- pages ---------------------------------------------------------------------------

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        return not parent.isValid() and self.next_key is not None and self.store is not None

    def fetchMore(self, parent: Index = QModelIndex()) -> None:  # noqa: B008
        if parent.isValid() or self.next_key is None or self.loader.busy("inbox-page"):
            return
        store, view, key, reading = self.store, self.view, self.next_key, self._reading
        self.loader.submit(
            "inbox-page",
            lambda: (reading, jobs.inbox_page(store, view, key, PAGE)),
            self._paged,
            None,
        )

    def _paged(self, result: tuple[int, tuple[list[TaskRow], Any]]) -> None:
        reading, (rows, key) = result
        if reading != self._reading:
            return  # a page of a reading no longer shown
        rows = [r for r in rows if r.id not in self._ids]
        self.next_key = key
        if rows:
            first = len(self.rows)
            self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
            self.rows.extend(rows)
            self.endInsertRows()
            for i, r in enumerate(rows, first):
                self._pos[r.id] = i
                self._ids.add(r.id)
            self.all_rows = self.rows
            self.revision += 1
        self.paged.emit()

    def data(self, index: Index, role: int = 0) -> Any:
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return super().data(index, role)
        cell = self.row_at(index)
        if cell is None:
            return None
        r, col = cell
        second = int(time.monotonic())  # "Working now" moves on with the clock
        if second != self._texts_at:
            self._texts.clear()
            self._texts_at = second
        held = self._texts.get(r.id)
        if held is None or held[0] is not r:
            n = r.needs
            texts = (
                r.title,
                status_words(r.status),
                needs_text(n, r.status),
                budget_text(n.budget_use, n.budget),
                activity_text(r.updated_at),
                self.working_now(r),
            )
            held = self._texts[r.id] = (r, texts)
        return held[1][col]

    # --- what the window sets ------------------------------------------------------------

    def set_search(self, words: tuple[str, ...]) -> None:
        self.search = words
        self.reload(keep_rows=False)

    def set_status(self, status: str | None) -> None:
        self.status = status
        self.reload(keep_rows=False)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """The database sorts: a new reading in that order."""
        self._order = (column, order)
        if self.store is not None:
            self.reload(keep_rows=False)


class PagedInbox(QObject):
    """The table, the search box and the counts around a PagedInboxModel; the selection is
    a task id, put back whenever the rows change under it."""

    selected_changed = Signal(str)

    def __init__(self, store: Any, parent: Any = None) -> None:
        super().__init__(parent)
        self.loader = Loader(self)
        self.model = PagedInboxModel(store, self.loader, self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSortingEnabled(False)  # the header asks the model: a new reading
        self.table.verticalHeader().setVisible(False)
        # Every row is one line of the same height: nothing is measured per row.
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search tasks (Ctrl+F)")
        self.search.setAccessibleName("Search tasks")
        self.counts = QLabel()
        self.selected: str | None = None
        self._due = QTimer(self)
        self._due.setSingleShot(True)
        self._due.setInterval(SEARCH_PAUSE_MS)
        self._due.timeout.connect(self._search)
        self.search.textChanged.connect(self._typed)
        self.model.reloaded.connect(self._reloaded)
        self.model.paged.connect(self._reselect)
        self.model.counted.connect(self._say_counts)
        self.table.selectionModel().currentRowChanged.connect(self._row_changed)

    def load(self) -> None:
        self.model.reload()

    def open(self, directory: str | None, open_store: Any) -> None:
        """The first page peeked at, then `open_store(directory)` on a worker (after the peek:
        importing the store's modules alongside would hold the interpreter the peek needs),
        then the store's own reading."""
        self.model.peek(
            directory,
            lambda: self.loader.submit("open", lambda: open_store(directory), self.model.set_store),
        )

    def _typed(self) -> None:
        # A read still on a worker is for words no longer typed: dropped when it comes.
        self.loader.cancel("inbox-read")
        self._due.start()

    def _search(self) -> None:
        self.model.set_search(tuple(self.search.text().casefold().split()))

    def _reloaded(self) -> None:
        self._say_counts()
        self._reselect()

    def _say_counts(self) -> None:
        c = self.model.counts
        words = [t.count(c.total, "task", "tasks"), f"{c.needy:,} need you"]
        if self.model.search or self.model.status:
            words.insert(1, f"{c.matching:,} shown")
        self.counts.setText(" · ".join(words))

    def _reselect(self) -> None:
        """Put the selection back on its task, if it is among the rows read so far."""
        row = self.model.row_of(self.selected)
        current = self.table.selectionModel().currentIndex()
        if row >= 0 and current.row() != row:
            self.table.selectionModel().blockSignals(True)
            self.table.selectRow(row)
            self.table.selectionModel().blockSignals(False)

    def _row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        cell = self.model.row_at(current)
        if cell is not None and cell[0].id != self.selected:
            self.selected = cell[0].id
            self.selected_changed.emit(self.selected)

    def select(self, task_id: str) -> None:
        self.selected = task_id
        self._reselect()
