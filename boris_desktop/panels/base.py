"""What every panel shares: it is shown a task bundle; a tree panel has a detail pane."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QSplitter, QVBoxLayout, QWidget

from ..loader import Loader
from ..records import Node, RecordTable, RecordTree
from ..widgets import TextPane, plain_label, pretty_json

Bundle = dict[str, Any]  # {"task": Store.task(), "events": [...], "narratives": [...]}


class Panel(QWidget):
    title = ""
    uses_disk = False  # shown again when the file watcher's marks change

    def __init__(self, loader: Loader) -> None:
        super().__init__()
        self.loader = loader
        self.store: Any = None  # set by the task view; read only on workers
        # The file watcher's marks ({"artifacts", "effects", "criteria"}), set by the view.
        self.disk: dict[str, dict[str, Any]] = {}
        self.setAccessibleName(self.title)

    def show_task(self, bundle: Bundle) -> None:
        """Show the task's record. Every panel defines it (a test checks)."""
        raise NotImplementedError(f"{type(self).__name__} does not show a task")

    def show_brief(self, brief: dict[str, Any]) -> None:
        """The resume brief arrived (it observes files, so it comes after the record)."""


def json_detail(value: Any) -> tuple[str, str]:
    return pretty_json(value), "json"


class TreePanel(Panel):
    """A tree of the panel's rows above a pane showing the selected row in full."""

    headers: Sequence[str] = ()
    note = ""  # one line above the tree saying what the panel shows
    expand_all = True
    #: The view of the rows: a tree, or RecordTable for a long flat list.
    view_class: type[RecordTree] | type[RecordTable] = RecordTree

    def __init__(self, loader: Loader) -> None:
        super().__init__(loader)
        self.tree = self.view_class(self.headers, f"{self.title} list")
        self.detail = TextPane(loader, f"{self.title}: selected row in full")
        self.detail.setPlaceholderText("Select a row to see it in full.")
        self.caption = plain_label(self.note, name=f"{self.title} summary")
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(self.tree)
        self.split.addWidget(self.detail)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.caption)
        self.extra_top(layout)
        layout.addWidget(self.split, 1)
        self.tree.selectionModel().currentChanged.connect(self._current_changed)

    def extra_top(self, layout: QVBoxLayout) -> None:
        """Room for a panel's filters or warnings above the tree."""

    def show_task(self, bundle: Bundle) -> None:
        self.tree.set_nodes(self.nodes(bundle), expand_all=self.expand_all)
        self.caption.setText(self.summary(bundle) or self.note)
        self.caption.setVisible(bool(self.caption.text()))
        node = self.tree.current_node()
        if node is not None:
            self.show_detail(node)
        elif self.tree.records.roots and not self.tree.currentIndex().isValid():
            self.tree.setCurrentIndex(self.tree.records.index(0, 0))

    def nodes(self, bundle: Bundle) -> list[Node]:
        """The panel's rows. Every tree panel defines it (a test checks)."""
        raise NotImplementedError(f"{type(self).__name__} has no rows of its own")

    def summary(self, bundle: Bundle) -> str:
        return ""

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        node = self.tree.records.node(current)
        if node is not None:
            self.show_detail(node)

    def show_detail(self, node: Node) -> None:
        d = node.detail
        if isinstance(d, tuple):
            self.detail.show_text(d[0], d[1], d[2] if len(d) > 2 else None)
        else:
            self.detail.show_text(str(d or ""))
