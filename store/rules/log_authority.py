"""The authority of each event in a log: could its actor have written it then?

`boris verify` (and `verify-package`, and so an import) replays each task's log through the
rules the commands enforce: every event must be one its actor's kind could have written at
that point, given the task's state before it, whoever wrote the rows and however (the
command layer, a transaction's `emit` called by hand, an INSERT on a team store's login).
`event_authority` applies to each event the rule of the command that records it, with the
commands' own functions (`authority_refusal`, `decider_refusal`, `expire_refusal`,
`retain_refusal`, `wait_cancel_refusal`, `acquire_refusal`, the lease's fence). A `system:`
event is the store's own: the first event of one of its actions (`STORE_ACTIONS`) or the
rules' consequence of the event before it in the same transaction (`system_event_refusal`).
"""

from __future__ import annotations

from collections.abc import Callable

from .approvals import decider_refusal
from .authority import authority_refusal, system_actor_refusal
from .budgets import ARTIFACT_BYTES
from .leases import acquire_refusal, fence_refuses_every_token
from .log_state import IMPORT_LEASE_NOTE, IMPORT_RETIRE_REASON, SUMMARY_ARTIFACT, LogEvent, LogState
from .retention import expire_refusal, retain_refusal
from .run import LEDGER_STATUSES
from .states import ActorKind, ApprovalState, Refusal, RunStatus
from .waits import WaitState, wait_cancel_refusal

# Each event type whose writer a rule judges, with the rule of the command that records it.


def _judged(e: LogEvent, before: LogState) -> Refusal | None:
    return authority_refusal("judge_criterion", {"status": e.payload.status}, e.actor_kind)


def _reconciled(e: LogEvent, before: LogState) -> Refusal | None:
    p = e.payload
    asked = {
        "decision": str(p.verdict) if p.decided_by_person else None,
        "override": p.overrode is not None,
    }
    return authority_refusal("reconcile_effect", asked, e.actor_kind)


def _status_changed(e: LogEvent, before: LogState) -> Refusal | None:
    asked = {"status": e.payload.to_status}
    return authority_refusal("set_status", asked, e.actor_kind, status=before.status)


def _limit_set(e: LogEvent, before: LogState) -> Refusal | None:
    p = e.payload
    return authority_refusal(
        "set_budget",
        {"counter": p.counter, "limit": p.limit},
        e.actor_kind,
        current_limit=before.limits.get(str(p.counter)),
    )


def _decided(e: LogEvent, before: LogState) -> Refusal | None:
    asked = before.requesters.get(str(e.payload.approval_id))
    requester = None if asked is None else {"kind": asked[0], "id": asked[1]}
    return decider_refusal(requester, e.actor_kind, e.actor_id)


def _answered(e: LogEvent, before: LogState) -> Refusal | None:
    """An answer in the tool's place (issue 42): a person's, never the requester's."""
    return authority_refusal("respond_to_approval", {}, e.actor_kind) or _decided(e, before)


def _taken_over(e: LogEvent, before: LogState) -> Refusal | None:
    return authority_refusal("take_over", {}, e.actor_kind)


def _acquired(e: LogEvent, before: LogState) -> Refusal | None:
    lease = None if before.lease is None else before.lease.view(e.at)
    return acquire_refusal(lease, e.actor_kind, e.actor_id, str(e.payload.session_id))


def _expired(e: LogEvent, before: LogState) -> Refusal | None:
    return expire_refusal(e.actor_kind)


def _retention_set(e: LogEvent, before: LogState) -> Refusal | None:
    p = e.payload
    item = (str(p.item_kind), str(p.item_id))
    writer = before.writers.get(item)
    if writer is None:
        return None  # an item the log never recorded: no writer to judge by
    return retain_refusal(
        e.actor_kind, e.actor_id, writer[1], writer[0], retired=item in before.retired
    )


def _wait_ended(e: LogEvent, before: LogState) -> Refusal | None:
    p = e.payload
    recorder = before.waits.get(str(p.wait_id))
    if p.state != WaitState.CANCELLED or recorder is None:
        return None
    by = {"kind": recorder[0], "id": recorder[1]}
    return wait_cancel_refusal(by, e.actor_kind, e.actor_id, str(p.reason))


def _acknowledged(e: LogEvent, before: LogState) -> Refusal | None:
    return authority_refusal("acknowledge_late_changes", {}, e.actor_kind)


def _followed_up(e: LogEvent, before: LogState) -> Refusal | None:
    return authority_refusal("open_followup", {}, e.actor_kind)


