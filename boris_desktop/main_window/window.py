"""The main window: the inbox of tasks above the selected task's view, in parts.

The window holds what its parts share (the store, the loader, the selected task, the event
the views reflect, the widgets) and its parts each do one thing: `frame` lays it out,
`menus` fills its menus, `opening` opens a store, `follow` reads it again as it changes,
`paging` reads a big inbox in pages, `inbox_pane` sorts, sizes and searches the inbox,
`selection` follows what the reviewer selects, `status_bar` says where things stand,
`dialogs` opens the window's own dialogs and `room` remembers the layout. A part knows the
window only as `face.Window`, and asks it for what another part does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, QTimer, Signal
from PySide6.QtWidgets import QMainWindow

from boris_desktop.main_window import frame
from boris_desktop.main_window.dialogs import Dialogs
from boris_desktop.main_window.follow import StoreFollower
from boris_desktop.main_window.inbox_pane import InboxPane
from boris_desktop.main_window.menus import Menus
from boris_desktop.main_window.opening import Opening
from boris_desktop.main_window.paging import Paging
from boris_desktop.main_window.room import Room
from boris_desktop.main_window.selection import Selection
from boris_desktop.main_window.startup import INBOX_FIRST, WARM_UP, FirstPaint, soon
from boris_desktop.main_window.status_bar import StatusLine
from boris_desktop.runtime.interpreter import discover_widget_types
from boris_desktop.runtime.loader import Loader

if TYPE_CHECKING:
    from PySide6.QtGui import QStandardItemModel
    from PySide6.QtWidgets import (
        QComboBox,
        QLabel,
        QLineEdit,
        QMenu,
        QPushButton,
        QSplitter,
        QStackedWidget,
        QTableView,
        QTabWidget,
        QWidget,
    )

    from boris_desktop.decide.menu import Actions
    from boris_desktop.history.decided import HistoryView
    from boris_desktop.inbox.pages import PagedInboxModel
    from boris_desktop.inbox.table import InboxFilter, InboxModel
    from boris_desktop.queue.decisions import DecisionQueue
    from boris_desktop.runtime import jobs
    from boris_desktop.runtime.job_results import PagedRead
    from boris_desktop.runtime.live import StoreFeed
    from boris_desktop.runtime.notifications import Notifier
    from boris_desktop.runtime.task_watch import TaskFileWatcher
    from boris_desktop.task.bundle import TaskBundle
    from boris_desktop.task.view import TaskView
    from store.api import Decision, Store, TaskState


class MainWindow(QMainWindow):
    store_opened = Signal()
    loaded = Signal()  # the inbox (and task, if any) reflect the store
    peeked = Signal()  # the inbox lists the tasks read before the store was open
    finished = Signal()  # built whole (see `staged`)
    searched = Signal()  # the inbox shows the rows matching the search box

    # The first paint's widgets (`frame.paint_frame`).
    table: QTableView
    titles: QStandardItemModel  # the table's column titles until its model comes
    search: QLineEdit
    status_filter: QComboBox
    left: QWidget
    right: QStackedWidget
    nothing: QLabel
    menu_titles: list[QMenu]
    # Built right after the first paint (`_finish`).
    inbox: InboxModel
    proxy: InboxFilter
    empty_button: QPushButton
    empty_text: QLabel
    no_decision: QLabel
    split: QSplitter
    views: QTabWidget
    queue: DecisionQueue
    history: HistoryView
    notifier: Notifier
    menu_actions: Actions
    file_watch: TaskFileWatcher
    live: StoreFeed

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
        self.loader = Loader(self)
        self.selected: str | None = None
        self._version: int | None = None  # the store's event the views reflect
        self.needy = 0  # tasks that need the reviewer, as of the last inbox read
        #: The inbox is read in pages (PagedInboxModel) rather than whole (see PAGED_FROM).
        self.paged = False
        self.sizing = False  # the tasks are counted (PAGED_FROM): no inbox read meanwhile
        #: The decision the pane shows (the queue in front), or None.
        self.pane_for: Decision | None = None
        self._built = False
        self._task_view: TaskView | None = None
        self.staged = staged
        self.setWindowTitle("Boris Desktop")
        frame.paint_frame(self)
        self.opening = Opening(self, store)
        self.follower = StoreFollower(self, poll_ms)
        self.paging = Paging(self)
        self.inbox_pane = InboxPane(self)
        self.selection = Selection(self)
        self.status_line = StatusLine(self)
        self.menus = Menus(self)
        self.dialogs = Dialogs(self)
        self.room = Room(self)
        if not staged:
            discover_widget_types()  # as the staged start-up does before any task is read
        if staged:
            # The window's own paint starts the pass that paints all of it. (Not the table's
            # viewport: wrapping it for Python costs ~13 ms here.)
            self._first_paint = FirstPaint(self, self._finish_soon)
        else:
            self._finish()

    # --- built in stages -----------------------------------------------------------------

    def _finish_soon(self) -> None:
        self.opening.while_building()
        rest = WARM_UP[len(INBOX_FIRST) :]
        self._warm_up = [*INBOX_FIRST, self._build_inbox, *rest]
        # A timer the window owns: it dies with the window, so it never fires on a dead one.
        self._finish_timer = soon(self, self._finish_step)
        self._finish_timer.start()

    def _finish_step(self) -> None:
        """One turn of the staged start-up: the next modules `_finish` needs, or `_finish`."""
        if self._built or self.opening.holds_the_build():
            return  # (held: `resume_build` goes on)
        if self._warm_up:
            self._warm_up.pop(0)()
            self._finish_timer.start()
            return
        self._finish()

    def resume_build(self) -> None:
        """The staged start-up goes on (it waited for the first look: `Opening`)."""
        if not self._built:
            self._finish_timer.start()

    def _build_inbox(self) -> None:
        """The inbox before the rest of the window: the first page peeked meanwhile is shown
        as soon as it is read (`Opening.inbox_built`), with the columns as the reviewer left
        them."""
        self.inbox_pane.build()
        self.restore_columns()
        self.opening.inbox_built()

    def _finish(self) -> None:
        """Everything the first paint did not need: the models, filters, menus, the file
        watcher and the page for the task view."""
        if self._built:
            return
        self._built = True
        from boris_desktop.ui.icons import icon

        self.setWindowIcon(icon("app"))
        self.inbox_pane.build()
        frame.build_pages(self)
        frame.build_views(self)
        self.room.build()
        self.menus.build()
        self.follower.build()
        self.opening.built()
        self.finished.emit()

    @property
    def task_view(self) -> TaskView:
        """Built on first use, after the first paint: its panels are most of the start-up."""
        if self._task_view is None:
            from boris_desktop.task.view import TaskView

            self._task_view = TaskView(self.loader)
            self._task_view.set_store(self.store)
            placeholder = self.right.widget(frame.TASK)
            self.right.insertWidget(frame.TASK, self._task_view)
            if placeholder is not None:
                self.right.removeWidget(placeholder)
                placeholder.deleteLater()
            for panel in self._task_view.panels.values():
                tree = getattr(panel, "tree", None)
                if tree is not None:
                    tree.selectionModel().currentChanged.connect(
                        lambda *_: self.menu_actions.update()
                    )
            self.room.restore_part_splits()
        return self._task_view

    @property
    def pages(self) -> PagedInboxModel:
        """The inbox model, when it reads in pages (`self.paged`)."""
        from boris_desktop.inbox.pages import PagedInboxModel

        assert isinstance(self.inbox, PagedInboxModel)
        return self.inbox

    def owner(self) -> QMainWindow:
        """The window as Qt knows it: its parts, timers and dialogs belong to it."""
        return self

    def closeEvent(self, event: Any) -> None:
        if self._built:  # closed before `_finish`: there is no watcher yet
            self.file_watch.stop()
            self.queue.follower.stop()
            self.history.follower.stop()
            self.notifier.tray.hide()
            self.live.stop()
            self.save_layout()
        super().closeEvent(event)

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self.room.resized()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.room.resized()  # the split for the height it is shown at (`Room.resized`)

    # --- the store (opening, following) ----------------------------------------------------

    def open_store(self, directory: str | None) -> None:
        self.opening.open_store(directory)

    def set_store(self, store: Store) -> None:
        self.opening.set_store(store)

    def load_demo(self) -> None:
        self.opening.load_demo()

    def reload(self) -> None:
        """Load the inbox and the selected task now, superseding any load in flight."""
        self.follower.reload()

    def reload_now(self) -> None:
        """Load synchronously: only for start-up rendering (--screenshot) and tests."""
        self.follower.reload_now()

    def load_task(self, task_id: str) -> None:
        self.follower.load_task(task_id)

    def follow(self, store: Store) -> None:
        self.follower.follow(store)

    def follow_from_first_load(self) -> None:
        self.follower.follow_due = True

    def start_following(self) -> None:
        self.follower.start_following()

    def show_loaded_task(self, result: PagedRead) -> None:
        self.follower.show_task(result)

    def failed(self, error: Exception) -> None:
        self.follower.failed(error)

    # --- the inbox -------------------------------------------------------------------------

    def choose_inbox(self) -> None:
        self.paging.choose()

    def use_paged(self, on: bool) -> None:
        self.paging.use_paged(on)

    def paged_loaded(self, result: PagedRead) -> None:
        self.paging.loaded(result)

    def shown(self) -> jobs.Shown:
        return self.inbox_pane.shown()

    def size_columns(self) -> None:
        self.inbox_pane.size_columns()

    def restore_columns(self) -> None:
        self.inbox_pane.restore_columns()

    def status_filter_items(self, statuses: list[str]) -> None:
        self.inbox_pane.status_filter_items(statuses)

    def paged_searched(self) -> None:
        self.inbox_pane.paged_searched()

    def _search(self) -> None:
        """Search now, not after the pause (tests, benchmarks)."""
        self.inbox_pane.search()

    @property
    def _search_due(self) -> QTimer:
        """The pause after a keystroke before the search (tests, benchmarks)."""
        return self.inbox_pane.search_due

    # --- the selection ---------------------------------------------------------------------

    def row_changed(self, current: QModelIndex, previous: QModelIndex) -> None:
        self.selection.row_changed(current, previous)

    def select_row(self) -> None:
        self.selection.select_row()

    def _select_row(self) -> None:  # docs/render_holder.py's name
        self.selection.select_row()

    def scroll_to_selected(self) -> None:
        self.selection.scroll_to_selected()

    def select_task(self, task_id: str) -> None:
        self.selection.select_task(task_id)

    def show_task(self, task_id: str) -> None:
        """Show a task in the inbox (a run to resume: its brief says from where)."""
        self.selection.show_task(task_id)

    def show_task_page(self) -> None:
        self.selection.show_task_page()

    def no_decision_in_front(self) -> bool:
        return self.selection.no_decision_in_front()

    def show_queue(self) -> None:
        self.selection.show_queue()

    def show_history(self) -> None:
        self.selection.show_history()

    def show_event(self, task_id: str, seq: int) -> None:
        """A decision in What I Decided: its task, at its timeline."""
        self.selection.show_event(task_id, seq)

    def open_decision(self, decision_id: str) -> None:
        """A notification was clicked: the window in front, that decision's dialog open."""
        self.selection.open_decision(decision_id)

    def show_decision(
        self, d: Decision | None, then: Callable[[TaskState], None] | None = None
    ) -> None:
        """The pane shows decision `d`'s task (see `Selection.show_decision`)."""
        self.selection.show_decision(d, then)

    def decision_selected(self, d: Decision | None) -> None:
        self.selection.decision_selected(d)

    def view_changed(self, index: int) -> None:
        self.selection.view_changed(index)

    def say_no_decision(self) -> None:
        self.selection.say_no_decision()

    def pane_shows(self, bundle: TaskBundle) -> None:
        self.selection.pane_shows(bundle)

    def queue_updated(self, rows: list[Decision], now: str) -> None:
        self.selection.queue_updated(rows, now)

    def own_write(self, task_id: str) -> None:
        """The reviewer is writing to this task (run_command): not news to them."""
        self.notifier.own_write(task_id)

    # --- the status bar, the menus' dialogs, the room ---------------------------------------

    def status(self) -> None:
        self.status_line.show()

    def show_reviewer(self) -> None:
        self.status_line.show_reviewer()

    def reviewer_changed(self) -> None:
        self.status_line.reviewer_changed()

    def step_tab(self, step: int) -> None:
        """Show the next (1) or previous (-1) part of the task, wrapping around."""
        self.menus.step_tab(step)

    def ask_reviewer(self) -> Any:
        return self.dialogs.ask_reviewer()

    @property
    def _reviewer_dialog(self) -> Any:
        return self.dialogs.reviewer_dialog

    def export_public_key(self) -> Any:
        """Ask who the reviewer is first, if nobody said yet: the key is theirs."""
        return self.dialogs.export_public_key()

    @property
    def key_dialog(self) -> Any:
        return self.dialogs.key_dialog

    def notification_settings(self) -> Any:
        return self.dialogs.notification_settings()

    def show_about(self) -> None:
        self.dialogs.show_about()

    @property
    def _about(self) -> Any:
        return self.dialogs.about

    def shown_task(self) -> TaskState | None:
        return self.dialogs.shown_task()

    def current_key(self, part: str) -> Any:
        return self.dialogs.current_key(part)

    def stop_task(self) -> Any:
        """Open the stop dialog for the task on screen (the checkpoint dialog's way out)."""
        return self.menu_actions.stop_task()

    def inbox_height(self, rows: float) -> int:
        """The inbox part's height that shows `rows` rows under the filters and header."""
        return self.room.inbox_height(rows)

    def fit_to_screen(self, room: Any = None) -> None:
        self.room.fit_to_screen(room)

    def save_layout(self) -> None:
        self.room.save()
