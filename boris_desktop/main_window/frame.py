"""The window's frame: what the first paint shows (the inbox's table under its search and
status filter, in its tab beside the titles of the Decisions and What I Decided tabs, above
the pane saying the store is opening, in the splitter between them, the menus' titles),
then, right after that paint, the rest: the pages of the pane below (the task, an empty
store, no decision selected) and the queue and the history in their tabs. The first paint's
geometry is the built window's: nothing moves when the rest comes.

Only what the first paint needs is imported at module level. Touching `Qt` builds every
enum of Qt's namespace (about 20 ms here), and a Python item model on a visible view makes
Qt call into Python during that paint, which touches it: both wait until the window is built
whole, right after the first paint (`build_pages`, `build_views`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QFont, QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSplitter,
    QStackedWidget,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from boris_desktop.ui.icons import icon

if TYPE_CHECKING:
    from boris_desktop.main_window.face import Window

#: The pages of the pane below the inbox.
EMPTY, TASK, NOTHING, NO_DECISION = range(4)
#: The inbox's column titles (inbox.COLUMNS, kept equal by a test): the first paint shows
#: them before the inbox module and its model are loaded.
COLUMN_TITLES = ("Title", "Status", "Needs you", "Budget", "Last activity", "Working now")


def paint_frame(window: Window) -> None:
    """The first paint's widgets: the inbox in its tab above the pane saying the store is
    opening, in the splitter sized as the built window keeps it (`Room.placed`), and the
    menus' titles."""
    window.table, window.titles = _inbox_table(window)
    window.search = QLineEdit()
    window.search.setPlaceholderText("Search tasks (Ctrl+F)")
    window.search.setAccessibleName("Search tasks")
    window.search.setClearButtonEnabled(True)
    window.status_filter = QComboBox()
    window.status_filter.setAccessibleName("Filter tasks by status")
    window.status_filter.addItem("All statuses", None)
    title = QLabel("Tasks, most in need of you first")
    font = QFont(title.font())
    font.setBold(True)
    title.setFont(font)
    filters = QHBoxLayout()
    filters.addWidget(title)
    filters.addStretch(1)
    filters.addWidget(window.search, 1)
    filters.addWidget(window.status_filter)
    window.left = QWidget()
    lcol = QVBoxLayout(window.left)
    lcol.setContentsMargins(6, 6, 6, 0)
    lcol.addLayout(filters)
    lcol.addWidget(window.table, 1)

    window.right = QStackedWidget()
    window.nothing = QLabel("Opening the store…")
    opening = QWidget()
    row = QHBoxLayout(opening)
    row.addStretch(1)
    row.addWidget(window.nothing)
    row.addStretch(1)
    window.right.addWidget(opening)
    _views_in_place(window)
    # The menus' titles are on the first paint; their actions come when it is built.
    bar = window.menuBar()
    window.menu_titles = [bar.addMenu(t) for t in ("&File", "&View", "&Actions", "&Help")]
    window.statusBar().showMessage("Opening the store…")


def _views_in_place(window: Window) -> None:
    """The splitter and the tabs above the task as the window keeps them once built, the
    Decisions and What I Decided tabs titles only until then (`build_views`): the inbox's
    first rows, shown before the rest is built (`Opening.inbox_built`), appear where they
    stay, not 4 rows lower and twice as many once the tab bar and the split come."""
    window.split = QSplitter()
    # Vertical (Qt.Orientation.Vertical, 2) set as a property: touching Qt's enums here would
    # make the first paint wait for all of them (see the module's note).
    window.split.setProperty("orientation", 2)
    window.split.setChildrenCollapsible(False)
    window.views = QTabWidget()
    window.views.setDocumentMode(True)
    window.views.setAccessibleName("Tasks or decisions")
    # With their icons, which make the tab bar 2 pixels taller (their SVG is drawn lazily).
    window.views.addTab(window.left, icon("attention"), "&Tasks")
    for name, title in (("approval", "&Decisions"), ("ok", "&What I Decided")):
        # The queue and the history once built; not to be chosen before (greyed meanwhile).
        index = window.views.addTab(QWidget(), icon(name), title)
        window.views.setTabEnabled(index, False)
    window.split.addWidget(window.views)
    window.split.addWidget(window.right)
    window.split.setStretchFactor(0, 0)
    window.split.setStretchFactor(1, 1)
    window.owner().setCentralWidget(window.split)