_EVENT_RULES: dict[str, Callable[[LogEvent, LogState], Refusal | None]] = {
    "criterion.judged": _judged,
    "effect.reconciled": _reconciled,
    "run.status_changed": _status_changed,
    "budget.limit_set": _limit_set,
    "approval.decided": _decided,
    "approval.answered": _answered,
    "lease.taken_over": _taken_over,
    "lease.acquired": _acquired,
    "content.retired": _expired,
    "retention.set": _retention_set,
    "wait.ended": _wait_ended,
    "late_changes.acknowledged": _acknowledged,
    "followup.opened": _followed_up,
}


#: The event types a rule judges by their writer (besides every `system:` event, and an
#: agent's while a person holds the task's lease).
JUDGED_EVENTS: frozenset[str] = frozenset(_EVENT_RULES)


def event_authority(
    e: LogEvent, before: LogState, prev: LogEvent | None = None, *, exact: bool = False
) -> Refusal | None:
    """Whether the actor `e` names could have written it, the task's state being `before`
    (None: it could). `prev`: the event before it in the same transaction (None when it is
    the first of one); `exact`: whether the transactions are known exactly (a signed task:
    each signature closes one), not only guessed from their shared time.

    The rule of the command that records the event (a person's decision by anyone else, a
    lease taken beside a live holder, a limit raised or a run reopened by an agent, another's
    content's retention changed, a wait cancelled by neither its recorder nor a person);
    an agent's event while a person holds the task's lease (the fence refuses it whatever
    token it sends); and a `system:` event that the store did not write
    (`system_event_refusal`)."""
    if e.actor_kind == ActorKind.SYSTEM:
        return system_event_refusal(e, before, prev, exact=exact)
    if exact and prev is not None and prev.actor_kind == ActorKind.SYSTEM:
        return Refusal(
            "system_is_the_stores",
            f"{e.actor_kind}:{e.actor_id}'s {e.type} is in a transaction of the store's own "
            f"(system:{prev.actor_id}'s {prev.type} before it): the store's actions are "
            "transactions of their own",
        )
    check = _EVENT_RULES.get(e.type)
    refused = None if check is None else check(e, before)
    lease = before.lease
    if (
        refused is None
        and lease is not None
        and lease.holder_kind == ActorKind.PERSON
        and e.actor_kind == ActorKind.AGENT
        and e.type != "lease.acquired"  # judged by `acquire_refusal`, as the command does
    ):
        refused = fence_refuses_every_token(e.actor_kind, lease.view(e.at))
    return refused


# The store's own actions: the first event each writes in the store's name (`system:`), and
# None when `e` is one, else why not.


def _summary_action(e: LogEvent, before: LogState) -> str | None:
    p = e.payload
    if p.artifact_id == SUMMARY_ARTIFACT and p.producer.actor.kind == ActorKind.SYSTEM:
        return None
    return (
        f"the only artifact the store records itself is the summary it generates "
        f"({SUMMARY_ARTIFACT}), not {p.artifact_id}"
    )


def _import_retire_action(e: LogEvent, before: LogState) -> str | None:
    p = e.payload
    if p.state != ApprovalState.REVOKED or p.reason != IMPORT_RETIRE_REASON:
        return (
            "the store retires approvals itself only on an import (revoked, "
            f"{IMPORT_RETIRE_REASON!r}); an actor's retirement is that actor's"
        )
    named, open_ = set(map(str, p.approval_ids)), set(before.open_approvals)
    if not named or named != open_:
        return (
            f"an import revokes the approvals open then ({', '.join(sorted(open_)) or 'none'}), "
            f"not {', '.join(sorted(named)) or 'none'}"
        )
    return None


def _import_lease_action(e: LogEvent, before: LogState) -> str | None:
    p, lease = e.payload, before.lease
    if p.note != IMPORT_LEASE_NOTE:
        return (
            f"the store ends a lease itself only on an import ({IMPORT_LEASE_NOTE!r}); a lease "
            "is released by its holder, or ended by a person's stop or close"
        )
    if lease is None or lease.ended or lease.token != int(p.token):
        return f"an import ends the lease open then, and token {p.token} is not one"
    return None


def _observation_action(e: LogEvent, before: LogState) -> str | None:
    if system_actor_refusal("observe_effect", ActorKind.SYSTEM) is None:
        return None  # the store hashing the target itself (SYSTEM_MAY_ASK)
    return "the store observes no target in its own name"  # pragma: no cover


