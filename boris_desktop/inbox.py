"""The inbox: every task with what needs the reviewer, sorted by need of attention.

A store may hold ten thousand tasks. The model sorts its own rows, in Python with a key per
row (milliseconds), rather than leaving it to QSortFilterProxyModel, which would call back
into Python for every comparison (over a hundred thousand for 10,000 rows: seconds on the
GUI thread). The proxy only filters, and accepts every row without a call when no filter is
set.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QPalette

from store import rules

from . import text as t
from .icons import icon, status_icon, words
from .text import tip

Index = QModelIndex | QPersistentModelIndex
COLUMNS = ("Title", "Status", "Needs you", "Budget", "Last activity")
TITLE, STATUS, NEEDS, BUDGET, ACTIVITY = range(5)
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
ID_ROLE = Qt.ItemDataRole.UserRole + 3
ATTENTION_ROLE = Qt.ItemDataRole.UserRole + 4


def exhausted_brush() -> QBrush:
    """An exhausted budget's words: a red that reads on the palette in force (beside a
    "failed" icon: never colour alone)."""
    dark = QGuiApplication.palette().color(QPalette.ColorRole.Base).lightness() < 128
    return QBrush(QColor("#ff8a80" if dark else "#c62828"))


def needs_text(n: dict[str, Any], status: str = "") -> str:
    """What needs the reviewer, in words, most blocking first."""
    parts = []
    to_reconcile = n.get("effects_to_reconcile", n.get("unresolved_effects", 0))
    for count, one, many in (
        (n.get("pending_approvals"), "approval pending", "approvals pending"),
        (to_reconcile, "effect to reconcile", "effects to reconcile"),
        (n.get("missing_blobs"), "missing blob", "missing blobs"),
        (n.get("stale_criteria"), "stale criterion", "stale criteria"),
        (n.get("failed_criteria"), "failed criterion", "failed criteria"),
    ):
        if count:
            parts.append(t.count(count, one, many))
    if n.get("heads", 0) > 1:
        parts.append("forked lineage")
    if budget_exhausted(n, status):
        parts.append("budget exhausted")
    elif not parts and rules.budget_near_limit(n.get("budget_use", 0)):
        # Said only when it is all there is: the Budget column beside shows it anyway, and
        # a task that needs a person never reads "—".
        parts.append("budget near limit")
    return " · ".join(parts) or "—"


def budget_exhausted(n: dict[str, Any], status: str = "") -> bool:
    return status == "budget_exhausted" or n.get("budget_use", 0) >= 1


def budget_text(use: float) -> str:
    pct = f"{use * 100:.0f}%"
    if use >= 1:
        return f"{pct} exhausted"
    if rules.budget_near_limit(use):
        return f"{pct} near limit"
    return pct


def activity_text(at: str) -> str:
    return at[:16].replace("T", " ")


def sort_key(r: dict[str, Any], column: int) -> Any:
    if column == TITLE:
        return r["title"].casefold()
    if column == STATUS:
        return r["status"]
    if column == NEEDS:
        return r["attention"]
    if column == BUDGET:
        return r["needs"]["budget_use"]
    return r["updated_at"]


class InboxModel(QAbstractTableModel):
    """Rows are `store.tasks()` entries, kept by id: an update never resets the model, and
    the rows stay sorted (by `sort`, most in need of attention first until told otherwise)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[dict[str, Any]] = []
        self._pos: dict[str, int] = {}
        self._order = (NEEDS, Qt.SortOrder.DescendingOrder)

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        new = {r["id"]: r for r in rows}
        changed = False
        for i in range(len(self.rows) - 1, -1, -1):
            if self.rows[i]["id"] not in new:
                self.beginRemoveRows(QModelIndex(), i, i)
                del self.rows[i]
                self.endRemoveRows()
                changed = True
        for i, old in enumerate(self.rows):
            fresh = new[old["id"]]
            if fresh != old:
                self.rows[i] = fresh
                self.dataChanged.emit(self.index(i, 0), self.index(i, len(COLUMNS) - 1))
                changed = True
        known = {r["id"] for r in self.rows}
        added = [r for r in rows if r["id"] not in known]
        if added:
            first = len(self.rows)
            self.beginInsertRows(QModelIndex(), first, first + len(added) - 1)
            self.rows.extend(added)
            self.endInsertRows()
            changed = True
        if changed:
            self._resort()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self._order = (column, order)
        self._resort()

    def _resort(self) -> None:
        column, order = self._order
        if not self.rows:
            self._pos = {}
            return
        self.layoutAboutToBeChanged.emit()
        before = self.persistentIndexList()
        held = [(self.rows[ix.row()]["id"], ix.column()) for ix in before]
        # Ascending: by the column, ties newest first; descending is its exact reverse, so
        # among equals the task that has waited longest comes first.
        self.rows.sort(key=lambda r: r["updated_at"], reverse=True)
        self.rows.sort(key=lambda r: sort_key(r, column))
        if order == Qt.SortOrder.DescendingOrder:
            self.rows.reverse()
        self._pos = {r["id"]: i for i, r in enumerate(self.rows)}
        self.changePersistentIndexList(
            before, [self.index(self._pos[task_id], col) for task_id, col in held]
        )
        self.layoutChanged.emit()

    def row_of(self, task_id: str | None) -> int:
        if task_id is None:
            return -1
        i = self._pos.get(task_id, -1)
        if 0 <= i < len(self.rows) and self.rows[i]["id"] == task_id:
            return i
        return next((i for i, r in enumerate(self.rows) if r["id"] == task_id), -1)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = 0) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        r = self.rows[index.row()]
        n = r["needs"]
        col = index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return (
                r["title"],
                words(r["status"]),
                needs_text(n, r["status"]),
                budget_text(n["budget_use"]),
                activity_text(r["updated_at"]),
            )[col]
        if role == Qt.ItemDataRole.DecorationRole:
            if col == STATUS:
                return status_icon(r["status"])
            if col == NEEDS and r["attention"] > 0:
                return icon("fork" if n["heads"] > 1 and r["attention"] <= 60 else "attention")
            if col == BUDGET and budget_exhausted(n, r["status"]):
                return icon("failed")  # not by colour alone
            return None
        if role == Qt.ItemDataRole.ForegroundRole:
            if col == BUDGET and budget_exhausted(n, r["status"]):
                return exhausted_brush()
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == TITLE:
                return tip(f"{r['title']}\nid {r['id']} · owner {r['owner']}")
            if col == BUDGET:
                return "the most used budget counter, against its limit"
            if col == NEEDS:
                return f"{needs_text(n, r['status'])}\nattention score {r['attention']}"
            return None
        if role == SORT_ROLE:
            return sort_key(r, col)
        if role == ID_ROLE:
            return r["id"]
        if role == ATTENTION_ROLE:
            return r["attention"]
        return None


class InboxFilter(QSortFilterProxyModel):
    """Filter by status (or "needs you") and by text. Sorting is the source model's."""

    NEEDS_YOU = "__needs_you__"

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.status: str | None = None
        self.text = ""
        self.setDynamicSortFilter(True)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        model = self.sourceModel()
        if isinstance(model, InboxModel):
            model.sort(column, order)

    def set_status(self, status: str | None) -> None:
        self.beginFilterChange()
        self.status = status
        self.endFilterChange()

    def set_text(self, text: str) -> None:
        self.beginFilterChange()
        self.text = text.strip().casefold()
        self.endFilterChange()

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        if self.status is None and not self.text:
            return True
        model = self.sourceModel()
        if not isinstance(model, InboxModel) or source_row >= len(model.rows):
            return False
        r = model.rows[source_row]
        if self.status == self.NEEDS_YOU and r["attention"] <= 0:
            return False
        if self.status not in (None, self.NEEDS_YOU) and r["status"] != self.status:
            return False
        if self.text:
            hay = " ".join(
                (
                    r["title"],
                    r["id"],
                    r["owner"],
                    words(r["status"]),
                    needs_text(r["needs"], r["status"]),
                )
            ).casefold()
            return all(word in hay for word in self.text.split())
        return True
