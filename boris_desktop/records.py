"""One tree model for the panels' lists: rows of words, children, a key per row.

Panels build `Node`s from the task's state; `RecordTree` swaps them in while keeping the
reviewer's selection, expanded rows and scroll position, so a live update does not move
what they are looking at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTreeView

from .icons import icon, status_icon

Index = QModelIndex | QPersistentModelIndex
KEY_ROLE = Qt.ItemDataRole.UserRole + 1


@dataclass
class Node:
    key: str
    cells: Sequence[str]
    status: str | None = None  # icon for the first column, by status word
    icon_name: str | None = None  # or an icon by name
    tip: str = ""
    detail: Any = None  # what the panel's detail pane shows for this row
    children: list[Node] = field(default_factory=list)
    parent: Node | None = field(default=None, repr=False, compare=False)
    uid: int = field(default=0, repr=False, compare=False)

    def shape(self) -> tuple[Any, ...]:
        return (self.key, tuple(c.shape() for c in self.children))


class RecordTreeModel(QAbstractItemModel):
    def __init__(self, headers: Sequence[str], parent: Any = None) -> None:
        super().__init__(parent)
        self.headers = list(headers)
        self.roots: list[Node] = []
        self._by_uid: dict[int, Node] = {}

    # --- updating ------------------------------------------------------------------------

    def set_nodes(self, roots: list[Node]) -> None:
        old = tuple(n.shape() for n in self.roots)
        if old == tuple(n.shape() for n in roots) and roots:
            # Same rows: swap the words in place; selection and scrolling are untouched.
            self._swap(self.roots, roots)
            self._changed_all(QModelIndex(), self.roots)
            return
        self.beginResetModel()
        self.roots = roots
        self._by_uid = {}
        self._number(roots, None)
        self.endResetModel()

    def _number(self, nodes: list[Node], parent: Node | None) -> None:
        for n in nodes:
            n.parent = parent
            n.uid = len(self._by_uid) + 1
            self._by_uid[n.uid] = n
            self._number(n.children, n)

    def _swap(self, old: list[Node], new: list[Node]) -> None:
        for o, n in zip(old, new, strict=True):
            o.cells, o.status, o.icon_name, o.tip, o.detail = (
                n.cells,
                n.status,
                n.icon_name,
                n.tip,
                n.detail,
            )
            self._swap(o.children, n.children)

    def _changed_all(self, parent: QModelIndex, nodes: list[Node]) -> None:
        if not nodes:
            return
        self.dataChanged.emit(
            self.index(0, 0, parent), self.index(len(nodes) - 1, len(self.headers) - 1, parent)
        )
        for row, n in enumerate(nodes):
            if n.children:
                self._changed_all(self.index(row, 0, parent), n.children)

    # --- reading -------------------------------------------------------------------------

    def node(self, index: Index) -> Node | None:
        return self._by_uid.get(index.internalId()) if index.isValid() else None

    def _children(self, parent: Index) -> list[Node]:
        if not parent.isValid():
            return self.roots
        n = self.node(parent)
        return n.children if n is not None and parent.column() == 0 else []

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        kids = self._children(parent)
        if 0 <= row < len(kids) and 0 <= column < len(self.headers):
            return self.createIndex(row, column, kids[row].uid)
        return QModelIndex()

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        n = self.node(index)
        if n is None or n.parent is None:
            return QModelIndex()
        p = n.parent
        siblings = p.parent.children if p.parent is not None else self.roots
        return self.createIndex(siblings.index(p), 0, p.uid)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return len(self._children(parent))

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return len(self.headers)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.headers[section]
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: Index, role: int = 0) -> Any:
        n = self.node(index)
        if n is None:
            return None
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return n.cells[col] if col < len(n.cells) else ""
        if role == Qt.ItemDataRole.ToolTipRole:
            return n.tip or (n.cells[col] if col < len(n.cells) else None)
        if role == Qt.ItemDataRole.DecorationRole and col == 0:
            if n.icon_name:
                return icon(n.icon_name)
            if n.status:
                return status_icon(n.status)
        if role == KEY_ROLE:
            return n.key
        return None


def _path(model: RecordTreeModel, index: QModelIndex) -> tuple[str, ...]:
    keys: list[str] = []
    n = model.node(index)
    while n is not None:
        keys.append(n.key)
        n = n.parent
    return tuple(reversed(keys))


class RecordTree(QTreeView):
    """A tree of Nodes that survives live updates without moving the reviewer."""

    def __init__(self, headers: Sequence[str], accessible_name: str) -> None:
        super().__init__()
        self.records = RecordTreeModel(headers, self)
        self.setModel(self.records)
        self.setAccessibleName(accessible_name)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setAllColumnsShowFocus(True)
        # Columns are sized to their contents when rows first arrive, from a sample of rows:
        # measuring every row of a long list would stall the GUI thread.
        self.size_to_contents = True
        self.header().setResizeContentsPrecision(100)
        self.header().setStretchLastSection(True)
        self.header().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)

    def current_node(self) -> Node | None:
        return self.records.node(self.currentIndex())

    def set_nodes(self, roots: list[Node], expand_all: bool = False) -> None:
        model = self.records
        current = _path(model, self.currentIndex())
        expanded = set()
        stack = [QModelIndex()]
        while stack:
            parent = stack.pop()
            for row in range(model.rowCount(parent)):
                ix = model.index(row, 0, parent)
                if self.isExpanded(ix):
                    expanded.add(_path(model, ix))
                    stack.append(ix)
        first = not model.roots
        scroll = (self.verticalScrollBar().value(), self.horizontalScrollBar().value())
        before = tuple(n.shape() for n in model.roots)
        model.set_nodes(roots)
        if before == tuple(n.shape() for n in model.roots) and not first:
            return  # updated in place
        if expand_all or first:
            self.expandAll()
        else:
            self._expand(QModelIndex(), expanded)
        if current:
            ix = self.find(current)
            if ix.isValid():
                self.setCurrentIndex(ix)
        if first and self.size_to_contents:
            for c in range(model.columnCount() - 1):
                self.resizeColumnToContents(c)
        self.verticalScrollBar().setValue(scroll[0])
        self.horizontalScrollBar().setValue(scroll[1])

    def _expand(self, parent: QModelIndex, expanded: set[tuple[str, ...]]) -> None:
        for row in range(self.records.rowCount(parent)):
            ix = self.records.index(row, 0, parent)
            if _path(self.records, ix) in expanded:
                self.expand(ix)
                self._expand(ix, expanded)

    def find(self, path: tuple[str, ...]) -> QModelIndex:
        parent = QModelIndex()
        for key in path:
            for row in range(self.records.rowCount(parent)):
                ix = self.records.index(row, 0, parent)
                if self.records.node(ix) is not None and self.records.node(ix).key == key:  # type: ignore[union-attr]
                    parent = ix
                    break
            else:
                return QModelIndex()
        return parent
