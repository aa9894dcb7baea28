"""The domain's rules, in one place: pure functions over a task's state.

Who may run which command, what is unresolved, pending, decidable, expired or completable,
what stop will do and what a reconciliation concludes. No SQL, no I/O, no Qt: what needs the
world (is a blob readable? what does a file hash to?) is computed by the caller and passed in.
The command layer enforces these rules, the resume brief is derived from them, and the CLI and
the desktop display them, so the three cannot disagree.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple, TypeVar

# --- states and verdicts ---------------------------------------------------------------------
# StrEnum: a member is its stored string, so the database, the events and the JSON reads keep
# exactly the words they had.


class ActorKind(StrEnum):
    AGENT = "agent"
    PERSON = "person"
    SYSTEM = "system"


class RunStatus(StrEnum):
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    SCHEDULED = "scheduled"
    PAUSED = "paused"
    BLOCKED = "blocked"
    OUTCOME_UNKNOWN = "outcome_unknown"
    BUDGET_EXHAUSTED = "budget_exhausted"
    STOPPED = "stopped"
    COMPLETED = "completed"
    FAILED = "failed"
    SUPERSEDED = "superseded"


class EffectStage(StrEnum):
    PLANNED = "planned"
    APPROVED = "approved"
    DISPATCHED = "dispatched"
    OBSERVED = "observed"
    RECONCILED = "reconciled"
    CANCELLED = "cancelled"


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    PARTIAL = "partial"
    UNKNOWN = "unknown"
    ABSENT = "absent"


class Verdict(StrEnum):
    PRESENT = "present"
    ABSENT = "absent"
    CONFLICT = "conflict"


class ApprovalState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    # Neither approved nor rejected: a person asked for changes, with a note; the agent
    # revises and asks again under a new digest (a new request).
    SENT_BACK = "sent_back"
    CONSUMED = "consumed"
    EXPIRED = "expired"
    STALE = "stale"
    REVOKED = "revoked"


class CriterionState(StrEnum):
    UNVERIFIED = "unverified"
    SATISFIED = "satisfied"
    FAILED = "failed"
    STALE = "stale"
    WAIVED = "waived"
    # Never stored: a criterion judged satisfied whose evidence cannot be read now.
    EVIDENCE_MISSING = "evidence_missing"


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


# --- run status --------------------------------------------------------------------------------

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


# --- authority -------------------------------------------------------------------------------

_ANYONE = frozenset(ActorKind)
_PERSON = frozenset({ActorKind.PERSON})


@dataclass(frozen=True)
class Authority:
    """Who may run a command: `kinds` always; `person_when` lists the cases that are a
    person's even though the command is otherwise open to every kind."""

    kinds: frozenset[ActorKind]
    person_when: tuple[str, ...] = ()
    #: The event types only this command records: with `kinds` a person's, they are a
    #: person's too, and a team store's database refuses them from an agents' role.
    events: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"actors": sorted(self.kinds), "person_only_when": list(self.person_when)}


#: Command type -> who may run it. `boris schema` prints this table.
AUTHORITY: dict[str, Authority] = {
    "decide_approval": Authority(_PERSON, events=("approval.decided",)),
    "judge_criterion": Authority(_ANYONE, ("status is waived",)),
    "reconcile_effect": Authority(
        _ANYONE, ("a decision is given (a hand decision)", "override is set")
    ),
    "set_status": Authority(
        _ANYONE, ("the run is budget_exhausted or stopped and would go on (reopening)",)
    ),
    "set_budget": Authority(_ANYONE, ("it raises or removes an existing limit",)),
    # Giving a task up, or declaring it replaced, is a person's decision with their reason.
    "close_task": Authority(_PERSON),
    # How many people a policy needs is set by a person, never by the agent that asks.
    "set_approval_policy": Authority(_PERSON),
    # Taking a task over from the session working on it is a person's decision, with a reason.
    "take_over": Authority(_PERSON, events=("lease.taken_over",)),
    # Re-pinning an intent to a changed tool definition says its prepared object means the
    # same under the new one: a reviewer's judgement (an agent cancels and plans it again).
    "migrate_effect_tool": Authority(_PERSON, events=("effect.tool_migrated",)),
}


def authority_of(command_type: str) -> Authority:
    return AUTHORITY.get(command_type, Authority(_ANYONE))


def person_only_events() -> tuple[str, ...]:
    """Event types that only a person's command records (from the authority table)."""
    return tuple(sorted({e for a in AUTHORITY.values() if a.kinds == _PERSON for e in a.events}))


class TeamRole(StrEnum):
    """The database roles of a team store (PostgreSQL): what a login is a member of."""

    AGENTS = "agents"
    REVIEWERS = "reviewers"


@dataclass(frozen=True)
class Refusal:
    """Why a command is refused: the rule's name and a sentence for the actor."""

    rule: str
    message: str


def authority_refusal(
    command_type: str,
    payload: Mapping[str, Any],
    actor_kind: str,
    *,
    status: str = "",
    current_limit: float | None = None,
) -> Refusal | None:
    """Whether an actor of this kind may run this command, given what it asks and the run's
    status (for set_status) or the counter's current limit (for set_budget)."""
    if actor_kind == ActorKind.PERSON:
        return None
    if command_type in LATE_DECISIONS:  # issue 35 part L
        return late_decision_authority(actor_kind)
    ask = "ask a person to do it"
    if command_type == "decide_approval":
        return Refusal(
            "approval_is_a_persons",
            f"an approval is decided by a named person, not an {actor_kind}: {ask}",
        )
    if command_type == "judge_criterion" and payload.get("status") == CriterionState.WAIVED:
        return Refusal(
            "waiver_is_a_persons",
            f"only a person waives a criterion; an {actor_kind} asks for the waiver: {ask}",
        )
    if command_type == "reconcile_effect":
        if payload.get("override"):
            return Refusal(
                "override_is_a_persons", f"only a person overrides an observation: {ask}"
            )
        if payload.get("decision") is not None:
            return Refusal(
                "hand_decision_is_a_persons",
                f"only a person decides a reconciliation by hand: {ask}",
            )
    if command_type == "close_task":
        return Refusal(
            "closing_is_a_persons",
            f"only a person closes a task that will not be finished, not an {actor_kind}: {ask}",
        )
    if command_type == "set_approval_policy":
        return Refusal(
            "approval_policy_is_a_persons",
            f"only a person sets how many people a policy needs, not an {actor_kind}: {ask}",
        )
    if command_type == "take_over":
        return Refusal(
            "taking_over_is_a_persons",
            f"only a person takes a task over from the session working on it, not an "
            f"{actor_kind}: {ask}",
        )
    if command_type == "migrate_effect_tool":
        return Refusal(
            "tool_repin_is_a_persons",
            f"only a person re-pins an intent to a changed tool definition (judging that its "
            f"prepared object means the same under it), not an {actor_kind}: {ask}, or cancel "
            "the effect and plan it again under the current definition",
        )
    if command_type == "set_status" and is_reopening(status, str(payload.get("status"))):
        return Refusal(
            "reopening_is_a_persons",
            f"the run is {status}; only a person reopens it (raises the limit or resumes it): {ask}",
        )
    if command_type == "set_budget" and current_limit is not None:
        new = payload.get("limit")
        if new is None or float(new) > current_limit:
            return Refusal(
                "raising_a_limit_is_a_persons",
                f"only a person raises or removes the limit of {payload.get('counter')}: {ask}",
            )
    return None


#: What a caller may ask in the system's name: commands whose content the store makes itself
#: (an observation is the store hashing the target now), so the name claims nothing the
#: caller wrote. The desktop's file watcher observes as `system:boris-desktop-watch`.
SYSTEM_MAY_ASK: frozenset[str] = frozenset({"observe_effect"})


def system_actor_refusal(command_type: str, actor_kind: str) -> Refusal | None:
    """Whether a caller may run this command naming a `system:` actor. `system:` is the
    store's own name (an import retiring approvals, a generated summary): written by the
    store itself, never taken from a caller's --actor, or an agent's key would sign events
    that read as the store's."""
    if actor_kind != ActorKind.SYSTEM or command_type in SYSTEM_MAY_ASK:
        return None
    return Refusal(
        "system_is_the_stores",
        "system: is the store's own name and no caller writes as it: act as agent:ID or "
        "person:ID; nothing was written",
    )


