"""The inbox: every task with what needs the reviewer, sorted by need of attention.

A store may hold ten thousand tasks. The model sorts its own rows, in Python with a key per
row (milliseconds), rather than leaving it to QSortFilterProxyModel, which would call back
into Python for every comparison (over a hundred thousand for 10,000 rows: seconds on the
GUI thread). The proxy only filters, and accepts every row without a call when no filter is
set.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QRegularExpression,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QPalette

from boris_desktop.ui import holder, keyed_rows
from boris_desktop.ui import text as t
from boris_desktop.ui.cells import CellsInOneCall, FlatIndex, ListedRows, WholeCellsThrough
from boris_desktop.ui.icons import icon, status_icon, words
from boris_desktop.ui.text import tip
from store import api

if TYPE_CHECKING:
    from boris_desktop.runtime.job_results import InboxPlan
    from store.api import TaskNeeds, TaskRow

Index = QModelIndex | QPersistentModelIndex
COLUMNS = ("Title", "Status", "Needs you", "Budget", "Last activity", "Working now")
TITLE, STATUS, NEEDS, BUDGET, ACTIVITY, WORKING = range(6)
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
ID_ROLE = Qt.ItemDataRole.UserRole + 3
ATTENTION_ROLE = Qt.ItemDataRole.UserRole + 4
#: What the filter matches: "status \x1f needs-you (1/0) \x1f searchable text, casefolded".
FILTER_ROLE = Qt.ItemDataRole.UserRole + 5


def exhausted_brush() -> QBrush:
    """An exhausted budget's words: a red that reads on the palette in force (beside a
    "failed" icon: never colour alone)."""
    dark = QGuiApplication.palette().color(QPalette.ColorRole.Base).lightness() < 128
    return QBrush(QColor("#ff8a80" if dark else "#c62828"))


def needs_text(n: TaskNeeds, status: str = "") -> str:
    """What needs the reviewer, in words, most blocking first."""
    parts = []
    to_reconcile = n.effects_to_reconcile
    for count, one, many in (
        (n.pending_approvals, "approval pending", "approvals pending"),
        (to_reconcile, "effect to reconcile", "effects to reconcile"),
        (n.missing_blobs, "missing blob", "missing blobs"),
        (n.stale_criteria, "stale criterion", "stale criteria"),
        (n.failed_criteria, "failed criterion", "failed criteria"),
    ):
        if count:
            parts.append(t.count(count, one, many))
    if n.heads > 1:
        parts.append("forked lineage")
    if n.late_changes:
        # Facts that came after completion, not answered yet (issue 35 part L).
        parts.append("changed after completion" + f" ({n.late_changes})")
    standing = n.budget
    if budget_exhausted(n, status):
        parts.append("budget exhausted")
    elif standing == api.BudgetStanding.FULLY_RESERVED:
        parts.append("budget: nothing left to reserve")
    elif not parts and standing == api.BudgetStanding.NEAR_LIMIT:
        # Said only when it is all there is: the Budget column beside shows it anyway, and
        # a task that needs a person never reads "—".
        parts.append("budget near limit")
    return " · ".join(parts) or "—"


def budget_exhausted(n: TaskNeeds, status: str = "") -> bool:
    """`budget`: how the task's most pressing counter stands (store.reads.inbox)."""
    return status == api.RunStatus.BUDGET_EXHAUSTED or n.budget == api.BudgetStanding.EXHAUSTED


#: A standing's words after the share used, as the Budgets tab says them.
_STANDING_WORDS = {
    api.BudgetStanding.EXHAUSTED: " exhausted",
    api.BudgetStanding.FULLY_RESERVED: " nothing left to reserve",
    api.BudgetStanding.NEAR_LIMIT: " near limit",
}


def budget_text(use: float, standing: str | None = None) -> str:
    """The most used counter's share used, and how the task's budget stands (the store's
    word: reservations count toward "near limit", as in the Budgets tab)."""
    words = _STANDING_WORDS.get(api.BudgetStanding(standing), "") if standing else ""
    return f"{use * 100:.0f}%" + words


def activity_text(at: str) -> str:
    return at[:16].replace("T", " ")


def filter_text(r: TaskRow) -> str:
    hay = " ".join((r.title, r.id, r.owner, words(r.status), needs_text(r.needs, r.status)))
    return f"{r.status}\x1f{int(r.attention > 0)}\x1f{hay.casefold()}"


#: Above this many runs of rows taken out or put back, a search resets the model instead.
SEARCH_EDITS = 32

