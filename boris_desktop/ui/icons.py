"""Status words and their icons: status is never shown by colour alone."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from PySide6.QtGui import QIcon

ICONS = Path(__file__).parent.parent / "resources" / "icons"

# Every status word the record uses, mapped to one of the few icons a reviewer learns.
STATUS_ICON = {
    # run status
    "running": "running",
    "awaiting_approval": "approval",
    "scheduled": "pending",
    "paused": "pending",
    "blocked": "attention",
    "outcome_unknown": "unknown",
    "budget_exhausted": "attention",
    "stopped": "stopped",
    "completed": "ok",
    "failed": "failed",
    "superseded": "stopped",
    # criteria
    "satisfied": "ok",
    "unverified": "pending",
    "stale": "attention",
    "waived": "stopped",
    "evidence_missing": "attention",
    # approvals
    "pending": "approval",
    "approved": "ok",
    "rejected": "failed",
    "sent_back": "attention",
    "consumed": "ok",
    "expired": "stopped",
    "revoked": "stopped",
    # effects (stage and outcome)
    "planned": "pending",
    "dispatched": "running",
    "observed": "attention",
    "reconciled": "ok",
    "cancelled": "stopped",
    "succeeded": "ok",
    "partial": "attention",
    "unknown": "unknown",
    "absent": "failed",
    # phases
    "done": "ok",
    "ready": "running",
    # blob problems and marks
    "missing": "attention",
    "unreadable": "attention",
    "changed": "attention",
    "fork": "fork",
    "head": "ok",
}


@cache
def icon(name: str) -> QIcon:
    return QIcon(str(ICONS / f"{name}.svg"))


def status_icon(status: str | None) -> QIcon:
    return icon(STATUS_ICON.get(status or "", "unknown"))


def words(status: str | None) -> str:
    return (status or "—").replace("_", " ")
