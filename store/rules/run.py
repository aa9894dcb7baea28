"""A run's status: which statuses still take writes, may dispatch, are closed or reopen.

The run's status is the question every command asks first (may this run send anything to
the world? may it be closed, resumed?), so the sets are named once here and the commands,
the brief and the window read the same ones. A status set by policy or by the run's owner
(budget_exhausted, stopped) is reopened only by a person.
"""

from __future__ import annotations

from .states import RunStatus

#: Statuses a run was put in by policy (a budget) or by its owner (stop): only a person reopens it.
STOPPED_BY_POLICY: frozenset[str] = frozenset({RunStatus.BUDGET_EXHAUSTED, RunStatus.STOPPED})
#: Statuses in which the record is closed: nothing more is written to it.
CLOSED: frozenset[str] = frozenset({RunStatus.COMPLETED, RunStatus.SUPERSEDED})


def record_open(status: str) -> bool:
    """Whether the task's record still takes writes. A stopped or failed run does: a person
    still reconciles what it left, edits it and writes the checkpoint it resumes from."""
    return status not in CLOSED


#: Statuses in which something may be sent to the world.
DISPATCHING: frozenset[str] = frozenset(
    {RunStatus.RUNNING, RunStatus.AWAITING_APPROVAL, RunStatus.OUTCOME_UNKNOWN}
)
TERMINAL: frozenset[str] = frozenset(
    {RunStatus.STOPPED, RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.SUPERSEDED}
)


def can_dispatch(status: str) -> bool:
    """Whether a run in this status may send anything to the world."""
    return status in DISPATCHING


def close_targets(status: str) -> tuple[str, ...]:
    """What a person may close a run in this status as: `failed` (it will not be finished)
    or `superseded` (another task replaces it). A run that may still dispatch is stopped
    first (the stop revokes its approvals and cancels its planned effects); a closed
    record takes nothing."""
    from ..status import allowed

    if not record_open(status) or status in DISPATCHING:
        return ()
    return tuple(s for s in (RunStatus.FAILED, RunStatus.SUPERSEDED) if allowed(status, s))


def close_refusal(status: str, to_status: str) -> str | None:
    """Why a run in this status cannot be closed as `to_status` (None when it can)."""
    if to_status in close_targets(status):
        return None
    if status in DISPATCHING:
        return f"the run is {status}: stop it first (stopping revokes its approvals)"
    return f"a run that is {status} cannot be closed as {to_status}"


def can_resume(status: str) -> bool:
    """Whether a person may resume the run (it was stopped, or its budget ran out)."""
    return awaits_resume(status)


def is_reopening(from_status: str, to_status: str) -> bool:
    """Leaving a status set by policy or by the owner for one in which work goes on."""
    return from_status in STOPPED_BY_POLICY and to_status not in TERMINAL


def ledger_status(uncertain_effect: str | None, pending_approval: str | None) -> tuple[str, str]:
    """The status an active run is in by its ledger, and why: an effect whose outcome is
    unknown makes it outcome_unknown; else a pending approval, awaiting_approval; else
    running. `uncertain_effect` / `pending_approval`: the id of one, or None."""
    if uncertain_effect is not None:
        return RunStatus.OUTCOME_UNKNOWN, f"effect {uncertain_effect} has an unknown outcome"
    if pending_approval is not None:
        return RunStatus.AWAITING_APPROVAL, f"approval {pending_approval} is pending"
    return RunStatus.RUNNING, "nothing is waiting on the world or a reviewer"


def awaits_resume(status: str) -> bool:
    """A run only a person reopens (stopped, or its budget exhausted) waits on one."""
    return status in STOPPED_BY_POLICY


#: Statuses `settle_status` moves a run between, as its ledger has it.
LEDGER_STATUSES: frozenset[str] = frozenset(
    {RunStatus.RUNNING, RunStatus.AWAITING_APPROVAL, RunStatus.OUTCOME_UNKNOWN}
)
