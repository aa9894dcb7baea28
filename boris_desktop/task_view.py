"""The task view: the header above a tab per part of the record."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from . import text as t
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
        clock_only = same_record(self.bundle, bundle)
        self.bundle = bundle
        self.task_id = bundle["task"]["id"]
        if clock_only:
            # Read again because something else in the store changed: redrawing every panel
            # for it was 20-50 ms of the GUI thread on each write anywhere (bench_queue.py).
            for panel in self.panels.values():
                panel.show_clock(bundle)
            return
        self.header.show_task(bundle["task"])
        self.header.show_signing(bundle.get("signing"))
        notes = self.tab_notes(bundle["task"])
        for i, (title, panel) in enumerate(self.panels.items()):
            panel.show_task(bundle)
            note = notes.get(title)
            self.tabs.setTabText(i, f"{title} · {note}" if note else title)

    @staticmethod
    def tab_notes(task: dict[str, Any]) -> dict[str, str]:
        """What needs the reviewer in each part, said with what the number counts."""
        from store import rules

        from .inbox import budget_exhausted
        from .panels.next_steps import effect_to_reconcile

        # The store's judgement of each criterion (`state`): one judged satisfied whose
        # evidence can no longer be read counts as open again.
        open_criteria = sum(not rules.criterion_done(c["state"]) for c in task["criteria"])
        pending = sum(a["state"] == "pending" for a in task["approvals"])  # expiry judged
        to_reconcile = sum(effect_to_reconcile(e) for e in task["effects"])
        blocked = sum(p["readiness"] == "blocked" for p in task["phases"])
        problems = sum(p["kind"].startswith("artifact") for p in task["problems"])
        standings = [
            rules.budget_standing(b["used"], b["reserved"], b["limit_value"])
            for b in task["budgets"]
        ]
        exhausted = standings.count(rules.BudgetStanding.EXHAUSTED)
        reserved = standings.count(rules.BudgetStanding.FULLY_RESERVED)
        at_limit = ", ".join(
            f"{n} {said}"
            for n, said in ((exhausted, "exhausted"), (reserved, "fully reserved"))
            if n
        )
        heads = len(task["checkpoints"]["heads"])
        notes = {
            "Criteria": f"{open_criteria} to check" if open_criteria else "",
            "Approvals": f"{pending} pending" if pending else "",
            "Effects": f"{to_reconcile} to reconcile" if to_reconcile else "",
            "Dependencies": f"{blocked} blocked" if blocked else "",
            "Artifacts": t.count(problems, "problem", "problems") if problems else "",
            "Budgets": at_limit or ("exhausted" if budget_exhausted({}, task["status"]) else ""),
            "Checkpoints": "forked" if heads > 1 else "",
        }
        return {k: v for k, v in notes.items() if v}

    def show_brief(self, brief: dict[str, Any]) -> None:
        if brief["task_id"] != self.task_id:
            return
        for panel in self.panels.values():
            panel.show_brief(brief)


def same_record(shown: Bundle | None, fresh: Bundle) -> bool:
    """Whether a fresh read of the task shows the record shown, only at a later clock
    reading: the store judges expiry at each read, so an approval that expired meanwhile
    reads as a different record."""
    if shown is None:
        return False
    a, b = shown["task"], fresh["task"]
    return {**a, "now": None} == {**b, "now": None} and {**shown, "task": None} == {
        **fresh,
        "task": None,
    }
