"""What the main window's parts know of it: one protocol, `Window`.

No part imports another part or `MainWindow` (the desktop has no import cycle, even under
TYPE_CHECKING): a part asks the window for what another part does (`window.select_row()`),
and the window passes it on. What the parts share lives on the window: the store, the
loader, the selected task, the event the views reflect and the widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from boris_desktop import host

if TYPE_CHECKING:
    from PySide6.QtCore import QModelIndex, SignalInstance
    from PySide6.QtGui import QStandardItemModel
    from PySide6.QtWidgets import (
        QComboBox,
        QLabel,
        QLineEdit,
        QMainWindow,
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


class Window(host.Window, Protocol):
    """The main window as its parts see it (MainWindow is the one)."""

    # What the parts share.
    store: Store | None
    demo_store: bool
    selected: str | None
    _version: int | None  # the store's event the views reflect
    needy: int
    paged: bool
    sizing: bool
    pane_for: Decision | None
    staged: bool
    _built: bool
    _task_view: TaskView | None

    # The widgets (`frame`) and the models.
    table: QTableView
    titles: QStandardItemModel
    search: QLineEdit
    status_filter: QComboBox
    left: QWidget
    right: QStackedWidget
    nothing: QLabel
    menu_titles: list[QMenu]
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

    @property
    def loaded(self) -> SignalInstance: ...
    @property
    def peeked(self) -> SignalInstance: ...
    @property
    def searched(self) -> SignalInstance: ...
    @property
    def store_opened(self) -> SignalInstance: ...
    @property
    def task_view(self) -> TaskView: ...
    @property
    def pages(self) -> PagedInboxModel: ...

    def owner(self) -> QMainWindow:
        """The window as Qt knows it: its parts, timers and dialogs belong to it."""

    # The store: opening and following it (`opening`, `follow`).
    def open_store(self, directory: str | None) -> None: ...
    def load_demo(self) -> None: ...
    def load_task(self, task_id: str) -> None: ...
    def follow(self, store: Store) -> None: ...
    def follow_from_first_load(self) -> None: ...
    def start_following(self) -> None: ...
    def show_loaded_task(self, result: PagedRead) -> None: ...
    def failed(self, error: Exception) -> None: ...

    # The inbox (`paging`, `inbox_pane`).
    def choose_inbox(self) -> None: ...
    def use_paged(self, on: bool) -> None: ...
    def paged_loaded(self, result: PagedRead) -> None: ...
    def shown(self) -> jobs.Shown: ...
    def size_columns(self) -> None: ...
    def restore_columns(self) -> None: ...
    def status_filter_items(self, statuses: list[str]) -> None: ...
    def paged_searched(self) -> None: ...

    # The selection (`selection`).
    def row_changed(self, current: QModelIndex, previous: QModelIndex) -> None: ...
    def select_row(self) -> None: ...
    def scroll_to_selected(self) -> None: ...
    def select_task(self, task_id: str) -> None: ...
    def show_task(self, task_id: str) -> None: ...
    def show_task_page(self) -> None: ...
    def no_decision_in_front(self) -> bool: ...
    def show_queue(self) -> None: ...
    def show_history(self) -> None: ...
    def show_event(self, task_id: str, seq: int) -> None: ...
    def open_decision(self, decision_id: str) -> None: ...
    def show_decision(
        self, d: Decision | None, then: Callable[[TaskState], None] | None = None
    ) -> None: ...
    def decision_selected(self, d: Decision | None) -> None: ...
    def view_changed(self, index: int) -> None: ...
    def say_no_decision(self) -> None: ...
    def pane_shows(self, bundle: TaskBundle) -> None: ...
    def queue_updated(self, rows: list[Decision], now: str) -> None: ...

    # The status bar and the window's own dialogs (`status_bar`, `dialogs`).
    def status(self) -> None: ...
    def show_reviewer(self) -> None: ...
    def reviewer_changed(self) -> None: ...
    def export_public_key(self) -> Any: ...
    def notification_settings(self) -> Any: ...
    def show_about(self) -> None: ...
