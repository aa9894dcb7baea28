"""Criteria: status, the artifact version each was checked against, its evidence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from boris_desktop.runtime.preview import preview
from boris_desktop.task.bundle import TaskBundle
from boris_desktop.task.panels import retired
from boris_desktop.task.panels.base import TreePanel
from boris_desktop.task.panels.next_steps import criterion_next
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import words
from boris_desktop.ui.records import Node
from store import api


@dataclass(frozen=True)
class EvidenceRow:
    """An evidence item's row: its content is previewed when it is selected."""

    evidence: dict[str, Any]


class CriteriaPanel(TreePanel):
    title = "Criteria"
    uses_disk = True
    headers = ("Criterion", "Status", "Checked against", "Text", "What you can do")
    TEXT_WIDTH = 380  # the text may be long: the next step stays in sight

    def summary(self, bundle: TaskBundle) -> str:
        crits = bundle.task["criteria"]
        counts: dict[str, int] = {}
        for c in crits:  # as the store judges it now: satisfied needs readable evidence
            counts[c["state"]] = counts.get(c["state"], 0) + 1
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
        out = []
        for c in bundle.task["criteria"]:
            against = f"{c['artifact_id']} v{c['artifact_version']}" if c["artifact_id"] else "—"
            lines = [
                f"{c['criterion_id']}: {c['text']}",
                f"status: {words(c['state'])}",
                f"checked against: {against}",
            ]
            if c.get("stale_reason"):
                lines.append(f"stale because: {c['stale_reason']}")
            on_disk = self.disk.get("criteria", {}).get(c["criterion_id"])
            if on_disk:
                lines.append(f"stale on disk: {on_disk}")
            step = criterion_next(c, bool(on_disk))
            if step:
                lines.insert(0, f"What you can do: {step}\n")
            if c.get("judged_by"):
                lines.append(f"judged by {t.actor(c['judged_by'])} at {t.when(c['judged_at'])}")
            if c.get("note"):
                lines.append(f"note: {c['note']}")
            lines.append(f"evidence: {', '.join(c['evidence_ids']) or 'none'}")
            kids = [self._evidence(e) for e in c["evidence"]]
            out.append(
                Node(
                    key=c["criterion_id"],
                    cells=(
                        c["criterion_id"],
                        words(c["state"]) + (", stale on disk" if on_disk else ""),
                        against,
                        c["text"],
                        step or "—",
                    ),
                    status=api.CriterionState.STALE if on_disk else c["state"],
                    tip=f"stale on disk: {on_disk}" if on_disk else "",
                    detail="\n".join(lines),
                    children=kids,
                )
            )
        return out

    def _evidence(self, e: dict[str, Any]) -> Node:
        problem = e.get("blob_problem")
        word, status = f"blob {problem}" if problem else "evidence", "missing" if problem else None
        if e.get("retired"):  # a typed absence by its retention class, not a missing blob
            word, status = retired.mark(e["retired"])
        return Node(
            key=f"evidence:{e['evidence_id']}",
            cells=(
                e["evidence_id"],
                word,
                f"{e['kind'].replace('_', ' ')}, {t.size(e['size'])}",
                e["description"] or "",
            ),
            status=status,
            icon_name=None if problem else "ok",
            tip=f"{e['digest']}\n{e.get('locator') or ''}",
            detail=EvidenceRow(e),
        )

    def show_detail(self, node: Node) -> None:
        row = node.detail
        if not isinstance(row, EvidenceRow):
            super().show_detail(node)
            return
        e = row.evidence
        head = (
            f"evidence {e['evidence_id']} ({e['kind']}) by {t.actor(e['actor'])} at {t.when(e['at'])}\n"
            f"digest {e['digest']}, {t.size(e['size'])}, {e['media_type']}\n"
        )
        if e.get("retired"):
            label = f"evidence {e['evidence_id']}"
            self.detail.show_text(head + "\n" + retired.detail(label, e["retired"]))
            return
        if e.get("blob_problem"):
            self.detail.show_text(
                head
                + f"\nThe retained copy is {e['blob_problem']}: it cannot support the criterion."
            )
            return
        self.detail.show_text(head + "\nloading…")
        store = self.store
        if store is None:
            return
        self.loader.submit(
            self.detail_job,
            lambda: preview(store, e["digest"], e["media_type"], e.get("locator")),
            lambda r: self.detail.show_text(
                head + f"({r.get('note') or r.get('problem')})\n" + "─" * 60 + "\n" + r["text"],
                None,
                None,
            ),
        )