def role_refusal(roles: Iterable[str], actor_kind: str, event_type: str) -> Refusal | None:
    """Whether a database role that is a member of `roles` (TeamRole values) may write an
    event claiming an actor of this kind, of this type. An agents' role (that is not also a
    reviewers') writes no person's event and no event only a person's command records: the
    actor a writer names is not proof, the role its connection logged in as is. A role that
    is neither (the store's owner, a role from before the team roles) is not judged here.
    The team store's trigger (store.team) is generated from this and `person_only_events`."""
    member = set(roles)
    if TeamRole.AGENTS not in member or TeamRole.REVIEWERS in member:
        return None
    if actor_kind == ActorKind.PERSON:
        return Refusal(
            "person_event_needs_reviewer_role",
            "an agents' database role cannot write an event in a person's name; "
            "a person writes it through a reviewers' login",
        )
    if event_type in person_only_events():
        return Refusal(
            "person_event_needs_reviewer_role",
            f"{event_type} is recorded only by a person's command; an agents' database "
            "role cannot write it",
        )
    return None


def person_decided_values() -> dict[str, tuple[str, ...]]:
    """What only a person's decision makes of a thing, by the thing: an approval approved or
    rejected (only `approval.decided` says so), a criterion waived (only a person waives). No
    event an agent may record sets these, so a team store's database refuses an agents' role
    a projection row that does, whatever event comes with it (store.team)."""
    return {
        "approval": (ApprovalState.APPROVED, ApprovalState.REJECTED, ApprovalState.SENT_BACK),
        "criterion": (CriterionState.WAIVED,),
    }


# --- budgets ---------------------------------------------------------------------------------


def budget_exhausted(used: float, limit: float | None) -> bool:
    return limit is not None and used >= limit


#: The share of a limit from which a budget is "near its limit" and asks for a person's eye.
NEAR_LIMIT = 0.8


def budget_left(used: float, reserved: float, limit: float) -> float:
    """What may still be reserved or charged: the limit less what is used and reserved."""
    return limit - used - reserved


class BudgetStanding(StrEnum):
    UNLIMITED = "unlimited"
    WITHIN = "within"
    NEAR_LIMIT = "near_limit"
    FULLY_RESERVED = "fully_reserved"
    EXHAUSTED = "exhausted"


#: Standings that ask a person to act (raise the limit, release a reservation, or stop).
BUDGET_AT_LIMIT: frozenset[str] = frozenset(
    {BudgetStanding.FULLY_RESERVED, BudgetStanding.EXHAUSTED}
)


#: From least to most pressing: a task stands as its most pressing counter (the inbox).
BUDGET_PRESSING: tuple[BudgetStanding, ...] = (
    BudgetStanding.UNLIMITED,
    BudgetStanding.WITHIN,
    BudgetStanding.NEAR_LIMIT,
    BudgetStanding.FULLY_RESERVED,
    BudgetStanding.EXHAUSTED,
)


def most_pressing(a: str, b: str) -> str:
    """Of two standings, the one that asks more of a person."""
    rank = BUDGET_PRESSING.index
    return a if rank(BudgetStanding(a)) >= rank(BudgetStanding(b)) else b


def budget_standing(used: float, reserved: float, limit: float | None) -> BudgetStanding:
    """How one counter stands: exhausted once what is used reaches the limit (the run is
    stopped there); fully reserved when what is used and reserved leaves nothing more to
    reserve (ReserveBudget refuses); near its limit from NEAR_LIMIT of it, reservations
    counted, since they are promised spending."""
    if limit is None:
        return BudgetStanding.UNLIMITED
    if budget_exhausted(used, limit):
        return BudgetStanding.EXHAUSTED
    if budget_left(used, reserved, limit) <= 0:
        return BudgetStanding.FULLY_RESERVED
    if limit > 0 and (used + reserved) / limit >= NEAR_LIMIT:
        return BudgetStanding.NEAR_LIMIT
    return BudgetStanding.WITHIN


def exhausted_counters(budgets: Iterable[Mapping[str, Any]]) -> list[str]:
    """Counters at or past their limit, from budget rows (`limit_value` or `limit`)."""
    out = []
    for b in budgets:
        limit = b["limit_value"] if "limit_value" in b else b.get("limit")
        if budget_exhausted(float(b["used"]), limit):
            out.append(str(b["counter"]))
    return out


def spend_refusal(status: str, counter: str, exhausted: Iterable[str]) -> Refusal | None:
    """Budgets bind: while the run is budget_exhausted, nothing that spends an exhausted
    counter is accepted until a person raises its limit or resumes the task."""
    if status == RunStatus.BUDGET_EXHAUSTED and counter in set(exhausted):
        return Refusal(
            "budget_binds",
            f"the {counter} budget is exhausted: nothing that spends it is accepted until a "
            "person raises the limit or resumes the task",
        )
    return None


def limit_change_reopens(status: str, exhausted_after: Iterable[str]) -> bool:
    """Whether setting a limit lets the run go on: a budget_exhausted run whose counters are
    all within their limits afterwards becomes running (SetBudget), then as its ledger has
    it (`ledger_status`). A stopped run is not reopened by a limit: a person resumes it."""
    return status == RunStatus.BUDGET_EXHAUSTED and not list(exhausted_after)


def release_refusal(
    counter: str, reserved: float, amount: float, actor_kind: str, reason: str
) -> Refusal | None:
    """Whether this release of a reservation is refused: never more than is reserved; and a
    person's release is their decision about promised spending, so it says why."""
    if amount > reserved:
        return Refusal(
            "release_more_than_reserved",
            f"cannot release more {counter} than is reserved ({reserved:g})",
        )
    if actor_kind == ActorKind.PERSON and not reason.strip():
        return Refusal(
            "release_needs_reason",
            f"a person releasing a {counter} reservation says why: give a reason",
        )
    return None


def ledger_status(uncertain_effect: str | None, pending_approval: str | None) -> tuple[str, str]:
    """The status an active run is in by its ledger, and why: an effect whose outcome is
    unknown makes it outcome_unknown; else a pending approval, awaiting_approval; else
    running. `uncertain_effect` / `pending_approval`: the id of one, or None."""
    if uncertain_effect is not None:
        return RunStatus.OUTCOME_UNKNOWN, f"effect {uncertain_effect} has an unknown outcome"
    if pending_approval is not None:
        return RunStatus.AWAITING_APPROVAL, f"approval {pending_approval} is pending"
    return RunStatus.RUNNING, "nothing is waiting on the world or a reviewer"


# --- approvals -------------------------------------------------------------------------------


#: States in which an approval's expiry still counts: it may yet be decided, or used.
EXPIRING: frozenset[str] = frozenset({ApprovalState.PENDING, ApprovalState.APPROVED})


def approval_expired(state: str, expires_at: str, now: str) -> bool:
    return state in EXPIRING and expires_at <= now


def approval_state(state: str, expires_at: str, now: str) -> ApprovalState:
    """The stored state, with `expired` judged now: it is never written, so it cannot lag."""
    if approval_expired(state, expires_at, now):
        return ApprovalState.EXPIRED
    return ApprovalState(state)


#: The most people one policy may require (a quorum larger than a team is never met).
MAX_APPROVERS = 9


def approvers_needed(*asked: int | None) -> int:
    """How many distinct people must approve a request: the largest of what the request
    asked and what the store's policy says (`boris policy set`). An agent's request can
    raise the number, never lower it below its policy's."""
    return max([1, *(n for n in asked if n)])


def quorum_met(approved_by: Sequence[str], needed: int) -> bool:
    """Whether enough distinct people approved: one person counts once."""
    return len(set(approved_by)) >= needed


def quorum_words(approved_by: Sequence[str], needed: int) -> str:
    """ "1 of 2 approved by maria": how far a request that needs several people has come."""
    if not approved_by:
        return f"0 of {needed} approved"
    return f"{len(approved_by)} of {needed} approved by {', '.join(approved_by)}"


def why_decided_again(
    decisions: Sequence[tuple[str, str, bool, int | None]], asked: int | None
) -> str | None:
    """Whether a log's decisions of one approval are what the commands allow (verify and an
    import judge by it): approvals by distinct people (an edit starts them again) until as
    many as it needs approved, then nothing more; a rejection or a send-back ends it. Each
    decision is (decision, the person's id, edited, the number it needed); `asked` is the
    request's number. None when they are; else why not."""
    needed = approvers_needed(asked)
    people: list[str] = []
    settled = False
    for decision, who, edited, more in decisions:
        if settled:
            return "it was settled by an earlier decision; an approval is decided once"
        needed = approvers_needed(needed, more)
        if decision != ApprovalState.APPROVED:
            settled = True
            continue
        people = [] if edited else people
        if who in people:
            return f"{who} approved it twice; one person counts once"
        people.append(who)
        settled = quorum_met(people, needed)
    return None


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th … (which approval of a quorum a person's would be)."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def why_undecidable(
    state: str, expires_at: str, now: str, decided_by: Mapping[str, Any] | None = None
) -> str | None:
    """Why this request cannot be decided now, in words a reviewer can act on."""
    # A read model reports `expired` (judged when read): the same words as a pending one
    # whose time ran out.
    if state == ApprovalState.EXPIRED or (state == ApprovalState.PENDING and expires_at <= now):
        return f"it expired at {expires_at}; ask for a new request"
    if state == ApprovalState.STALE:
        return "its payload changed after it was requested; a new request is needed"
    if state == ApprovalState.REVOKED:
        return "it was revoked (the run stopped or the effect was cancelled)"
    if state != ApprovalState.PENDING:
        who = (decided_by or {}).get("id", "someone")
        return f"it was already {state} by {who}"
    return None


