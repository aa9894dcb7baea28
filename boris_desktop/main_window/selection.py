"""What the reviewer has selected, and what the pane below shows for it: the inbox's task,
or (the Decisions tab in front) the selected decision's task on the part it concerns."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QObject

from boris_desktop.main_window.frame import NO_DECISION, TASK

if TYPE_CHECKING:
    from boris_desktop.main_window.face import Window
    from boris_desktop.task.bundle import TaskBundle
    from store.api import Decision, TaskState


class Selection(QObject):
    """The inbox's selected row, the tab in front, and the decision the pane shows."""

    def __init__(self, window: Window) -> None:
        super().__init__(window.owner())
        self.w = window
        # The decision's part is still to be brought to the front, and what waits for its
        # task's record (Enter's dialog). (The decision itself: `w.pane_for`.)
        self.part_due = False
        self.then: Callable[[TaskState], None] | None = None

    # --- the inbox's selection -----------------------------------------------------------

    def row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        from boris_desktop.inbox.table import ID_ROLE

        w = self.w
        task_id = current.data(ID_ROLE) if current.isValid() else None
        if task_id and task_id != w.selected:
            w.selected = task_id
            if w.store is None or w._version is None:
                w.reload()
                return
            # Only the task: the inbox is as fresh as the last load, and the poll keeps it so.
            w.load_task(task_id)

    def select_row(self) -> None:
        w = self.w
        row = w.inbox.row_of(w.selected)
        if row < 0:
            return
        ix = w.proxy.mapFromSource(w.inbox.index(row, 0))
        if ix.isValid() and w.table.currentIndex().row() != ix.row():
            w.table.selectionModel().blockSignals(True)
            w.table.setCurrentIndex(ix)
            w.table.selectRow(ix.row())
            w.table.selectionModel().blockSignals(False)
            w.table.viewport().update()
        elif ix.isValid() and not w.table.selectionModel().isRowSelected(ix.row(), QModelIndex()):
            w.table.selectRow(ix.row())

    def scroll_to_selected(self) -> None:
        """After a sort or a filter: the selected task, if shown, is in sight. (Not after a
        live update: the reviewer may be reading elsewhere in the list.)"""
        w = self.w
        self.select_row()
        row = w.inbox.row_of(w.selected)
        ix = w.proxy.mapFromSource(w.inbox.index(row, 0)) if row >= 0 else QModelIndex()
        if ix.isValid():
            w.table.scrollTo(ix)

    def select_task(self, task_id: str) -> None:
        """Make `task_id` the inbox's current task, so the detail below shows it."""
        w = self.w
        row = w.inbox.row_of(task_id)
        if row >= 0:
            ix = w.proxy.mapFromSource(w.inbox.index(row, 0))
            if ix.isValid():
                w.table.setCurrentIndex(ix)
        elif w.paged and w.store is not None and task_id != w.selected:
            # Not among the pages read so far: shown below all the same.
            w.selected = task_id
            w.reload()

    def show_task(self, task_id: str) -> None:
        """Show a task in the inbox (a run to resume: its brief says from where)."""
        self.w.views.setCurrentWidget(self.w.left)
        self.select_task(task_id)
        self.w.table.setFocus()

    # --- the tabs ------------------------------------------------------------------------

    def queue_in_front(self) -> bool:
        return self.w.views.currentWidget() is self.w.queue

    def no_decision_in_front(self) -> bool:
        """The Decisions tab is in front with no decision selected: no task is shown."""
        return self.queue_in_front() and self.w.pane_for is None

    def show_task_page(self) -> None:
        self.w.task_view  # noqa: B018  (built now: the stack's TASK page)
        # The Decisions tab with nothing selected shows no task (see `show_decision`).
        self.w.right.setCurrentIndex(NO_DECISION if self.no_decision_in_front() else TASK)

    def view_changed(self, _index: int) -> None:
        """Tasks, Decisions or What I Decided came to the front: the pane follows it."""
        w = self.w
        if self.queue_in_front():
            w.queue.ensure_current()
            self.show_decision(w.queue.current())
            return
        w.pane_for, self.then = None, None
        if w.views.currentWidget() is w.left:
            # The task list's own selection: the task it highlights is the one below.
            row = w.inbox.row_of(w.selected)
            ix = w.proxy.mapFromSource(w.inbox.index(row, 0)) if row >= 0 else None
            if ix is not None and ix.isValid():
                self.select_row()
            else:
                self.row_changed(w.table.currentIndex(), QModelIndex())
        if w.right.currentIndex() == NO_DECISION:
            self.show_task_page()
            w.menu_actions.update()

    def show_queue(self) -> None:
        w = self.w
        if w.views.currentWidget() is w.queue:
            self.view_changed(w.views.currentIndex())  # back to the decision's part
        w.views.setCurrentWidget(w.queue)
        w.queue.table.setFocus()

    def show_history(self) -> None:
        self.w.views.setCurrentWidget(self.w.history)
        self.w.history.search.setFocus()

    def show_event(self, task_id: str, seq: int) -> None:
        """A decision in What I Decided: its task, at its timeline."""
        self.show_task(task_id)
        tabs = self.w.task_view.tabs
        for i in range(tabs.count()):
            if tabs.widget(i) is self.w.task_view.panel("Timeline"):
                tabs.setCurrentIndex(i)
        self.w.statusBar().showMessage(f"{task_id}: the decision is event {seq} of its timeline")

    def open_decision(self, decision_id: str) -> None:
        """A notification was clicked: the window in front, that decision's dialog open."""
        w = self.w
        owner = w.owner()
        owner.showNormal()
        owner.raise_()
        owner.activateWindow()
        w.views.setCurrentWidget(w.queue)
        if decision_id:
            w.queue.open_decision(decision_id)
        w.queue.table.setFocus()

    # --- the decision the pane shows -----------------------------------------------------

    def decision_selected(self, d: Decision | None) -> None:
        if self.queue_in_front():
            self.show_decision(d)

    def show_decision(
        self, d: Decision | None, then: Callable[[TaskState], None] | None = None
    ) -> None:
        """The pane shows decision `d`'s task, on the part `d` concerns with its row current.
        `then` is called with the task's record once the pane shows it, read afresh for it
        (Enter's dialog: always over the task on screen). No decision: the pane shows none.

        The read is a "load" like any task's: one superseded by a later selection is dropped
        by the loader's token, and one for another task than the selected is not shown."""
        w = self.w
        if not w._built:
            return
        from boris_desktop.queue.decisions import KIND_PART

        # Already on its way (the tab shown, then its first row selected): read once.
        on_its_way = (
            then is None
            and d is not None
            and w.pane_for is not None
            and w.pane_for.id == d.id
            and w.selected == d.task_id
            and w.loader.busy("load")
        )
        w.pane_for, self.then = d, then
        if on_its_way:
            self.part_due = True
            return
        if d is None:
            self._show_no_decision()
            return
        self.part_due = d.kind in KIND_PART
        self._show_decision_task(d.task_id, fresh=then is not None)

    def _show_no_decision(self) -> None:
        w = self.w
        w.selected = None  # no action acts on a task that is not on screen
        self.say_no_decision()
        if w.right.currentIndex() in (TASK, NO_DECISION):
            w.right.setCurrentIndex(NO_DECISION)
        w.menu_actions.update()

    def _show_decision_task(self, task_id: str, *, fresh: bool) -> None:
        """The decision's task below: the one on screen at once (unless its record is to be
        read afresh), another once read."""
        w = self.w
        tv = w._task_view
        if not fresh and tv is not None and tv.bundle is not None and tv.task_id == task_id:
            w.selected = task_id
            self.select_row()
            self.pane_shows(tv.bundle)
            return
        w.selected = task_id
        self.select_row()
        w.menu_actions.update()  # until its record is in, no action acts on the task shown
        if w.store is None or w._version is None:
            w.reload()
            return
        w.load_task(task_id)

    def say_no_decision(self) -> None:
        """What the pane says when no decision is selected: why there is none to show."""
        q = self.w.queue
        if q.proxy.rowCount():
            text = "Select a decision above to see its task here."
        elif q.model.rows:
            text = "No open decision matches the filters above."
        elif q.loaded:
            text = "No open decisions: nothing waits for a person."
        else:
            text = "Reading the open decisions…"
        self.w.no_decision.setText(text)

    def pane_shows(self, bundle: TaskBundle) -> None:
        """The task view shows `bundle`: if it is the decision's task, its part in front."""
        w = self.w
        d = w.pane_for
        if d is None or bundle.task.id != d.task_id or not self.queue_in_front():
            return
        from boris_desktop.queue.decisions import KIND_PART

        self.show_task_page()
        if self.part_due:
            self.part_due = False
            w.task_view.show_part(KIND_PART[d.kind], d.key)
        w.menu_actions.update()
        if self.then is not None:
            then, self.then = self.then, None
            then(bundle.task)

    def queue_updated(self, rows: list[Decision], now: str) -> None:
        n = self.w.queue.total()  # paged: the database's count, not the rows read
        self.w.views.setTabText(1, f"&Decisions ({n})" if n else "&Decisions")
        self.say_no_decision()
