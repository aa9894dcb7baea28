"""What the window shows in place of retired content (issue 35 part R): the tombstone's words.

A retired item is a typed absence, not a fault: the store (store.reads.retention) says when it
was retired, what its tombstone kept, what it proved and whether anything still rests on it
(blocking) or not (degraded). The panels show this instead of the content and never try to
read the blob.
"""

from __future__ import annotations

from typing import Any

from boris_desktop.ui import text as t
from store import api


def mark(stone: dict[str, Any]) -> tuple[str, str | None]:
    """The row's words and status: blocking draws attention, degraded does not."""
    if stone["weight"] == api.RetiredWeight.BLOCKING:
        return "retired · blocking", "missing"
    return "retired · degraded", None


def detail(label: str, stone: dict[str, Any]) -> str:
    """The detail pane's text for a retired item (`label`: "report.md v2", "evidence ev1")."""
    who = stone.get("retired_by") or {}
    lines = [
        f"{label} was retired on {stone['retired_at'][:10]}",
        f"(kept: digest {stone['digest'][:19]}…, {t.size(stone['size'])}, {stone['media_type']})",
        f"by {who.get('kind', '?')}:{who.get('id', '?')} at {stone['retired_at']},",
        f"under its retention class {stone['retain']}.",
        "",
        f"Kept: digest {stone['digest']}",
        f"      {t.size(stone['size'])}, {stone['media_type']}",
    ]
    if stone["proved"]:
        lines += ["", "What it proved when it was retired:"]
        lines += [f"  • {p}" for p in stone["proved"]]
    lines.append("")
    if stone["weight"] == api.RetiredWeight.BLOCKING:
        lines.append("Blocking: " + ";\n  ".join(stone["required_by"]) + ".")
        lines.append("The content is not there to resume from:")
        lines.append("retrieve it again under current policy, or decide without it.")
    else:
        lines.append("Degraded: nothing rests on it; the work goes on without it.")
    return "\n".join(lines)
