"""The main window: the inbox of tasks beside the selected task's view.

Every read runs on a worker (`loader`): the GUI thread never waits on the database, on
hashing or on highlighting. On a team store (PostgreSQL) the window hears every commit from
the server (`live`, LISTEN/NOTIFY on a worker thread) and reloads the tasks it touched and the
inbox at once; on an SQLite file a one-second poll of the store's data version notices writes
from other processes. An update keeps the reviewer's selection and scroll position.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

# Only what the first paint needs is imported here. Touching `Qt` builds every enum of Qt's
# namespace (about 20 ms here), and a Python item model on a visible view makes Qt call
# into Python during that paint, which touches it: both wait until `_finish`, right after
# the first paint. The inbox model, the filters' logic, the menus, the file watcher and the
# task view come then.
from PySide6.QtCore import QEvent, QModelIndex, QObject, QTimer, Signal
from PySide6.QtGui import QFont, QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from boris_desktop import settings
from boris_desktop.runtime import jobs
from boris_desktop.runtime.interpreter import discover_widget_types
from boris_desktop.runtime.loader import Loader

if TYPE_CHECKING:
    from boris_desktop.inbox.pages import PagedInboxModel
    from boris_desktop.inbox.table import InboxFilter, InboxModel
    from boris_desktop.runtime.task_watch import TaskFileWatcher
    from boris_desktop.task.view import TaskView
    from store.api import Store

EMPTY, TASK, NOTHING, NO_DECISION = range(4)
#: The inbox's column titles (inbox.COLUMNS, kept equal by a test): the first paint shows
#: them before the inbox module and its model are loaded.
COLUMN_TITLES = ("Title", "Status", "Needs you", "Budget", "Last activity", "Working now")
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
#: A store with more tasks than this has its inbox read in pages (boris_desktop.inbox.pages:
#: the database sorts, filters, searches and counts) instead of whole into memory.
PAGED_FROM = 5_000
#: "always" or "never" overrides the count (tests, benchmarks); anything else: the count.
PAGED_VARIABLE = "BORIS_DESKTOP_PAGED_INBOX"


def paged_mode() -> str:
    mode = os.environ.get(PAGED_VARIABLE, "").strip().lower()
    return mode if mode in ("always", "never") else "auto"


class MainWindow(QMainWindow):
    store_opened = Signal()
    loaded = Signal()  # the inbox (and task, if any) reflect the store
    peeked = Signal()  # the inbox lists the tasks read before the store was open
    finished = Signal()  # built whole (see `staged`)
    searched = Signal()  # the inbox shows the rows matching the search box

    def __init__(
        self, store: Store | None = None, *, poll_ms: int = 1000, staged: bool = False
    ) -> None:
        """`staged`: build only what the first paint shows, and the rest right after it
        (start-up); otherwise everything now (screenshots, tests, embedding)."""
        super().__init__()
        self.store: Store | None = None
        #: A demo store of its own (`boris-desktop --demo`): when new, the demo makes it as
        #: `boris init` would (signed, the reviewer's key its root), so they say who they are
        #: first (`load_demo`).
        self.demo_store = False
        self._reviewer_dialog: Any = None
        self.loader = Loader(self)
        self.selected: str | None = None
        self._version: int | None = None
        self._needy = 0  # tasks that need the reviewer, as of the last inbox read
        #: The inbox is read in pages (PagedInboxModel) rather than whole (see PAGED_FROM).
        self.paged = False
        self._search_pending = False  # a paged search is read: `searched` when it comes
        self._sizing = False  # the tasks are counted (PAGED_FROM): no inbox read meanwhile
        self._follow_due = False  # the queue and history start with the first inbox load
        self._built = False
        self._columns_restored = False
        self._columns_sized = False
        self._poll_ms = poll_ms
        self.setWindowTitle("Boris Desktop")

        self.table = QTableView()
        self.table.setAccessibleName("Tasks")
        self._titles = QStandardItemModel(0, len(COLUMN_TITLES), self)
        self._titles.setHorizontalHeaderLabels(list(COLUMN_TITLES))
        self.table.setModel(self._titles)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setColumnWidth(0, 340)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search tasks (Ctrl+F)")
        self.search.setAccessibleName("Search tasks")
        self.search.setClearButtonEnabled(True)
        self.status_filter = QComboBox()
        self.status_filter.setAccessibleName("Filter tasks by status")
        self.status_filter.addItem("All statuses", None)
        title = QLabel("Tasks, most in need of you first")
        font = QFont(title.font())
        font.setBold(True)
        title.setFont(font)
        filters = QHBoxLayout()
        filters.addWidget(title)
        filters.addStretch(1)
        filters.addWidget(self.search, 1)
        filters.addWidget(self.status_filter)
        self.left = QWidget()
        lcol = QVBoxLayout(self.left)
        lcol.setContentsMargins(6, 6, 6, 0)
        lcol.addLayout(filters)
        lcol.addWidget(self.table, 1)

        self.right = QStackedWidget()
        self.nothing = QLabel("Opening the store…")
        opening = QWidget()
        row = QHBoxLayout(opening)
        row.addStretch(1)
        row.addWidget(self.nothing)
        row.addStretch(1)
        self._opening = opening
        self.right.addWidget(opening)
        # Until `_finish`: the inbox above the task, in the proportions the splitter keeps.
        shell = QWidget()
        col = QVBoxLayout(shell)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.left, 17)
        col.addWidget(self.right, 61)
        self.setCentralWidget(shell)
        # The menus' titles are on the first paint; their actions come with `_finish`.
        bar = self.menuBar()
        self._menu_titles = [bar.addMenu(t) for t in ("&File", "&View", "&Actions", "&Help")]
        self.statusBar().showMessage("Opening the store…")
        self._store_to_set = store
        self._staged = staged
        self._open_when_built: tuple[str | None] | None = None  # asked before `_finish`
        self._early: _EarlyPeek | None = None  # the first look, read while building
        if not staged:
            discover_widget_types()  # as the staged start-up does before any task is read
        if staged:
            # The window's own paint starts the pass that paints all of it. (Not the table's
            # viewport: wrapping it for Python costs ~13 ms here.)
            self._first_paint = _FirstPaint(self, self._finish_soon)
        else:
            self._finish()

    def _finish_soon(self) -> None:
        if self._open_when_built is not None and self._store_to_set is None:
            # A turn after the paint, not within it: the worker's start (its imports) made
            # the paint's own pass wait for the interpreter lock. Before the first turn of
            # the build: after it, the worker started 60-80 ms later.
            directory = self._open_when_built[0]
            self._peek_timer = _soon(self, lambda: self._peek_early(directory))
            self._peek_timer.start()
        self._warm_up = list(WARM_UP)
        # A timer the window owns: it dies with the window, so it never fires on a dead one.
        self._finish_timer = _soon(self, self._finish_step)
        self._finish_timer.start()

    def _peek_early(self, directory: str | None) -> None:
        """The first look (store.reads.peek, no SQLAlchemy) read while the rest of the window
        is built: it waited for the build (0.2-0.7 s under load on 100,000 tasks), and its
        SQL runs with the interpreter lock released, beside the build's imports. The store
        itself still opens after the build (`open_store`)."""
        if self._built or self._open_when_built != (directory,):
            return  # opened (or asked for another store) meanwhile: `open_store` peeks
        # The order a new inbox shows (by need, its column here: importing boris_desktop.
        # inbox.table on the worker raced the build's own imports for the lock) and no rows
        # held (revision -1: nothing planned against it). Should the model's order differ,
        # it sorts and compares the rows itself (InboxModel.set_rows).
        shown: jobs.Shown = ((COLUMN_TITLES.index("Needs you"), True), [], -1, ())
        mode = paged_mode()

        def read() -> dict[str, Any] | None:
            return jobs.peek_inbox(directory, shown, mode, PAGED_FROM)

        self._early = _EarlyPeek(directory)
        self.loader.submit("peek", read, self._early_in, lambda _e: self._early_in(None))

    def _early_in(self, result: dict[str, Any] | None) -> None:
        early = self._early
        if early is None:
            return
        early.done, early.result = True, result
        if early.asked:  # `open_store` came (built) and waits for it
            self._early = None
            self._peeked_then_open(early.directory, result)

    def _finish_step(self) -> None:
        """One turn of the staged start-up: the next modules `_finish` needs, or `_finish`."""
        if self._built:
            return
        if self._warm_up:
            self._warm_up.pop(0)()
            self._finish_timer.start()
            return
        self._finish()

    def _finish(self) -> None:
        """Everything the first paint did not need: the models, filters, menus, the file
        watcher and the page for the task view."""
        if self._built:
            return
        self._built = True
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QPushButton, QSplitter

        from boris_desktop.inbox.table import NEEDS, TITLE, InboxFilter, InboxModel
        from boris_desktop.runtime.task_watch import TaskFileWatcher
        from boris_desktop.ui.icons import icon
        from boris_desktop.ui.widgets import plain_label

        self.setWindowIcon(icon("app"))
        self.inbox: InboxModel = InboxModel(self)
        self.proxy: InboxFilter = InboxFilter(self)
        self.proxy.setSourceModel(self.inbox)
        self.table.setModel(self.proxy)
        self._titles.deleteLater()
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(NEEDS, Qt.SortOrder.DescendingOrder)
        self.table.setWordWrap(False)
        self.table.setAlternatingRowColors(True)
        # Tab leaves the inbox: walking its cells would silently change the selected task.
        self.table.setTabKeyNavigation(False)
        rows = self.table.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        # The title and what needs the reviewer share the width; status, budget and time
        # keep theirs: at 1024 pixels every column is in sight, no horizontal scroll.
        columns = self.table.horizontalHeader()
        columns.setStretchLastSection(False)
        columns.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for col in (TITLE, NEEDS):
            columns.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.selectionModel().currentRowChanged.connect(self._row_changed)
        # A filter that hid the selected task and shows it again gives it back its selection;
        # after a sort or a filter the selected row is scrolled into view.
        self._reselect = _soon(self, self._select_row)
        self.proxy.rowsInserted.connect(lambda *_: self._reselect.start())
        self.proxy.layoutChanged.connect(lambda *_: self._reselect.start())
        self._to_selected = _soon(self, self.scroll_to_selected)
        # The search waits for a pause in the typing, then picks the rows on a worker.
        self._search_due = QTimer(self)
        self._search_due.setSingleShot(True)
        self._search_due.setInterval(SEARCH_PAUSE_MS)
        self._search_due.timeout.connect(self._search)
        # "Working now" follows the database clock between reads: the cells in sight are
        # painted again each tick (a repaint asks only them; no dataChanged for every row).
        self._working_tick = QTimer(self)
        self._working_tick.setInterval(WORKING_TICK_MS)
        self._working_tick.timeout.connect(self.table.viewport().update)
        self._working_tick.start()
        self.inbox.reviewer_id = (settings.reviewer() or (None, None))[1]
        self.search.textChanged.connect(self._typed)
        self.status_filter.currentIndexChanged.connect(lambda *_: self._to_selected.start())
        self.table.horizontalHeader().sortIndicatorChanged.connect(
            lambda *_: self._to_selected.start()
        )
        self.search.returnPressed.connect(self.table.setFocus)
        self.status_filter.addItem(icon("attention"), "Needs you", InboxFilter.NEEDS_YOU)
        self.status_filter.currentIndexChanged.connect(self._status_chosen)

        self._task_view: TaskView | None = None
        self._parts_moved: set[str] = set()  # parts whose split the reviewer dragged
        self.empty_button = QPushButton("Load the demo tasks")
        self.empty_button.setAccessibleName("Load the demo tasks")
        self.empty_button.clicked.connect(self.load_demo)
        empty = QWidget()
        ecol = QVBoxLayout(empty)
        ecol.addStretch(1)
        self.empty_text = plain_label(
            "This store has no tasks yet. Agents add tasks as they work; to look around first, "
            "load the demo tasks: a reference guide with a stale criterion, a missing log, an "
            "upload with an unknown outcome and a forked lineage, and a project note whose save "
            "the tool called a success."
        )
        self.empty_text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        ecol.addWidget(self.empty_text)
        ecol.addWidget(self.empty_button, 0, Qt.AlignmentFlag.AlignHCenter)
        ecol.addStretch(1)
        self.nothing.setTextFormat(Qt.TextFormat.PlainText)  # it may show an error's text
        self.right.insertWidget(EMPTY, empty)
        self.right.insertWidget(TASK, QWidget())  # the task view, built when first needed
        # The Decisions tab with no decision selected: no task below, rather than one the
        # queue does not select.
        self.no_decision = plain_label("Select a decision above to see its task here.")
        self.no_decision.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.no_decision.setAccessibleName("No decision selected: select a decision")
        self.right.insertWidget(NO_DECISION, self.no_decision)
        self.right.setCurrentIndex(NOTHING)
        # The decision the pane shows (the queue in front), whether its part is still to be
        # brought to the front, and what waits for its task's record (Enter's dialog).
        self._pane_for: dict[str, Any] | None = None
        self._part_due = False
        self._then: Callable[[dict[str, Any]], None] | None = None

        # The inbox spans the window's width above the task: its columns stay readable and
        # the task's tables, previews and diffs get the whole width. The inbox is tall
        # enough for a queue (see `_default_split`); a taller window goes to the task.
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.setChildrenCollapsible(False)
        # The task inbox and, beside it, the queue of open decisions across tasks.
        from PySide6.QtWidgets import QTabWidget

        from boris_desktop.queue.decisions import DecisionQueue

        self.views = QTabWidget()
        self.views.setDocumentMode(True)
        self.views.setAccessibleName("Tasks or decisions")
        self.views.addTab(self.left, icon("attention"), "&Tasks")
        self.queue = DecisionQueue(self)
        self.queue.set_paged(self.paged)
        self.views.addTab(self.queue, icon("approval"), "&Decisions")
        self.queue.updated.connect(self._queue_updated)
        self.queue.show_task.connect(self.show_task)
        # The pane below the queue is the selected decision's task (see `show_decision`).
        self.queue.current_decision.connect(self._decision_selected)
        self.queue.pane = self.show_decision
        self.views.currentChanged.connect(self._view_changed)
        for said in (
            self.queue.proxy.rowsInserted,
            self.queue.proxy.rowsRemoved,
            self.queue.proxy.modelReset,
        ):
            said.connect(lambda *_: self._say_no_decision())
        from boris_desktop.runtime.notifications import Notifier

        self.notifier = Notifier(self.open_decision, self)
        self.queue.updated.connect(self.notifier.update)
        from boris_desktop.history.decided import HistoryView

        self.history = HistoryView(self)
        self.views.addTab(self.history, icon("ok"), "&What I Decided")
        self.history.show_event.connect(self.show_event)
        self.history.current_task.connect(self._select_task)
        self.split.addWidget(self.views)
        self.split.addWidget(self.right)
        self.split.setStretchFactor(0, 0)
        self.split.setStretchFactor(1, 1)
        self.setCentralWidget(self.split)  # the shell it replaces is deleted, empty now
        self._layout_restored = self._restore_layout()
        self._split_timer = _soon(self, self._default_split)
        if not self._layout_restored:
            self._default_split()
        self._menus()
        # The files of the task on screen: changes are marked at once and recorded.
        self.file_watch: TaskFileWatcher = TaskFileWatcher(self.loader, self)
        self.file_watch.marks_changed.connect(self._disk_marks)
        self.file_watch.recorded.connect(lambda _obs: self.reload())
        self.statusBar().addPermanentWidget(self.file_watch.indicator)

        self._timer = QTimer(self)
        self._timer.setInterval(self._poll_ms)
        self._timer.timeout.connect(self._poll)
        # A team store's commits, heard from the server: no polling (see boris_desktop.runtime.live).
        from boris_desktop.runtime.live import StoreFeed

        self.live = StoreFeed(self)
        self.live.changed.connect(self._heard)
        self.live.state_changed.connect(lambda _s: self._status())
        self._due: tuple[set[str], bool] = (set(), False)  # heard, not yet reloaded
        self._due_retry = QTimer(self)  # after the load in flight, never instead of it
        self._due_retry.setSingleShot(True)
        self._due_retry.setInterval(15)
        self._due_retry.timeout.connect(self._reload_heard)
        store, self._store_to_set = self._store_to_set, None
        if store is not None:
            self.set_store(store)
        if self._open_when_built is not None:
            self.open_store(self._open_when_built[0])
        self.finished.emit()

    @property
    def task_view(self) -> TaskView:
        """Built on first use, after the first paint: its panels are most of the start-up."""
        if self._task_view is None:
            from boris_desktop.task.view import TaskView

            self._task_view = TaskView(self.loader)
            self._task_view.set_store(self.store)
            placeholder = self.right.widget(TASK)
            self.right.insertWidget(TASK, self._task_view)
            if placeholder is not None:
                self.right.removeWidget(placeholder)
                placeholder.deleteLater()
            for panel in self._task_view.panels.values():
                tree = getattr(panel, "tree", None)
                if tree is not None:
                    tree.selectionModel().currentChanged.connect(
                        lambda *_: self.menu_actions.update()
                    )
            self._restore_part_splits()
        return self._task_view

    def _restore_part_splits(self) -> None:
        """Each part's split (list, detail; the lineage graph) as the reviewer last dragged
        it; a part never dragged keeps sizing itself to its content."""
        from boris_desktop.task.panels.checkpoints import CheckpointsPanel

        assert self._task_view is not None
        for title, panel in self._task_view.panels.items():
            split = getattr(panel, "split", None)
            if split is None:
                continue
            state = settings.layout(f"part/{title}/split")
            if state is not None and split.restoreState(state):
                self._parts_moved.add(title)
                if isinstance(panel, CheckpointsPanel):
                    panel.keep_graph_height()
            split.splitterMoved.connect(lambda *_, t=title: self._parts_moved.add(t))

    # --- menus ---------------------------------------------------------------------------

    def _menus(self) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QAction, QKeySequence

        file, view, actions, help_ = self._menu_titles
        act = QAction("&Open Store…", self)
        act.setShortcut(QKeySequence.StandardKey.Open)
        act.triggered.connect(self._choose_store)
        file.addAction(act)
        self.recent_menu = file.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self.demo_action = QAction("Load &Demo Tasks", self)
        self.demo_action.triggered.connect(self.load_demo)
        file.addAction(self.demo_action)
        file.addSeparator()
        who = QAction("&Reviewer…", self)
        who.triggered.connect(self.ask_reviewer)
        file.addAction(who)
        self.export_key_action = QAction("Export My Public &Key…", self)
        self.export_key_action.setToolTip(
            "Your public key as a keys-file line, for others to trust or verify your decisions"
        )
        self.export_key_action.triggered.connect(self.export_public_key)
        file.addAction(self.export_key_action)
        file.addSeparator()
        quit_ = QAction("&Quit", self)
        quit_.setShortcut(QKeySequence.StandardKey.Quit)
        quit_.triggered.connect(self.close)
        file.addAction(quit_)
        reload_ = QAction("&Reload", self)
        # F5 (and a keyboard's Refresh key) on every desktop, never the platform's Refresh
        # binding: on GNOME that is Ctrl+R as well, Reconcile's key, and a key two actions
        # share opens nothing. Reconcile keeps Ctrl+R (Actions menu), Resume Ctrl+Shift+R.
        reload_.setShortcuts([QKeySequence(Qt.Key.Key_F5), QKeySequence(Qt.Key.Key_Refresh)])
        reload_.triggered.connect(self.reload)
        view.addAction(reload_)
        find = QAction("&Find Task", self)
        find.setShortcut(QKeySequence.StandardKey.Find)
        find.triggered.connect(self._find_task)
        view.addAction(find)
        inbox = QAction("Go to &Inbox", self)
        inbox.setShortcut(QKeySequence("Ctrl+L"))
        inbox.triggered.connect(self.table.setFocus)
        view.addAction(inbox)
        queue = QAction("Go to the &Decision Queue", self)
        queue.setShortcut(QKeySequence("Ctrl+D"))
        queue.triggered.connect(self.show_queue)
        view.addAction(queue)
        mine = QAction("&What I Decided", self)
        mine.setShortcut(QKeySequence("Ctrl+Shift+D"))
        mine.triggered.connect(self.show_history)
        view.addAction(mine)
        notify = QAction("&Notifications…", self)
        notify.triggered.connect(self.notification_settings)
        view.addAction(notify)
        view.addSeparator()
        # Ctrl+Tab and Ctrl+PgDown as in browsers and editors; from anywhere in the window,
        # the inbox included.
        for text, sequences, step in (
            ("&Next Part of the Task", ("Ctrl+Tab", "Ctrl+PgDown"), 1),
            ("&Previous Part of the Task", ("Ctrl+Shift+Tab", "Ctrl+PgUp"), -1),
        ):
            act = QAction(text, self)
            act.setShortcuts([QKeySequence(k) for k in sequences])
            act.triggered.connect(lambda _=False, step=step: self.step_tab(step))
            view.addAction(act)
        from boris_desktop.decide.menu import Actions

        self.menu_actions = Actions(self, actions)
        keys = QAction("&Keyboard Shortcuts", self)
        keys.setShortcut(QKeySequence("Ctrl+/"))
        keys.triggered.connect(self.menu_actions.show_shortcuts)
        help_.addAction(keys)
        about = QAction("&About Boris Desktop", self)
        about.triggered.connect(self.show_about)
        help_.addAction(about)

    def step_tab(self, step: int) -> None:
        """Show the next (1) or previous (-1) part of the task, wrapping around."""
        if self._task_view is None or self.right.currentIndex() != TASK:
            return
        tabs = self._task_view.tabs
        tabs.setCurrentIndex((tabs.currentIndex() + step) % tabs.count())

    def _find_task(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def show_about(self) -> None:
        from boris_desktop.about import show_about

        self._about = show_about(self, getattr(self, "store", None))

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        for d in settings.recent_stores():
            act = self.recent_menu.addAction(d)
            act.triggered.connect(lambda _=False, d=d: self.open_store(d))
        if self.recent_menu.isEmpty():
            self.recent_menu.addAction("(none yet)").setEnabled(False)

    def _choose_store(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        d = QFileDialog.getExistingDirectory(self, "Open a Boris store")
        if d:
            self.open_store(d)

    # --- what the Actions menu asks of the window (host.Window) ---------------------------

    def shown_task(self) -> dict[str, Any] | None:
        tv = self._task_view
        if tv is None or tv.bundle is None or tv.task_id != self.selected:
            return None
        task: dict[str, Any] = tv.bundle["task"]
        return task

    def current_key(self, part: str) -> Any:
        # The selection as the panel holds it (by key), not filled first: asked on every
        # task shown, filling would undo the task view's filling in turns.
        from boris_desktop.task.panels.base import TreePanel

        panel = self.task_view.panels[part]
        if not isinstance(panel, TreePanel):
            # A part that is not a tree says what is selected in it, if it can (Budgets).
            current = getattr(panel, "current_key", None)
            return current() if callable(current) else None
        node = panel.tree.current_node()
        while node is not None and node.parent is not None:
            node = node.parent
        return node.key if node is not None else None

    def stop_task(self) -> Any:
        """Open the stop dialog for the task on screen (the checkpoint dialog's way out)."""
        return self.menu_actions.stop_task()

    def ask_reviewer(self) -> Any:
        from boris_desktop.identity import ReviewerDialog

        open_ = self._reviewer_dialog
        if open_ is not None and open_.isVisible():
            return open_  # asked already (the demo store and start-up both ask): one dialog
        dlg = ReviewerDialog(self)
        dlg.finished.connect(lambda _r: self._reviewer_changed())
        dlg.open()
        self._reviewer_dialog = dlg
        return dlg

    def export_public_key(self) -> Any:
        """Ask who the reviewer is first, if nobody said yet: the key is theirs."""
        from boris_desktop.export_key import ExportKeyDialog

        who = settings.reviewer()
        if who is None:
            dlg = self.ask_reviewer()
            dlg.accepted.connect(self.export_public_key)
            return dlg
        self.key_dialog = ExportKeyDialog(self, self.loader, self.store, who)
        self.key_dialog.open()
        return self.key_dialog

    # --- the decision queue --------------------------------------------------------------

    def notification_settings(self) -> Any:
        from boris_desktop.runtime.notify_settings import NotificationSettingsDialog

        dlg = NotificationSettingsDialog(self)
        dlg.open()
        return dlg

    def show_history(self) -> None:
        self.views.setCurrentWidget(self.history)
        self.history.search.setFocus()

    def show_event(self, task_id: str, seq: int) -> None:
        """A decision in What I Decided: its task, at its timeline."""
        self.show_task(task_id)
        tabs = self.task_view.tabs
        for i in range(tabs.count()):
            if tabs.widget(i) is self.task_view.panel("Timeline"):
                tabs.setCurrentIndex(i)
        self.statusBar().showMessage(f"{task_id}: the decision is event {seq} of its timeline")

    def show_queue(self) -> None:
        if self.views.currentWidget() is self.queue:
            self._view_changed(self.views.currentIndex())  # back to the decision's part
        self.views.setCurrentWidget(self.queue)
        self.queue.table.setFocus()

    def _queue_in_front(self) -> bool:
        return self.views.currentWidget() is self.queue

    def _view_changed(self, _index: int) -> None:
        """Tasks, Decisions or What I Decided came to the front: the pane follows it."""
        if self._queue_in_front():
            self.queue.ensure_current()
            self.show_decision(self.queue.current())
            return
        self._pane_for, self._then = None, None
        if self.views.currentWidget() is self.left:
            # The task list's own selection: the task it highlights is the one below.
            row = self.inbox.row_of(self.selected)
            ix = self.proxy.mapFromSource(self.inbox.index(row, 0)) if row >= 0 else None
            if ix is not None and ix.isValid():
                self._select_row()
            else:
                self._row_changed(self.table.currentIndex(), QModelIndex())
        if self.right.currentIndex() == NO_DECISION:
            self._show_task_page()
            self.menu_actions.update()

    def _decision_selected(self, d: dict[str, Any] | None) -> None:
        if self._queue_in_front():
            self.show_decision(d)

    def show_decision(
        self, d: dict[str, Any] | None, then: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        """The pane shows decision `d`'s task, on the part `d` concerns with its row current.
        `then` is called with the task's record once the pane shows it, read afresh for it
        (Enter's dialog: always over the task on screen). No decision: the pane shows none.

        The read is a "load" like any task's: one superseded by a later selection is dropped
        by the loader's token, and one for another task than the selected is not shown."""
        if not self._built:
            return
        from boris_desktop.queue.decisions import KIND_PART

        # Already on its way (the tab shown, then its first row selected): read once.
        on_its_way = (
            then is None
            and d is not None
            and self._pane_for is not None
            and self._pane_for["id"] == d["id"]
            and self.selected == d["task_id"]
            and self.loader.busy("load")
        )
        self._pane_for, self._then = d, then
        if on_its_way:
            self._part_due = True
            return
        if d is None:
            self.selected = None  # no action acts on a task that is not on screen
            self._say_no_decision()
            if self.right.currentIndex() in (TASK, NO_DECISION):
                self.right.setCurrentIndex(NO_DECISION)
            self.menu_actions.update()
            return
        self._part_due = d["kind"] in KIND_PART
        task_id = d["task_id"]
        tv = self._task_view
        if then is None and tv is not None and tv.bundle is not None and tv.task_id == task_id:
            self.selected = task_id
            self._select_row()
            self._pane_shows(tv.bundle)
            return
        self.selected = task_id
        self._select_row()
        self.menu_actions.update()  # until its record is in, no action acts on the task shown
        store = self.store
        if store is None or self._version is None:
            self.reload()
            return
        self.loader.submit(
            "load", lambda: jobs.task_only(store, task_id), self._on_loaded, self._failed
        )

    def _say_no_decision(self) -> None:
        """What the pane says when no decision is selected: why there is none to show."""
        q = self.queue
        if q.proxy.rowCount():
            text = "Select a decision above to see its task here."
        elif q.model.rows:
            text = "No open decision matches the filters above."
        elif q.loaded:
            text = "No open decisions: nothing waits for a person."
        else:
            text = "Reading the open decisions…"
        self.no_decision.setText(text)

    def _pane_shows(self, bundle: dict[str, Any]) -> None:
        """The task view shows `bundle`: if it is the decision's task, its part in front."""
        d = self._pane_for
        if d is None or bundle["task"]["id"] != d["task_id"] or not self._queue_in_front():
            return
        from boris_desktop.queue.decisions import KIND_PART

        self._show_task_page()
        if self._part_due:
            self._part_due = False
            self.task_view.show_part(KIND_PART[d["kind"]], d["key"])
        self.menu_actions.update()
        if self._then is not None:
            then, self._then = self._then, None
            then(bundle["task"])

    def own_write(self, task_id: str) -> None:
        """The reviewer is writing to this task (run_command): not news to them."""
        self.notifier.own_write(task_id)

    def open_decision(self, decision_id: str) -> None:
        """A notification was clicked: the window in front, that decision's dialog open."""
        self.showNormal()
        self.raise_()
        self.activateWindow()
        self.views.setCurrentWidget(self.queue)
        if decision_id:
            self.queue.open_decision(decision_id)
        self.queue.table.setFocus()

    def show_task(self, task_id: str) -> None:
        """Show a task in the inbox (a run to resume: its brief says from where)."""
        self.views.setCurrentWidget(self.left)
        self._select_task(task_id)
        self.table.setFocus()

    def _select_task(self, task_id: str) -> None:
        """Make `task_id` the inbox's current task, so the detail below shows it."""
        row = self.inbox.row_of(task_id)
        if row >= 0:
            ix = self.proxy.mapFromSource(self.inbox.index(row, 0))
            if ix.isValid():
                self.table.setCurrentIndex(ix)
        elif self.paged and self.store is not None and task_id != self.selected:
            # Not among the pages read so far: shown below all the same.
            self.selected = task_id
            self.reload()

    def _queue_updated(self, rows: list[dict[str, Any]], now: str) -> None:
        n = self.queue.total()  # paged: the database's count, not the rows read
        self.views.setTabText(1, f"&Decisions ({n})" if n else "&Decisions")
        self._say_no_decision()

    def _reviewer_changed(self) -> None:
        self._show_reviewer()
        if self._built:
            self.inbox.reviewer_id = (settings.reviewer() or (None, None))[1]
        self.history.start()  # the list is this reviewer's decisions

    def _show_reviewer(self) -> None:
        who = settings.reviewer()
        self.reviewer_label = f"Reviewer: {who[0]} ({who[1]})" if who else "Reviewer: not set"
        self._status()

    # --- the store -----------------------------------------------------------------------

    def open_store(self, directory: str | None) -> None:
        """Open (or create) a store on a worker; the window stays responsive meanwhile.

        Asked before a staged window is painted and built, the worker starts after that:
        opening imports SQLAlchemy, and a worker holding the GIL made the first paint and
        the build after it wait (the build took 80 ms instead of 40)."""
        if not self._built:
            self._open_when_built = (directory,)
            return
        self._open_when_built = None
        self.statusBar().showMessage(f"Opening {directory or 'the default store'}…")

        early, self._early = self._early, None
        if self.store is not None:
            self._open_on_worker(directory)
            return
        if early is not None and early.directory == directory:
            if early.done:
                self._peeked_then_open(directory, early.result)
            else:  # read since the first paint (`_peek_early`): `_early_in` goes on
                early.asked = True
                self._early = early
            return

        # First the tasks, read with the standard library (store.reads.peek: 10 ms on the
        # demo store, 110 ms on 10,000 tasks), then the store's modules load while they are
        # on screen. Side by side, the two threads shared the GIL and the tasks came no
        # sooner than the store. Nothing can be done with them until the store is open.
        shown, mode = self._shown(), paged_mode()
        self.loader.submit(
            "peek",
            lambda: jobs.peek_inbox(directory, shown, mode, PAGED_FROM),
            lambda result: self._peeked_then_open(directory, result),
            lambda _e: self._open_on_worker(directory),
        )

    def _peeked_then_open(self, directory: str | None, result: dict[str, Any] | None) -> None:
        self._on_peeked(result)
        self._open_on_worker(directory)

    def _open_on_worker(self, directory: str | None) -> None:
        self.loader.submit("open", lambda: jobs.open_store(directory), self.set_store, self._failed)

    def _on_peeked(self, result: dict[str, Any] | None) -> None:
        if result is not None and result.get("paged"):
            if self.store is None and not self.inbox.all_rows:
                self._use_paged(True)
                self.pages.show_peeked(result)  # `_paged_read` says and paints it
            return
        tasks = result["tasks"] if result else None
        if self.store is not None or not tasks or self.inbox.all_rows:
            return  # the store came first, or there is nothing to show
        assert result is not None
        self.inbox.set_rows(tasks, result["order"], result["planned"])
        self._size_columns()
        self.statusBar().showMessage(f"{len(tasks)} tasks; opening the store…")
        # Painted now, before the store's worker starts loading modules: sharing the GIL
        # with it, the same paint took four times as long (bench_desktop_big.py).
        self.repaint()
        self.peeked.emit()

    def set_store(self, store: Store) -> None:
        if not self._built:
            self._store_to_set = store  # opened before the first paint: set once built
            return
        old, self.store = self.store, store
        if old is None:
            import gc

            # The window is built and the store's modules are loaded: those objects are
            # there for good. Left in the collector's oldest generation until the first task
            # was shown (app.py freezes what start-up made then), they made one full
            # collection hold the interpreter lock for 87 ms on the worker reading that
            # task, the window standing still (100,000 tasks).
            gc.freeze()
        for kind in ("load", "brief"):
            self.loader.cancel(kind)
        if old is not None and old is not store:
            self.loader.submit("close", old.close, lambda _r: None)
        if old is not None:
            # Another store: nothing of the last one's stays on screen. (After a first look,
            # store.reads.peek, its rows and the reviewer's choice among them stay.)
            self.selected = None
            self._use_paged(False)
            self.inbox.set_rows([])
        self._version = None
        self.loader.cancel("peek")
        self._early = None
        self.file_watch.clear()
        if self._task_view is not None:
            self._task_view.set_store(store)
        self.setWindowTitle(f"Boris Desktop — {store.location.describe()}")
        if store.location.sqlite_file is not None:
            settings.remember_store(str(store.location.directory))
        self._show_reviewer()
        self._due = (set(), False)
        self._choose_inbox()
        if self.live.start(store):
            self._timer.stop()
        else:
            self._timer.start()
        self.notifier.reset(store.location.describe())
        # The queue and the history read once the inbox is in: three big reads at once on a
        # big store make every call the GUI thread makes into Python wait for the interpreter
        # lock behind two workers (benchmarks/bench_queue.py), and the inbox is painted first.
        self._follow_due = True
        self.store_opened.emit()

    # --- the inbox in pages (issue 36 part W) ---------------------------------------------

    @property
    def pages(self) -> PagedInboxModel:
        """The inbox model, when it reads in pages (`self.paged`)."""
        from boris_desktop.inbox.pages import PagedInboxModel

        assert isinstance(self.inbox, PagedInboxModel)
        return self.inbox

    def _choose_inbox(self) -> None:
        """Read the inbox whole or in pages (PAGED_FROM), the tasks counted on a worker."""
        mode = paged_mode()
        if mode != "auto":
            self._use_paged(mode == "always")
            self.reload()
            return
        self._sizing = True
        store = self.store
        self.loader.submit(
            "inbox-size", lambda: jobs.inbox_size(store), self._sized, lambda _e: self._sized(0)
        )

    def _sized(self, tasks: int) -> None:
        self._sizing = False
        self._use_paged(tasks > PAGED_FROM)
        self.reload()

    def _use_paged(self, on: bool) -> None:
        """Put a paged (or a whole) inbox model behind the table, in the order shown."""
        if on == self.paged:
            if on:
                self.pages.store = self.store
            return
        from boris_desktop.inbox.table import InboxModel

        old = self.inbox
        model: InboxModel
        paged: PagedInboxModel | None = None
        if on:
            from boris_desktop.inbox.pages import PagedInboxModel

            model = paged = PagedInboxModel(None, self.loader, self)
            paged.reloaded.connect(self._paged_read)
            paged.paged.connect(self._select_row)
            paged.counted.connect(self._status)
        else:
            for kind in ("inbox-read", "inbox-page", "inbox-count", "inbox-peek"):
                self.loader.cancel(kind)
            model = InboxModel(self)
        model.reviewer_id = old.reviewer_id
        column, descending = old.order
        model.sort(column, self._order_of(descending))
        if paged is not None:
            paged.store = self.store  # after `sort`: the first reading comes with `reload`
        self.paged = on
        # A store big enough for an inbox in pages has a queue in pages too (a staged
        # window's queue, built later, asks `self.paged` then).
        if hasattr(self, "queue"):
            self.queue.set_paged(on)
        self.inbox = model
        self.proxy.setSourceModel(model)
        # The paged model filters by status itself (by SQL); the whole one through the proxy.
        self.proxy.set_status(None if on else self.status_filter.currentData())
        old.deleteLater()

    @staticmethod
    def _order_of(descending: bool) -> Any:
        from PySide6.QtCore import Qt

        return Qt.SortOrder.DescendingOrder if descending else Qt.SortOrder.AscendingOrder

    def _status_chosen(self, *_: Any) -> None:
        status = self.status_filter.currentData()
        if self.paged:
            self.pages.set_status(status)
        else:
            self.proxy.set_status(status)

    def _paged_loaded(self, result: dict[str, Any]) -> None:
        """A paged refresh: the statuses and the selected task; the pages read again."""
        self._version = result["version"]
        self.inbox.clock.set(result.get("now"))
        self._status_filter_items(result["statuses"])
        self._start_following()
        self.empty_button.setEnabled(True)
        if result.get("task_id") and "bundle" not in result and result["task_id"] == self.selected:
            self.selected = None  # deleted meanwhile: the top task is selected instead
        self.pages.reload()  # keeps as many rows as are held
        if "bundle" in result:
            self._show_task(result)
        else:
            self._status()

    def _paged_read(self) -> None:
        """The paged model's rows came (a first page, a search, a filter, a refresh)."""
        from boris_desktop.inbox.table import ID_ROLE

        model = self.pages
        if model.rows:
            self._size_columns()
        self._select_row()
        if self._search_pending:
            self._search_pending = False
            if model.row_of(self.selected) < 0 and self.proxy.rowCount():
                self.table.setCurrentIndex(self.proxy.index(0, 0))  # as `_searched`
            self.searched.emit()
        if self.store is None:  # a first look, before the store is open (`_on_peeked`)
            self.statusBar().showMessage(f"{model.counts['total']:,} tasks; opening the store…")
            self.repaint()
            self.peeked.emit()
            return
        self._status()
        if model.view is None:
            return
        if not model.counts["total"]:
            self.right.setCurrentIndex(EMPTY)
            self.loaded.emit()
            return
        if self.right.currentIndex() in (NOTHING, EMPTY):
            if self._task_view is None and self._staged:
                self._build_view = _soon(self, self._show_task_page)
                self._build_view.start()
            else:
                self._show_task_page()
        if (
            model.rows
            and self.selected is None
            and not (self._queue_in_front() and self._pane_for is None)
        ):
            top = self.proxy.index(0, 0)
            self.selected = top.data(ID_ROLE) if top.isValid() else model.rows[0]["id"]
            self._select_row()
            store, task_id = self.store, self.selected
            self.loader.submit(
                "load", lambda: jobs.task_only(store, task_id), self._on_loaded, self._failed
            )

    def load_demo(self) -> None:
        store = self.store
        if store is None:
            return
        demo_store = self.demo_store
        if demo_store and settings.reviewer() is None:
            # A new demo store is signed with the reviewer's own key: who are they?
            dlg = self.ask_reviewer()
            dlg.accepted.connect(self.load_demo)
            return
        self.empty_button.setEnabled(False)
        self.statusBar().showMessage("Loading the demo tasks…")
        self.loader.submit(
            "demo",
            lambda: jobs.fill_demo(store, demo_store=demo_store),
            lambda _ids: self.reload(),
            self._failed,
        )

    # --- loading -------------------------------------------------------------------------

    def reload(self) -> None:
        """Load the inbox and the selected task now, superseding any load in flight."""
        if self.store is None or self._sizing:
            return
        self.loader.submit(
            "load", self._refresh_job(self.selected, None), self._on_loaded, self._failed
        )

    def _refresh_job(self, task_id: str | None, known: int | None) -> Callable[[], Any]:
        """What a worker reads to refresh: the whole inbox, or (paged) only the task and the
        statuses; the paged model reads its own pages again (`_paged_loaded`)."""
        store = self.store
        if self.paged:
            return lambda: jobs.paged_refresh(store, task_id, known)
        shown = self._shown()
        return lambda: jobs.refresh(store, task_id, known, shown)

    def _poll(self) -> None:
        # A poll never supersedes a load in flight (that load would be dropped for nothing).
        if self.store is None or self._sizing or self.loader.busy("load"):
            return
        self.loader.submit(
            "load", self._refresh_job(self.selected, self._version), self._on_loaded, self._failed
        )

    def _heard(self, changes: Any) -> None:
        """Commits the server announced: reload the inbox, and the task on screen if they
        touched it (or if anything may have changed: the listener reconnected)."""
        ids, everything = self._due
        self._due = (ids | set(changes.task_ids), everything or changes.everything)
        self._reload_heard()

    def _reload_heard(self) -> None:
        ids, everything = self._due
        if self.store is None or self._sizing or not (ids or everything):
            return
        if self.loader.busy("load"):
            # That load may have read before the commit: reload once it is in.
            self._due_retry.start()
            return
        self._due = (set(), False)
        selected = self.selected
        task_id = selected if everything or selected in ids else None
        # A task the server named is read whatever the version says: an inbox-only load may
        # have read the version after its commit, and "unchanged" would then skip it.
        known = None if everything or task_id is not None else self._version
        self.loader.submit("load", self._refresh_job(task_id, known), self._on_loaded, self._failed)

    def _shown(self) -> tuple[tuple[int, bool], list[dict[str, Any]], int, tuple[str, ...]]:
        """The inbox's order, a copy of its row list (the rows themselves are never changed
        in place, so a worker may read them), its revision and its search."""
        return self.inbox.order, list(self.inbox.rows), self.inbox.revision, self.inbox.search

    def _typed(self) -> None:
        """A keystroke: a search still on a worker is for words no longer typed, so its
        result is dropped (nothing applied for them); the pause starts again."""
        self.loader.cancel("search")
        self._search_due.start()

    def _search(self) -> None:
        """Pick the rows matching the search box on a worker; a newer search supersedes it
        (the loader drops its result), a reload meanwhile makes the model pick them again."""
        from boris_desktop.inbox.table import search_words

        wanted = search_words(self.search.text())
        if self.paged:  # by SQL, on a worker (the model's); `_paged_read` when it is in
            self._search_pending = True
            self.pages.set_search(wanted)
            return
        every, held, revision = self.inbox.all_rows, list(self.inbox.rows), self.inbox.revision
        self.loader.submit(
            "search",
            lambda: jobs.search(every, wanted, held, revision),
            self._searched,
            self._failed,
        )

    def _searched(self, result: Any) -> None:
        wanted, planned = result
        self.inbox.show_matching(wanted, planned)
        if self.inbox.row_of(self.selected) < 0 and self.proxy.rowCount():
            # The search hid the selected task: a shown one is selected, as when a few
            # rows go (the view moves its cursor on); after a reset there is no cursor.
            self.table.setCurrentIndex(self.proxy.index(0, 0))
        self.searched.emit()
        self._to_selected.start()

    def reload_now(self) -> None:
        """Load synchronously: only for start-up rendering (--screenshot) and tests."""
        assert self.store is not None
        self.loader.cancel("load")
        if self.paged:  # the pages come from the model's worker all the same
            self._on_loaded(jobs.paged_refresh(self.store, self.selected, None))
            return
        result = jobs.refresh(self.store, self.selected, None)
        if self.selected is None and result["tasks"]:
            self.selected = result["tasks"][0]["id"]  # list_tasks sorts by need of attention
            result = jobs.refresh(self.store, self.selected, None)
        self._on_loaded(result)
        if self.selected:
            self.loader.cancel("brief")
            self.task_view.show_brief(jobs.brief(self.store, self.selected))

    def _row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        from boris_desktop.inbox.table import ID_ROLE

        task_id = current.data(ID_ROLE) if current.isValid() else None
        if task_id and task_id != self.selected:
            self.selected = task_id
            if self.store is None or self._version is None:
                self.reload()
                return
            # Only the task: the inbox is as fresh as the last load, and the poll keeps it so.
            store = self.store
            self.loader.submit(
                "load", lambda: jobs.task_only(store, task_id), self._on_loaded, self._failed
            )

    def _on_loaded(self, result: dict[str, Any]) -> None:
        from boris_desktop.inbox.table import ID_ROLE

        if result.get("unchanged"):
            return
        if self.paged and "tasks" in result:
            return  # read whole before the window turned to pages
        if "statuses" in result and "tasks" not in result:
            self._paged_loaded(result)
            return
        if "tasks" not in result:  # the selected task alone (see _row_changed)
            if result.get("task_id") == self.selected:
                self._show_task(result)
            return
        self._version = result["version"]
        self.inbox.clock.set(result.get("now"))
        self.inbox.set_rows(result["tasks"], result.get("order"), result.get("planned"))
        self._needy = result["needy"]
        self._start_following()
        self._status_filter_items(result["statuses"])
        if result["tasks"]:
            self._size_columns()
        if result["tasks"] and self._task_view is None and self._staged:
            # Start-up: the inbox is painted before the task view, the biggest single piece of
            # the window, is built in a turn of its own (the task's record is on its way).
            self._build_view = _soon(self, self._show_task_page)
            self._build_view.start()
        elif result["tasks"]:
            self._show_task_page()
        else:
            self.right.setCurrentIndex(EMPTY)
        self.empty_button.setEnabled(True)
        if (
            self.inbox.rows
            and not self.inbox.holds(self.selected)
            and not (self._queue_in_front() and self._pane_for is None)
        ):
            # Nothing (or a vanished task) selected: the one most in need of the reviewer.
            top = self.proxy.index(0, 0)
            self.selected = top.data(ID_ROLE) if top.isValid() else self.inbox.rows[0]["id"]
            self._select_row()
            # Only that task: the inbox was just read (ten thousand tasks read again, on a
            # worker, would make every call the GUI thread makes into Python wait its turn).
            store, task_id = self.store, self.selected
            self.loader.submit(
                "load", lambda: jobs.task_only(store, task_id), self._on_loaded, self._failed
            )
            return
        self._select_row()
        self._show_task(result)

    def _size_columns(self) -> None:
        """Sized once, for the longest words the column shows beside their icon, even if no
        row shows them yet (an exhausted budget must not be cut off), and capped: the title
        and what needs you take the rest of the width. Not from the rows: Qt would ask the
        model for each cell sampled, a call into Python each (with a worker reading, each
        waits for the interpreter lock)."""
        from boris_desktop.inbox.table import ACTIVITY, BUDGET, STATUS, WORKING

        if self._columns_sized or self._columns_restored:
            return
        self._columns_sized = True
        header = self.table.horizontalHeader()
        fm = self.table.fontMetrics()
        for col in (STATUS, BUDGET, ACTIVITY, WORKING):
            least = fm.horizontalAdvance(COLUMN_WIDEST[col]) + 36
            width = min(max(header.sectionSizeHint(col), least), COLUMN_CAP[col])
            header.resizeSection(col, width)

    def _show_task_page(self) -> None:
        self.task_view  # noqa: B018  (built now: the stack's TASK page)
        # The Decisions tab with nothing selected shows no task (see `show_decision`).
        shown = NO_DECISION if self._queue_in_front() and self._pane_for is None else TASK
        self.right.setCurrentIndex(shown)

    def _show_task(self, result: dict[str, Any]) -> None:
        bundle = result.get("bundle")
        if bundle is not None and result.get("task_id") == self.selected:
            from boris_desktop.task.view import same_record

            # The brief (it hashes files) is read again when the record changed, not when
            # only the clock did.
            changed = not same_record(self.task_view.bundle, bundle)
            self.task_view.show_bundle(bundle)
            self.file_watch.set_task(self.store, bundle["task"])
            self._pane_shows(bundle)
            if changed and self.selected is not None:
                store, task_id = self.store, self.selected
                self.loader.submit(
                    "brief", lambda: jobs.brief(store, task_id), self.task_view.show_brief
                )
        self._status()
        self.menu_actions.update()
        self.loaded.emit()

    def _disk_marks(self) -> None:
        if self._task_view is not None:
            task = self._task_view.bundle["task"] if self._task_view.bundle else None
            self._task_view.set_disk(self.file_watch.disk_marks(task))

    def closeEvent(self, event: Any) -> None:
        if self._built:  # closed before `_finish`: there is no watcher yet
            self.file_watch.stop()
            self.queue.follower.stop()
            self.history.follower.stop()
            self.notifier.tray.hide()
            self.live.stop()
            self.save_layout()
        super().closeEvent(event)

    # --- room: the split and the columns, remembered -------------------------------------

    #: Inbox rows in sight at the default split (when the window is tall enough).
    INBOX_ROWS = 8.5

    def inbox_height(self, rows: float) -> int:
        """The inbox part's height that shows `rows` rows under the filters and header."""
        frame = 2 * self.table.frameWidth()
        lay = self.left.layout()
        assert lay is not None  # set in __init__
        margins = lay.contentsMargins().top() + lay.contentsMargins().bottom() + lay.spacing()
        filters = max(self.search.sizeHint().height(), self.status_filter.sizeHint().height())
        header = self.table.horizontalHeader().sizeHint().height()
        row = self.table.verticalHeader().defaultSectionSize()
        views = getattr(self, "views", None)  # the Tasks / Decisions tabs, once built
        tabs = views.tabBar().sizeHint().height() if views is not None else 0
        return int(tabs + filters + margins + header + frame + rows * row + 1)

    def _default_split(self) -> None:
        """The inbox shows INBOX_ROWS rows, but takes at most 42% of the window's height."""
        total = self.split.height() if self.split.isVisible() else self.height() - 60
        inbox = min(self.inbox_height(self.INBOX_ROWS), int(total * 0.42))
        self.split.setSizes([inbox, max(total - inbox, 1)])

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        if self._built and not self._layout_restored and not self._split_moved:
            # Once the layout has given the splitter its new height.
            self._split_timer.start()

    _split_moved = False

    def _restore_layout(self) -> bool:
        split = settings.layout("main/split")
        columns = settings.layout("main/inbox_columns")
        ok = False
        if split is not None:
            ok = self.split.restoreState(split)
        header = self.table.horizontalHeader()
        if columns is not None and header.restoreState(columns):
            self._columns_restored = True
            self.table.sortByColumn(header.sortIndicatorSection(), header.sortIndicatorOrder())
        self.split.splitterMoved.connect(self._moved)
        return ok

    def _moved(self, *_: Any) -> None:
        self._split_moved = True

    def fit_to_screen(self, room: Any = None) -> None:
        """Open sized to the screen's available room (`room`, a QRect, in tests): where the
        reviewer left the window if that still fits, else 1280×780 or less, centred."""
        from PySide6.QtCore import QRect

        from boris_desktop import screen_fit

        room = room if room is not None else screen_fit.available(self)
        saved = settings.window_rect()
        screen_fit.place(self, room, QRect(*saved) if saved is not None else None)
        if settings.window_maximized():
            from PySide6.QtCore import Qt

            self.setWindowState(self.windowState() | Qt.WindowState.WindowMaximized)

    def save_layout(self) -> None:
        g = self.normalGeometry() if self.isMaximized() else self.geometry()
        if g.isValid():
            settings.set_window_place((g.x(), g.y(), g.width(), g.height()), self.isMaximized())
        states = {
            "main/split": self.split.saveState(),
            "main/inbox_columns": self.table.horizontalHeader().saveState(),
        }
        if self._task_view is not None:
            for title in self._parts_moved:
                split = getattr(self._task_view.panels[title], "split", None)
                if split is not None:
                    states[f"part/{title}/split"] = split.saveState()
        settings.set_layouts(states)

    def _select_row(self) -> None:
        row = self.inbox.row_of(self.selected)
        if row < 0:
            return
        ix = self.proxy.mapFromSource(self.inbox.index(row, 0))
        if ix.isValid() and self.table.currentIndex().row() != ix.row():
            self.table.selectionModel().blockSignals(True)
            self.table.setCurrentIndex(ix)
            self.table.selectRow(ix.row())
            self.table.selectionModel().blockSignals(False)
            self.table.viewport().update()
        elif ix.isValid() and not self.table.selectionModel().isRowSelected(
            ix.row(), QModelIndex()
        ):
            self.table.selectRow(ix.row())

    def scroll_to_selected(self) -> None:
        """After a sort or a filter: the selected task, if shown, is in sight. (Not after a
        live update: the reviewer may be reading elsewhere in the list.)"""
        self._select_row()
        row = self.inbox.row_of(self.selected)
        ix = self.proxy.mapFromSource(self.inbox.index(row, 0)) if row >= 0 else QModelIndex()
        if ix.isValid():
            self.table.scrollTo(ix)

    def _status_filter_items(self, statuses: list[str]) -> None:
        have = [self.status_filter.itemData(i) for i in range(2, self.status_filter.count())]
        if have != statuses:
            keep = self.status_filter.currentData()
            self.status_filter.blockSignals(True)
            while self.status_filter.count() > 2:
                self.status_filter.removeItem(2)
            from boris_desktop.ui.icons import status_icon, words

            for s in statuses:
                self.status_filter.addItem(status_icon(s), words(s), s)
            self.status_filter.setCurrentIndex(max(self.status_filter.findData(keep), 0))
            self.status_filter.blockSignals(False)

    def _status(self) -> None:
        n = len(self.inbox.all_rows)
        needy = self._needy  # counted with the inbox's last read (jobs.refresh)
        shown = ""
        if self.paged:  # counted by the database with the pages' last reading
            counts = self.pages.counts
            n, needy = counts["total"], counts["needy"]
            if self.pages.search or self.pages.status:
                shown = f" ({counts['matching']:,} shown)"
        where = self.store.location.describe() if self.store else "no store"
        who = getattr(self, "reviewer_label", "")
        from boris_desktop.ui import text as t

        need = "needs" if needy == 1 else "need"
        self.statusBar().showMessage(
            f"{t.count(n, 'task', 'tasks')}{shown}, {needy} {need} you · {where} · "
            f"{self.live.state or f'live (event {self._version})'} · {who}"
        )

    def _start_following(self) -> None:
        """The decision queue and the history follow the store from the first inbox load on
        (or its failure: they say what they can read themselves)."""
        if self._follow_due:
            self._follow_due = False
            self.queue.start()
            self.history.start()

    def _failed(self, error: Exception) -> None:
        self._start_following()
        from boris_desktop.ui.text import failure

        first = failure(error)
        self.statusBar().showMessage(f"Could not read the store: {first}")
        self.nothing.setText(f"Could not read the store:\n{first}")
        if self.store is None:
            self.right.setCurrentIndex(NOTHING)


#: The modules `_finish` imports, a turn of the event loop for each group before it: imported
#: inside it they made it one 85-110 ms turn on the big store, while the first rows came in
#: (benchmarks/bench_desktop_big.py, "filling the inbox"). Grouped at under 40 ms each.
def _imports(*names: str) -> Callable[[], None]:
    def step() -> None:
        for name in names:
            importlib.import_module(name)

    return step


#: The staged start-up's turns before `_finish`, each one its own turn of the event loop.
WARM_UP: tuple[Callable[[], None], ...] = (
    _imports("boris_desktop.ui.widgets"),  # Pygments' lexers, for the text panes
    # The Actions menu: imported here rather than with the window's module, whose import
    # the first paint waits for (50 ms of the 100).
    _imports("boris_desktop.decide.menu"),
    _imports(
        "boris_desktop.inbox.table",
        "boris_desktop.runtime.task_watch",
        "boris_desktop.queue.decisions",
        "boris_desktop.runtime.notifications",
        "boris_desktop.history.decided",
        "boris_desktop.runtime.live",
    ),
    discover_widget_types,
)


class _EarlyPeek:
    """The first look read while the window is built (`MainWindow._peek_early`): for which
    store, whether it is in, what it found, and whether `open_store` waits for it."""

    def __init__(self, directory: str | None) -> None:
        self.directory = directory
        self.done = False
        self.result: dict[str, Any] | None = None
        self.asked = False


def _soon(owner: QObject, then: Any) -> QTimer:
    """A single-shot zero timer owned by `owner`: started again before it fires, it fires
    once; deleted with its owner, it never calls into a deleted window."""
    timer = QTimer(owner)
    timer.setSingleShot(True)
    timer.setInterval(0)
    timer.timeout.connect(then)
    return timer


class _FirstPaint(QObject):
    """Calls `then` once, when `widget` is first painted."""

    def __init__(self, widget: QWidget, then: Any) -> None:
        super().__init__(widget)
        self._then = then
        widget.installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self._then is not None:
            then, self._then = self._then, None
            obj.removeEventFilter(self)
            then()
        return False
