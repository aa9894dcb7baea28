"""Resume brief and summary: the brief from the record, and the agent's narratives with
their discrepancies against the record marked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QColor, QPalette, QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtWidgets import QSplitter, QTabWidget, QTextEdit, QVBoxLayout, QWidget

from boris_desktop.runtime.loader import Loader
from boris_desktop.task.bundle import TaskBrief, TaskBundle
from boris_desktop.task.panels.base import Panel
from boris_desktop.task.panels.header import Banner
from boris_desktop.ui import text as t
from boris_desktop.ui.records import Node, RecordTree
from boris_desktop.ui.widgets import TextPane, heading

if TYPE_CHECKING:
    from store.api import Narrative


class BriefPanel(Panel):
    title = "Brief"

    def __init__(self, loader: Loader) -> None:
        super().__init__(loader)
        self.brief = TextPane(loader, "Resume brief")
        self.brief.setLineWrapMode(TextPane.LineWrapMode.WidgetWidth)
        self.brief.setPlaceholderText("Computing the brief: observing the task's files…")
        self.summary = TextPane(loader, "Summary generated from the record")
        self.summary.setLineWrapMode(TextPane.LineWrapMode.WidgetWidth)
        self.summary.setPlaceholderText("Generating the summary…")
        self.narratives = RecordTree(("Narrative / claim", "Record says", "By"), "Narratives")
        self.narrative_text = TextPane(loader, "Narrative text (a claim, not the record)")
        self.narrative_text.setLineWrapMode(TextPane.LineWrapMode.WidgetWidth)
        self.narrative_text.setPlaceholderText("No narrative selected.")
        self.discrepancies = Banner("attention", "Discrepancies with the record")
        self.discrepancies.hide()
        self._narr: list[Narrative] = []
        self._task_id: str | None = None

        left = QWidget()
        lcol = QVBoxLayout(left)
        lcol.setContentsMargins(0, 0, 0, 0)
        self.texts = QTabWidget()
        self.texts.setAccessibleName("Brief and summary")
        self.texts.addTab(self.brief, "Resume brief (record + fresh observations)")
        self.texts.addTab(self.summary, "Summary (generated from the record)")
        lcol.addWidget(self.texts, 1)
        right = QWidget()
        rcol = QVBoxLayout(right)
        rcol.setContentsMargins(0, 0, 0, 0)
        rcol.addWidget(heading("Agent narratives (claims; the record wins)"))
        rcol.addWidget(self.discrepancies)
        rsplit = QSplitter(Qt.Orientation.Vertical)
        rsplit.addWidget(self.narratives)
        rsplit.addWidget(self.narrative_text)
        rcol.addWidget(rsplit, 1)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([700, 540])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(split)
        self.narratives.selectionModel().currentChanged.connect(self._narrative_selected)

    def show_brief(self, brief: TaskBrief) -> None:
        self.brief.show_text(brief.markdown, "markdown")
        self.summary.show_text(brief.summary, "markdown")

    def show_task(self, bundle: TaskBundle) -> None:
        if bundle.task.id != self._task_id:
            # Another task: its brief is on its way (it observes files); the last task's is
            # not shown meanwhile, only the placeholder saying it is being computed.
            self._task_id = bundle.task.id
            self.brief.show_text("")
            self.summary.show_text("")
        self._narr = bundle.narratives
        nodes = []
        found = 0
        for n in self._narr:
            kids = [
                Node(
                    key=f"d:{d.criterion_id}",
                    cells=(
                        f"claims {d.criterion_id} is {d.claimed}",
                        f"{d.record or 'no such criterion'}",
                        "",
                    ),
                    icon_name="attention",
                    tip=d.message,
                    detail=n,
                )
                for d in n.discrepancies
            ]
            found += len(kids)
            nodes.append(
                Node(
                    key=n.id,
                    cells=(
                        f"{n.id} (seq {n.seq})",
                        t.count(len(kids), "discrepancy", "discrepancies")
                        if kids
                        else "agrees with the record",
                        f"{t.actor_short(n.actor)}, {t.when(n.at)}",
                    ),
                    icon_name="attention" if kids else "ok",
                    detail=n,
                    children=kids,
                )
            )
        self.narratives.set_nodes(nodes, expand_all=True)
        self.discrepancies.say(
            f"{t.count(found, 'place', 'places')} where a narrative disagrees with the record: "
            "the record wins."
            if found
            else ""
        )
        if not self._narr:
            self.narrative_text.show_text("This task has no agent narrative.")
        node = self.narratives.current_node()
        if node is not None:
            self._show_narrative(node.detail)
        elif nodes:
            self.narratives.setCurrentIndex(self.narratives.records.index(0, 0))

    def _narrative_selected(self, current: QModelIndex, _previous: QModelIndex) -> None:
        node = self.narratives.records.node(current)
        if node is not None:
            self._show_narrative(node.detail)

    def _show_narrative(self, n: Narrative) -> None:
        lines = []
        if n.blob_problem:
            lines.append(f"The narrative's text cannot be read: {n.blob_problem}\n")
        for d in n.discrepancies:
            lines.append(f"✗ {d.message}")
        if n.discrepancies:
            lines.append("")
        lines.append("─" * 40 + " the narrative, as written " + "─" * 8)
        lines.append(n.text)
        self.narrative_text.show_text("\n".join(lines))
        self._mark(n)

    def _mark(self, n: Narrative) -> None:
        """Underline and tint every mention of a criterion the narrative gets wrong."""
        doc = self.narrative_text.document()
        fmt = QTextCharFormat()
        fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
        fmt.setUnderlineColor(QColor("#d0342c"))
        hi = self.palette().color(QPalette.ColorRole.Highlight)
        hi.setAlpha(60)
        fmt.setBackground(hi)
        marks = []
        for d in n.discrepancies:
            cursor = QTextCursor(doc)
            while True:
                cursor = doc.find(
                    d.criterion_id, cursor, QTextDocument.FindFlag.FindCaseSensitively
                )
                if cursor.isNull():
                    break
                sel = QTextEdit.ExtraSelection()
                sel.cursor = cursor
                sel.format = fmt
                marks.append(sel)
        self.narrative_text.setExtraSelections(marks)