#: Each task's filter text, with the row it was made of, kept by a worker so a search never
#: builds it on the GUI thread: the store's rows are frozen (read models), so it is kept
#: beside them, one entry a task, not on them.
_HAYSTACKS: dict[str, tuple[TaskRow, str]] = {}


def haystack(r: TaskRow) -> str:
    """The row's filter text: as a worker made it for this very row, else made now."""
    held = _HAYSTACKS.get(r.id)
    return held[1] if held is not None and held[0] is r else filter_text(r)


def with_haystack(rows: list[TaskRow]) -> list[TaskRow]:
    """Fresh rows (a worker's own, not yet shown) with their filter text kept for them."""
    for r in rows:
        _HAYSTACKS[r.id] = (r, filter_text(r))
    return rows


def search_words(text: str) -> tuple[str, ...]:
    return tuple(text.casefold().split())


def matching(rows: list[TaskRow], words_: tuple[str, ...]) -> list[TaskRow]:
    """The rows whose title, id, owner, status or needs hold every word, in their order.
    Pure Python on plain rows: run on a worker (jobs.search) while the reviewer types."""
    if not words_:
        return rows
    out = []
    for r in rows:
        hay = haystack(r)
        if all(w in hay for w in words_):
            out.append(r)
    return out


def narrowing_plan(
    every: list[TaskRow], held: list[TaskRow], showing: list[TaskRow]
) -> keyed_rows.Plan[TaskRow]:
    """The changes from the rows shown (`held`) to `showing`, when both are picks of
    `every` in its order (as a search makes them): one walk down `every`, comparing rows by
    identity, rather than keyed_rows.plan's longest run in order, whose dictionaries and
    key calls were most of a search's time on 10,000 rows (bench_search.py). Rows picked
    otherwise (a reload sorted them anew meanwhile) get keyed_rows.plan."""
    gone: list[int] = []
    inserts: list[tuple[int, list[TaskRow]]] = []
    i = j = 0
    nh, ns = len(held), len(showing)
    for r in every:
        shown = i < nh and held[i] is r
        wanted = j < ns and showing[j] is r
        if shown:
            if not wanted:
                gone.append(i)
            i += 1
        if wanted:
            if not shown:
                if inserts and inserts[-1][0] + len(inserts[-1][1]) == j:
                    inserts[-1][1].append(r)
                else:
                    inserts.append((j, [r]))
            j += 1
    if i != nh or j != ns:
        return keyed_rows.plan(held, showing, task_key)
    runs = keyed_rows.runs_of(gone)
    where: dict[Hashable, int] = {r.id: at for at, r in enumerate(showing)}
    added = [r for _, new in inserts for r in new]
    return keyed_rows.Plan(runs, inserts, [], False, runs, added, where)


def ordered(rows: list[TaskRow], column: int, descending: bool) -> list[TaskRow]:
    """The rows in the inbox's order. Ascending: by the column, ties newest first;
    descending is its exact reverse, so among equals the task that has waited longest comes
    first. Pure Python on plain rows: a worker sorts a fresh read (see jobs.refresh)."""
    out = sorted(rows, key=lambda r: r.updated_at, reverse=True)
    out.sort(key=lambda r: sort_key(r, column))
    if descending:
        out.reverse()
    return out


def sort_key(r: TaskRow, column: int) -> Any:
    if column == TITLE:
        return r.title.casefold()
    if column == STATUS:
        return r.status
    if column == NEEDS:
        return r.attention
    if column == BUDGET:
        return r.needs.budget_use
    if column == WORKING:
        # Last heard from: a heartbeat, a lease's end, or the task's last write.
        return holder.last_touched(r.lease, r.updated_at) or ""
    return r.updated_at


if TYPE_CHECKING:
    _ListedTasks = ListedRows[TaskRow]
else:  # the rows' type is the type checker's: the store's modules load after the first paint
    _ListedTasks = ListedRows


