"""Scheduled waits: what a task waits for, when it is due, what cancels it, who decides.

Waiting is state, not a process kept awake: what a task waits for, when to consider it again
(on the database's clock), what it holds and what cancels it. When it comes due it is
re-evaluated under current policy and the world as it is then; being due authorizes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from .run import TERMINAL
from .states import ActorKind, ApprovalState, EffectStage, Refusal
from .times import iso_instant


class WaitKind(StrEnum):
    RATE_LIMIT = "rate_limit"
    APPROVAL = "approval"
    STATUS_CHECK = "status_check"
    RETRY = "retry"
    TIME = "time"


class WaitState(StrEnum):
    """A wait as written: open, settled, cancelled or retired. An open wait also reads as
    `retired` once its cancellation condition came true or its record closed: judged when
    read, never written (as an approval's `expired`), so it cannot lag; the next wait command
    on the task, or the stop, writes the retirement and releases its reservation."""

    OPEN = "open"
    SETTLED = "settled"
    CANCELLED = "cancelled"
    RETIRED = "retired"


#: The one clock a wait is scheduled on: the database's, which every process and machine
#: sharing the store reads alike (a process's own clock, or a browser timer, governs nothing).
WAIT_CLOCK = "database"
#: The longest a wait may be scheduled ahead (as an approval's expiry).
MAX_WAIT_SECONDS = 366 * 86400
#: An open wait this long past its time has had nobody re-evaluate it: no process is awake
#: for it, so it goes to a person's queue (cancel it, or see why the agent is gone).
WAIT_OVERDUE_SECONDS = 3600.0

#: How `--cancel-if` names the conditions the store checks itself; anything else is text.
_CONDITION_PREFIXES = {
    "approval-rejected:": "approval_rejected",
    "effect-reconciled:": "effect_reconciled",
}


def wait_record_refusal(status: str) -> str | None:
    """Why a run in this status takes no new wait (None: it does): a run that ended
    (stopped, failed, completed, superseded) waits for nothing until a person resumes it."""
    if status in TERMINAL:
        return f"the run is {status}: it waits for nothing (a person resumes it first)"
    return None


def wait_due(not_before: str, now: str) -> bool:
    """Whether a wait is due for re-evaluation: its next consideration time has come on the
    database's clock (`now`). Due means "consider it again", never "do it"."""
    return not_before <= now


def wait_overdue(not_before: str, now: str) -> bool:
    """Due for longer than WAIT_OVERDUE_SECONDS: nobody re-evaluated it in time."""
    late = iso_instant(now) - iso_instant(not_before)
    return late.total_seconds() > WAIT_OVERDUE_SECONDS


def parse_wait_condition(text: str) -> dict[str, str]:
    """`--cancel-if`: `approval-rejected:ID` and `effect-reconciled:ID` are conditions the
    store checks; any other text is kept as it was said, for the reader to judge."""
    said = text.strip()
    for prefix, kind in _CONDITION_PREFIXES.items():
        if said.startswith(prefix) and said[len(prefix) :].strip():
            return {"kind": kind, "ref": said[len(prefix) :].strip(), "text": ""}
    return {"kind": "text", "ref": "", "text": said}


def wait_condition_words(cancel_if: Mapping[str, Any] | None) -> str:
    if not cancel_if:
        return ""
    kind, ref = cancel_if.get("kind"), cancel_if.get("ref")
    if kind == "approval_rejected":
        return f"cancel if approval {ref} is rejected"
    if kind == "effect_reconciled":
        return f"cancel if effect {ref} is reconciled"
    return f"cancel if {cancel_if.get('text', '')} (judged by the reader)"


def wait_condition_met(
    cancel_if: Mapping[str, Any] | None,
    approval_states: Mapping[str, str],
    effect_stages: Mapping[str, str],
) -> str | None:
    """Why the wait's cancellation condition holds now, or None (it does not, or it is text
    only a reader can judge). `approval_states`: each approval's stored state by id;
    `effect_stages`: each effect's stage by id."""
    if not cancel_if:
        return None
    kind, ref = cancel_if.get("kind"), str(cancel_if.get("ref") or "")
    if kind == "approval_rejected" and approval_states.get(ref) == ApprovalState.REJECTED:
        return f"its condition came true: approval {ref} was rejected"
    if kind == "effect_reconciled" and effect_stages.get(ref) == EffectStage.RECONCILED:
        return f"its condition came true: effect {ref} was reconciled"
    return None


def wait_state(stored: str, condition_met: str | None, record_open: bool) -> WaitState:
    """The wait's state now: as written, but an open wait whose condition came true, or
    whose task's record closed, is retired (see WaitState)."""
    if stored != WaitState.OPEN:
        return WaitState(stored)
    if condition_met is not None or not record_open:
        return WaitState.RETIRED
    return WaitState.OPEN


def wait_cancel_refusal(
    recorded_by: Mapping[str, Any], actor_kind: str, actor_id: str, reason: str
) -> Refusal | None:
    """A person cancels any wait and says why; an agent only one it recorded itself (another
    agent's wait is that agent's plan, or a person's decision to end)."""
    if actor_kind == ActorKind.PERSON:
        if not reason.strip():
            return Refusal("wait_cancel_needs_reason", "a person cancelling a wait says why")
        return None
    if recorded_by.get("kind") == actor_kind and recorded_by.get("id") == actor_id:
        return None
    who = f"{recorded_by.get('kind')}:{recorded_by.get('id')}"
    return Refusal(
        "wait_cancelled_by_its_recorder_or_a_person",
        f"this wait was recorded by {who}: only it, or a person, cancels it",
    )


def wait_needs_person(
    kind: str, state: str, not_before: str, now: str, reserve_exhausted: str | None
) -> str | None:
    """Why an open wait is a person's decision now (None: it is not). Small on purpose:
    - a wait for an approval never is: the approval is already in the queue;
    - the budget it reserved from is exhausted (`reserve_exhausted`, the counter): only a
      person raises a limit, or cancels the wait;
    - it is overdue by more than WAIT_OVERDUE_SECONDS: nobody re-evaluated it, so no agent
      is awake for it.
    Anything else is the agent's to re-evaluate when it comes due."""
    if state != WaitState.OPEN or kind == WaitKind.APPROVAL:
        return None
    if reserve_exhausted:
        return (
            f"the {reserve_exhausted} budget it reserved from is exhausted: only a person "
            "raises the limit, or cancels the wait"
        )
    if wait_overdue(not_before, now):
        return (
            f"due since {not_before} and nobody has re-evaluated it: cancel it, or find out "
            "why no agent came back"
        )
    return None
