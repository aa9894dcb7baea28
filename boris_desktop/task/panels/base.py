"""What every panel shares: it is shown a task bundle; a tree panel has a detail pane."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from boris_desktop.runtime.loader import Loader
from boris_desktop.runtime.task_watch import DiskMarks
from boris_desktop.task.bundle import TaskBrief, TaskBundle
from boris_desktop.ui import text as t
from boris_desktop.ui.records import Node, RecordTable, RecordTree
from boris_desktop.ui.widgets import TextPane, plain_label, pretty_json

if TYPE_CHECKING:
    from store.api import Store, TaskState


class Panel(QWidget):
    title = ""
    uses_disk = False  # shown again when the file watcher's marks change

    def __init__(self, loader: Loader) -> None:
        super().__init__()
        self.loader = loader
        self.store: Store | None = None  # set by the task view; read only on workers
        # The file watcher's marks, set by the view.
        self.disk = DiskMarks()
        self.setAccessibleName(self.title)

    def show_task(self, bundle: TaskBundle) -> None:
        """Show the task's record. Every panel defines it (a test checks)."""
        raise NotImplementedError(f"{type(self).__name__} does not show a task")

    def tab_note(self, task: TaskState) -> str:
        """What in this part needs the reviewer, in a few words for its tab ("" nothing)."""
        return ""

    def show_brief(self, brief: TaskBrief) -> None:
        """The resume brief arrived (it observes files, so it comes after the record)."""

    def show_clock(self, bundle: TaskBundle) -> None:
        """The task was read again and only the clock's reading differs: a panel that
        counts time from it (time left to decide) takes the new reading."""


@dataclass
class FormDetail:
    """A record shown as a readable form (field, value), its raw JSON one toggle away.
    `lead`: rows shown first, e.g. what the reviewer can do."""

    value: Any
    lead: list[tuple[str, str]] = field(default_factory=list)


def form_detail(value: Any, next_step: str = "") -> FormDetail:
    return FormDetail(value, [("What you can do", next_step)] if next_step else [])


_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")
#: Keys a form leaves out: the task is the one on screen.
_NOISE = {"task_id", "position"}


def _label(key: str) -> str:
    words = key.replace("_", " ")
    return words[:1].upper() + words[1:]


def _is_actor(v: Any) -> bool:
    return isinstance(v, dict) and set(v) <= {"kind", "id", "name"} and "kind" in v


def _is_state(v: Any) -> bool:
    """A resource's state as the record keeps it: exists, digest, size."""
    return isinstance(v, dict) and "exists" in v and set(v) <= {"exists", "digest", "size"}


def scalar_text(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int | float):
        return t.number(v)
    if isinstance(v, str):
        return t.when(v) if _TIME.match(v) else v
    if _is_actor(v):
        return t.actor(v)
    if _is_state(v):
        if not v.get("exists"):
            return "absent"
        return f"{v.get('digest') or '—'} · {t.size(v.get('size'))}"
    if isinstance(v, list) and all(not isinstance(x, dict | list) for x in v):
        return ", ".join(scalar_text(x) for x in v) if v else "none"
    return ""


def form_nodes(value: Any, path: str = "") -> list[Node]:
    """Rows of (field, value); a nested record becomes a row with the record's fields
    under it, a list of records a row per item."""
    if callable(getattr(value, "to_json", None)):
        value = value.to_json()  # a store read model: its fields as the JSON it prints
    if isinstance(value, dict):
        items: list[tuple[str, str, Any]] = [
            (k, _label(k), v) for k, v in value.items() if k not in _NOISE
        ]
    elif isinstance(value, list):
        items = [(str(i), _item_label(v, i), v) for i, v in enumerate(value)]
    else:
        return [Node(key="value", cells=("Value", scalar_text(value)))]
    out = []
    for key, label, v in items:
        words = scalar_text(v)
        nested = isinstance(v, dict | list) and not words and not _is_actor(v)
        if nested and not v:
            words, nested = "none", False
        out.append(
            Node(
                key=f"{path}/{key}",
                cells=(label, words if not nested else _gist(v)),
                tip=words,
                children=form_nodes(v, f"{path}/{key}") if nested else [],
            )
        )
    return out


def _item_label(v: Any, i: int) -> str:
    if isinstance(v, dict):
        for k in ("id", "counter", "attempt_no", "observation_id", "checkpoint_id", "kind"):
            if v.get(k) not in (None, ""):
                return f"{i + 1}. {v[k]}"
    return f"{i + 1}."


def _gist(v: Any) -> str:
    if isinstance(v, list):
        return t.count(len(v), "item", "items")
    return ""


