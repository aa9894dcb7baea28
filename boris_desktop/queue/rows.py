"""The decision queue's rows: the model that holds the open decisions the store read, and
the filter the reviewer narrows them with (mine or everyone's, a kind, a task).

A read changes only the rows that changed (`ui.keyed_rows`), so the selection stays and the
view never asks for every row again; every cell's roles come in one call into Python
(`ui.cells`), since a worker is often reading meanwhile.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRegularExpression,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    Signal,
)

from boris_desktop.ui import keyed_rows
from boris_desktop.ui import text as t
from boris_desktop.ui.cells import CellsInOneCall, FlatIndex, ListedRows, WholeCellsThrough
from boris_desktop.ui.icons import icon
from store import api

if TYPE_CHECKING:
    # Named in annotations only: importing the read's module loads SQLAlchemy, which the
    # staged start-up keeps off the GUI thread until the first page is peeked at.
    from store.api import Decision

Index = QModelIndex | QPersistentModelIndex

KIND, TASK, WHAT, WHY, WAITING, EXPIRES = range(6)
COLUMNS = ("Decision", "Task", "What", "Why it needs a person", "Waiting", "Expires in")
KIND_WORDS = {
    "approval": "Approve / reject",
    "reconcile": "Reconcile",
    "conflict": "Decide a conflict",
    "judge": "Judge a criterion",
    "resume": "Resume a run",
    "wait": "Cancel a wait",
    "late_changes": "Changed after completion",
}
KIND_ICON = {
    "approval": "approval",
    "reconcile": "unknown",
    "conflict": "attention",
    "judge": "attention",
    "resume": "stopped",
    "wait": "pending",
    "late_changes": "attention",
}

ID_ROLE = Qt.ItemDataRole.UserRole + 1
#: What the filter matches: "kind \x1f task id \x1f 1 if this reviewer may decide it".
FILTER_ROLE = Qt.ItemDataRole.UserRole + 2


def decision_id(row: Decision) -> str:
    return str(row.id)


def may_decide(d: Decision, reviewer_id: str | None) -> bool:
    """Whether this reviewer (a person) may make the decision: the store's rule
    (`store.rules.may_decide`), which `boris decisions --mine` asks too."""
    if reviewer_id is None:
        return False
    r = d.requester
    # The rule reads the requester as the record's JSON; made here by hand, as to_json
    # took 6 us a row (the filter asks each row when "mine" is on, on the GUI thread).
    requester = None if r is None else {"kind": r.kind, "id": r.id, "name": r.name}
    # A routed approval waits on the people its route names (the store's word, `waits_on`).
    return api.may_decide(d.kind, requester, "person", reviewer_id, d.waits_on)


def waited(since: str | None, now: str) -> str:
    if not since or not now:
        return "—"
    return t.duration((t.parse(now) - t.parse(since)).total_seconds())


def expires_in(at: str | None, now: str) -> str:
    if not at or not now:
        return ""
    return t.duration((t.parse(at) - t.parse(now)).total_seconds())


if TYPE_CHECKING:
    _ListedDecisions = ListedRows[Decision]
else:  # the rows' type is the type checker's: naming it here would import the read
    _ListedDecisions = ListedRows


class DecisionModel(_ListedDecisions, CellsInOneCall, FlatIndex, QAbstractTableModel):
    """The open decisions, kept by id: a read changes only the rows that changed (rows gone
    removed, new ones inserted at their place in the store's order, changed ones redrawn), so
    the selection stays and the view never asks for every row again. Many new rows (the
    first read of thousands) are taken in SLICE at a time, one turn of the event loop each;
    `synced` says the rows are the last read's."""

    #: Rows taken in per turn of the event loop (2,000 at once held the window ~50 ms).
    SLICE = 250
    columns = COLUMNS

    synced = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[Decision] = []
        self.now = ""
        #: The database clock at the last read, and the monotonic time it came: the time
        #: columns follow the clock between reads (`tick`), an idle store is not read again.
        self._read_clock: tuple[datetime, float] | None = None
        self.revision = 0  # counts changes of `rows`, twice each (see `snapshot`)
        self.reviewer_id: str | None = None  # whose "mine" FILTER_ROLE tells (DecisionFilter)
        self._fresh: list[Decision] = []
        self._more = QTimer(self)
        self._more.setSingleShot(True)
        self._more.setInterval(0)
        self._more.timeout.connect(self._step)
        #: Paged: where the next page starts (None: every row is here), and what reads it.
        self.next_key: Any = None
        self.read_more: Callable[[], None] | None = None

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        return (
            not parent.isValid()
            and self.next_key is not None
            and self.read_more is not None
            and not self.pending
        )

    def fetchMore(self, parent: Index = QModelIndex()) -> None:  # noqa: B008
        if self.canFetchMore(parent) and self.read_more is not None:
            self.read_more()

    def append(self, rows: list[Decision]) -> None:
        """A further page's rows, after those held (the ones held already left out)."""
        held = {r.id for r in self.rows}
        rows = [r for r in rows if r.id not in held]
        if not rows:
            return
        first = len(self.rows)
        self.revision += 1
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
        self.rows = [*self.rows, *rows]  # never changed in place: `snapshot` copies it
        self.endInsertRows()
        self.revision += 1

    def tick(self) -> None:
        """Move `now` on by the time since the last read; the views repaint what they show
        (the rows keep their order: every Waiting and Expires-in moves by the same time)."""
        if self._read_clock is not None:
            at, read = self._read_clock
            now = at + timedelta(seconds=time.monotonic() - read)
            self.now = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    @property
    def pending(self) -> bool:
        """Whether some of the last read's rows are still to be taken in."""
        return self._more.isActive()

    def set_rows(
        self,
        rows: list[Decision],
        now: str,
        planned: tuple[int, keyed_rows.Plan[Decision]] | None = None,
    ) -> None:
        """`planned`: (revision, plan), the changes worked out on the worker that read
        `rows` (`snapshot`, `queue.reading.read_queue`); used if the model is still as it was."""
        clock_moved = now != self.now
        self.now, self._fresh = now, rows
        self._read_clock = (t.parse(now), time.monotonic()) if now else None
        if clock_moved and self.rows:
            # The time columns follow the clock; the rows themselves only if they changed.
            self.dataChanged.emit(
                self.index(0, WAITING), self.index(len(self.rows) - 1, len(COLUMNS) - 1)
            )
        if (
            planned is not None
            and planned[0] == self.revision
            and sum(len(new) for _, new in planned[1].inserts) <= self.SLICE
        ):
            self.revision += 1  # odd while the rows change: a snapshot taken now is not used
            keyed_rows.apply(self, self.rows, planned[1], len(COLUMNS))
            self.revision += 1
            self._more.stop()
            self.synced.emit()
            return
        self._step()

    def snapshot(self) -> tuple[int, list[Decision]] | None:
        """(revision, a copy of the rows) for a worker to plan against, or None while the
        rows are being changed. Safe from any thread: the rows are never changed in place."""
        before = self.revision
        rows = list(self.rows)
        return (before, rows) if before == self.revision and before % 2 == 0 else None

    def _step(self) -> None:
        self.revision += 1
        _changes, done = keyed_rows.sync(
            self, self.rows, self._fresh, decision_id, len(COLUMNS), limit=self.SLICE
        )
        self.revision += 1
        if done:
            self._more.stop()
            self.synced.emit()
        else:
            self._more.start()

    def row_of(self, decision_id: str | None) -> int:
        for i, r in enumerate(self.rows):
            if r.id == decision_id:
                return i
        return -1

    def _words(self, r: Decision, col: int) -> str:
        """The cell's words: only its own column's (the times parse two dates each)."""
        if col == KIND:
            return KIND_WORDS.get(r.kind, r.kind)
        if col == TASK:
            return r.task_title
        if col == WHAT:
            return r.what
        if col == WHY:
            return r.why
        if col == WAITING:
            return waited(r.since, self.now)
        return expires_in(r.expires_at, self.now)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        cell = self.row_at(index)
        if cell is None:
            return None
        r, col = cell
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return self._words(r, col)
        if role == Qt.ItemDataRole.DecorationRole and col == KIND:
            return icon(KIND_ICON.get(r.kind, "attention"))
        if role == Qt.ItemDataRole.ToolTipRole:
            return t.tip(
                f"{KIND_WORDS.get(r.kind, r.kind)} {r.key} in {r.task_title} "
                f"({r.task_id}, owner {r.owner})\n{r.what}\n{r.why}"
            )
        if role == ID_ROLE:
            return r.id
        if role == FILTER_ROLE:
            mine = may_decide(r, self.reviewer_id)
            return f"{r.kind}\x1f{r.task_id}\x1f{int(mine)}"
        return None


class FilterSettings(TypedDict, total=False):
    """What `DecisionFilter.set` changes."""

    mine: bool  # only what this reviewer may decide
    reviewer_id: str | None  # who "mine" is
    kind: str | None  # one kind of decision (api.DecisionKind), None for all
    task: str | None  # one task's decisions, None for all


class DecisionFilter(WholeCellsThrough, QSortFilterProxyModel):
    """Mine (what this reviewer may decide) or everyone's; one kind or all; one task or all.

    Matched by Qt: a regular expression over each row's FILTER_ROLE ("kind, task, whether
    this reviewer may decide it"). With no filter set Qt takes every row without calling
    into Python, as a Python `filterAcceptsRow` would for each row inserted (and, with a
    worker reading, each such call waits for the interpreter lock)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.mine = False
        self.reviewer_id: str | None = None
        self.kind: str | None = None
        self.task: str | None = None
        self.setFilterRole(FILTER_ROLE)

    def set(self, **changed: Unpack[FilterSettings]) -> None:
        """Change some of the filter's settings (the others stay) and filter again."""
        for name, value in changed.items():
            setattr(self, name, value)
        model = self.sourceModel()
        if isinstance(model, DecisionModel):
            model.reviewer_id = self.reviewer_id
        pattern = ""
        if self.kind is not None:
            pattern += f"(?={re.escape(self.kind)}\x1f)"
        if self.task is not None:
            pattern += f"(?=[^\x1f]*\x1f{re.escape(self.task)}\x1f)"
        if self.mine:
            pattern += "(?=[^\x1f]*\x1f[^\x1f]*\x1f1$)"
        self.beginFilterChange()
        self.setFilterRegularExpression(QRegularExpression("^" + pattern if pattern else ""))
        self.endFilterChange()
