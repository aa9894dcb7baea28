"""Opening a store: a first look at its tasks (store.reads.peek, no SQLAlchemy) while the
store's modules load, then the store opened on a worker and set in every view; the demo
tasks loaded into it on request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer

from boris_desktop import settings
from boris_desktop.main_window.paging import paged_from, paged_mode
from boris_desktop.main_window.startup import soon
from boris_desktop.runtime import jobs
from boris_desktop.runtime.job_results import FirstPage, InboxPeek

if TYPE_CHECKING:
    from boris_desktop.main_window.face import Window
    from store.api import Store


class EarlyPeek:
    """The first look read while the window is built (`Opening.peek_early`): for which
    store, whether it is in, what it found, whether it is on screen (the inbox is built
    before the rest of the window: `inbox_built`), and whether `open_store` waits for it."""

    def __init__(self, directory: str | None) -> None:
        self.directory = directory
        self.done = False
        self.result: FirstPage | InboxPeek | None = None
        self.shown = False
        self.asked = False


class Opening(QObject):
    """Opens a store for the window (or takes one opened), and loads the demo into it."""

    #: The longest the staged start-up waits, its inbox built, for the first look before it
    #: builds the rest of the window (`holds_the_build`).
    HOLD_MS = 500

    def __init__(self, window: Window, store: Store | None) -> None:
        super().__init__(window.owner())
        self.w = window
        self.store_to_set = store  # set once the window is built
        self.open_when_built: tuple[str | None] | None = None  # asked before it was built
        self.early: EarlyPeek | None = None  # the first look, read while building
        self.inbox_ready = False  # the staged start-up built the inbox (`inbox_built`)
        self._held = False  # the staged start-up waited for the first look once

    def while_building(self) -> None:
        """The staged start-up's first paint is done: a store asked for before it is peeked
        at a turn after the paint, not within it: the worker's start (its imports) made the
        paint's own pass wait for the interpreter lock. Before the first turn of the build:
        after it, the worker started 60-80 ms later."""
        if self.open_when_built is not None and self.store_to_set is None:
            directory = self.open_when_built[0]
            self._peek_timer = soon(self, lambda: self.peek_early(directory))
            self._peek_timer.start()

    def built(self) -> None:
        """The window is built: the store given or asked for before is set or opened now."""
        store, self.store_to_set = self.store_to_set, None
        if store is not None:
            self.set_store(store)
        if self.open_when_built is not None:
            self.open_store(self.open_when_built[0])

    def peek_early(self, directory: str | None) -> None:
        """The first look (store.reads.peek, no SQLAlchemy) read while the rest of the window
        is built: it waited for the build (0.2-0.7 s under load on 100,000 tasks), and its
        SQL runs with the interpreter lock released, beside the build's imports. The store
        itself still opens after the build (`open_store`)."""
        if self.w._built or self.open_when_built != (directory,):
            return  # opened (or asked for another store) meanwhile: `open_store` peeks
        from boris_desktop.main_window.frame import COLUMN_TITLES

        # The order a new inbox shows (by need, its column here: importing boris_desktop.
        # inbox.table on the worker raced the build's own imports for the lock) and no rows
        # held (revision -1: nothing planned against it). Should the model's order differ,
        # it sorts and compares the rows itself (InboxModel.set_rows).
        shown: jobs.Shown = ((COLUMN_TITLES.index("Needs you"), True), [], -1, ())
        mode, most = paged_mode(), paged_from()

        def read() -> FirstPage | InboxPeek | None:
            return jobs.peek_inbox(directory, shown, mode, most)

        self.early = EarlyPeek(directory)
        self.w.loader.submit("peek", read, self._early_in, lambda _e: self._early_in(None))

    def _early_in(self, result: FirstPage | InboxPeek | None) -> None:
        early = self.early
        if early is None:
            return
        early.done, early.result = True, result
        if early.asked:  # `open_store` came (built) and waits for it
            self.early = None
            self._peeked_then_open(early.directory, result)
        elif self.inbox_ready:  # the rest of the window waits for it (`holds_the_build`)
            self._show_early(early)
            self.w.resume_build()

    def inbox_built(self) -> None:
        """The staged start-up built the inbox (`MainWindow._build_inbox`), the rest of the
        window comes next: a first look read already is shown now, not after the rest."""
        self.inbox_ready = True
        early = self.early
        if early is not None and early.done:
            self._show_early(early)

    def holds_the_build(self) -> bool:
        """Whether the staged start-up, its inbox built, waits for the first look before it
        builds the rest of the window (at most HOLD_MS; `_early_in` resumes it): built
        beside it, the rest's imports and widgets held the interpreter lock half of the
        time the look's Python wanted it, and the rows came after the whole window."""
        early = self.early
        if not self.inbox_ready or early is None or early.done or self._held:
            return False
        self._held = True
        QTimer.singleShot(self.HOLD_MS, self, self.w.resume_build)
        return True

    def _show_early(self, early: EarlyPeek) -> None:
        if not early.shown:
            early.shown = True
            self._peeked(early.result)

    def open_store(self, directory: str | None) -> None:
        """Open (or create) a store on a worker; the window stays responsive meanwhile.

        Asked before a staged window is painted and built, the worker starts after that:
        opening imports SQLAlchemy, and a worker holding the GIL made the first paint and
        the build after it wait (the build took 80 ms instead of 40)."""
        w = self.w
        if not w._built:
            self.open_when_built = (directory,)
            return
        self.open_when_built = None
        w.statusBar().showMessage(f"Opening {directory or 'the default store'}…")
        early, self.early = self.early, None
        if w.store is not None:
            self._open_on_worker(directory)
            return
        if early is not None and early.directory == directory:
            if early.shown:  # on screen since the inbox was built
                self._open_on_worker(directory)
            elif early.done:
                self._peeked_then_open(directory, early.result)
            else:  # read since the first paint (`peek_early`): `_early_in` goes on
                early.asked = True
                self.early = early
            return
        # First the tasks, read with the standard library (store.reads.peek: 10 ms on the
        # demo store, 110 ms on 10,000 tasks), then the store's modules load while they are
        # on screen. Side by side, the two threads shared the GIL and the tasks came no
        # sooner than the store. Nothing can be done with them until the store is open.
        shown, mode, most = w.shown(), paged_mode(), paged_from()
        w.loader.submit(
            "peek",
            lambda: jobs.peek_inbox(directory, shown, mode, most),
            lambda result: self._peeked_then_open(directory, result),
            lambda _e: self._open_on_worker(directory),
        )

    def _peeked_then_open(
        self, directory: str | None, result: FirstPage | InboxPeek | None
    ) -> None:
        self._peeked(result)
        self._open_on_worker(directory)

    def _open_on_worker(self, directory: str | None) -> None:
        self.w.loader.submit(
            "open", lambda: jobs.open_store(directory), self.set_store, self.w.failed
        )

    def _peeked(self, result: FirstPage | InboxPeek | None) -> None:
        w = self.w
        if isinstance(result, FirstPage):
            if w.store is None and not w.inbox.all_rows:
                w.use_paged(True)
                w.pages.show_peeked(result)  # `Paging.read` says and paints it
            return
        if result is None or w.store is not None or not result.tasks or w.inbox.all_rows:
            return  # the store came first, or there is nothing to show
        tasks = result.tasks
        w.inbox.set_rows(tasks, result.order, result.planned)
        w.size_columns()
        w.statusBar().showMessage(f"{len(tasks)} tasks; opening the store…")
        # Painted now, before the store's worker starts loading modules: sharing the GIL
        # with it, the same paint took four times as long (bench_desktop_big.py).
        w.owner().repaint()
        w.peeked.emit()

    def set_store(self, store: Store) -> None:
        w = self.w
        if not w._built:
            self.store_to_set = store  # opened before the first paint: set once built
            return
        old, w.store = w.store, store
        if old is None:
            import gc

            # The window is built and the store's modules are loaded: those objects are
            # there for good. Left in the collector's oldest generation until the first task
            # was shown (app.py freezes what start-up made then), they made one full
            # collection hold the interpreter lock for 87 ms on the worker reading that
            # task, the window standing still (100,000 tasks).
            gc.freeze()
        for kind in ("load", "brief"):
            w.loader.cancel(kind)
        if old is not None and old is not store:
            w.loader.submit("close", old.close, lambda _r: None)
        if old is not None:
            # Another store: nothing of the last one's stays on screen. (After a first look,
            # store.reads.peek, its rows and the reviewer's choice among them stay.)
            w.selected = None
            w.use_paged(False)
            w.inbox.set_rows([])
        self._show_store(store)

    def _show_store(self, store: Store) -> None:
        """The views follow `store` from now on."""
        w = self.w
        w._version = None
        w.loader.cancel("peek")
        self.early = None
        w.file_watch.clear()
        if w._task_view is not None:
            w._task_view.set_store(store)
        w.owner().setWindowTitle(f"Boris Desktop — {store.location.describe()}")
        if store.location.sqlite_file is not None:
            settings.remember_store(str(store.location.directory))
        w.show_reviewer()
        w.follow(store)
        w.notifier.reset(store.location.describe())
        # The queue and the history read once the inbox is in: three big reads at once on a
        # big store make every call the GUI thread makes into Python wait for the interpreter
        # lock behind two workers (benchmarks/bench_queue.py), and the inbox is painted first.
        w.follow_from_first_load()
        w.store_opened.emit()

    def load_demo(self) -> None:
        w = self.w
        store = w.store
        if store is None:
            return
        demo_store = w.demo_store
        if demo_store and settings.reviewer() is None:
            # A new demo store is signed with the reviewer's own key: who are they?
            dlg = w.ask_reviewer()
            dlg.accepted.connect(self.load_demo)
            return
        w.empty_button.setEnabled(False)
        w.statusBar().showMessage("Loading the demo tasks…")
        w.loader.submit(
            "demo",
            lambda: jobs.fill_demo(store, demo_store=demo_store),
            lambda _ids: w.reload(),
            w.failed,
        )