def _inbox_table(window: Window) -> tuple[QTableView, QStandardItemModel]:
    """The inbox's table with only its column titles (the model comes once built)."""
    table = QTableView()
    table.setAccessibleName("Tasks")
    titles = QStandardItemModel(0, len(COLUMN_TITLES), window.owner())
    titles.setHorizontalHeaderLabels(list(COLUMN_TITLES))
    table.setModel(titles)
    table.verticalHeader().hide()
    table.horizontalHeader().setStretchLastSection(True)
    table.setColumnWidth(0, 340)
    # The rows' height as the inbox sets it (`InboxPane`): the split is sized by it.
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)
    return table, titles


def build_pages(window: Window) -> None:
    """The pane's pages besides the opening one: an empty store's invitation to load the
    demo, the task (its view built when first needed) and the Decisions tab's "no decision
    selected"."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QPushButton

    from boris_desktop.ui.widgets import plain_label

    window.empty_button = QPushButton("Load the demo tasks")
    window.empty_button.setAccessibleName("Load the demo tasks")
    window.empty_button.clicked.connect(window.load_demo)
    empty = QWidget()
    ecol = QVBoxLayout(empty)
    ecol.addStretch(1)
    window.empty_text = plain_label(
        "This store has no tasks yet. Agents add tasks as they work; to look around first, "
        "load the demo tasks: a reference guide with a stale criterion, a missing log, an "
        "upload with an unknown outcome and a forked lineage, and a project note whose save "
        "the tool called a success."
    )
    window.empty_text.setAlignment(Qt.AlignmentFlag.AlignCenter)
    ecol.addWidget(window.empty_text)
    ecol.addWidget(window.empty_button, 0, Qt.AlignmentFlag.AlignHCenter)
    ecol.addStretch(1)
    window.nothing.setTextFormat(Qt.TextFormat.PlainText)  # it may show an error's text
    window.right.insertWidget(EMPTY, empty)
    window.right.insertWidget(TASK, QWidget())  # the task view, built when first needed
    # The Decisions tab with no decision selected: no task below, rather than one the
    # queue does not select.
    window.no_decision = plain_label("Select a decision above to see its task here.")
    window.no_decision.setAlignment(Qt.AlignmentFlag.AlignCenter)
    window.no_decision.setAccessibleName("No decision selected: select a decision")
    window.right.insertWidget(NO_DECISION, window.no_decision)
    window.right.setCurrentIndex(NOTHING)


def build_views(window: Window) -> None:
    """What the tabs above the task hold besides the task inbox: the queue of open decisions
    across tasks and what the reviewer decided, in the tabs titled since the first paint
    (`_views_in_place`, as is the splitter between the tabs and the task), and the notifier
    following the queue.

    The inbox spans the window's width above the task: its columns stay readable and the
    task's tables, previews and diffs get the whole width. The inbox is tall enough for a
    queue (see `Room.default_split`); a taller window goes to the task."""
    from boris_desktop.history.decided import HistoryView
    from boris_desktop.queue.decisions import DecisionQueue
    from boris_desktop.runtime.notifications import Notifier

    views = window.views  # in place since the first paint (`_views_in_place`)
    window.queue = DecisionQueue(window)
    window.queue.set_paged(window.paged)
    _in_tab(views, 1, window.queue)
    window.queue.updated.connect(window.queue_updated)
    window.queue.show_task.connect(window.show_task)
    # The pane below the queue is the selected decision's task (see `show_decision`).
    window.queue.current_decision.connect(window.decision_selected)
    window.queue.pane = window.show_decision
    window.views.currentChanged.connect(window.view_changed)
    for said in (
        window.queue.proxy.rowsInserted,
        window.queue.proxy.rowsRemoved,
        window.queue.proxy.modelReset,
    ):
        said.connect(lambda *_: window.say_no_decision())
    window.notifier = Notifier(window.open_decision, window.owner())
    window.queue.updated.connect(window.notifier.update)
    window.history = HistoryView(window)
    _in_tab(views, 2, window.history)
    window.history.show_event.connect(window.show_event)
    window.history.current_task.connect(window.select_task)


def _in_tab(views: QTabWidget, index: int, widget: QWidget) -> None:
    """`widget` in the tab at `index` instead of its placeholder, under the same title."""
    placeholder, title, icon = views.widget(index), views.tabText(index), views.tabIcon(index)
    views.removeTab(index)
    views.insertTab(index, widget, icon, title)  # enabled
    if placeholder is not None:
        placeholder.deleteLater()
