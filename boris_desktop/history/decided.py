"""What I decided: the reviewer's own decisions across tasks, newest first, for an audit.

Approvals and rejections, reconcile verdicts, judgements and waivers, stops and checkpoints,
each with its task, its event's seq and the note written. Which events are decisions is the
store's word (`store.reads.history` over `store.rules`); the read runs on a worker and follows
the store like the queue. A search narrows the list; Export writes what is shown as CSV or
JSON. Enter (or a double click) shows the decision's task at its timeline.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from boris_desktop import settings
from boris_desktop.host import Host
from boris_desktop.runtime.follow import Follower
from boris_desktop.ui import text as t
from boris_desktop.ui.cells import (
    CellsInOneCall,
    FlatIndex,
    ListedRows,
    RowsTable,
    WholeCellsThrough,
)
from boris_desktop.ui.icons import icon

if TYPE_CHECKING:
    from store.api import PastDecision

Index = QModelIndex | QPersistentModelIndex

WHEN, DECISION, TASK, EVENT, WHAT, NOTE = range(6)
COLUMNS = ("When", "Decision", "Task", "Event", "What", "Note")
KIND_WORDS = {
    "approved": "Approved",
    "rejected": "Rejected",
    "sent_back": "Sent back",
    "reconcile": "Reconciled",
    "judgement": "Judged",
    "waiver": "Waived",
    "stop": "Stopped the run",
    "checkpoint": "Checkpoint",
    "takeover": "Took over",
    "cancel_wait": "Cancelled a wait",
    "late_acknowledged": "Acknowledged late changes",
    "follow_up": "Opened a follow-up task",
}
KIND_ICON = {
    "approved": "ok",
    "rejected": "failed",
    "sent_back": "attention",
    "reconcile": "unknown",
    "judgement": "attention",
    "waiver": "stopped",
    "stop": "stopped",
    "checkpoint": "ok",
    "takeover": "attention",
    "cancel_wait": "stopped",
    "late_acknowledged": "ok",
    "follow_up": "pending",
}


@dataclass(frozen=True)
class MyDecisions:
    """What the history read on a worker: the reviewer it was read for (None: nobody said
    who they are yet) and their decisions, newest first."""

    who: str | None
    decisions: list[PastDecision]


def write_export(path: str, rows: list[PastDecision], fmt: str) -> int:
    """Write the decisions to `path` as "csv" or "json"; returns how many (on a worker).
    Each row is the read model's JSON (`to_json`), the shape `boris history --json` prints."""
    from store.api import HISTORY_FIELDS as FIELDS

    target = Path(path)
    data = [r.to_json() for r in rows]  # its keys are FIELDS, in their order
    if fmt == "json":
        target.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    else:
        with target.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(FIELDS), extrasaction="ignore")
            w.writeheader()
            w.writerows(data)
    return len(rows)