def is_own_request(requester: Mapping[str, Any] | None, actor_kind: str, actor_id: str) -> bool:
    return (requester or {}).get("id") == actor_id and (requester or {}).get("kind") == actor_kind


def decider_refusal(
    requester: Mapping[str, Any] | None, actor_kind: str, actor_id: str
) -> Refusal | None:
    """Who may decide an approval: a person (the authority table), never its requester. The
    command layer refuses such a decision; verify and import report one found in a log."""
    if actor_kind not in authority_of("decide_approval").kinds:
        return Refusal(
            "approval_decided_by_person",
            f"an approval is decided by a named person, not by a {actor_kind} ({actor_id})",
        )
    if is_own_request(requester, actor_kind, actor_id):
        return Refusal(
            "approval_not_own_request",
            f"the requester cannot decide their own approval ({actor_kind} {actor_id} asked for it)",
        )
    return None


# --- effects ---------------------------------------------------------------------------------


def effect_unresolved(stage: str, outcome: str | None) -> bool:
    """Resolved only when it is known to have happened (reconciled present) or was
    cancelled. Planned, unknown, partial, failed and absent all leave work to do: an
    effect that did not happen must be tried again or cancelled, never forgotten."""
    if stage == EffectStage.CANCELLED:
        return False
    return not (stage == EffectStage.RECONCILED and outcome == Outcome.SUCCEEDED)


#: Stages in which an effect is reconciled: it was sent, or may have been, and nobody has
#: settled what became of it.
RECONCILABLE: frozenset[str] = frozenset({EffectStage.DISPATCHED, EffectStage.OBSERVED})


def effect_reconcilable(stage: str) -> bool:
    return stage in RECONCILABLE


def effect_to_reconcile(stage: str, outcome: str | None) -> bool:
    """Maybe sent and not settled: only a reconciliation against a fresh observation settles
    it (the resume brief's "effect_to_reconcile" blocker). Planned or approved effects have
    not left the building; one known not to have happened is retried or cancelled."""
    if not effect_unresolved(stage, outcome):
        return False
    return outcome in {Outcome.UNKNOWN, Outcome.PARTIAL} or stage == EffectStage.OBSERVED


def effect_uncertain(stage: str, outcome: str | None) -> bool:
    """Sent, and what happened is not known: no blind retry until reconciled."""
    return stage in {EffectStage.DISPATCHED, EffectStage.OBSERVED} and outcome in {
        Outcome.UNKNOWN,
        Outcome.PARTIAL,
    }


def intent_open(stage: str, outcome: str | None) -> bool:
    """Whether the effect's intent may still change, be approved or be cancelled: nothing
    was sent yet, or every attempt is known not to have happened (failed or absent)."""
    if stage in {EffectStage.PLANNED, EffectStage.APPROVED}:
        return True
    return stage in {
        EffectStage.DISPATCHED,
        EffectStage.OBSERVED,
        EffectStage.RECONCILED,
    } and outcome in {Outcome.FAILED, Outcome.ABSENT}


def effect_cancellable(stage: str, outcome: str | None) -> bool:
    """Whether the effect may be cancelled (CancelEffect): its intent is still open, nothing
    of it happened. A sent effect whose outcome is not known is reconciled, not cancelled."""
    return intent_open(stage, outcome)


def why_not_cancellable(stage: str, outcome: str | None) -> str | None:
    """Why the effect cannot be cancelled, in words a reviewer can act on (None: it can)."""
    if effect_cancellable(stage, outcome):
        return None
    if stage == EffectStage.CANCELLED:
        return "it was cancelled already"
    if stage == EffectStage.RECONCILED and outcome == Outcome.SUCCEEDED:
        return "it already happened (reconciled present)"
    return (
        f"it is {stage} ({outcome or 'outcome not settled'}): a sent effect is reconciled, "
        "not cancelled"
    )


#: Stages in which what became of an effect was settled: by a reconciliation, or by a cancel
#: after every attempt was known not to have happened.
SETTLED: frozenset[str] = frozenset({EffectStage.RECONCILED, EffectStage.CANCELLED})


def late_response_reopens(stage: str) -> bool:
    """Whether an executor's response arriving now re-opens the effect's reconciliation. A
    response after the effect was settled is news about the world the settling did not see
    (the executor wrote the file after it was found absent): it is kept, and the effect goes
    back to dispatched with an unknown outcome, so only a fresh observation settles it again.
    Its word is never the outcome (a late "failed" must not permit a blind retry of something
    found present), and refusing it would lose the only sign that the world changed."""
    return stage in SETTLED


def why_not_dispatchable(stage: str, outcome: str | None) -> str | None:
    if stage == EffectStage.CANCELLED:
        return "it was cancelled"
    if stage == EffectStage.RECONCILED and outcome == Outcome.SUCCEEDED:
        return "it already happened (reconciled present)"
    if outcome in {Outcome.UNKNOWN, Outcome.PARTIAL}:
        return (
            f"its last attempt's outcome is {outcome}: reconcile it against the target "
            "before any new attempt"
        )
    if stage == EffectStage.OBSERVED and outcome not in {Outcome.FAILED, Outcome.ABSENT}:
        return "it has been observed but not reconciled"
    return None


def recovery(stage: str, outcome: str | None, requires_approval: bool) -> str:
    """What is safe to do next with an effect, said plainly."""
    if outcome in {Outcome.UNKNOWN, Outcome.PARTIAL}:
        return "observe the target and reconcile; do not dispatch again until reconciled"
    if stage == EffectStage.OBSERVED:
        return "reconcile against the latest observation"
    if stage == EffectStage.PLANNED:
        return "request an approval, then dispatch" if requires_approval else "dispatch"
    if stage == EffectStage.APPROVED:
        return "dispatch with the approval while it is valid"
    if outcome in {Outcome.FAILED, Outcome.ABSENT}:
        return "a new attempt under the same effect is allowed"
    return "nothing"


def conflict_undecided(stage: str, outcome: str | None, verdict: str | None) -> bool:
    """A reconciliation found a conflict and nobody has decided it yet: a person's turn."""
    return effect_uncertain(stage, outcome) and verdict == Verdict.CONFLICT


#: A URI's scheme (RFC 3986), two letters or more so that a drive letter ("C:") is not one.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")


def is_destination(target: str) -> bool:
    """Whether `target` names a destination (a URI: https://…, smtp://…, mailto:…) rather
    than a file. `mailto:a@b` has no "//" and was once taken for a relative file name."""
    return _SCHEME.match(target) is not None


# --- reconciliation --------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """A target's state as observed or intended: exists, and its digest when it does."""

    exists: bool
    digest: str | None = None


def same_state(a: State, b: State) -> bool:
    return a.exists == b.exists and (not a.exists or a.digest == b.digest)


def _as_state(x: Any) -> State:
    if isinstance(x, State):
        return x
    if isinstance(x, Mapping):
        return State(bool(x.get("exists")), x.get("digest"))
    return State(bool(x.exists), x.digest)


def reconcile_verdict(
    intended: Any,
    pre_state: Any | None,
    observed: Any,
    responses: Sequence[Mapping[str, Any]],
    target: str,
    resolve: Callable[[str], str] = lambda p: p,
) -> tuple[Verdict, list[str]]:
    """Intent against a current observation: the intended post-state at the authorized
    target is present; the pre-state still there is absent; anything else is a conflict.
    `resolve` maps a path an executor claims to its real path (the caller's I/O)."""
    reasons: list[str] = []
    want, seen = _as_state(intended), _as_state(observed)
    pre = _as_state(pre_state) if pre_state is not None else None
    elsewhere = False
    for r in responses:
        claimed = r.get("target") or r.get("path")
        if claimed and resolve(str(claimed)) != target and str(claimed) != target:
            elsewhere = True
            reasons.append(
                f"the executor reports writing to {claimed}, not the authorized target {target}"
            )
        if r.get("reported") == "reported_success":
            reasons.append("the executor reported success (its word, not evidence)")
    if seen.exists and want.exists and seen.digest == want.digest:
        verdict = Verdict.PRESENT
        reasons.append(f"the target holds the intended content {want.digest}")
    elif not want.exists and not seen.exists:
        verdict = Verdict.PRESENT
        reasons.append("the target is gone, as intended")
    elif pre is not None and same_state(seen, pre):
        verdict = Verdict.ABSENT
        reasons.append("the target still holds its pre-state: the effect did not happen")
    elif not seen.exists:
        verdict = Verdict.CONFLICT
        reasons.append("the target is missing")
    else:
        verdict = Verdict.CONFLICT
        reasons.append(
            f"the target holds {seen.digest}, neither the intended {want.digest} nor the pre-state"
        )
    if verdict == Verdict.ABSENT and elsewhere:
        # Something was written somewhere: a person must look, not a blind retry.
        verdict = Verdict.CONFLICT
    return verdict, reasons