def _escalation_action(e: LogEvent, before: LogState) -> str | None:
    """A routed request's escalation, due on the database clock: the store records it
    itself, whichever process ticked (store.services.escalations); whether it was due is
    `boris verify`'s routing check (store.services.verify_checks.routing)."""
    return None


STORE_ACTIONS: dict[str, Callable[[LogEvent, LogState], str | None]] = {
    "approval.escalated": _escalation_action,
    "artifact.version_recorded": _summary_action,
    "approval.retired": _import_retire_action,
    "lease.released": _import_lease_action,
    "observation.recorded": _observation_action,
}


# What follows from the store's event before it, in the same transaction: None when `e` is
# the rules' consequence of `prev`, else why not.


def _settled_after_import(prev: LogEvent, e: LogEvent, before: LogState) -> str | None:
    """An import's revocation moves a run awaiting approval on (settle_status)."""
    p = e.payload
    if prev.payload.reason != IMPORT_RETIRE_REASON:
        return "only an import's revocation is followed by the store's status change"
    if p.from_status != before.status or before.status not in LEDGER_STATUSES:
        return f"the run was {before.status}, not {p.from_status} moved on by its ledger"
    if p.to_status not in {RunStatus.RUNNING, RunStatus.OUTCOME_UNKNOWN}:
        return f"with no approval pending, a run's ledger makes it running, not {p.to_status}"
    return None


def _charged_for_summary(prev: LogEvent, e: LogEvent, before: LogState) -> str | None:
    """A summary's bytes, charged where the task has an artifact_bytes budget."""
    p = e.payload
    if p.counter == ARTIFACT_BYTES and float(p.amount) == float(prev.payload.size):
        return None
    return f"a summary's bytes are charged to {ARTIFACT_BYTES} ({prev.payload.size})"


def _exhausted_by_charge(prev: LogEvent, e: LogEvent, before: LogState) -> str | None:
    """A charge that reaches its counter's limit stops the run (commands.core.charge)."""
    p, counter = e.payload, str(prev.payload.counter)
    limit = before.limits.get(counter)
    if p.to_status != RunStatus.BUDGET_EXHAUSTED or p.from_status != before.status:
        return "a charge moves the run only from its status to budget_exhausted"
    if limit is None or before.used.get(counter, 0.0) < limit:
        return f"the {counter} charge did not reach its limit"
    return None


_CONSEQUENCES: dict[tuple[str, str], Callable[[LogEvent, LogEvent, LogState], str | None]] = {
    ("approval.retired", "run.status_changed"): _settled_after_import,
    ("artifact.version_recorded", "budget.charged"): _charged_for_summary,
    ("budget.charged", "run.status_changed"): _exhausted_by_charge,
}


def system_event_refusal(
    e: LogEvent, before: LogState, prev: LogEvent | None = None, *, exact: bool = False
) -> Refusal | None:
    """Whether the store could have written this `system:` event (None: it could). `system:`
    is the store's own name (`system_actor_refusal`): a system event is the first of one of
    the store's actions (`STORE_ACTIONS`: an import revoking the approvals open then, or
    ending the lease open then; the summary it generates; an observation of a target), or
    the rules' consequence of the store's event before it in the same transaction (the
    import's status change, the summary's charge and the stop a charge at its limit makes).
    Anything else in its name was written by someone else: a status change, a decision, a
    lease. Where transactions are known exactly (`exact`), a store's action is a
    transaction of its own."""
    action = STORE_ACTIONS.get(e.type)
    why = None if action is None else action(e, before)
    if action is not None and why is None:
        if exact and prev is not None and prev.actor_kind != ActorKind.SYSTEM:
            return Refusal(
                "system_is_the_stores",
                f"system:{e.actor_id}'s {e.type} is in {prev.actor_kind}:{prev.actor_id}'s "
                "transaction: the store's actions are transactions of their own",
            )
        return None
    if prev is not None and prev.actor_kind == ActorKind.SYSTEM and prev.at == e.at:
        after = _CONSEQUENCES.get((prev.type, e.type))
        if after is not None:
            because = after(prev, e, before)
            if because is None:
                return None
            why = because
        elif why is None:
            why = f"the store's {prev.type} before it has no {e.type} for a consequence"
    if why is None:
        why = (
            "the store writes one only as the consequence of its own event before it in the "
            "same transaction, and there is none"
        )
    return Refusal(
        "system_is_the_stores",
        f"system:{e.actor_id} is the store's own name, and the store did not write this "
        f"{e.type}: {why}",
    )
