"""A phase's readiness, and whether it may be completed.

A result computed while an input is missing would authorize later phases on nothing, so a
blocked phase is never completed, by anyone.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum


class PhaseReadiness(StrEnum):
    """A phase's readiness, derived from its inputs (store.reads.queries.derive_phases)."""

    DONE = "done"
    READY = "ready"
    BLOCKED = "blocked"


def phase_completion_refusal(phase_id: str, blocked_by: Sequence[str]) -> str | None:
    """Why a phase cannot be completed now (None: it can). A result computed while an input
    is missing would authorize later phases on nothing: a blocked phase is never completed,
    by an agent or a person. A done phase may be completed again (a new result; the earlier
    one stays as history and no longer authorizes its dependents)."""
    if blocked_by:
        return f"phase {phase_id} is not ready: " + "; ".join(blocked_by)
    return None