class TreePanel(Panel):
    """A tree of the panel's rows above a pane showing the selected row in full."""

    headers: Sequence[str] = ()
    note = ""  # one line above the tree saying what the panel shows
    expand_all = True
    #: The view of the rows: a tree, or RecordTable for a long flat list.
    view_class: type[RecordTree] | type[RecordTable] = RecordTree
    #: Whether a row's detail is a readable form (FormDetail) with a raw-JSON toggle.
    forms = False

    def __init__(self, loader: Loader) -> None:
        super().__init__(loader)
        self.tree = self.view_class(self.headers, f"{self.title} list")
        self.detail = TextPane(loader, f"{self.title}: selected row in full")
        self.detail.setPlaceholderText("Select a row to see it in full.")
        self.caption = plain_label(self.note, name=f"{self.title} summary")
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(self.tree)
        if self.forms:
            self.split.addWidget(self._form_box())
        else:
            self.split.addWidget(self.detail)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.caption)
        self.extra_top(layout)
        layout.addWidget(self.split, 1)
        self.tree.selectionModel().currentChanged.connect(self._current_changed)

    def _form_box(self) -> QWidget:
        self.form = RecordTree(("Field", "Value"), f"{self.title}: selected row as a form")
        self.raw = QToolButton()
        self.raw.setText("Raw JSON")
        self.raw.setCheckable(True)
        self.raw.setAccessibleName("Show the selected row as raw JSON")
        self.raw.setToolTip("Show the selected row as the record's raw JSON")
        self.raw.toggled.connect(lambda _on: self._show_form_or_raw())
        self.detail_stack = QStackedWidget()
        self.detail_stack.addWidget(self.form)
        self.detail_stack.addWidget(self.detail)
        self._has_form = False
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(plain_label("The selected row:", wrap=False))
        bar.addStretch(1)
        bar.addWidget(self.raw)
        box = QWidget()
        col = QVBoxLayout(box)
        col.setContentsMargins(0, 2, 0, 0)
        col.setSpacing(2)
        col.addLayout(bar)
        col.addWidget(self.detail_stack, 1)
        return box

    def show_form(self, d: FormDetail) -> None:
        """The form, and the raw JSON behind the toggle."""
        self.detail.show_text(pretty_json(d.value), "json")
        lead = [Node(key=f"lead:{k}", cells=(k, v), icon_name="attention") for k, v in d.lead]
        self.form.set_nodes(lead + form_nodes(d.value), expand_all=True)
        self._has_form = True
        self._show_form_or_raw()

    def show_plain(self, text: str, media_type: str | None = None) -> None:
        """Text with no form (a diff): the text pane, whatever the toggle says."""
        self.detail.show_text(text, media_type, keep=False)
        self._has_form = False
        self._show_form_or_raw()

    def _show_form_or_raw(self) -> None:
        raw = self.raw.isChecked() or not self._has_form
        self.raw.setEnabled(self._has_form)
        self.detail_stack.setCurrentWidget(self.detail if raw else self.form)

    def extra_top(self, layout: QVBoxLayout) -> None:
        """Room for a panel's filters or warnings above the tree."""

    def show_task(self, bundle: TaskBundle) -> None:
        self.tree.set_nodes(self.nodes(bundle), expand_all=self.expand_all)
        self.caption.setText(self.summary(bundle) or self.note)
        self.caption.setVisible(bool(self.caption.text()))
        node = self.tree.current_node()
        if node is not None:
            self.show_detail(node)
        elif self.tree.records.roots and not self.tree.currentIndex().isValid():
            self.tree.setCurrentIndex(self.tree.records.index(0, 0))
        if self.tree.current_node() is None:
            # No row (a task without this part's data): nothing below either, not the row
            # of the task shown before.
            self.clear_detail()

    def nodes(self, bundle: TaskBundle) -> list[Node]:
        """The panel's rows. Every tree panel defines it (a test checks)."""
        raise NotImplementedError(f"{type(self).__name__} has no rows of its own")

    def summary(self, bundle: TaskBundle) -> str:
        return ""

    def clear_detail(self) -> None:
        """No row is selected: the detail pane is empty (its placeholder shows). A panel
        with more beside the detail empties that too."""
        self.loader.cancel(self.detail_job)  # a preview or diff still on its way is dropped
        self.detail.show_text("")
        if self.forms:
            self.form.set_nodes([])
            self._has_form = False
            self._show_form_or_raw()

    @property
    def detail_job(self) -> str:
        """The loader kind of the selected row's slow detail (a preview, a diff)."""
        return f"detail:{id(self)}"

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        node = self.tree.records.node(current)
        if node is not None:
            self.show_detail(node)

    def show_detail(self, node: Node) -> None:
        d = node.detail
        if isinstance(d, FormDetail) and self.forms:
            self.show_form(d)
        elif isinstance(d, FormDetail):
            self.detail.show_text(pretty_json(d.value), "json")
        else:
            self.detail.show_text(str(d or ""))