def decision_refusal(
    target: str, computed: Verdict, decision: str | None, override: bool, note: str
) -> Refusal | None:
    """A hand decision is for what the store cannot settle: a destination it cannot read, or
    a conflict. Against a file it has just hashed to a definite verdict, a different decision
    is an override of the observation, explicit and with a reason."""
    if decision is None:
        if override:
            return Refusal("override_needs_decision", "an override names the decision it makes")
        return None
    if not note.strip():
        return Refusal("decision_needs_note", "a decision by hand needs a note saying why")
    contradicts = (
        not is_destination(target) and computed != Verdict.CONFLICT and decision != computed
    )
    if contradicts and not override:
        return Refusal(
            "observation_overrides_need_override",
            f"the store observed the target and it is {computed}; deciding {decision} "
            "overrides that observation: say so (override) with the reason in the note",
        )
    if override and not contradicts:
        return Refusal(
            "override_without_contradiction",
            f"nothing to override: the observation's verdict is {computed}"
            + (" (a conflict is decided, not overridden)" if computed == Verdict.CONFLICT else ""),
        )
    return None


# --- criteria and completion -----------------------------------------------------------------


_Item = TypeVar("_Item")


def criterion_state(
    status: str, evidence: Iterable[_Item], counts: Callable[[_Item], bool]
) -> CriterionState:
    """A criterion counts as satisfied only while every piece of its evidence counts (`counts`
    of each item: not retired, its blob present and readable); otherwise its evidence is
    missing. Each caller names its items as it reads them (a digest, an id, a row)."""
    if status == CriterionState.SATISFIED and not all(counts(e) for e in evidence):
        return CriterionState.EVIDENCE_MISSING
    return CriterionState(status)


def criterion_stales_on_change(status: str) -> bool:
    """A judgement that a change to what it was judged against undoes: satisfied speaks for
    one version only (failed and waived say nothing the next version could undo)."""
    return status == CriterionState.SATISFIED


def criterion_done(state: str) -> bool:
    return state in {CriterionState.SATISFIED, CriterionState.WAIVED}


def criterion_awaits_person(state: str, evidence_count: int) -> bool:
    """A criterion waiting on a person's judgement, by its state (`criterion_state`): what it
    was judged on changed (stale), what it was judged satisfied on can no longer be read
    (evidence missing), or evidence was attached and nobody has judged it yet (unverified
    with evidence)."""
    if state in (CriterionState.STALE, CriterionState.EVIDENCE_MISSING):
        return True
    return state == CriterionState.UNVERIFIED and evidence_count > 0


def awaits_resume(status: str) -> bool:
    """A run only a person reopens (stopped, or its budget exhausted) waits on one."""
    return status in STOPPED_BY_POLICY


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
    kind: str, requester: Mapping[str, Any] | None, actor_kind: str, actor_id: str
) -> bool:
    return queue_decider_refusal(kind, requester, actor_kind, actor_id) is None


@dataclass(frozen=True)
class CriterionView:
    criterion_id: str
    status: str
    evidence: tuple[tuple[str, str], ...] = ()  # (evidence id, digest) of what it was judged on
    #: The evidence ids among `evidence` that were retired (a `content.retired` tombstone). A
    #: retired item never counts, though another item (of any task) keeps the same blob, so
    #: that its digest still reads: it is the item that was retired, not the bytes.
    retired: frozenset[str] = frozenset()


def missing_evidence(c: CriterionView, readable: Callable[[str], bool]) -> list[tuple[str, str]]:
    """The evidence the criterion rests on that does not count now: retired, or unreadable."""
    return [(eid, d) for eid, d in c.evidence if eid in c.retired or not readable(d)]


def view_state(c: CriterionView, readable: Callable[[str], bool]) -> CriterionState:
    """What the criterion counts as now (`criterion_state`): satisfied only while none of its
    evidence was retired and every blob of it reads (`readable`, by digest)."""
    return criterion_state(c.status, c.evidence, lambda e: e[0] not in c.retired and readable(e[1]))


def completion_blockers(
    criteria: Iterable[CriterionView],
    effects: Iterable[tuple[str, str, str | None]],
    readable: Callable[[str], bool],
) -> list[str]:
    """Why the task cannot be completed now; empty when it can. `effects` are
    (effect id, stage, outcome); `readable` says whether a blob can be read now. Retired
    evidence never counts (`CriterionView.retired`), whether or not its blob still reads."""
    out: list[str] = []
    for c in criteria:
        state = view_state(c, readable)
        if state == CriterionState.EVIDENCE_MISSING:
            gone = ", ".join(
                f"{eid} (retired)" if eid in c.retired else f"{eid} (blob {d})"
                for eid, d in missing_evidence(c, readable)
            )
            out.append(f"criterion {c.criterion_id} has evidence missing: {gone}")
        elif not criterion_done(state):
            out.append(f"criterion {c.criterion_id} is {state}")
    for effect_id, stage, outcome in effects:
        if effect_unresolved(stage, outcome):
            out.append(f"effect {effect_id} is unresolved ({stage}, {outcome or 'no outcome'})")
    return out


def pending_work(state: Mapping[str, Any]) -> list[str]:
    """What a checkpoint state leaves to do: none of it may remain at a final checkpoint."""
    out = [
        f"criterion {c['id']} is {c['status']}"
        for c in state["criteria"]
        if not criterion_done(c["status"])
    ]
    out += [
        f"effect {e['id']} is {e['stage']}"
        + (f" ({e['outcome']})" if e["outcome"] else "")
        + f": {e['safe_recovery']}"
        for e in state["unresolved_effects"]
    ]
    out += [f"approval {a['id']} is {a['state']}" for a in state["open_approvals"]]
    out += [f"phase {p['id']} is {p['status']}" for p in state["pending_phases"]]
    # An open wait is a plan not yet carried out or given up (`open_waits`: the waits whose
    # `wait_state` is open; absent from checkpoints written before waits were pending work).
    out += [open_wait_pending(w["id"], w["kind"]) for w in state.get("open_waits", ())]
    return out


def open_wait_pending(wait_id: str, kind: str) -> str:
    """An open wait as pending work: a final checkpoint may not leave it scheduled."""
    return f"wait {wait_id} ({kind.replace('_', ' ')}) is open: settle or cancel it"


# --- stop ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StopPlan:
    """What stopping the run will do: revoke these approvals, cancel these planned effects,
    and leave these (sent, not settled) for a person to reconcile by hand."""

    revoke: tuple[str, ...]
    cancel: tuple[str, ...]
    unresolved: tuple[str, ...]
    # The lineage as the stop finds it and what the stop does with it. `fork`: the heads when
    # there are two or more, else empty. `continue_from`: the head the stopped checkpoint
    # supersedes: the one head there is, or, on a fork, only the head a person named (None:
    # none chosen). `merge`: the heads it merges, only those named. A stop never picks a
    # branch: which line of work goes on is a person's decision, not a side effect of stopping.
    fork: tuple[str, ...] = ()
    continue_from: str | None = None
    merge: tuple[str, ...] = ()

    @property
    def left_open(self) -> tuple[str, ...]:
        """The fork's heads the stop neither continues from nor merges: they stay heads."""
        return tuple(h for h in self.fork if h != self.continue_from and h not in self.merge)


def stop_lineage_refusal(
    heads: Sequence[str], continue_from: str | None, merge: Sequence[str]
) -> str | None:
    """Why a stop's choice of head is refused, or None: it may continue from a head and merge
    other heads, and merging needs the head it merges into named."""
    if continue_from is not None and continue_from not in heads:
        return f"checkpoint {continue_from} is not a head: a stop continues from a head"
    for ref in merge:
        if ref not in heads:
            return f"checkpoint {ref} is not a head: only a head can be merged"
        if ref == continue_from:
            return f"checkpoint {ref} is the head the stop continues from; it is not merged too"
    if merge and continue_from is None:
        return "name the head the stop continues from (the heads merged join it)"
    return None