class InboxModel(_ListedTasks, CellsInOneCall, FlatIndex, QAbstractTableModel):
    """Rows are `store.tasks()` entries, kept by id: an update never resets the model, and
    the rows stay sorted (by `sort`, most in need of attention first until told otherwise)."""

    columns = COLUMNS

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[TaskRow] = []  # the rows shown: those matching `search`
        #: Every task, in the same order: the search picks `rows` from them (`show_matching`)
        #: here, in the model, rather than in a proxy that would ask Python about each of
        #: ten thousand rows on the GUI thread at every keystroke (bench_search.py).
        self.all_rows: list[TaskRow] = []
        self.search: tuple[str, ...] = ()
        self._ids: set[Hashable] = set()  # every task's id, shown or not
        self._pos: dict[Hashable, int] = {}  # a task id -> its row
        self.revision = 0  # counts the edits of `rows` (a worker's plan is for one of them)
        self._order = (NEEDS, Qt.SortOrder.DescendingOrder)
        #: The database clock, moved on between reads: "Working now" is judged against it
        #: each tick (MainWindow), so a lease that runs out reads as idle with no write.
        self.clock = holder.Clock()
        self.reviewer_id: str | None = None  # a lease this reviewer holds reads "you"

    @property
    def order(self) -> tuple[int, bool]:
        """(column, descending): what `ordered` needs to sort a read as this model shows it."""
        column, order = self._order
        return column, order == Qt.SortOrder.DescendingOrder

    def set_rows(
        self,
        rows: list[TaskRow],
        order: tuple[int, bool] | None = None,
        planned: InboxPlan | None = None,
    ) -> None:
        """`rows`: every task. `order`: the order they are already in (`ordered`, on a
        worker), if any. `planned`: the changes worked out on a worker (jobs.refresh) from
        the rows this model held at its revision, for its search; used if it still holds
        them."""
        if order != self.order:
            rows, planned = ordered(rows, *self.order), None
        self.all_rows = rows
        self._ids = {r.id for r in rows}
        if planned is not None and planned.revision == self.revision:
            # Worked out on a worker for the rows held now, so for the search in force.
            self._show(planned.showing, planned.plan)
        else:
            self._show(matching(rows, self.search))

    def holds(self, task_id: str | None) -> bool:
        """Whether the task is in the inbox, shown or hidden by the search."""
        return task_id in self._ids

    def show_matching(self, search: tuple[str, ...], planned: InboxPlan | None) -> None:
        """Show the tasks matching `search`: `planned` was worked out on a worker
        (jobs.search) and is used if the model still holds what it was made from."""
        self.search = search
        if planned is not None and planned.revision == self.revision:
            rows, plan = planned.showing, planned.plan
        else:
            rows = matching(self.all_rows, search)
            plan = narrowing_plan(self.all_rows, self.rows, rows)
        if len(plan.gone) + len(plan.inserts) <= SEARCH_EDITS:
            self._show(rows, plan)
            return
        # A search takes out or puts back rows all over the list: thousands of runs, each
        # a removal or insert the proxy and the view handle one by one (the search's GUI
        # pause, bench_search.py). One reset asks only for the rows in sight; the window
        # gives the selection back (MainWindow._searched).
        self.beginResetModel()
        self.rows = list(rows)
        self._pos = plan.where
        self.revision += 1
        self.endResetModel()

    def _show(self, rows: list[TaskRow], plan: keyed_rows.Plan[TaskRow] | None = None) -> None:
        if plan is None:
            plan = keyed_rows.plan(self.rows, rows, task_key)
        self.revision += 1
        if plan.moved:
            # Some tasks moved relative to the others: a layout change, which keeps the
            # selection on its task (taking the row out and back would drop it).
            self._replace(rows, plan)
        else:
            keyed_rows.apply(self, self.rows, plan, len(COLUMNS))
        self._pos = plan.where

    def _replace(self, rows: list[TaskRow], plan: keyed_rows.Plan[TaskRow]) -> None:
        for first, last in reversed(plan.absent):
            self.beginRemoveRows(QModelIndex(), first, last)
            del self.rows[first : last + 1]
            self.endRemoveRows()
        if plan.added:
            first = len(self.rows)
            self.beginInsertRows(QModelIndex(), first, first + len(plan.added) - 1)
            self.rows.extend(plan.added)
            self.endInsertRows()
        self.layoutAboutToBeChanged.emit()
        before = self.persistentIndexList()
        kept = [(self.rows[ix.row()].id, ix.column()) for ix in before]
        self.rows = list(rows)
        where = plan.where
        self.changePersistentIndexList(before, [self.index(where[t], col) for t, col in kept])
        self.layoutChanged.emit()
        for first, last in keyed_rows.runs_of([at for at, _ in plan.changed]):
            self.dataChanged.emit(self.index(first, 0), self.index(last, len(COLUMNS) - 1))

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self._order = (column, order)
        self._resort()

    def _resort(self) -> None:
        if not self.rows:
            self._pos = {}
            return
        self.layoutAboutToBeChanged.emit()
        before = self.persistentIndexList()
        held = [(self.rows[ix.row()].id, ix.column()) for ix in before]
        self.rows = ordered(self.rows, *self.order)
        self.all_rows = ordered(self.all_rows, *self.order)
        self.revision += 1
        self._pos = {r.id: i for i, r in enumerate(self.rows)}
        self.changePersistentIndexList(
            before, [self.index(self._pos[task_id], col) for task_id, col in held]
        )
        self.layoutChanged.emit()

    def row_of(self, task_id: str | None) -> int:
        if task_id is None:
            return -1
        i = self._pos.get(task_id, -1)
        if 0 <= i < len(self.rows) and self.rows[i].id == task_id:
            return i
        return next((i for i, r in enumerate(self.rows) if r.id == task_id), -1)

    def working_now(self, r: TaskRow) -> str:
        """Who works on the task now, judged at the clock's reading now."""
        return holder.working_now(r.lease, r.updated_at, self.clock.now(), self.reviewer_id)

    def cell_words(self, r: TaskRow, col: int) -> str:
        """The cell's words: only its own column's (each of the others is made apart)."""
        if col == TITLE:
            return r.title
        if col == STATUS:
            return words(r.status)
        if col == NEEDS:
            return needs_text(r.needs, r.status)
        if col == BUDGET:
            return budget_text(r.needs.budget_use, r.needs.budget)
        if col == ACTIVITY:
            return activity_text(r.updated_at)
        return self.working_now(r)

    def data(self, index: Index, role: int = 0) -> Any:
        cell = self.row_at(index)
        if cell is None:
            return None
        r, col = cell
        n = r.needs
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return self.cell_words(r, col)
        if role == Qt.ItemDataRole.DecorationRole:
            if col == STATUS:
                return status_icon(r.status)
            if col == NEEDS and r.attention > 0:
                return icon("fork" if n.heads > 1 and r.attention <= 60 else "attention")
            if col == BUDGET and budget_exhausted(n, r.status):
                return icon("failed")  # not by colour alone
            return None
        if role == Qt.ItemDataRole.ForegroundRole:
            if col == BUDGET and budget_exhausted(n, r.status):
                return exhausted_brush()
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == TITLE:
                return tip(f"{r.title}\nid {r.id} · owner {r.owner}")
            if col == BUDGET:
                return (
                    "the most used budget counter, against its limit (reservations count toward it)"
                )
            if col == NEEDS:
                return f"{needs_text(n, r.status)}\nattention score {r.attention}"
            if col == WORKING:
                return holder.holder_line(r.lease, r.updated_at, self.clock.now(), self.reviewer_id)
            return None
        if role == SORT_ROLE:
            return sort_key(r, col)
        if role == ID_ROLE:
            return r.id
        if role == ATTENTION_ROLE:
            return r.attention
        if role == FILTER_ROLE:
            return haystack(r)
        return None


