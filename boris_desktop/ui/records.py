"""One tree model for the panels' lists: rows of words, children, a key per row.

Panels build `Node`s from the task's state; `RecordTree` swaps them in while keeping the
reviewer's selection, expanded rows and scroll position, so a live update does not move
what they are looking at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QTreeView

from boris_desktop.ui.cells import CellsInOneCall
from boris_desktop.ui.icons import icon, status_icon
from boris_desktop.ui.text import tip

Index = QModelIndex | QPersistentModelIndex
KEY_ROLE = Qt.ItemDataRole.UserRole + 1
#: What a new set of rows did to the model (RecordTreeModel.set_nodes).
Change = Literal["same", "extended", "reset"]


@dataclass
class Node:
    key: str
    cells: Sequence[str]
    status: str | None = None  # icon for the first column, by status word
    icon_name: str | None = None  # or an icon by name
    tip: str = ""
    #: Icons by name for cells after the first (column -> icon), e.g. who signed the row.
    cell_icons: tuple[tuple[int, str], ...] = ()
    #: Tooltips for cells that say more than the row's `tip` (column -> words).
    cell_tips: tuple[tuple[int, str], ...] = ()
    detail: Any = None  # what the panel's detail pane shows for this row
    children: list[Node] = field(default_factory=list)
    parent: Node | None = field(default=None, repr=False, compare=False)
    uid: int = field(default=0, repr=False, compare=False)

    def shape(self) -> tuple[Any, ...]:
        return (self.key, tuple(c.shape() for c in self.children))


def _shapes(nodes: list[Node]) -> tuple[Any, ...]:
    return tuple(n.shape() for n in nodes)


class RecordTreeModel(CellsInOneCall, QAbstractItemModel):
    """(`flags` is Qt's own: a row enabled and selectable; a Python one was a call into Python
    for every cell painted.)"""

    def __init__(self, headers: Sequence[str], parent: Any = None) -> None:
        super().__init__(parent)
        self.headers = list(headers)
        self.roots: list[Node] = []
        self._by_uid: dict[int, Node] = {}

    # --- updating ------------------------------------------------------------------------

    def set_nodes(self, roots: list[Node]) -> tuple[Change, int]:
        """Show `roots`, disturbing the view as little as the change allows. Returns what was
        done: ("same", 0) words swapped in place; ("extended", n) a flat list kept its rows
        and gained n on top and maybe more below (a timeline's newer and older pages);
        ("reset", 0) everything was replaced."""
        if roots and len(roots) == len(self.roots) and _shapes(self.roots) == _shapes(roots):
            # Same rows: swap the words in place; selection and scrolling are untouched.
            self._swap(QModelIndex(), self.roots, roots)
            return ("same", 0)
        span = self._extension(roots)
        if span is not None:
            head, tail = span
            self._swap(QModelIndex(), self.roots, roots[head : len(roots) - tail])
            if head:
                self.beginInsertRows(QModelIndex(), 0, head - 1)
                self.roots[0:0] = roots[:head]
                self._number(roots[:head], None)
                self.endInsertRows()
            if tail:
                end = len(self.roots)
                self.beginInsertRows(QModelIndex(), end, end + tail - 1)
                self.roots.extend(roots[len(roots) - tail :])
                self._number(roots[len(roots) - tail :], None)
                self.endInsertRows()
            return ("extended", head)
        self.beginResetModel()
        self.roots = roots
        self._by_uid = {}
        self._number(roots, None)
        self.endResetModel()
        return ("reset", 0)

    def _extension(self, roots: list[Node]) -> tuple[int, int] | None:
        """(rows before, rows after) when `roots` is the current flat list with rows added
        only above and below it; otherwise None."""
        old = self.roots
        if not old or len(roots) <= len(old):
            return None
        if any(n.children for n in old) or any(n.children for n in roots):
            return None
        first = old[0].key
        head = next((i for i, n in enumerate(roots) if n.key == first), None)
        if head is None or head + len(old) > len(roots):
            return None
        if any(o.key != n.key for o, n in zip(old, roots[head : head + len(old)], strict=True)):
            return None
        return head, len(roots) - head - len(old)

    def _number(self, nodes: list[Node], parent: Node | None) -> None:
        for n in nodes:
            n.parent = parent
            n.uid = len(self._by_uid) + 1  # never reused: _by_uid only grows until a reset
            self._by_uid[n.uid] = n
            self._number(n.children, n)

    def _swap(self, parent: QModelIndex, old: list[Node], new: list[Node]) -> None:
        """Put the words of `new` into the rows of `old` (same keys) and tell the view which
        rows changed: telling it all of them made it re-read thousands of unchanged rows."""
        first = last = -1
        for row, (o, n) in enumerate(zip(old, new, strict=True)):
            if o is n:
                continue  # a panel that keeps its rows' nodes (the timeline) gave the same one
            words = (n.cells, n.status, n.icon_name, n.tip, n.cell_icons, n.cell_tips)
            if words != (o.cells, o.status, o.icon_name, o.tip, o.cell_icons, o.cell_tips):
                o.cells, o.status, o.icon_name, o.tip, o.cell_icons, o.cell_tips = words
                first = row if first < 0 else first
                last = row
            o.detail = n.detail
            if o.children:
                self._swap(self.index(row, 0, parent), o.children, n.children)
        if first >= 0:
            self.dataChanged.emit(
                self.index(first, 0, parent), self.index(last, len(self.headers) - 1, parent)
            )

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

    # Qt's parent() is two: the QObject's (no argument) and the row's parent (an index).
    @overload
    def parent(self) -> QObject | None: ...
    @overload
    def parent(self, index: Index) -> QModelIndex: ...
    def parent(self, index: Index | None = None) -> QModelIndex | QObject | None:
        if index is None:
            return super().parent()
        n = self.node(index)
        if n is None or n.parent is None:
            return QModelIndex()
        p = n.parent
        siblings = p.parent.children if p.parent is not None else self.roots
        return self.createIndex(siblings.index(p), 0, p.uid)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        if not parent.isValid():
            return len(self.roots)
        return len(self._children(parent))

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return len(self.headers)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.headers[section]
        return None

    def data(self, index: Index, role: int = 0) -> Any:
        n = self.node(index)
        if n is None:
            return None
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return n.cells[col] if col < len(n.cells) else ""
        if role == Qt.ItemDataRole.ToolTipRole:
            for c, words in n.cell_tips:
                if c == col:
                    return tip(words)
            return tip(n.tip or (n.cells[col] if col < len(n.cells) else None))
        if role == Qt.ItemDataRole.DecorationRole:
            if col == 0:
                if n.icon_name:
                    return icon(n.icon_name)
                if n.status:
                    return status_icon(n.status)
            for c, name in n.cell_icons:
                if c == col:
                    return icon(name)
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


def _show_records(view: QAbstractItemView, headers: Sequence[str], name: str) -> RecordTreeModel:
    """What a tree and a table of Nodes share: the model, one row selected at a time."""
    model = RecordTreeModel(headers, view)
    view.setModel(model)
    view.setAccessibleName(name)
    view.setAlternatingRowColors(True)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    return model


def _keep_rows_in_view(view: QAbstractItemView, scrolled: int, added: int, row: int) -> None:
    """`added` rows came in above the reviewer's: keep the rows they look at where they are
    (`row` pixels a row), unless they were at the top, watching the newest."""
    if added and scrolled > 0:
        per_row = 1
        if view.verticalScrollMode() == QAbstractItemView.ScrollMode.ScrollPerPixel:
            per_row = max(row, 1)
        view.verticalScrollBar().setValue(scrolled + added * per_row)


class RecordTree(QTreeView):
    """A tree of Nodes that survives live updates without moving the reviewer."""

    def __init__(self, headers: Sequence[str], accessible_name: str) -> None:
        super().__init__()
        self.records = _show_records(self, headers, accessible_name)
        self.setUniformRowHeights(True)
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
        first = not model.roots
        current = _path(model, self.currentIndex())
        expanded = set() if expand_all or first else self._expanded()
        bar = self.verticalScrollBar()
        scroll = (bar.value(), self.horizontalScrollBar().value())
        kind, on_top = model.set_nodes(roots)
        if kind == "same" and not first:
            return  # updated in place
        if kind == "extended":
            _keep_rows_in_view(self, scroll[0], on_top, self.sizeHintForRow(0))
            return
        if expand_all or first:
            self.expandAll()
        else:
            self._expand(QModelIndex(), expanded)
        if current:
            ix = self.index_at(current)
            if ix.isValid():
                self.setCurrentIndex(ix)
        if first and self.size_to_contents:
            for c in range(model.columnCount() - 1):
                self.resizeColumnToContents(c)
        bar.setValue(scroll[0])
        self.horizontalScrollBar().setValue(scroll[1])

    def _expanded(self) -> set[tuple[str, ...]]:
        """Paths of the expanded rows. Only a row with children can be expanded, so a long
        flat list (a timeline) costs no model index per row."""
        model, out = self.records, set()
        stack: list[tuple[QModelIndex, list[Node]]] = [(QModelIndex(), model.roots)]
        while stack:
            parent, nodes = stack.pop()
            for row, n in enumerate(nodes):
                if n.children:
                    ix = model.index(row, 0, parent)
                    if self.isExpanded(ix):
                        out.add(_path(model, ix))
                        stack.append((ix, n.children))
        return out

    def _expand(self, parent: QModelIndex, expanded: set[tuple[str, ...]]) -> None:
        if not expanded:
            return
        nodes = self.records._children(parent)
        for row, n in enumerate(nodes):
            if n.children:
                ix = self.records.index(row, 0, parent)
                if _path(self.records, ix) in expanded:
                    self.expand(ix)
                    self._expand(ix, expanded)

    def index_at(self, path: tuple[str, ...]) -> QModelIndex:
        model, parent, nodes = self.records, QModelIndex(), self.records.roots
        for key in path:
            row = next((i for i, n in enumerate(nodes) if n.key == key), None)
            if row is None:
                return QModelIndex()
            parent, nodes = model.index(row, 0, parent), nodes[row].children
        return parent


class RecordTable(QTableView):
    """A long flat list of Nodes (the timeline), with RecordTree's interface.

    A QTreeView lays out every row through the Python model each time rows are added (two
    calls a row): at 6,000 events that held the GUI thread for about 80 ms per page loaded.
    A table only asks about the rows it paints.
    """

    def __init__(self, headers: Sequence[str], accessible_name: str) -> None:
        super().__init__()
        self.records = _show_records(self, headers, accessible_name)
        self.setShowGrid(False)
        self.setWordWrap(False)
        rows = self.verticalHeader()
        rows.hide()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.fontMetrics().height() + 4)
        columns = self.horizontalHeader()
        columns.setStretchLastSection(True)
        columns.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        columns.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.size_to_contents = False

    def header(self) -> QHeaderView:
        return self.horizontalHeader()

    def current_node(self) -> Node | None:
        return self.records.node(self.currentIndex())

    def set_nodes(self, roots: list[Node], expand_all: bool = False) -> None:
        model = self.records
        current = self.current_node()
        bar = self.verticalScrollBar()
        scroll = (bar.value(), self.horizontalScrollBar().value())
        kind, on_top = model.set_nodes(roots)
        if kind == "same":
            return
        if kind == "extended":
            _keep_rows_in_view(self, scroll[0], on_top, self.verticalHeader().defaultSectionSize())
            return
        if current is not None:
            ix = self.index_at((current.key,))
            if ix.isValid():
                self.setCurrentIndex(ix)
        bar.setValue(scroll[0])
        self.horizontalScrollBar().setValue(scroll[1])

    def index_at(self, path: tuple[str, ...]) -> QModelIndex:
        if len(path) != 1:
            return QModelIndex()
        row = next((i for i, n in enumerate(self.records.roots) if n.key == path[0]), None)
        return QModelIndex() if row is None else self.records.index(row, 0)