def stop_plan(
    approvals: Iterable[tuple[str, str, str]],
    effects: Iterable[tuple[str, str, str | None]],
    now: str,
    heads: Sequence[str] = (),
    *,
    continue_from: str | None = None,
    merge: Sequence[str] = (),
) -> StopPlan:
    """`approvals` are (id, state, expires_at); `effects` are (id, stage, outcome); `heads`
    the task's checkpoint heads, oldest first; `continue_from` and `merge` what the person
    chose (see `stop_lineage_refusal`). An expired request is already dead; it stays
    `expired` in the history."""
    revoke = tuple(
        aid
        for aid, state, expires in approvals
        if state in {ApprovalState.PENDING, ApprovalState.APPROVED} and expires > now
    )
    effs = list(effects)
    cancel = tuple(
        eid for eid, stage, _ in effs if stage in {EffectStage.PLANNED, EffectStage.APPROVED}
    )
    unresolved = tuple(
        eid
        for eid, stage, outcome in effs
        if eid not in cancel and effect_unresolved(stage, outcome)
    )
    fork = tuple(heads) if len(heads) > 1 else ()
    if not fork and continue_from is None and heads:
        continue_from = heads[0]  # one head: there is nothing to choose
    return StopPlan(revoke, cancel, unresolved, fork, continue_from, tuple(merge))


def fork_left_open(
    lineage: Iterable[tuple[str, Sequence[str], Sequence[str]]], checkpoint_id: str
) -> tuple[str, ...]:
    """The heads a checkpoint written on a fork neither continued from nor merged (empty when
    the lineage had one head then). `lineage`: each checkpoint's (id, supersedes, merged) in
    the order written, up to and including `checkpoint_id`."""
    before: list[str] = []
    for cid, supersedes, merged in lineage:
        if cid == checkpoint_id:
            replaced = {*supersedes, *merged}
            return tuple(h for h in before if h not in replaced) if len(before) > 1 else ()
        before = [h for h in before if h not in {*supersedes, *merged}] + [cid]
    return ()


def final_left_open(
    heads: Sequence[str], continue_from: Sequence[str] | None, merge: Sequence[str]
) -> tuple[str, ...]:
    """The heads a final checkpoint would leave beside it: those it neither continues from
    (`continue_from`, the heads it supersedes; None: not named) nor merges. A final
    checkpoint closes the lineage, so it is written only when this is empty: a task is never
    completed with two heads. Nothing is picked for the person: on a fork with no head named,
    every head not merged is left open, unless exactly one is (that one is then the head it
    continues from, the only choice there is)."""
    named = {*(continue_from or ()), *merge}
    left = tuple(h for h in heads if h not in named)
    if continue_from is None and len(left) <= 1:
        return ()
    return left


def final_fork_refusal(
    heads: Sequence[str], continue_from: Sequence[str] | None, merge: Sequence[str]
) -> str | None:
    """Why a final checkpoint continuing from `continue_from` and merging `merge` is refused
    (`fork_open`), or None: it would leave a head beside it (`final_left_open`). Each head
    must be named, the one continued from and every other merged: which lines of work end
    in the finished task is the person's decision, never the store's."""
    left = final_left_open(heads, continue_from, merge)
    if not left:
        return None
    shown = ", ".join(heads)
    listed = ", ".join(left[:-1]) + " and " + left[-1] if len(left) > 1 else left[0]
    stays = "would stay a head" if len(left) == 1 else "would stay heads"
    if len(heads) > 1:
        where = f"the lineage is forked (heads {shown})"
    else:
        where = f"the lineage's head is {shown}"
    return (
        f"{where}, and a final checkpoint closes it: {listed} {stays} beside the finished "
        "task. Choose the head it continues from and merge every other head"
    )


# --- what a person decided ---------------------------------------------------------------------

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


# --- scheduled waits -----------------------------------------------------------------------------
# Waiting is state, not a process kept awake: what a task waits for, when to consider it
# again (on the database's clock), what it holds and what cancels it. When it comes due it is
# re-evaluated under current policy and the world as it is then; being due authorizes nothing.


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


def iso_instant(text: str) -> _dt.datetime:
    """An ISO 8601 time with its zone (Z or an offset) as an aware UTC datetime. A time
    without a zone is refused: which clock it is on would be a guess."""
    value = _dt.datetime.fromisoformat(text.strip())
    if value.tzinfo is None:
        raise ValueError(f"{text!r} names no time zone: add Z (UTC) or an offset")
    return value.astimezone(_dt.UTC)


def store_time(value: _dt.datetime) -> str:
    """A datetime as the store writes times (store.clock): UTC, microseconds, Z; so that
    times compare as text, the way the database's clock is compared everywhere."""
    return f"{value.astimezone(_dt.UTC):%Y-%m-%dT%H:%M:%S.%f}Z"


def store_time_after(now: str, seconds: float) -> str:
    """`seconds` after the store time `now` (the database's clock, read in the transaction)."""
    return store_time(iso_instant(now) + _dt.timedelta(seconds=seconds))


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


# --- judging deliberately ----------------------------------------------------------------------


def evidence_made_on(
    artifact_id: str,
    *,
    stated: tuple[str | None, int | None],
    attached_seq: int | None,
    version_seqs: Iterable[tuple[int, int]],
    vouched_on: int | None = None,
) -> int | None:
    """Which version of `artifact_id` a piece of evidence was made on, or None when the
    record cannot say (it was attached before the artifact had any version).

    The version its writer stated, if it stated one of this artifact; else the version that
    was current when it was attached (`version_seqs`: (version, seq it was recorded at)); a
    satisfied judgement against vN that cited it counts it as made on vN (`vouched_on`)."""
    stated_artifact, stated_version = stated
    if stated_version is not None and stated_artifact in (None, artifact_id):
        return stated_version
    dated = None
    if attached_seq is not None:
        before = [v for v, seq in version_seqs if seq < attached_seq]
        dated = max(before) if before else None
    if vouched_on is not None and (dated is None or vouched_on > dated):
        return vouched_on
    return dated


def evidence_is_current(made_on: int | None, current_version: int) -> bool:
    """Evidence speaks for the current version unless it is known to be made on an older one."""
    return made_on is None or made_on >= current_version


def evidence_version_words(artifact: str, made_on: int | None, current_version: int) -> str:
    """What a person reads beside the evidence: the version it was made on, against now."""
    if made_on is None:
        return f"made before {artifact} had a version"
    if made_on >= current_version:
        return f"made on {artifact} v{made_on} (current)"
    return f"made on {artifact} v{made_on}; the {artifact} is now v{current_version}"


@dataclass(frozen=True)
class VerdictNeeds:
    """What a verdict on a criterion needs before the store takes it."""

    verdict: CriterionState
    artifact: bool  # the artifact version it was checked against (the current one)
    evidence: bool  # at least one piece of evidence attached to the criterion
    reason: bool  # a reason in the note (a waiver)
    persons_only: bool  # only a person gives it
    words: str


#: The verdicts a person may give a criterion, in the order they are offered, and their needs.
VERDICTS: tuple[VerdictNeeds, ...] = (
    VerdictNeeds(
        CriterionState.SATISFIED,
        artifact=True,
        evidence=True,
        reason=False,
        persons_only=False,
        words="the artifact's current version and evidence; evidence made on an older "
        "version needs a reason",
    ),
    VerdictNeeds(
        CriterionState.FAILED,
        artifact=False,
        evidence=False,
        reason=False,
        persons_only=False,
        words="nothing more (a note helps the next actor)",
    ),
    VerdictNeeds(
        CriterionState.WAIVED,
        artifact=False,
        evidence=False,
        reason=True,
        persons_only=True,
        words="a reason: why the task may complete without it",
    ),
)


def verdict_needs(verdict: str) -> VerdictNeeds | None:
    return next((v for v in VERDICTS if v.verdict == verdict), None)


def judgement_missing(
    verdict: str,
    *,
    artifact_id: str | None,
    evidence_ids: Sequence[str],
    note: str,
    older_evidence: Sequence[str] = (),
    older_evidence_reason: str | None = None,
) -> str | None:
    """Why a judgement cannot be recorded as given, or None when it can: the checks of the
    judge command, for the command and for a dialog showing what is still missing.
    `older_evidence`: the cited evidence made on an older version than the one judged."""
    if verdict == CriterionState.SATISFIED:
        if not artifact_id:
            return "satisfied needs the artifact it was checked against"
        if not evidence_ids:
            return "satisfied needs at least one piece of evidence"
        if older_evidence and not (older_evidence_reason or "").strip():
            return (
                f"evidence {', '.join(older_evidence)} was made on an older version of "
                f"{artifact_id} than the one judged: say why it still holds, or attach "
                "evidence made on the current version"
            )
    if verdict == CriterionState.WAIVED and not note.strip():
        return "waiving a criterion needs a reason"
    return None


# --- leases: who works on a task now ----------------------------------------------------------


class LeaseStanding(StrEnum):
    """How a task's lease stands now, judged at read time on the database's clock (never
    written, like an approval's expiry): `alive` (held, not past its expiry; a person's lease
    has none), `expired` (held, but no heartbeat came in time: nobody is working on it, and
    another session may acquire it), `ended` (released or taken over), `none` (never leased)."""

    ALIVE = "alive"
    EXPIRED = "expired"
    ENDED = "ended"
    NONE = "none"