class InboxFilter(WholeCellsThrough, QSortFilterProxyModel):
    """Filter by status (or "needs you") and by text. Sorting is the source model's.

    The filter is a regular expression over each row's FILTER_ROLE, matched by Qt: with no
    filter set Qt accepts every row without calling into Python, which a Python
    `filterAcceptsRow` would do for each of ten thousand rows whenever the rows move
    (then, with a worker reading, each call waits for the interpreter lock)."""

    NEEDS_YOU = "__needs_you__"

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.status: str | None = None
        self.text = ""
        self.setDynamicSortFilter(True)
        self.setFilterRole(FILTER_ROLE)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        model = self.sourceModel()
        if isinstance(model, InboxModel):
            model.sort(column, order)

    def set_status(self, status: str | None) -> None:
        self.status = status
        self._apply()

    def set_text(self, text: str) -> None:
        """The old search: Qt asks every row for its filter text, in Python, on the GUI
        thread. The window searches in the model instead (InboxModel.show_matching); kept
        as bench_search.py's peer."""
        self.text = text.strip().casefold()
        self._apply()

    def _apply(self) -> None:
        pattern = ""
        if self.status == self.NEEDS_YOU:
            pattern += "(?=[^\x1f]*\x1f1\x1f)"
        elif self.status is not None:
            pattern += f"(?={re.escape(self.status)}\x1f)"
        for word in self.text.split():
            pattern += f"(?=[\\s\\S]*{re.escape(word)})"
        self.beginFilterChange()
        self.setFilterRegularExpression(QRegularExpression("^" + pattern if pattern else ""))
        self.endFilterChange()


def task_key(row: TaskRow) -> str:
    return str(row.id)
