"""Who may run which command, and what a database role may write.

The authority table (`AUTHORITY`, printed by `boris schema`) names the commands, or the cases
of a command, that are a person's: deciding an approval, waiving a criterion, reopening a run,
raising a limit, closing, taking over, re-pinning a tool, expiring content, answering late
changes. `authority_refusal` enforces it for every caller; `system_actor_refusal` keeps the
store's own `system:` name for the store; `role_refusal` is what a team store's database
trigger applies to a login, since the actor a writer names is not proof.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .late import LATE_DECISIONS, late_decision_authority
from .run import is_reopening
from .states import ActorKind, ApprovalState, CriterionState, Refusal

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
    # Retention (store.rules.retention): the handlers ask `expire_refusal` and
    # `retain_refusal`, which also know who wrote the item.
    "expire_content": Authority(_PERSON),
    "set_retention": Authority(_ANYONE, ("the item was written by someone else",)),
    # Late changes (store.rules.late): whether another task is needed is a person's call.
    "acknowledge_late_changes": Authority(_PERSON, events=("late_changes.acknowledged",)),
    "open_followup": Authority(_PERSON, events=("followup.opened",)),
    # Standing rules (issue 42): "allow calls like this" is a person's answer, as is its end,
    # and which policies no rule may answer.
    "grant_standing_rule": Authority(_PERSON, events=("rule.granted",)),
    "revoke_standing_rule": Authority(_PERSON, events=("rule.revoked",)),
    "reserve_policy": Authority(_PERSON),
    # A person's process applies their own rules to calls an agents' login asked (a team store).
    "decide_by_standing_rules": Authority(_PERSON),
    # Answering in the tool's place (issue 42, "respond"): a person supplies the call's result.
    "respond_to_approval": Authority(_PERSON, events=("approval.answered",)),
    # Routing (issue 42): who decides a policy's requests, and the groups it names.
    "set_route": Authority(_PERSON),
    "set_group": Authority(_PERSON),
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
    rejected (only `approval.decided` says so) or answered as the tool (only
    `approval.answered`), a criterion waived (only a person waives). No
    event an agent may record sets these, so a team store's database refuses an agents' role
    a projection row that does, whatever event comes with it (store.team)."""
    return {
        "approval": (
            ApprovalState.APPROVED,
            ApprovalState.REJECTED,
            ApprovalState.SENT_BACK,
            ApprovalState.ANSWERED,
        ),
        "criterion": (CriterionState.WAIVED,),
    }
