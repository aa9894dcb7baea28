"""Following the store: every read runs on a worker (`loader`), the GUI thread never waits
on the database, on hashing or on highlighting. On a team store (PostgreSQL) the window
hears every commit from the server (`live`, LISTEN/NOTIFY on a worker thread) and reloads
the tasks it touched and the inbox at once; on an SQLite file a one-second poll of the
store's data version notices writes from other processes. The files of the task on screen
are watched: changes are marked at once and recorded. An update keeps the reviewer's
selection and scroll position."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer

from boris_desktop.main_window.frame import EMPTY, NOTHING
from boris_desktop.main_window.startup import soon
from boris_desktop.runtime import jobs
from boris_desktop.runtime.job_results import InboxRead, PagedRead, TaskRead, Unchanged

if TYPE_CHECKING:
    from boris_desktop.main_window.face import Window
    from store.api import Store


class StoreFollower(QObject):
    """Reads the inbox and the task on screen again when the store changes."""

    def __init__(self, window: Window, poll_ms: int) -> None:
        super().__init__(window.owner())
        self.w = window
        self.poll_ms = poll_ms
        self.follow_due = False  # the queue and history start with the first inbox load

    def build(self) -> None:
        """The file watcher, the poll, the server's feed and the retry of a reload heard."""
        from boris_desktop.runtime.live import StoreFeed
        from boris_desktop.runtime.task_watch import TaskFileWatcher

        w = self.w
        # The files of the task on screen: changes are marked at once and recorded.
        w.file_watch = TaskFileWatcher(w.loader, w.owner())
        w.file_watch.marks_changed.connect(self.disk_marks)
        w.file_watch.recorded.connect(lambda _obs: w.reload())
        w.statusBar().addPermanentWidget(w.file_watch.indicator)
        self.timer = QTimer(self)
        self.timer.setInterval(self.poll_ms)
        self.timer.timeout.connect(self.poll)
        # A team store's commits, heard from the server: no polling (see runtime.live).
        w.live = StoreFeed(w.owner())
        w.live.changed.connect(self.heard)
        w.live.state_changed.connect(lambda _s: w.status())
        self.due: tuple[set[str], bool] = (set(), False)  # heard, not yet reloaded
        self.due_retry = QTimer(self)  # after the load in flight, never instead of it
        self.due_retry.setSingleShot(True)
        self.due_retry.setInterval(15)
        self.due_retry.timeout.connect(self.reload_heard)

    def follow(self, store: Store) -> None:
        """A store opened: heard from its server, or polled."""
        self.due = (set(), False)
        self.w.choose_inbox()
        if self.w.live.start(store):
            self.timer.stop()
        else:
            self.timer.start()

    # --- reading again -------------------------------------------------------------------

    def reload(self) -> None:
        """Load the inbox and the selected task now, superseding any load in flight."""
        w = self.w
        if w.store is None or w.sizing:
            return
        w.loader.submit("load", self._refresh_job(w.selected, None), self.loaded, self.failed)

    def load_task(self, task_id: str) -> None:
        """Read only the task: the inbox is as fresh as the last load."""
        store = self.w.store
        self.w.loader.submit(
            "load", lambda: jobs.task_only(store, task_id), self.loaded, self.failed
        )

    def _refresh_job(self, task_id: str | None, known: int | None) -> Callable[[], Any]:
        """What a worker reads to refresh: the whole inbox, or (paged) only the task and the
        statuses; the paged model reads its own pages again (`Paging.loaded`)."""
        store = self.w.store
        if self.w.paged:
            return lambda: jobs.paged_refresh(store, task_id, known)
        shown = self.w.shown()
        return lambda: jobs.refresh(store, task_id, known, shown)

    def poll(self) -> None:
        # A poll never supersedes a load in flight (that load would be dropped for nothing).
        w = self.w
        if w.store is None or w.sizing or w.loader.busy("load"):
            return
        job = self._refresh_job(w.selected, w._version)
        w.loader.submit("load", job, self.loaded, self.failed)

    def heard(self, changes: Any) -> None:
        """Commits the server announced: reload the inbox, and the task on screen if they
        touched it (or if anything may have changed: the listener reconnected)."""
        ids, everything = self.due
        self.due = (ids | set(changes.task_ids), everything or changes.everything)
        self.reload_heard()

    def reload_heard(self) -> None:
        w = self.w
        ids, everything = self.due
        if w.store is None or w.sizing or not (ids or everything):
            return
        if w.loader.busy("load"):
            # That load may have read before the commit: reload once it is in.
            self.due_retry.start()
            return
        self.due = (set(), False)
        selected = w.selected
        task_id = selected if everything or selected in ids else None
        # A task the server named is read whatever the version says: an inbox-only load may
        # have read the version after its commit, and "unchanged" would then skip it.
        known = None if everything or task_id is not None else w._version
        w.loader.submit("load", self._refresh_job(task_id, known), self.loaded, self.failed)

    def reload_now(self) -> None:
        """Load synchronously: only for start-up rendering (--screenshot) and tests."""
        w = self.w
        assert w.store is not None
        w.loader.cancel("load")
        if w.paged:  # the pages come from the model's worker all the same
            self.loaded(jobs.paged_refresh(w.store, w.selected, None))
            return
        result = jobs.refresh(w.store, w.selected, None)
        if w.selected is None and isinstance(result, InboxRead) and result.tasks:
            w.selected = result.tasks[0].id  # list_tasks sorts by need of attention
            result = jobs.refresh(w.store, w.selected, None)
        self.loaded(result)
        if w.selected:
            w.loader.cancel("brief")
            w.task_view.show_brief(jobs.brief(w.store, w.selected))

    # --- what a read found ---------------------------------------------------------------

    def loaded(self, result: InboxRead | PagedRead | TaskRead | Unchanged) -> None:
        w = self.w
        if isinstance(result, Unchanged):
            return
        if isinstance(result, PagedRead):
            w.paged_loaded(result)
            return
        if isinstance(result, TaskRead):  # the selected task alone (Selection.row_changed)
            if result.task_id == w.selected:
                self.show_task(result)
            return
        if w.paged:
            return  # read whole before the window turned to pages
        self._inbox_read(result)
        if w.inbox.rows and not w.inbox.holds(w.selected) and not w.no_decision_in_front():
            # Nothing (or a vanished task) selected: the one most in need of the reviewer.
            self._open_top()
            return
        w.select_row()
        self.show_task(result)

    def _inbox_read(self, result: InboxRead) -> None:
        """The inbox read whole: its rows, counts and statuses, and the pane below."""
        w = self.w
        w._version = result.version
        w.inbox.clock.set(result.now)
        w.inbox.set_rows(result.tasks, result.order, result.planned)
        w.needy = result.needy
        self.start_following()
        w.status_filter_items(result.statuses)
        if result.tasks:
            w.size_columns()
        if result.tasks and w._task_view is None and w.staged:
            # Start-up: the inbox is painted before the task view, the biggest single piece of
            # the window, is built in a turn of its own (the task's record is on its way).
            self._build_view = soon(self, w.show_task_page)
            self._build_view.start()
        elif result.tasks:
            w.show_task_page()
        else:
            w.right.setCurrentIndex(EMPTY)
        w.empty_button.setEnabled(True)

    def _open_top(self) -> None:
        from boris_desktop.inbox.table import ID_ROLE

        w = self.w
        top = w.proxy.index(0, 0)
        w.selected = top.data(ID_ROLE) if top.isValid() else w.inbox.rows[0].id
        w.select_row()
        # Only that task: the inbox was just read (ten thousand tasks read again, on a
        # worker, would make every call the GUI thread makes into Python wait its turn).
        if w.selected is not None:
            self.load_task(w.selected)

    def show_task(self, result: InboxRead | PagedRead | TaskRead) -> None:
        w = self.w
        bundle = result.bundle
        if bundle is not None and result.task_id == w.selected:
            from boris_desktop.task.view import same_record

            # The brief (it hashes files) is read again when the record changed, not when
            # only the clock did.
            changed = not same_record(w.task_view.bundle, bundle)
            w.task_view.show_bundle(bundle)
            w.file_watch.set_task(w.store, bundle.task)
            w.pane_shows(bundle)
            if changed and w.selected is not None:
                store, task_id = w.store, w.selected
                w.loader.submit("brief", lambda: jobs.brief(store, task_id), w.task_view.show_brief)
        w.status()
        w.menu_actions.update()
        w.loaded.emit()

    def disk_marks(self) -> None:
        tv = self.w._task_view
        if tv is not None:
            task = tv.bundle.task if tv.bundle else None
            tv.set_disk(self.w.file_watch.disk_marks(task))

    def start_following(self) -> None:
        """The decision queue and the history follow the store from the first inbox load on
        (or its failure: they say what they can read themselves)."""
        if self.follow_due:
            self.follow_due = False
            self.w.queue.start()
            self.w.history.start()

    def failed(self, error: Exception) -> None:
        self.start_following()
        from boris_desktop.ui.text import failure

        w = self.w
        first = failure(error)
        w.statusBar().showMessage(f"Could not read the store: {first}")
        w.nothing.setText(f"Could not read the store:\n{first}")
        if w.store is None:
            w.right.setCurrentIndex(NOTHING)
