"""The inbox read whole or in pages (issue 36 part W): a store with more tasks than
PAGED_FROM has its inbox read in pages (boris_desktop.inbox.pages: the database sorts,
filters, searches and counts) instead of whole into memory."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject

from boris_desktop.main_window.frame import EMPTY, NOTHING
from boris_desktop.main_window.startup import soon
from boris_desktop.runtime import jobs

if TYPE_CHECKING:
    from boris_desktop.inbox.pages import PagedInboxModel
    from boris_desktop.inbox.table import InboxModel
    from boris_desktop.main_window.face import Window
    from boris_desktop.runtime.job_results import PagedRead

#: A store with more tasks than this has its inbox read in pages.
PAGED_FROM = 5_000
#: "always" or "never" overrides the count (tests, benchmarks); anything else: the count.
PAGED_VARIABLE = "BORIS_DESKTOP_PAGED_INBOX"


def paged_mode() -> str:
    mode = os.environ.get(PAGED_VARIABLE, "").strip().lower()
    return mode if mode in ("always", "never") else "auto"


def paged_from() -> int:
    """PAGED_FROM as the window's package holds it: a test or a benchmark sets it there
    (`boris_desktop.main_window.PAGED_FROM`), and the window heeds it at the next count."""
    from boris_desktop import main_window

    return main_window.PAGED_FROM


class Paging(QObject):
    """Chooses the inbox's model (whole or in pages) and follows the paged one's reads."""

    def __init__(self, window: Window) -> None:
        super().__init__(window.owner())
        self.w = window

    def choose(self) -> None:
        """Read the inbox whole or in pages (PAGED_FROM), the tasks counted on a worker."""
        w = self.w
        mode = paged_mode()
        if mode != "auto":
            self.use_paged(mode == "always")
            w.reload()
            return
        w.sizing = True
        store = w.store
        w.loader.submit(
            "inbox-size", lambda: jobs.inbox_size(store), self._sized, lambda _e: self._sized(0)
        )

    def _sized(self, tasks: int) -> None:
        self.w.sizing = False
        self.use_paged(tasks > paged_from())
        self.w.reload()

    def use_paged(self, on: bool) -> None:
        """Put a paged (or a whole) inbox model behind the table, in the order shown."""
        w = self.w
        if on == w.paged:
            if on:
                w.pages.store = w.store
            return
        from boris_desktop.inbox.table import InboxModel

        old = w.inbox
        model: InboxModel
        paged: PagedInboxModel | None = None
        if on:
            from boris_desktop.inbox.pages import PagedInboxModel

            model = paged = PagedInboxModel(None, w.loader, w.owner())
            paged.reloaded.connect(self.read)
            paged.paged.connect(w.select_row)
            paged.counted.connect(w.status)
        else:
            for kind in ("inbox-read", "inbox-page", "inbox-count", "inbox-peek"):
                w.loader.cancel(kind)
            model = InboxModel(w.owner())
        model.reviewer_id = old.reviewer_id
        column, descending = old.order
        model.sort(column, _order_of(descending))
        if paged is not None:
            paged.store = w.store  # after `sort`: the first reading comes with `reload`
        w.paged = on
        # A store big enough for an inbox in pages has a queue in pages too (a staged
        # window's queue, built later, asks `w.paged` then).
        if hasattr(w, "queue"):
            w.queue.set_paged(on)
        w.inbox = model
        w.proxy.setSourceModel(model)
        # The paged model filters by status itself (by SQL); the whole one through the proxy.
        w.proxy.set_status(None if on else w.status_filter.currentData())
        old.deleteLater()

    def loaded(self, result: PagedRead) -> None:
        """A paged refresh: the statuses and the selected task; the pages read again."""
        w = self.w
        w._version = result.version
        w.inbox.clock.set(result.now)
        w.status_filter_items(result.statuses)
        w.start_following()
        w.empty_button.setEnabled(True)
        if result.task_id and result.bundle is None and result.task_id == w.selected:
            w.selected = None  # deleted meanwhile: the top task is selected instead
        w.pages.reload()  # keeps as many rows as are held
        if result.bundle is not None:
            w.show_loaded_task(result)
        else:
            w.status()

    def read(self) -> None:
        """The paged model's rows came (a first page, a search, a filter, a refresh)."""
        w = self.w
        model = w.pages
        if model.rows:
            w.size_columns()
        w.select_row()
        w.paged_searched()
        if w.store is None:  # a first look, before the store is open (`Opening.peeked`)
            w.statusBar().showMessage(f"{model.counts.total:,} tasks; opening the store…")
            w.owner().repaint()
            w.peeked.emit()
            return
        w.status()
        if model.view is None:
            return
        if not model.counts.total:
            w.right.setCurrentIndex(EMPTY)
            w.loaded.emit()
            return
        if w.right.currentIndex() in (NOTHING, EMPTY):
            if w._task_view is None and w.staged:
                self._build_view = soon(self, w.show_task_page)
                self._build_view.start()
            else:
                w.show_task_page()
        if model.rows and w.selected is None and not w.no_decision_in_front():
            self._open_top(model)

    def _open_top(self, model: PagedInboxModel) -> None:
        """Nothing selected: the top task, read alone (the pages are read)."""
        from boris_desktop.inbox.table import ID_ROLE

        w = self.w
        top = w.proxy.index(0, 0)
        w.selected = top.data(ID_ROLE) if top.isValid() else model.rows[0].id
        w.select_row()
        if w.selected is not None:
            w.load_task(w.selected)


def _order_of(descending: bool) -> Any:
    from PySide6.QtCore import Qt

    return Qt.SortOrder.DescendingOrder if descending else Qt.SortOrder.AscendingOrder
