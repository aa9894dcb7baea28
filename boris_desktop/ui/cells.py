"""One call into Python per cell painted, not one per role.

Qt's views paint a cell by asking its model for a dozen roles (text, icon, font, colours,
alignment, check state...). With a Python model each ask is a call into Python, and each
such call first takes the interpreter lock: while a worker reads (10,000 tasks for the inbox,
2,000 decisions for the queue) the GUI thread waits up to the switch interval for it every
time, so a table's paint took 30-150 ms (benchmarks/bench_queue.py). `multiData`, which Qt's
delegate calls once per cell with every role it wants, answers them all in that one call.

Behind a proxy (every table here filters through a QSortFilterProxyModel) that call would be
lost: Qt's proxies answer `multiData` by asking their own `data` once per role, each of which
asks the source, so a cell cost a dozen calls into Python again, and each mapping of a proxy
row to a source row two more (the source's rowCount and columnCount, asked by its `index`).
`WholeCellsThrough` passes the one call through; `FlatIndex` answers `index` in one call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Generic, cast

from PySide6.QtCore import (
    QModelIndex,
    QModelRoleData,
    QModelRoleDataSpan,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView
from typing_extensions import TypeVar

Index = QModelIndex | QPersistentModelIndex
#: A listed row: a read's (a task, an open decision, a decision made).
Row = TypeVar("Row", default=Any)


class CellsInOneCall:
    """Mixed into a QAbstractItemModel (before it) whose `data` answers every role."""

    def multiData(
        self,
        index: QModelIndex | QPersistentModelIndex,
        roleDataSpan: QModelRoleDataSpan | QModelRoleData,
    ) -> None:
        # A span iterates over its QModelRoleData, which PySide's type stubs do not say.
        span = (
            [roleDataSpan]
            if isinstance(roleDataSpan, QModelRoleData)
            else cast("Iterable[QModelRoleData]", roleDataSpan)
        )
        model: Any = self  # the QAbstractItemModel this is mixed into
        for role_data in span:
            role_data.setData(model.data(index, role_data.role()))


class WholeCellsThrough:
    """Mixed into a QSortFilterProxyModel (before it) whose source is CellsInOneCall."""

    def multiData(
        self,
        index: QModelIndex | QPersistentModelIndex,
        roleDataSpan: QModelRoleDataSpan | QModelRoleData,
    ) -> None:
        proxy: Any = self
        if index.isValid():
            proxy.sourceModel().multiData(proxy.mapToSource(index), roleDataSpan)


class FlatIndex:
    """Mixed into a flat QAbstractTableModel (before it): its index in one call into Python,
    where Qt's asks rowCount and columnCount (two calls)."""

    def index(self, row: int, column: int, parent: Any = QModelIndex()) -> QModelIndex:  # noqa: B008
        model: Any = self
        if parent.isValid() or not (
            0 <= row < model.rowCount() and 0 <= column < model.columnCount()
        ):
            return QModelIndex()
        index: QModelIndex = model.createIndex(row, column)
        return index


class ListedRows(Generic[Row]):
    """Mixed into a flat QAbstractTableModel (before it) that shows `self.rows`, a list of
    rows, one a line, under the titles in `columns`."""

    columns: tuple[str, ...] = ()
    rows: list[Row]

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.columns[section]
        return None

    def row_at(self, index: Index) -> tuple[Row, int] | None:
        """The row and column a cell shows, or None for an index no row has (any more)."""
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        return self.rows[index.row()], index.column()


class RowsTable(QTableView):
    """A table of rows picked one at a time (the queue, what I decided): whole rows
    selected, nothing edited, one line a row, Tab leaving the table; Enter (or Return)
    activates the current row."""

    activated_by_key = Signal()

    def __init__(self, name: str, stretch: Sequence[int] = ()) -> None:
        super().__init__()
        self.setAccessibleName(name)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setTabKeyNavigation(False)
        self.setWordWrap(False)
        self.setAlternatingRowColors(True)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        rows = self.verticalHeader()
        rows.hide()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.stretch = tuple(stretch)

    def setModel(self, model: Any) -> None:
        super().setModel(model)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for col in self.stretch:
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.activated_by_key.emit()
            return
        super().keyPressEvent(event)
