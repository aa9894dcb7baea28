"""What the window shows in place of retired content (issue 35 part R): the tombstone's words.

A retired item is a typed absence, not a fault: the store (store.reads.retention) says when it
was retired, what its tombstone kept, what it proved and whether anything still rests on it
(blocking) or not (degraded). The panels show this instead of the content and never try to
read the blob.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from boris_desktop.ui import text as t
from store import api

if TYPE_CHECKING:
    from store.api import RetiredItem, TaskState

#: A retired item's name as the store gives it: (item kind, item id).
ItemKey = tuple[str, str]
#: The kinds of retired item the panels show in place of content.
VERSION, EVIDENCE = "artifact_version", "evidence"


def items(task: TaskState) -> dict[ItemKey, RetiredItem]:
    """The task's retired items, each weighed (blocking or degraded), by kind and id."""
    return {(r.kind, r.id): r for r in task.retired}


def version_key(artifact_id: str, version: int) -> ItemKey:
    """An artifact version's name among retired items: retention names it `report@2` (as
    `boris retention` lists it)."""
    return (VERSION, f"{artifact_id}@{version}")


def evidence_key(evidence_id: str) -> ItemKey:
    return (EVIDENCE, evidence_id)


def mark(item: RetiredItem) -> tuple[str, str | None]:
    """The row's words and status: blocking draws attention, degraded does not."""
    if item.weight == api.RetiredWeight.BLOCKING:
        return "retired · blocking", "missing"
    return "retired · degraded", None


def detail(label: str, item: RetiredItem) -> str:
    """The detail pane's text for a retired item (`label`: "report.md v2", "evidence ev1")."""
    who = item.retired_by
    by = f"{who.kind}:{who.id}" if who else "?:?"
    lines = [
        f"{label} was retired on {item.retired_at[:10]}",
        f"(kept: digest {item.digest[:19]}…, {t.size(item.size)}, {item.media_type})",
        f"by {by} at {item.retired_at},",
        f"under its retention class {item.retain}.",
        "",
        f"Kept: digest {item.digest}",
        f"      {t.size(item.size)}, {item.media_type}",
    ]
    if item.proved:
        lines += ["", "What it proved when it was retired:"]
        lines += [f"  • {p}" for p in item.proved]
    lines.append("")
    if item.weight == api.RetiredWeight.BLOCKING:
        lines.append("Blocking: " + ";\n  ".join(item.required_by) + ".")
        lines.append("The content is not there to resume from:")
        lines.append("retrieve it again under current policy, or decide without it.")
    else:
        lines.append("Degraded: nothing rests on it; the work goes on without it.")
    return "\n".join(lines)