#: How long a lease lasts without a heartbeat when the acquirer names no time, and the bounds.
LEASE_TTL_DEFAULT = 60
LEASE_TTL_MAX = 86400


def lease_expiry(
    granted_expires_at: str | None,
    token: int,
    heartbeat_token: int | None,
    heartbeat_expires_at: str | None,
) -> str | None:
    """When the lease lapses: the expiry its acquisition granted, pushed out by its newest
    heartbeat (store.schema.lease_heartbeats) only while that heartbeat is this lease's
    (its token), so a late heartbeat of an older lease never extends a newer one. None: a
    person's lease, held until released."""
    if granted_expires_at is None:
        return None
    if heartbeat_token == token and heartbeat_expires_at is not None:
        return max(granted_expires_at, heartbeat_expires_at)
    return granted_expires_at


def lease_standing(ended_at: str | None, expires_at: str | None, now: str) -> LeaseStanding:
    """The lease's standing now (`expires_at` as `lease_expiry` gives it)."""
    if ended_at is not None:
        return LeaseStanding.ENDED
    if expires_at is not None and expires_at <= now:
        return LeaseStanding.EXPIRED
    return LeaseStanding.ALIVE


@dataclass(frozen=True)
class LeaseView:
    """A task's current (or last) lease as the rules need it."""

    token: int
    holder_kind: str
    holder_id: str
    session_id: str
    standing: LeaseStanding


@dataclass(frozen=True)
class FenceRefusal(Refusal):
    """Why a write is refused by the task's lease: `lost` (its token is not the current
    lease's: the writer no longer works on the task) or not (another holds it: LeaseHeld)."""

    lost: bool


def fence_refusal(
    actor_kind: str, token: int | None, lease: LeaseView | None
) -> FenceRefusal | None:
    """Whether a write to a task is refused by the task's lease. The one rule, for every
    command (store.commands.core.fence):

    - a person's and the store's writes are never fenced by an agent's lease (a person who
      took the task over holds it; one who did not still decides what is theirs to decide);
    - an agent's write with a token is accepted only when the token is the task's current
      lease's and that lease has not ended (released or taken over). A current lease that
      merely expired still accepts it: nobody took a newer token, so nobody can be written
      beside (the token orders writers; it is not a credential, the actor is);
    - an agent's write without a token is refused while another lease is held and alive,
      or held by a person (taken over): an agent works on a leased task only under the
      lease. With no lease, an ended one or an expired one, it is accepted as before leases;
    - a person's lease is theirs: while a person holds the task, no agent writes, whatever
      token it sends (the person's own token included: it orders writers, and the person
      took the task over from every agent).
    """
    if actor_kind != ActorKind.AGENT:
        return None
    if token is None:
        # A person's lease never expires: while they hold the task, it is alive.
        if lease is None or lease.standing != LeaseStanding.ALIVE:
            return None
        who = f"{lease.holder_kind}:{lease.holder_id}"
        return FenceRefusal(
            "write_under_the_lease",
            f"{who} holds this task's lease (token {lease.token}): an agent writes to a leased "
            "task only under its own lease; acquire it once it is released or expired, and "
            "send its token with every write; nothing was written",
            lost=False,
        )
    if lease is None:
        return FenceRefusal(
            "write_under_the_current_lease",
            f"lease token {token} was never granted on this task (it has no lease); "
            "nothing was written",
            lost=True,
        )
    who = f"{lease.holder_kind}:{lease.holder_id}"
    if token < lease.token:
        how = "took the task over" if lease.holder_kind == ActorKind.PERSON else "holds it now"
        return FenceRefusal(
            "write_under_the_current_lease",
            f"lease token {token} is stale: the task's lease is at token {lease.token} and "
            f"{who} {how}; stop working on it (resume only from a new lease); nothing was "
            "written",
            lost=True,
        )
    if token > lease.token:
        return FenceRefusal(
            "write_under_the_current_lease",
            f"lease token {token} was never granted on this task (its lease is at token "
            f"{lease.token}); nothing was written",
            lost=True,
        )
    if lease.standing == LeaseStanding.ENDED:
        return FenceRefusal(
            "write_under_the_current_lease",
            f"the lease of token {token} was released: acquire a new lease before writing; "
            "nothing was written",
            lost=True,
        )
    if lease.holder_kind == ActorKind.PERSON:
        return FenceRefusal(
            "write_under_the_current_lease",
            f"lease token {token} is {who}'s, who took the task over: an agent never writes "
            "under a person's lease; stop working on it (resume only from a new lease once "
            "they release it); nothing was written",
            lost=True,
        )
    return None


def fence_refuses_every_token(actor_kind: str, lease: LeaseView | None) -> FenceRefusal | None:
    """The fence's refusal of a write whatever token it carried, or None when some token (or
    none) would have been accepted: what a log can judge, since it records who wrote an
    event but not the token sent with it. A token older or newer than the lease's is always
    refused, so a write refused both without a token and with the lease's own is refused
    with any: an agent's write while a person holds the task."""
    refused = fence_refusal(actor_kind, None, lease)
    if refused is None or lease is None or fence_refusal(actor_kind, lease.token, lease) is None:
        return None
    return refused


def same_lease_session(
    lease: LeaseView | None, actor_kind: str, actor_id: str, session_id: str
) -> bool:
    """Whether the lease is this actor's, in this session: asking for it again renews it."""
    return lease is not None and (lease.holder_kind, lease.holder_id, lease.session_id) == (
        actor_kind,
        actor_id,
        session_id,
    )


def acquire_refusal(
    lease: LeaseView | None, actor_kind: str, actor_id: str, session_id: str
) -> Refusal | None:
    """Whether a session may take the task's lease now (store.commands.leases.AcquireLease):
    refused while another holder's lease is alive, and a person's (taken over, no expiry) is
    alive until they release it. The same session asking again while its lease is alive is
    given that lease, renewed: no new one."""
    if lease is None or lease.standing != LeaseStanding.ALIVE:
        return None
    if same_lease_session(lease, actor_kind, actor_id, session_id):
        return None
    return Refusal(
        "lease_held",
        f"{lease.holder_kind}:{lease.holder_id} holds the task's lease (token {lease.token}, "
        f"session {lease.session_id or '-'}): nobody else acquires it until it is released "
        "or expires",
    )


# --- retention (issue 35 part R) ------------------------------------------------------

#: What may carry a retention class: the three kinds of content a person may want gone
#: sooner than the run (an artifact version, an evidence item, a note kept as content).
RETAINED_KINDS: tuple[str, ...] = ("artifact_version", "evidence", "note")

_RETAIN = re.compile(
    r"^(?:(?P<keep>keep)|(?P<after>until-completion)(?:\+(?P<an>\d{1,5})(?P<au>[dh]))?|(?P<n>\d{1,5})(?P<u>[dh]))$"
)


@dataclass(frozen=True)
class RetentionClass:
    """How long content is kept: `keep` (for the life of the record), a duration from when
    it was recorded (`30d`, `12h`), or a duration after the task completed
    (`until-completion+7d`). Durations count on the database's clock."""

    text: str
    kind: str  # "keep", "duration", "after_completion"
    seconds: int = 0

    @property
    def keeps(self) -> bool:
        return self.kind == "keep"


def retention_class(text: str) -> RetentionClass:
    """Parse a class as written (`keep`, `30d`, `12h`, `until-completion+7d`); ValueError
    names the forms for anything else."""
    m = _RETAIN.match(text.strip())
    if m is None:
        raise ValueError(
            f"retention class {text!r} is not keep, a duration (30d, 12h) or until-completion+Nd"
        )
    if m["keep"]:
        return RetentionClass("keep", "keep")
    if m["after"]:
        n = int(m["an"] or 0)
        secs = n * (86400 if m["au"] == "d" else 3600)
        return RetentionClass(text.strip(), "after_completion", secs)
    return RetentionClass(
        text.strip(), "duration", int(m["n"]) * (86400 if m["u"] == "d" else 3600)
    )


def retention_due(cls: RetentionClass, recorded_at: str, completed_at: str | None) -> str | None:
    """When content of this class falls due, on the database's clock: never for keep; the
    recording time plus the duration; the completion time plus N once the task completed
    (until then it is not due: a run still working may need it)."""
    if cls.kind == "duration":
        return store_time_after(recorded_at, cls.seconds)
    if cls.kind == "after_completion" and completed_at is not None:
        return store_time_after(completed_at, cls.seconds)
    return None


