"""The task view: the header above a tab per part of the record."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from boris_desktop.runtime.loader import Loader
from boris_desktop.runtime.task_watch import DiskMarks
from boris_desktop.task.bundle import TaskBrief, TaskBundle
from boris_desktop.task.panels.approvals import ApprovalsPanel
from boris_desktop.task.panels.artifacts import ArtifactsPanel
from boris_desktop.task.panels.base import Panel, TreePanel
from boris_desktop.task.panels.brief import BriefPanel
from boris_desktop.task.panels.budgets import BudgetsPanel
from boris_desktop.task.panels.checkpoints import CheckpointsPanel
from boris_desktop.task.panels.criteria import CriteriaPanel
from boris_desktop.task.panels.effects import EffectsPanel
from boris_desktop.task.panels.header import Header
from boris_desktop.task.panels.phases import PhasesPanel
from boris_desktop.task.panels.timeline import TimelinePanel
from boris_desktop.task.panels.waits import WaitsPanel
from boris_desktop.ui.widgets import hline

if TYPE_CHECKING:
    from store.api import Store, TaskState

PANELS: tuple[type[Panel], ...] = (
    CriteriaPanel,
    ArtifactsPanel,
    ApprovalsPanel,
    EffectsPanel,
    WaitsPanel,
    BudgetsPanel,
    PhasesPanel,
    CheckpointsPanel,
    TimelinePanel,
    BriefPanel,
)


class TaskView(QWidget):
    def __init__(self, loader: Loader) -> None:
        super().__init__()
        self.setAccessibleName("Task")
        self.header = Header()
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Parts of the task's record")
        self.tabs.setDocumentMode(True)
        self.panels: dict[str, Panel] = {}
        for cls in PANELS:
            panel = cls(loader)
            self.panels[cls.title] = panel
            self.tabs.addTab(panel, cls.title)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.header)
        layout.addWidget(hline())
        layout.addWidget(self.tabs, 1)
        self.task_id: str | None = None
        self.bundle: TaskBundle | None = None
        # The tab in front is shown with the record at once; the others in turns of their
        # own, one a turn, or at once when they are asked for (`panel`, a tab chosen). All
        # of them in one go was 15-70 ms of the GUI thread while workers read (bench_queue).
        self._unfilled: list[str] = []
        self._brief: TaskBrief | None = None  # arrived since the record shown
        self._fill_timer = QTimer(self)
        self._fill_timer.setSingleShot(True)
        self._fill_timer.setInterval(0)
        self._fill_timer.timeout.connect(self._fill_next)
        self.tabs.currentChanged.connect(lambda i: self._fill(self.tabs.widget(i)))

    def set_store(self, store: Store | None) -> None:
        for p in self.panels.values():
            p.store = store

    def set_disk(self, disk: DiskMarks) -> None:
        """The file watcher's marks changed: the panels that show them are shown again."""
        for title, p in self.panels.items():
            if p.uses_disk and p.disk != disk:
                p.disk = disk
                if self.bundle is not None and title not in self._unfilled:
                    p.show_task(self.bundle)

    def panel(self, title: str) -> Panel:
        """The panel, showing the record shown (filled now if its turn has not come)."""
        panel = self.panels[title]
        self._fill(panel)
        return panel

    def show_part(self, title: str, key: str | None = None) -> None:
        """Bring a part to the front, with its top-level row `key` current if it lists one
        (the decision the queue selects: its approval, effect or criterion)."""
        panel = self.panel(title)
        self.tabs.setCurrentWidget(panel)
        if key is None or not isinstance(panel, TreePanel):
            return
        ix = panel.tree.index_at((key,))
        if ix.isValid():
            panel.tree.setCurrentIndex(ix)
            panel.tree.scrollTo(ix)

    def _fill(self, panel: QWidget | None) -> None:
        bundle = self.bundle
        if bundle is None or not isinstance(panel, Panel) or panel.title not in self._unfilled:
            return
        self._unfilled.remove(panel.title)
        panel.show_task(bundle)
        if self._brief is not None:
            panel.show_brief(self._brief)

    def _fill_next(self) -> None:
        if self._unfilled:
            self._fill(self.panels[self._unfilled[0]])
        if self._unfilled:
            self._fill_timer.start()

    def show_bundle(self, bundle: TaskBundle) -> None:
        if bundle == self.bundle:
            return  # nothing new: leave every widget as it is
        clock_only = same_record(self.bundle, bundle)
        self.bundle = bundle
        self.task_id = bundle.task.id
        if clock_only:
            # Read again because something else in the store changed: redrawing every panel
            # for it was 20-50 ms of the GUI thread on each write anywhere (bench_queue.py).
            for title, panel in self.panels.items():
                if title not in self._unfilled:  # the others are shown with this bundle
                    panel.show_clock(bundle)
            self.header.show_clock(bundle.task.now)
            return
        self.header.show_task(bundle.task)
        self.header.show_signing(bundle.signing)
        notes = self.tab_notes(bundle.task)
        for i, title in enumerate(self.panels):
            note = notes.get(title)
            self.tabs.setTabText(i, f"{title} · {note}" if note else title)
        self._brief = None
        self._unfilled = list(self.panels)
        self._fill(self.tabs.currentWidget())
        self._fill_timer.start()

    def tab_notes(self, task: TaskState) -> dict[str, str]:
        """What needs the reviewer in each part (by its title), said with what the number
        counts; a part that needs nothing is left out."""
        notes = {title: panel.tab_note(task) for title, panel in self.panels.items()}
        return {title: note for title, note in notes.items() if note}

    def show_brief(self, brief: TaskBrief) -> None:
        if brief.task_id != self.task_id:
            return
        self._brief = brief
        for title, panel in self.panels.items():
            if title not in self._unfilled:  # the others take it when they are filled
                panel.show_brief(brief)


def same_record(shown: TaskBundle | None, fresh: TaskBundle) -> bool:
    """Whether a fresh read of the task shows the record shown, only at a later clock
    reading: the store judges expiry at each read, so an approval that expired meanwhile
    reads as a different record."""
    if shown is None:
        return False
    return replace(shown, task=_timeless(shown.task)) == replace(fresh, task=_timeless(fresh.task))


def _timeless(task: TaskState) -> TaskState:
    """The task as read, without the clock's reading it was read at."""
    return task.model_copy(update={"now": ""})
