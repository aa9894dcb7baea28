"""Which parts of a task's checkpoint state an event can change (issue 44).

A checkpoint's state (store.commands.checkpoint_state) is read from a few projection tables,
one part each. The store keeps the state its writes last knew per task (store.tx.StateMemo)
and carries it over every later event: an event that changes nothing the state is read from
(a note, a lease, a checkpoint) leaves it whole; any other marks the parts it may change
stale, and the next checkpoint reads only those again. So a checkpoint after a note costs
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
