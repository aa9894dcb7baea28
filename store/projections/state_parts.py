"""Which parts of a task's checkpoint state an event can change (issue 44).

A checkpoint's state (store.commands.checkpoint_state) is read from a few projection tables,
one part each. The store keeps the state its writes last knew per task (store.tx.StateMemo)
and carries it over every later event: an event that changes nothing the state is read from
(a note, a lease, a checkpoint) leaves it whole; a budget's charge and an artifact's new
version change their parts from the event's own values (`carried`); any other marks the parts
it may change stale, and the next checkpoint reads only those again. So a checkpoint after a note costs
what one after a checkpoint does, and one after an artifact reads the artifacts and criteria,
not the whole task.

`WRITES` names what each event type's projection writes (tables, and for the task's row the
column the state reads); tests/test_checkpoint_state_parts.py checks it against the
statements the projections run, and that the carried state is the one read afresh. An event
type with a projection missing from `WRITES` marks every part stale: forgetting to declare
one costs a read, never a wrong state.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from .. import events as ev
from .. import rules
from ..record import Event
from .core import _APPLY, _MOVES_HEAD

#: The state's parts, as store.commands.checkpoint_state reads them (its keys, but
#: `pending_work`, which is computed from the others).
PARTS = (
    "status",
    "objective",
    "criteria",
    "artifacts",
    "unresolved_effects",
    "open_approvals",
    "budgets",
    "pending_phases",
    "open_waits",
)
ALL = frozenset(PARTS)

#: The parts read from each table ("tasks.status": the task row's status only).
READ_FROM: dict[str, frozenset[str]] = {
    "tasks.status": frozenset({"status", "open_waits"}),
    "objective_revisions": frozenset({"objective"}),
    "criteria": frozenset({"criteria"}),
    "artifacts": frozenset({"artifacts", "pending_phases"}),
    "artifact_versions": frozenset({"artifacts"}),
    "effects": frozenset({"unresolved_effects", "open_waits"}),
    "approvals": frozenset({"open_approvals", "pending_phases", "open_waits"}),
    "budgets": frozenset({"budgets"}),
    "phases": frozenset({"pending_phases"}),
    "waits": frozenset({"open_waits"}),
}

_EFFECT = ("effects", "attempts", "observations")
_APPROVAL = ("approvals", "effects")

#: What each event type's projection writes, of the tables above and the others ("tasks":
#: the task's row but its status).
WRITES: dict[str, tuple[str, ...]] = {
    "objective.amended": ("objective_revisions", "tasks"),
    "criterion.added": ("criteria",),
    "criterion.changed": ("criteria",),
    "criterion.judged": ("criteria", "tasks"),
    "artifact.version_recorded": ("artifacts", "artifact_versions", "criteria", "phases", "tasks"),
    "evidence.attached": ("evidence", "criteria"),
    "phase.added": ("phases",),
    "phase.completed": ("phases",),
    "budget.limit_set": ("budgets",),
    "budget.charged": ("budgets",),
    "budget.reserved": ("budgets",),
    "budget.released": ("budgets",),
    "run.status_changed": ("tasks.status",),
    "run.stopped": ("tasks.status",),
    "effect.planned": _EFFECT,
    "effect.tool_migrated": _EFFECT,
    "effect.revised": _EFFECT,
    "effect.cancelled": _EFFECT,
    "attempt.dispatched": _EFFECT,
    "attempt.responded": _EFFECT,
    "observation.recorded": (*_EFFECT, "tasks"),
    "effect.reconciled": (*_EFFECT, "tasks"),
    "approval.requested": _APPROVAL,
    "approval.decided": _APPROVAL,
    "approval.consumed": _APPROVAL,
    "approval.retired": _APPROVAL,
    "approval.answered": _APPROVAL,
    "approval.escalated": _APPROVAL,
    "approval.ruled": _APPROVAL,
    "checkpoint.written": ("checkpoints", "tasks"),
    "lease.acquired": ("leases", "lease_heartbeats"),
    "lease.released": ("leases", "lease_heartbeats"),
    "lease.taken_over": ("leases", "lease_heartbeats"),
    "retention.set": ("retention",),
    "content.retired": ("retention",),
    "wait.recorded": ("waits",),
    "wait.rescheduled": ("waits",),
    "wait.ended": ("waits",),
    "late_changes.acknowledged": ("tasks",),
    "followup.opened": ("tasks",),
}


@functools.cache
def stale_parts(type_name: str) -> frozenset[str]:
    """The parts of the state an event of this type may change."""
    if type_name == "task.created":
        return ALL
    tables = WRITES.get(type_name)
    if tables is None:
        # No projection: the event moves the head and nothing else. A projection that is
        # not declared: every part, to be safe.
        return ALL if type_name in _APPLY or type_name in _MOVES_HEAD else frozenset()
    return frozenset().union(*(READ_FROM.get(table, frozenset()) for table in tables))


# --- parts carried from the event itself ---------------------------------------------------

#: Marks a carried state whose members changed: its pending work and canonical JSON are made
#: again before it is used (not a part read from a table).
REDONE = "pending_work"


def carried(
    event: Event, state: Mapping[str, Any], stale: frozenset[str]
) -> tuple[dict[str, Any] | None, frozenset[str]]:
    """The state after `event`, its parts computed from the event where that is exactly what
    the projection writes (so the next checkpoint does not read them again), and the parts
    still to be read again. (None, `stale_parts`) when the event is not carried so: an event
    type not here, a part already stale, or a case the projection's own rules decide (a
    criterion the new version makes stale, a counter not yet in the state).

    The values are the ones the projection stores, made the same way (a float added to the
    float the table gave back), so the carried state equals the state read afresh:
    tests/test_checkpoint_state_parts.py checks it for random histories, and these cases on
    both engines."""
    p = event.payload
    if isinstance(p, ev.BudgetCharged) and "budgets" not in stale:
        budgets = _charged(state["budgets"], p.counter, p.amount)
        if budgets is not None:
            return {**state, "budgets": budgets}, frozenset({REDONE})
    if isinstance(p, ev.ArtifactVersionRecorded) and not {"artifacts", "criteria"} & stale:
        artifacts = _versioned(state["artifacts"], p)
        if artifacts is not None:
            # The criteria change only where a satisfied one was checked against an older
            # version of this artifact (rules.criterion_stales_on_change): then read again.
            moved = any(
                c["artifact_id"] == p.artifact_id
                and c["status"] == rules.CriterionState.SATISFIED.value
                and (c["artifact_version"] or 0) < p.version
                for c in state["criteria"]
            )
            still = READ_FROM["phases"] | ({"criteria"} if moved else frozenset())
            return {**state, "artifacts": artifacts}, frozenset({REDONE, *still})
    return None, stale_parts(event.type)


def _charged(rows: list[dict[str, Any]], counter: str, amount: float) -> list[Any] | None:
    out = []
    found = False
    for b in rows:
        if b["counter"] == counter:
            if type(b["used"]) is not float:
                return None
            b = {**b, "used": b["used"] + amount}
            found = True
        out.append(b)
    return out if found else None


def _versioned(rows: list[dict[str, Any]], p: ev.ArtifactVersionRecorded) -> list[Any] | None:
    made = {"id": p.artifact_id, "version": p.version, "digest": p.digest, "size": p.size}
    at = next((i for i, a in enumerate(rows) if a["id"] == p.artifact_id), None)
    if at is None:
        # A new artifact takes the next position: last in the part's order.
        return [*rows, made] if p.version == 1 else None
    if rows[at]["version"] != p.version - 1:
        return None
    return [*rows[:at], made, *rows[at + 1 :]]
