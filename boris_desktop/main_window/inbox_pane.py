"""The inbox pane: the table of tasks with its model (whole, or in pages: `paging`), its
search box and status filter, its columns' widths and the "Working now" column's clock."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer

from boris_desktop import settings
from boris_desktop.main_window.startup import soon
from boris_desktop.runtime import jobs

if TYPE_CHECKING:
    from boris_desktop.main_window.face import Window

#: The widest a column sized to its contents gets, by column (Status, Budget, Last activity,
#: Working now).
COLUMN_CAP = {1: 180, 3: 150, 4: 140, 5: 170}
#: The search waits this long after each keystroke (the wait starts again at the next): a
#: word typed at speed asks for one search, and the last keystroke shows its rows within
#: about 100 ms on 10,000 tasks (benchmarks/bench_search.py; 150 ms made it 170).
SEARCH_PAUSE_MS = 90
COLUMN_WIDEST = {
    1: "awaiting approval",
    3: "100% exhausted",
    4: "2026-12-03 21:10",
    5: "drafter-7 · 12 s ago",
}
#: How often "Working now" is judged again against the database clock: a lease that runs
#: out without a heartbeat reads as idle within this of its expiry, with no store write.
WORKING_TICK_MS = 500


class InboxPane(QObject):
    """The table of tasks: its model and proxy, how it sorts, sizes and searches."""

    def __init__(self, window: Window) -> None:
        super().__init__(window.owner())
        self.w = window
        self.search_pending = False  # a paged search is read: `searched` when it comes
        self.columns_restored = False
        self.columns_sized = False
        self.built = False  # `build`: the staged start-up builds the inbox first

    def build(self) -> None:
        """The model behind the table (until now only its column titles), how the table
        behaves, and the timers that follow the reviewer's typing and the clock."""
        from boris_desktop.inbox.table import InboxFilter, InboxModel
        from boris_desktop.ui.icons import icon

        if self.built:
            return
        self.built = True
        w = self.w
        w.inbox = InboxModel(w.owner())
        w.proxy = InboxFilter(w.owner())
        w.proxy.setSourceModel(w.inbox)
        w.table.setModel(w.proxy)
        w.titles.deleteLater()
        self._table_behaviour()
        self._columns()
        w.table.selectionModel().currentRowChanged.connect(w.row_changed)
        # A filter that hid the selected task and shows it again gives it back its
        # selection; after a sort or a filter the selected row is scrolled into view.
        self.reselect = soon(self, w.select_row)
        w.proxy.rowsInserted.connect(lambda *_: self.reselect.start())
        w.proxy.layoutChanged.connect(lambda *_: self.reselect.start())
        self.to_selected = soon(self, w.scroll_to_selected)
        # The search waits for a pause in the typing, then picks the rows on a worker.
        self.search_due = QTimer(self)
        self.search_due.setSingleShot(True)
        self.search_due.setInterval(SEARCH_PAUSE_MS)
        self.search_due.timeout.connect(self.search)
        # "Working now" follows the database clock between reads: the cells in sight are
        # painted again each tick (a repaint asks only them; no dataChanged for every row).
        self.working_tick = QTimer(self)
        self.working_tick.setInterval(WORKING_TICK_MS)
        self.working_tick.timeout.connect(w.table.viewport().update)
        self.working_tick.start()
        w.inbox.reviewer_id = (settings.reviewer() or (None, None))[1]
        w.search.textChanged.connect(self.typed)
        w.status_filter.currentIndexChanged.connect(lambda *_: self.to_selected.start())
        w.table.horizontalHeader().sortIndicatorChanged.connect(lambda *_: self.to_selected.start())
        w.search.returnPressed.connect(w.table.setFocus)
        w.status_filter.addItem(icon("attention"), "Needs you", InboxFilter.NEEDS_YOU)
        w.status_filter.currentIndexChanged.connect(self.status_chosen)

    def _table_behaviour(self) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QAbstractItemView, QHeaderView

        from boris_desktop.inbox.table import NEEDS

        table = self.w.table
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        table.setSortingEnabled(True)
        table.sortByColumn(NEEDS, Qt.SortOrder.DescendingOrder)
        table.setWordWrap(False)
        table.setAlternatingRowColors(True)
        # Tab leaves the inbox: walking its cells would silently change the selected task.
        table.setTabKeyNavigation(False)
        rows = table.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(table.fontMetrics().height() + 8)

    def _columns(self) -> None:
        """The title and what needs the reviewer share the width; status, budget and time
        keep theirs: at 1024 pixels every column is in sight, no horizontal scroll."""
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QHeaderView

        from boris_desktop.inbox.table import NEEDS, TITLE

        table = self.w.table
        columns = table.horizontalHeader()
        columns.setStretchLastSection(False)
        columns.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for col in (TITLE, NEEDS):
            columns.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        table.setTextElideMode(Qt.TextElideMode.ElideMiddle)

    def restore_columns(self) -> None:
        """The columns as the reviewer last left them (widths, order, the sort)."""
        columns = settings.layout("main/inbox_columns")
        header = self.w.table.horizontalHeader()
        if columns is not None and header.restoreState(columns):
            self.columns_restored = True
            self.w.table.sortByColumn(header.sortIndicatorSection(), header.sortIndicatorOrder())

    def size_columns(self) -> None:
        """Sized once, for the longest words the column shows beside their icon, even if no
        row shows them yet (an exhausted budget must not be cut off), and capped: the title
        and what needs you take the rest of the width. Not from the rows: Qt would ask the
        model for each cell sampled, a call into Python each (with a worker reading, each
        waits for the interpreter lock)."""
        from boris_desktop.inbox.table import ACTIVITY, BUDGET, STATUS, WORKING

        if self.columns_sized or self.columns_restored:
            return
        self.columns_sized = True
        header = self.w.table.horizontalHeader()
        fm = self.w.table.fontMetrics()
        for col in (STATUS, BUDGET, ACTIVITY, WORKING):
            least = fm.horizontalAdvance(COLUMN_WIDEST[col]) + 36
            width = min(max(header.sectionSizeHint(col), least), COLUMN_CAP[col])
            header.resizeSection(col, width)

    def status_filter_items(self, statuses: list[str]) -> None:
        """The status filter offers the statuses the store's tasks have, keeping the choice."""
        box = self.w.status_filter
        have = [box.itemData(i) for i in range(2, box.count())]
        if have != statuses:
            keep = box.currentData()
            box.blockSignals(True)
            while box.count() > 2:
                box.removeItem(2)
            from boris_desktop.ui.icons import status_icon, words

            for s in statuses:
                box.addItem(status_icon(s), words(s), s)
            box.setCurrentIndex(max(box.findData(keep), 0))
            box.blockSignals(False)

    def status_chosen(self, *_: Any) -> None:
        status = self.w.status_filter.currentData()
        if self.w.paged:
            self.w.pages.set_status(status)
        else:
            self.w.proxy.set_status(status)

    # --- the search ----------------------------------------------------------------------

    def typed(self) -> None:
        """A keystroke: a search still on a worker is for words no longer typed, so its
        result is dropped (nothing applied for them); the pause starts again."""
        self.w.loader.cancel("search")
        pause = SEARCH_PAUSE_MS
        if self.w.paged:  # SQL on a worker, a keystroke's read dropped by the next
            from boris_desktop.inbox import pages

            pause = pages.SEARCH_PAUSE_MS
            self.w.loader.cancel("inbox-read")
        self.search_due.setInterval(pause)
        self.search_due.start()

    def search(self) -> None:
        """Pick the rows matching the search box on a worker; a newer search supersedes it
        (the loader drops its result), a reload meanwhile makes the model pick them again."""
        from boris_desktop.inbox.table import search_words

        w = self.w
        wanted = search_words(w.search.text())
        if w.paged:  # by SQL, on a worker (the model's); `searched` when it is in
            self.search_pending = True
            w.pages.set_search(wanted)
            return
        every, held, revision = w.inbox.all_rows, list(w.inbox.rows), w.inbox.revision
        w.loader.submit(
            "search",
            lambda: jobs.search(every, wanted, held, revision),
            self.searched,
            w.failed,
        )

    def searched(self, result: Any) -> None:
        w = self.w
        wanted, planned = result
        w.inbox.show_matching(wanted, planned)
        if w.inbox.row_of(w.selected) < 0 and w.proxy.rowCount():
            # The search hid the selected task: a shown one is selected, as when a few
            # rows go (the view moves its cursor on); after a reset there is no cursor.
            w.table.setCurrentIndex(w.proxy.index(0, 0))
        w.searched.emit()
        self.to_selected.start()

    def paged_searched(self) -> None:
        """A paged search's rows came (`Paging.read`): as `searched` says it."""
        if not self.search_pending:
            return
        self.search_pending = False
        w = self.w
        if w.pages.row_of(w.selected) < 0 and w.proxy.rowCount():
            w.table.setCurrentIndex(w.proxy.index(0, 0))  # as `searched`
        w.searched.emit()

    def shown(self) -> jobs.Shown:
        """The inbox's order, a copy of its row list (the rows themselves are never changed
        in place, so a worker may read them), its revision and its search."""
        inbox = self.w.inbox
        return inbox.order, list(inbox.rows), inbox.revision, inbox.search
