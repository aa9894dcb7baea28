"""Criteria: status, the artifact version each was checked against, its evidence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from boris_desktop.runtime.loader import Loader
from boris_desktop.runtime.preview import preview
from boris_desktop.task.bundle import TaskBundle
from boris_desktop.task.panels import retired
from boris_desktop.task.panels.base import TreePanel
from boris_desktop.task.panels.next_steps import criterion_next
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import words
from boris_desktop.ui.records import Node
from store import api

if TYPE_CHECKING:
    from store.api import Criterion, Evidence, RetiredItem, TaskState


@dataclass(frozen=True)
class EvidenceRow:
    """An evidence item's row: its content is previewed when it is selected."""

    evidence: Evidence


class CriteriaPanel(TreePanel):
    title = "Criteria"
    uses_disk = True
    headers = ("Criterion", "Status", "Checked against", "Text", "What you can do")
    TEXT_WIDTH = 380  # the text may be long: the next step stays in sight

    def __init__(self, loader: Loader) -> None:
        super().__init__(loader)
        #: The task's retired items: an evidence item's tombstone and weight.
        self._retired: dict[retired.ItemKey, RetiredItem] = {}

    def tab_note(self, task: TaskState) -> str:
        # The store's judgement of each criterion (`state`): one judged satisfied whose
        # evidence can no longer be read counts as open again.
        n = sum(not api.criterion_done(c.state) for c in task.criteria)
        return f"{n} to check" if n else ""

    def summary(self, bundle: TaskBundle) -> str:
        crits = bundle.task.criteria
        counts: dict[str, int] = {}
        for c in crits:  # as the store judges it now: satisfied needs readable evidence
            counts[c.state] = counts.get(c.state, 0) + 1
        return (
            f"{t.count(len(crits), 'criterion', 'criteria')}: "
            + ", ".join(f"{n} {words(s)}" for s, n in counts.items())
            if crits
            else "No criteria yet."
        )

    def show_task(self, bundle: TaskBundle) -> None:
        super().show_task(bundle)
        header = self.tree.header()
        if header.sectionSize(3) > self.TEXT_WIDTH:
            header.resizeSection(3, self.TEXT_WIDTH)

    def nodes(self, bundle: TaskBundle) -> list[Node]:
        self._retired = retired.items(bundle.task)
        return [self._criterion(c) for c in bundle.task.criteria]

    def _criterion(self, c: Criterion) -> Node:
        against = f"{c.artifact_id} v{c.artifact_version}" if c.artifact_id else "—"
        lines = [
            f"{c.criterion_id}: {c.text}",
            f"status: {words(c.state)}",
            f"checked against: {against}",
        ]
        if c.stale_reason:
            lines.append(f"stale because: {c.stale_reason}")
        on_disk = self.disk.criteria.get(c.criterion_id)
        if on_disk:
            lines.append(f"stale on disk: {on_disk}")
        step = criterion_next(c, bool(on_disk))
        if step:
            lines.insert(0, f"What you can do: {step}\n")
        if c.judged_by:
            lines.append(f"judged by {t.actor(c.judged_by)} at {t.when(c.judged_at)}")
        if c.note:
            lines.append(f"note: {c.note}")
        lines.append(f"evidence: {', '.join(c.evidence_ids) or 'none'}")
        return Node(
            key=c.criterion_id,
            cells=(
                c.criterion_id,
                words(c.state) + (", stale on disk" if on_disk else ""),
                against,
                c.text,
                step or "—",
            ),
            status=api.CriterionState.STALE if on_disk else c.state,
            tip=f"stale on disk: {on_disk}" if on_disk else "",
            detail="\n".join(lines),
            children=[self._evidence(e) for e in c.evidence],
        )

    def _evidence(self, e: Evidence) -> Node:
        problem = e.blob_problem
        word, status = f"blob {problem}" if problem else "evidence", "missing" if problem else None
        gone = self._retired.get(retired.evidence_key(e.evidence_id))
        if gone:  # a typed absence by its retention class, not a missing blob
            word, status = retired.mark(gone)
        return Node(
            key=f"evidence:{e.evidence_id}",
            cells=(
                e.evidence_id,
                word,
                f"{e.kind.replace('_', ' ')}, {t.size(e.size)}",
                e.description,
            ),
            status=status,
            icon_name=None if problem else "ok",
            tip=f"{e.digest}\n{e.locator}",
            detail=EvidenceRow(e),
        )

    def show_detail(self, node: Node) -> None:
        row = node.detail
        if not isinstance(row, EvidenceRow):
            super().show_detail(node)
            return
        e = row.evidence
        head = (
            f"evidence {e.evidence_id} ({e.kind}) by {t.actor(e.actor)} at {t.when(e.at)}\n"
            f"digest {e.digest}, {t.size(e.size)}, {e.media_type}\n"
        )
        gone = self._retired.get(retired.evidence_key(e.evidence_id))
        if gone:
            label = f"evidence {e.evidence_id}"
            self.detail.show_text(head + "\n" + retired.detail(label, gone))
            return
        if e.blob_problem:
            self.detail.show_text(
                head + f"\nThe retained copy is {e.blob_problem}: it cannot support the criterion."
            )
            return
        self.detail.show_text(head + "\nloading…")
        store = self.store
        if store is None:
            return
        self.loader.submit(
            self.detail_job,
            lambda: preview(store, e.digest, e.media_type, e.locator),
            lambda r: self.detail.show_text(
                head + f"({r.note or r.problem})\n" + "─" * 60 + "\n" + r.text,
                None,
                None,
            ),
        )