class HistoryModel(ListedRows, CellsInOneCall, FlatIndex, QAbstractTableModel):
    columns = COLUMNS

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[PastDecision] = []

    def set_rows(self, rows: list[PastDecision]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        cell = self.row_at(index)
        if cell is None:
            return None
        r, col = cell
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            subject = f" {r.subject}" if r.subject else ""
            return (
                t.when(r.at),
                KIND_WORDS.get(r.kind, r.kind),
                r.task_title,
                f"#{r.seq}",
                r.what + subject,
                r.note or "—",
            )[col]
        if role == Qt.ItemDataRole.DecorationRole and col == DECISION:
            return icon(KIND_ICON.get(r.kind, "attention"))
        if role == Qt.ItemDataRole.ToolTipRole:
            return t.tip(
                f"{r.what}{' ' + r.subject if r.subject else ''} in {r.task_title} "
                f"({r.task_id}, event {r.seq}, {r.at})\nNote: {r.note or '(none)'}"
            )
        return None


class HistoryFilter(WholeCellsThrough, QSortFilterProxyModel):
    """A row is shown when every word searched is in one of its fields."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.words: list[str] = []

    def set_text(self, text: str) -> None:
        self.beginFilterChange()
        self.words = text.casefold().split()
        self.endFilterChange()

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        model = self.sourceModel()
        if not isinstance(model, HistoryModel) or source_row >= len(model.rows):
            return False
        if not self.words:
            return True
        r = model.rows[source_row]
        hay = " ".join((r.kind, r.task_id, r.task_title, r.subject, r.what, r.note, r.at))
        hay = (hay + " " + KIND_WORDS.get(r.kind, "") + f" #{r.seq}").casefold()
        return all(w in hay for w in self.words)


class HistoryView(QWidget):
    """The reviewer's decisions; `host` is the window (loader, store, statusBar)."""

    #: Show a decision's task at its event: (task id, event seq).
    show_event = Signal(str, int)
    #: An export was written: (path, how many decisions).
    exported = Signal(str, int)
    #: The selected decision's task, so the detail below shows what it was about.
    current_task = Signal(str)

    def __init__(self, host: Host, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.who: str | None = None
        self.loaded = False
        self.model = HistoryModel(self)
        self.proxy = HistoryFilter(self)
        self.proxy.setSourceModel(self.model)

        self.table = RowsTable("My decisions", stretch=(WHAT, NOTE))
        self.table.setModel(self.proxy)
        fm = self.table.fontMetrics()
        self.table.setColumnWidth(WHEN, fm.horizontalAdvance("2026-12-04 15:27:39") + 16)
        self.table.setColumnWidth(DECISION, fm.horizontalAdvance("Stopped the run") + 40)
        self.table.setColumnWidth(TASK, 230)
        self.table.setColumnWidth(EVENT, fm.horizontalAdvance("#00000") + 16)
        self.table.activated_by_key.connect(self.open_current)
        self.table.selectionModel().currentRowChanged.connect(self._current_changed)
        self.table.doubleClicked.connect(lambda _ix: self.open_current())

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search my decisions: task, note, kind, id")
        self.search.setAccessibleName("Search my decisions")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._searched)
        self.csv = QPushButton("Export CSV…")
        self.csv.setToolTip("Write the decisions shown to a CSV file, for an audit")
        self.csv.clicked.connect(lambda: self.export("csv"))
        self.json = QPushButton("Export JSON…")
        self.json.setToolTip("Write the decisions shown to a JSON file, for an audit")
        self.json.clicked.connect(lambda: self.export("json"))
        self.summary = QLabel("Reading your decisions…")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        bar = QHBoxLayout()
        bar.addWidget(self.summary)
        bar.addWidget(self.search, 1)
        bar.addWidget(self.csv)
        bar.addWidget(self.json)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 0)
        lay.addLayout(bar)
        lay.addWidget(self.table, 1)

        self.follower = Follower(host, "", self._got, self, fetch=self._fetch)

    def _fetch(self, store: Any) -> MyDecisions:
        """On a worker: this reviewer's decisions (none before they said who they are)."""
        from store.api import history

        who = self.who
        if who is None:
            return MyDecisions(None, [])
        return MyDecisions(who, history(store, who).decisions)

    def start(self) -> None:
        """Follow the (newly opened) store, for the reviewer now set."""
        reviewer = settings.reviewer()
        self.who = reviewer[1] if reviewer else None
        self.follower.stop()
        self.model.set_rows([])
        self.loaded = False
        if self.isVisible():
            self._follow()

    def _follow(self) -> None:
        self.follower.start(None)
        self.follower.force()

    # The history is a scan of the reviewer's events: it is read while it is in sight, not
    # again on every write an agent makes while the reviewer looks elsewhere.
    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self._follow()

    def hideEvent(self, event: Any) -> None:
        super().hideEvent(event)
        self.follower.stop()

    def _got(self, result: MyDecisions) -> None:
        if result.who != self.who:
            return  # read for the reviewer before: a fresh read is on its way
        self.model.set_rows(result.decisions)
        self.loaded = True
        self._summary()

    def _searched(self, text: str) -> None:
        self.proxy.set_text(text)
        self._summary()

    def _summary(self) -> None:
        if self.who is None:
            self.summary.setText("Say who you are (File › Reviewer…) to see your decisions")
            return
        n, shown = len(self.model.rows), self.proxy.rowCount()
        text = f"{t.count(n, 'decision', 'decisions')} by person:{self.who}"
        if shown != n:
            text += f", {shown} shown"
        self.summary.setText(text)

    def shown_rows(self) -> list[PastDecision]:
        return [
            self.model.rows[self.proxy.mapToSource(self.proxy.index(i, 0)).row()]
            for i in range(self.proxy.rowCount())
        ]

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.current_task.emit(self.model.rows[self.proxy.mapToSource(current).row()].task_id)

    def open_current(self) -> None:
        ix = self.table.currentIndex()
        if not ix.isValid():
            return
        r = self.model.rows[self.proxy.mapToSource(ix).row()]
        self.show_event.emit(r.task_id, r.seq)

    def export(self, fmt: str) -> None:
        from PySide6.QtWidgets import QFileDialog

        rows = self.shown_rows()
        suffix = {"csv": "CSV files (*.csv)", "json": "JSON files (*.json)"}[fmt]
        path, _chosen = QFileDialog.getSaveFileName(
            self, f"Export my decisions as {fmt.upper()}", f"my-decisions.{fmt}", suffix
        )
        if not path:
            return
        self.host.loader.submit(
            "history:export",
            lambda: write_export(path, rows, fmt),
            lambda n: self._exported(path, n),
            lambda err: self.host.statusBar().showMessage(f"Could not export: {t.failure(err)}"),
        )

    def _exported(self, path: str, n: int) -> None:
        self.host.statusBar().showMessage(
            f"Exported {t.count(n, 'decision', 'decisions')} to {path}", 8000
        )
        self.exported.emit(path, n)
