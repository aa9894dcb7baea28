"""Run statuses and the transitions allowed between them.

The table is the whole rule: a change not listed here is refused. `completed` has further
conditions (every criterion satisfied or waived, no unresolved effect) checked by the command
layer, because an agent's last message never completes a task.
"""

from __future__ import annotations

from typing import Literal

RunStatus = Literal[
    "running",
    "awaiting_approval",
    "scheduled",
    "paused",
    "blocked",
    "outcome_unknown",
    "budget_exhausted",
    "stopped",
    "completed",
    "failed",
    "superseded",
]

TRANSITIONS: dict[str, frozenset[str]] = {
    "running": frozenset(
        {
            "awaiting_approval",
            "scheduled",
            "paused",
            "blocked",
            "outcome_unknown",
            "budget_exhausted",
            "stopped",
            "completed",
            "failed",
            "superseded",
        }
    ),
    "awaiting_approval": frozenset(
        {
            "running",
            "outcome_unknown",
            "paused",
            "blocked",
            "budget_exhausted",
            "stopped",
            "failed",
            "superseded",
        }
    ),
    "scheduled": frozenset({"running", "paused", "stopped", "superseded"}),
    "paused": frozenset({"running", "scheduled", "stopped", "superseded"}),
    "blocked": frozenset({"running", "paused", "stopped", "failed", "superseded"}),
    "outcome_unknown": frozenset(
        {"running", "awaiting_approval", "paused", "blocked", "stopped", "failed", "superseded"}
    ),
    "budget_exhausted": frozenset({"running", "paused", "stopped", "failed", "superseded"}),
    # A stopped run may be resumed deliberately by the next actor, or closed by a person as
    # failed (it will not be finished) or superseded.
    "stopped": frozenset({"running", "failed", "superseded"}),
    "completed": frozenset({"superseded"}),
    "failed": frozenset({"running", "superseded"}),
    "superseded": frozenset(),
}

ALL_STATUSES: tuple[str, ...] = tuple(TRANSITIONS)


def allowed(from_status: str, to_status: str) -> bool:
    return to_status in TRANSITIONS.get(from_status, frozenset())


def can_stop(status: str) -> bool:
    """Whether a run in this status may be stopped by its owner."""
    return allowed(status, "stopped")
