"""Approvals: when a request expires, how many people it needs, who may decide it.

A request is decided by named people who did not ask for it, each counted once, until as many
as it needs approved; a rejection or a send-back ends it. `expired` is judged when read,
never written, so it cannot lag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .authority import authority_of
from .states import ApprovalState, Refusal

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
