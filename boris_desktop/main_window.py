"""The main window: an inbox of tasks, the selected task's record as plain text.

Content from tasks is only ever shown as plain text (never HTML). Loads run on a worker
thread; a load superseded by a newer one is dropped (a token per request).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRunnable,
    Qt,
    QThreadPool,
    QTimer,
    Signal,
)
from PySide6.QtWidgets import QMainWindow, QPlainTextEdit, QSplitter, QTableView

from store import Store

COLUMNS = ("Title", "Status", "Needs you", "Budget", "Last activity")


def needs_text(n: dict[str, Any]) -> str:
    parts = []
    for key, word in (
        ("pending_approvals", "approval"),
        ("unresolved_effects", "effect"),
        ("stale_criteria", "stale"),
        ("failed_criteria", "failed"),
    ):
        if n.get(key):
            parts.append(f"{n[key]} {word}")
    if n.get("heads", 0) > 1:
        parts.append("fork")
    return " · ".join(parts) or "—"


class InboxModel(QAbstractTableModel):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        if not index.isValid() or role != Qt.ItemDataRole.DisplayRole:
            return None
        r = self.rows[index.row()]
        col = index.column()
        if col == 0:
            return r["title"]
        if col == 1:
            return r["status"].replace("_", " ")
        if col == 2:
            return needs_text(r["needs"])
        if col == 3:
            return f"{r['needs']['budget_use'] * 100:.0f}%"
        return r["updated_at"][:19].replace("T", " ")


class _Signals(QObject):
    loaded = Signal(int, object)


class _Load(QRunnable):
    """Reads off the GUI thread. With `known_version`, a poll that finds no new event since
    then reports only that, so an idle window costs one tiny query a second."""

    def __init__(
        self,
        store: Store,
        token: int,
        task_id: str | None,
        known_version: int | None,
        signals: _Signals,
    ) -> None:
        super().__init__()
        self.store, self.token, self.task_id, self.signals = store, token, task_id, signals
        self.known_version = known_version

    def run(self) -> None:
        version = self.store.data_version()
        if version == self.known_version:
            self.signals.loaded.emit(self.token, {"version": version, "unchanged": True})
            return
        result: dict[str, Any] = {"version": version, "tasks": self.store.tasks()}
        if self.task_id:
            result["task"] = self.store.task(self.task_id)
        self.signals.loaded.emit(self.token, result)


def describe(task: dict[str, Any]) -> str:
    lines = [
        f"{task['title']}",
        f"status: {task['status'].replace('_', ' ')}   owner: {task['owner']}   id: {task['id']}",
        "",
    ]
    obj = task["objective"]
    lines += [f"Objective (revision {obj['rev']}):", f"  {obj['text']}", "", "Criteria:"]
    for c in task["criteria"]:
        against = (
            f" (checked against {c['artifact_id']} v{c['artifact_version']})"
            if c["artifact_id"]
            else ""
        )
        lines.append(f"  [{c['status']}] {c['criterion_id']}: {c['text']}{against}")
    lines += ["", "Artifacts:"]
    for a in task["artifacts"]:
        cur = a["current"]
        lines.append(
            f"  {a['name']}  v{a['current_version']}  {cur['digest'][7:19]}  {cur['size']} B  ({a['role']})"
        )
    if task["problems"]:
        lines += ["", "Problems:"]
        lines += [f"  {p['kind']} {p['id']}: blob {p['problem']}" for p in task["problems"]]
    lines += ["", "Budgets:"]
    for b in task["budgets"]:
        limit = "no limit" if b["limit_value"] is None else f"{b['limit_value']:,.10g}"
        lines.append(f"  {b['counter']}: {b['used']:,.10g} of {limit}")
    return "\n".join(lines)


class MainWindow(QMainWindow):
    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.setWindowTitle(f"Boris Desktop — {store.location.describe()}")
        self.inbox = InboxModel()
        self.table = QTableView()
        self.table.setModel(self.inbox)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.setAccessibleName("Tasks")
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().hide()
        self.table.setColumnWidth(0, 240)
        self.table.setWordWrap(False)
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setAccessibleName("Task record")
        self.detail.document().setDocumentMargin(10)
        split = QSplitter()
        split.addWidget(self.table)
        split.addWidget(self.detail)
        split.setSizes([660, 540])
        self.setCentralWidget(split)
        self._signals = _Signals()
        self._signals.loaded.connect(self._on_loaded)
        self._token = 0
        self._version = -1
        self._in_flight = False
        self.selected: str | None = None
        self.table.clicked.connect(self._on_clicked)
        self._timer = QTimer(self)
        self._timer.setInterval(1000)
        self._timer.timeout.connect(self._poll)
        self._timer.start()

    def reload(self) -> None:
        """Load the inbox and the selected task now, superseding any load in flight."""
        self._token += 1
        self._in_flight = True
        QThreadPool.globalInstance().start(
            _Load(self.store, self._token, self.selected, None, self._signals)
        )

    def _poll(self) -> None:
        # Never supersede a load in flight (its result would be dropped for an "unchanged").
        if self._in_flight:
            return
        self._token += 1
        self._in_flight = True
        QThreadPool.globalInstance().start(
            _Load(self.store, self._token, self.selected, self._version, self._signals)
        )

    def reload_now(self) -> None:
        """Load synchronously: only for start-up rendering (--screenshot) and tests."""
        self._token += 1
        tasks = self.store.tasks()
        self.selected = self.selected or (tasks[0]["id"] if tasks else None)
        result: dict[str, Any] = {"version": self.store.data_version(), "tasks": tasks}
        if self.selected:
            result["task"] = self.store.task(self.selected)
        self._on_loaded(self._token, result)

    def _on_clicked(self, index: QModelIndex) -> None:
        self.selected = self.inbox.rows[index.row()]["id"]
        self.reload()

    def _on_loaded(self, token: int, result: dict[str, Any]) -> None:
        if token != self._token:
            return  # a newer load is on its way
        self._in_flight = False
        if result.get("unchanged"):
            return
        self._version = result["version"]
        if result["tasks"] != self.inbox.rows:
            self.inbox.set_rows(result["tasks"])
            for col in range(1, len(COLUMNS)):
                self.table.resizeColumnToContents(col)
        ids = [r["id"] for r in self.inbox.rows]
        if self.selected not in ids and ids:
            # Nothing (or a vanished task) selected: default to the first row and fetch it.
            self.selected = ids[0]
            self.table.selectRow(0)
            self.reload()
            return
        if self.selected in ids:
            self.table.selectRow(ids.index(self.selected))
        task = result.get("task")
        if task is not None:
            text = describe(task)
            if text != self.detail.toPlainText():
                self.detail.setPlainText(text)
