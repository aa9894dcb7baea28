"""The task view: the header above a tab per part of the record."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from .loader import Loader
from .panels.approvals import ApprovalsPanel
from .panels.artifacts import ArtifactsPanel
from .panels.base import Bundle, Panel
from .panels.brief import BriefPanel
from .panels.budgets import BudgetsPanel
from .panels.checkpoints import CheckpointsPanel
from .panels.criteria import CriteriaPanel
from .panels.effects import EffectsPanel
from .panels.header import Header
from .panels.phases import PhasesPanel
from .panels.timeline import TimelinePanel
from .widgets import hline

PANELS: tuple[type[Panel], ...] = (
    CriteriaPanel,
    ArtifactsPanel,
    ApprovalsPanel,
    EffectsPanel,
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
        self.bundle: Bundle | None = None

    def set_store(self, store: Any) -> None:
        for p in self.panels.values():
            p.store = store

    def set_disk(self, disk: dict[str, dict[str, Any]]) -> None:
        """The file watcher's marks changed: the panels that show them are shown again."""
        for p in self.panels.values():
            if p.uses_disk and p.disk != disk:
                p.disk = disk
                if self.bundle is not None:
                    p.show_task(self.bundle)

    def panel(self, title: str) -> Panel:
        return self.panels[title]

    def show_bundle(self, bundle: Bundle) -> None:
        if bundle == self.bundle:
            return  # nothing new: leave every widget as it is
        self.bundle = bundle
        self.task_id = bundle["task"]["id"]
        self.header.show_task(bundle["task"])
        counts = self._counts(bundle["task"])
        for i, (title, panel) in enumerate(self.panels.items()):
            panel.show_task(bundle)
            self.tabs.setTabText(i, f"{title} ({counts[title]})" if counts.get(title) else title)

    @staticmethod
    def _counts(task: dict[str, Any]) -> dict[str, int]:
        return {
            "Criteria": sum(
                c["status"] in {"stale", "failed", "unverified"} for c in task["criteria"]
            ),
            "Approvals": sum(a["state"] == "pending" for a in task["approvals"]),
            "Effects": sum(bool(e["unresolved"]) for e in task["effects"]),
            "Dependencies": sum(p["readiness"] == "blocked" for p in task["phases"]),
            "Artifacts": len(task["problems"]),
        }

    def show_brief(self, brief: dict[str, Any]) -> None:
        if brief["task_id"] != self.task_id:
            return
        for panel in self.panels.values():
            panel.show_brief(brief)
