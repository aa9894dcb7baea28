"""The decision queue and a person's decisions: who may make each, and what counts.

Each kind of open decision is made by a command, so who may make it is who may run that
command (the window's "Mine" and `boris decisions --mine` ask `may_decide`). The events that
record a person's decision (their "What I decided") are named here too.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .approvals import decider_refusal
from .authority import authority_refusal, system_actor_refusal
from .states import ActorKind, CriterionState, Refusal, RunStatus, Verdict
from .waits import WaitState

#: Each kind of the decision queue (store.reads.decisions.DecisionKind) as the command that
#: makes it, with what that command asks: who may make a decision is who may run that.
_QUEUE_COMMANDS: dict[str, tuple[str, dict[str, Any]]] = {
    "approval": ("decide_approval", {}),
    "reconcile": ("reconcile_effect", {}),  # by an observation of the target now
    "conflict": ("reconcile_effect", {"decision": Verdict.PRESENT}),  # a hand decision
    "judge": ("judge_criterion", {"status": CriterionState.SATISFIED}),
    "resume": ("set_status", {"status": RunStatus.RUNNING}),
    # A wait in the queue is one no agent will move (wait_needs_person): a person's.
    "wait": ("cancel_wait", {}),
    # Changed after completion (DecisionKind.LATE): acknowledging stands for both answers,
    # which are the same person's rule.
    "late_changes": ("acknowledge_late_changes", {}),
}


def queue_decider_refusal(
    kind: str, requester: Mapping[str, Any] | None, actor_kind: str, actor_id: str
) -> Refusal | None:
    """Why this actor may not make an open decision of this kind (None: it may). The
    authority table's word for the command that makes it (an approval never by its
    requester): the window's "Mine" and `boris decisions --mine` both ask this."""
    if kind not in _QUEUE_COMMANDS:
        return Refusal("unknown_decision", f"{kind!r} is no kind of decision")
    command_type, payload = _QUEUE_COMMANDS[kind]
    if command_type == "decide_approval":
        return decider_refusal(requester, actor_kind, actor_id)
    if command_type == "cancel_wait" and actor_kind != ActorKind.PERSON:
        return Refusal(
            "queued_wait_is_a_persons",
            "a wait in the decision queue is one no agent moved: a person decides it",
        )
    refused = system_actor_refusal(command_type, actor_kind)
    # A run to resume was stopped by its owner or ran out of budget: reopening either is
    # the same rule, so one of those statuses stands for both.
    return refused or authority_refusal(command_type, payload, actor_kind, status=RunStatus.STOPPED)


def may_decide(
    kind: str,
    requester: Mapping[str, Any] | None,
    actor_kind: str,
    actor_id: str,
    waits_on: Collection[str] | None = None,
) -> bool:
    """Whether this actor may make an open decision: `queue_decider_refusal`'s word, and,
    for a routed approval, whether it waits on them now (`waits_on`: the people its route
    lets decide it now, store.rules.routing; None: not routed)."""
    if waits_on is not None and (actor_kind != ActorKind.PERSON or actor_id not in waits_on):
        return False
    return queue_decider_refusal(kind, requester, actor_kind, actor_id) is None


#: Event types that record a person's decision ("What I decided"), by the kind of decision.
#: The kind of some depends on the payload: see `decision_kind`.
DECISION_EVENTS: dict[str, str] = {
    "approval.decided": "approval",
    "effect.reconciled": "reconcile",
    "criterion.judged": "judgement",
    "run.stopped": "stop",
    "checkpoint.written": "checkpoint",
    # A person taking a task over from the agent working on it, and a wait they cancelled
    # (a wait's other ends, settled or retired, are no one's decision: see decision_kind).
    "lease.taken_over": "takeover",
    "wait.ended": "cancel_wait",
    # A person's answers to what changed after completion (store.rules.late).
    "late_changes.acknowledged": "late_acknowledged",
    "followup.opened": "follow_up",
}


def decision_kind(event_type: str, payload: Mapping[str, Any]) -> str | None:
    """The kind of decision a person's event records, or None if it records none: an
    approval's `approved` / `rejected`, `reconcile`, `judgement` or (a waived criterion)
    `waiver`, `stop`, `checkpoint`."""
    kind = DECISION_EVENTS.get(event_type)
    if kind == "approval":
        return str(payload.get("decision") or "approval")
    if kind == "judgement" and payload.get("status") == CriterionState.WAIVED:
        return "waiver"
    if kind == "cancel_wait" and payload.get("state") != WaitState.CANCELLED:
        return None
    if kind == "checkpoint" and payload.get("reason") == "initial":
        # Where the record starts: written by itself before the first checkpoint asked for
        # (commands.checkpoints.write_checkpoint), never a choice the person made.
        return None
    return kind