def retain_refusal(
    actor_kind: str, actor_id: str, writer_id: str, writer_kind: str, retired: bool
) -> Refusal | None:
    """Who may change an item's retention class. A person may change any: how long a record
    keeps content is the owner's call (privacy, storage). An agent may change only what it
    wrote itself, in either direction: it knows what its own diagnostics are for, but it
    may not shorten (nor lengthen) the life of a person's note or another actor's evidence,
    or an agent could make evidence against its own work expire. A retired item has no
    content left to keep: its class is history."""
    if retired:
        return Refusal(
            "retired_is_final", "the item was retired; its content is gone and stays gone"
        )
    if actor_kind == ActorKind.PERSON:
        return None
    if writer_kind == actor_kind and writer_id == actor_id:
        return None
    return Refusal(
        "retention_of_anothers_is_a_persons",
        f"an {actor_kind} changes the retention only of content it wrote itself; this was "
        f"written by {writer_kind}:{writer_id}: ask a person to do it",
    )


def expire_refusal(actor_kind: str) -> Refusal | None:
    """Expiry destroys content, so it is a person's act (run by hand or by the person's
    scheduled maintenance, `boris expire --actor person:ops`): never an agent's, which could
    retire the evidence its own work is judged by, and never the store's unattended, so every
    tombstone names who retired it."""
    if actor_kind == ActorKind.PERSON:
        return None
    return Refusal(
        "expiry_is_a_persons",
        f"only a person expires content, not an {actor_kind}: ask a person to run boris expire",
    )


class RetiredWeight(StrEnum):
    """What a retired item means to the next actor: `blocking` (something it rests on is
    gone: evidence a satisfied criterion was judged on, the artifact version a criterion,
    a checkpoint or an approval names) or `degraded` (only optional context went)."""

    BLOCKING = "blocking"
    DEGRADED = "degraded"


def retired_weight(item_kind: str, required_by: Sequence[str]) -> RetiredWeight:
    """Blocking when anything still rests on the item (`required_by` names what), else
    degraded; a note is never required."""
    if item_kind != "note" and required_by:
        return RetiredWeight.BLOCKING
    return RetiredWeight.DEGRADED


# In the authority table (`boris schema` prints it); the handlers ask `expire_refusal` and
# `retain_refusal`, which also know who wrote the item.
AUTHORITY["expire_content"] = Authority(_PERSON)
AUTHORITY["set_retention"] = Authority(_ANYONE, ("the item was written by someone else",))


# --- deletion and visibility (issue 35 part D) ----------------------------------------


def deletion_authority(actor_kind: str) -> Refusal | None:
    """Deleting a task is a person's decision only: the command refuses anyone else, and
    verify names a receipt of a deletion by anyone else (store.services.verify)."""
    if actor_kind == ActorKind.PERSON:
        return None
    return Refusal(
        "deletion_is_a_persons",
        f"only a person deletes a task, not an {actor_kind}: ask a person to do it",
    )


def deletion_refusal(
    actor_kind: str,
    task_id: str,
    confirm: str,
    reason: str,
    *,
    live_agent_lease: str | None,
    effects_in_doubt: Sequence[str],
) -> Refusal | None:
    """Whether `delete-task` may remove this task now.

    A person's decision only, with the task id typed again and a reason (the receipt keeps
    it). Refused while an agent's lease is alive: a session writing now would meet a task
    gone from under it, so a person takes it over first (`boris take-over`). Refused while
    an effect was dispatched and its outcome is not settled (unknown, partial, dispatched
    without an answer): the record is the only trace of what may have changed in the
    world, so a person reconciles it first; deleting would forget a change nobody checked."""
    refused = deletion_authority(actor_kind)
    if refused is not None:
        return refused
    if confirm != task_id:
        return Refusal(
            "deletion_needs_the_task_id_typed",
            f"type the task id to confirm (--confirm {task_id}); nothing was removed",
        )
    if not reason.strip():
        return Refusal(
            "deletion_needs_a_reason",
            "give the reason for deleting (--reason); nothing was removed",
        )
    if live_agent_lease is not None:
        return Refusal(
            "deletion_waits_for_the_agent",
            f"{live_agent_lease} holds a live lease on {task_id}: take the task over first "
            f"(boris take-over {task_id} --reason ...); nothing was removed",
        )
    if effects_in_doubt:
        named = ", ".join(effects_in_doubt)
        return Refusal(
            "deletion_waits_for_reconciliation",
            f"effects {named} may have changed the world and are not reconciled: reconcile "
            "them first (the record is their only trace); nothing was removed",
        )
    return None


class Visibility(StrEnum):
    """Who a note is for. `shared` (the default) travels in every export; `private` stays
    with this store unless an export is asked for it (`--include private`)."""

    SHARED = "shared"
    PRIVATE = "private"


def export_classes(include: Iterable[str]) -> tuple[str, ...]:
    """The visibility classes an export carries: `shared` always, plus those asked for."""
    asked = {Visibility(x) for x in include}
    return tuple(v.value for v in Visibility if v == Visibility.SHARED or v in asked)


# --- late changes (issue 35 part L) ---------------------------------------------------
# A completed task's record is closed to work, not to what the world says afterwards: a
# corrected observation of an effect, an evaluator's revised judgement, a source or artifact
# that went stale. Refusing them would leave the record saying what was known at completion
# as if it were still true; accepting them as work would reopen the task on an agent's word.
# So they are appended as late facts, the task stays completed (status.allowed has no way out
# of completed but superseded), and a person decides: a follow-up task, or acknowledge.

#: Commands that still take a fact on a completed task (by command type).
LATE_FACT_COMMANDS: frozenset[str] = frozenset(
    {"observe_effect", "reconcile_effect", "judge_criterion", "record_artifact"}
)
#: The events such a command records that count as "changed after completion".
LATE_FACT_EVENTS: frozenset[str] = frozenset(
    {
        "observation.recorded",
        "effect.reconciled",
        "criterion.judged",
        "artifact.version_recorded",
    }
)
#: A person's decisions about late facts: the only writes, besides late facts, that a
#: completed record takes (and the only ones that clear "changed after completion").
LATE_DECISIONS: frozenset[str] = frozenset({"acknowledge_late_changes", "open_followup"})

AUTHORITY["acknowledge_late_changes"] = Authority(_PERSON, events=("late_changes.acknowledged",))
AUTHORITY["open_followup"] = Authority(_PERSON, events=("followup.opened",))
#: In the decision queue (store.reads.decisions.DecisionKind.LATE): acknowledging stands for
#: both answers, which are the same person's rule.
_QUEUE_COMMANDS["late_changes"] = ("acknowledge_late_changes", {})
#: A person's decisions, in their history (store.reads.history).
DECISION_EVENTS["late_changes.acknowledged"] = "late_acknowledged"
DECISION_EVENTS["followup.opened"] = "follow_up"


def late_fact_accepted(status: str, command_type: str) -> bool:
    """Whether a record that is not open still takes this command as a late fact: only a
    completed one (a superseded task was replaced; its successor takes the news)."""
    return status == RunStatus.COMPLETED and command_type in LATE_FACT_COMMANDS


def late_reconcilable(status: str, stage: str) -> bool:
    """A reconciled effect of a completed task may be reconciled again: a corrected
    observation of what the effect did is a late fact, recorded beside the earlier verdict."""
    return status == RunStatus.COMPLETED and stage == EffectStage.RECONCILED


def late_decision_authority(actor_kind: str) -> Refusal | None:
    """Whether another task is needed after late facts is a person's decision: an agent
    neither acknowledges them away nor opens work on them itself."""
    if actor_kind == ActorKind.PERSON:
        return None
    return Refusal(
        "late_changes_are_a_persons",
        f"only a person acknowledges what changed after completion or opens a follow-up task, "
        f"not an {actor_kind}: ask a person to do it",
    )


def late_decision_refusal(status: str, late_count: int) -> str | None:
    """Why there is nothing to acknowledge or follow up here (None: there is)."""
    if status != RunStatus.COMPLETED:
        return f"the task is {status}: late changes are facts that arrive after completion"
    if late_count <= 0:
        return "nothing changed after completion since the last acknowledgement"
    return None


def late_words(count: int, since: str | None) -> str:
    """The task header's line: "changed after completion: 2 facts since 2026-12-06"."""
    facts = "1 fact" if count == 1 else f"{count} facts"
    day = (since or "")[:10]
    return f"changed after completion: {facts}" + (f" since {day}" if day else "")


# --- context manifests and configuration (issue 35 part M) ----------------------------


#: Why an item was left out of a model's context (store.events.ManifestItem.reason).
OMISSION_REASONS = ("budget", "policy", "stale", "retired")


def tool_drift(
    tool: str | None, pinned: str | None, current: Mapping[str, str] | None
) -> str | None:
    """Whether an intent pinned to `tool`'s definition `pinned` was planned under an older
    definition than the task's current configuration's (`current`: tool -> digest; None
    while no configuration is recorded): the words to show, or None. A tool the current
    catalogue no longer has is drift too: the intent names something the agent cannot run."""
    if tool is None or pinned is None or current is None:
        return None
    now = current.get(tool)
    if now == pinned:
        return None
    gone = " (the current configuration has no such tool)" if now is None else ""
    return f"planned under an older definition of {tool}{gone}: migrate or re-plan before dispatch"


def pinned_tool_refusal(
    tool: str | None, pinned: str | None, current: Mapping[str, str] | None
) -> Refusal | None:
    """Dispatch of an intent planned under an older tool definition is refused: the
    approval and the person's reading of the intent were of what that definition did with
    the prepared object; the same object handed to a changed tool may do something else.
    `migrate_effect_tool` (a reviewed re-pin, which makes its approvals stale) or a new plan
    lets it go on."""
    drift = tool_drift(tool, pinned, current)
    if drift is None:
        return None
    return Refusal("tool_definition_changed", f"the intent was {drift}")


# --- the authority of each event in a log (issue 40) ----------------------------------
# `boris verify` (and `verify-package`, and so an import) replays each task's log through the
# rules the commands enforce: every event must be one its actor's kind could have written at
# that point, given the task's state before it, whoever wrote the rows and however (the
# command layer, a transaction's `emit` called by hand, an INSERT on a team store's login).
# `LogState` is what those rules ask of the state, folded from the events as the projections
# fold them (`fold_log_state`); `event_authority` applies to each event the rule of the
# command that records it, with the commands' own functions (`authority_refusal`,
# `decider_refusal`, `expire_refusal`, `retain_refusal`, `wait_cancel_refusal`,
# `acquire_refusal`, the lease's fence). A `system:` event is the store's own: the first
# event of one of its actions (`STORE_ACTIONS`) or the rules' consequence of the event before
# it in the same transaction (`system_event_refusal`).

#: What an import appends in the store's name (store.services.archive): the package's open
#: approvals revoked as history, and its open lease ended (live authority never travels).
IMPORT_RETIRE_REASON = "imported from an archive: approvals are history here"
IMPORT_LEASE_NOTE = "imported: a lease is not carried to another store"
#: The artifact the summary the store generates is kept as (store.services.narratives).
SUMMARY_ARTIFACT = "summary"
#: The counter an artifact version's bytes are charged to, where it has a budget.
ARTIFACT_BYTES = "artifact_bytes"
#: Statuses `settle_status` moves a run between, as its ledger has it.
LEDGER_STATUSES: frozenset[str] = frozenset(
    {RunStatus.RUNNING, RunStatus.AWAITING_APPROVAL, RunStatus.OUTCOME_UNKNOWN}
)


def artifact_item(artifact_id: str, version: int) -> str:
    """An artifact version's item id, as retention names it: `report@2`."""
    return f"{artifact_id}@{version}"


class LogEvent(NamedTuple):
    """An event as the log's rules read it: its type, its payload (the event's model), who
    wrote it and its transaction's time."""

    type: str
    payload: Any
    actor_kind: str
    actor_id: str
    at: str


@dataclass(frozen=True)
class LoggedLease:
    """A task's current (or last) lease as its log tells it, with the expiry its acquisition
    granted. A heartbeat is not in the log and may have pushed that expiry out: a lease alive
    by its log was alive; one expired by its log may not have been. A person's has none."""

    token: int
    holder_kind: str
    holder_id: str
    session_id: str
    expires_at: str | None
    ended: bool = False

    def view(self, now: str) -> LeaseView:
        standing = lease_standing(now if self.ended else None, self.expires_at, now)
        return LeaseView(self.token, self.holder_kind, self.holder_id, self.session_id, standing)


@dataclass
class LogState:
    """What the rules ask of a task's state before an event, folded from its log."""

    status: str = ""
    lease: LoggedLease | None = None
    #: Each approval's requester (kind, id), and those still open (pending or approved).
    requesters: dict[str, tuple[str, str]] = field(default_factory=dict)
    open_approvals: dict[str, None] = field(default_factory=dict)
    #: Each counter's limit (absent: none ever set) and what was charged to it.
    limits: dict[str, float | None] = field(default_factory=dict)
    used: dict[str, float] = field(default_factory=dict)
    #: Who wrote each item that may carry a retention class ((item kind, id) -> (kind, id)),
    #: and the items retired.
    writers: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    retired: set[tuple[str, str]] = field(default_factory=set)
    #: Who recorded each wait.
    waits: dict[str, tuple[str, str]] = field(default_factory=dict)


def _fold_created(s: LogState, e: LogEvent) -> None:
    s.status = str(e.payload.status)


def _fold_status(s: LogState, e: LogEvent) -> None:
    s.status = str(e.payload.to_status)


def _fold_stopped(s: LogState, e: LogEvent) -> None:
    s.status = RunStatus.STOPPED


def _fold_acquired(s: LogState, e: LogEvent) -> None:
    p = e.payload
    s.lease = LoggedLease(int(p.token), e.actor_kind, e.actor_id, str(p.session_id), p.expires_at)


def _fold_taken_over(s: LogState, e: LogEvent) -> None:
    s.lease = LoggedLease(int(e.payload.token), e.actor_kind, e.actor_id, "", None)


def _fold_released(s: LogState, e: LogEvent) -> None:
    lease = s.lease
    if lease is not None and lease.token == int(e.payload.token):
        s.lease = LoggedLease(
            lease.token,
            lease.holder_kind,
            lease.holder_id,
            lease.session_id,
            lease.expires_at,
            ended=True,
        )


def _fold_requested(s: LogState, e: LogEvent) -> None:
    aid = str(e.payload.approval_id)
    s.requesters[aid] = (e.actor_kind, e.actor_id)
    s.open_approvals[aid] = None


def _fold_decided(s: LogState, e: LogEvent) -> None:
    if e.payload.decision != ApprovalState.APPROVED:  # rejected, sent back: settled
        s.open_approvals.pop(str(e.payload.approval_id), None)


def _fold_consumed(s: LogState, e: LogEvent) -> None:
    s.open_approvals.pop(str(e.payload.approval_id), None)


def _fold_approvals_retired(s: LogState, e: LogEvent) -> None:
    for aid in e.payload.approval_ids:
        s.open_approvals.pop(str(aid), None)


def _fold_limit(s: LogState, e: LogEvent) -> None:
    s.limits[str(e.payload.counter)] = e.payload.limit


def _fold_charged(s: LogState, e: LogEvent) -> None:
    counter = str(e.payload.counter)
    s.used[counter] = s.used.get(counter, 0.0) + float(e.payload.amount)


def _fold_artifact(s: LogState, e: LogEvent) -> None:
    p = e.payload
    item = ("artifact_version", artifact_item(str(p.artifact_id), int(p.version)))
    s.writers[item] = (str(p.producer.actor.kind), str(p.producer.actor.id))


def _fold_evidence(s: LogState, e: LogEvent) -> None:
    s.writers[("evidence", str(e.payload.evidence_id))] = (e.actor_kind, e.actor_id)


def _fold_note_stored(s: LogState, e: LogEvent) -> None:
    s.writers[("note", str(e.payload.note_id))] = (e.actor_kind, e.actor_id)


def _fold_content_retired(s: LogState, e: LogEvent) -> None:
    s.retired.add((str(e.payload.item_kind), str(e.payload.item_id)))


def _fold_wait(s: LogState, e: LogEvent) -> None:
    s.waits[str(e.payload.wait_id)] = (e.actor_kind, e.actor_id)


_FOLDS: dict[str, Callable[[LogState, LogEvent], None]] = {
    "task.created": _fold_created,
    "run.status_changed": _fold_status,
    "run.stopped": _fold_stopped,
    "lease.acquired": _fold_acquired,
    "lease.taken_over": _fold_taken_over,
    "lease.released": _fold_released,
    "approval.requested": _fold_requested,
    "approval.decided": _fold_decided,
    "approval.consumed": _fold_consumed,
    "approval.retired": _fold_approvals_retired,
    "budget.limit_set": _fold_limit,
    "budget.charged": _fold_charged,
    "artifact.version_recorded": _fold_artifact,
    "evidence.attached": _fold_evidence,
    "note.stored": _fold_note_stored,
    "content.retired": _fold_content_retired,
    "wait.recorded": _fold_wait,
}

#: The event types that change a `LogState` (others leave it as it is).
LOG_STATE_EVENTS: frozenset[str] = frozenset(_FOLDS)


def fold_log_state(state: LogState, e: LogEvent) -> None:
    """`state` after the event `e`."""
    fold = _FOLDS.get(e.type)
    if fold is not None:
        fold(state, e)


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


STORE_ACTIONS: dict[str, Callable[[LogEvent, LogState], str | None]] = {
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
