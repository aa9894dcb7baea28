"""Routing (issue 42): who may decide a request, and when it widens to more people.

A routed policy names the people (or groups of people) who decide its requests; a request
made under it records them (`approval.routed`), resolved to people then. Nobody else may
decide it until its escalation: when nobody answered by `escalate_at` (database clock), or it
expired under `on_expiry: escalate`, the escalation's people may decide it too. The requester
never decides their own request (store.rules.decider_refusal), routed or not. Judged when read
(like `expired`), so it never lags a tick; the tick only records the moment
(`approval.escalated`) and, on expiry, the request's new expiry.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from .states import Refusal
from .times import clock_words

PERSON = "person:"
GROUP = "group:"


@dataclass(frozen=True)
class Route:
    """A request's routing, as its `approval.routed` event recorded it (and any escalation)."""

    approval_id: str
    policy: str
    named: tuple[str, ...]
    deciders: tuple[str, ...]
    escalate_at: str | None
    escalate_to: tuple[str, ...]
    escalate_named: tuple[str, ...]
    on_expiry: str
    #: When the request expired and was escalated (its expiry moved on), if it was.
    escalated_on_expiry: bool = False

    def escalated(self, now: str) -> bool:
        return self.escalated_on_expiry or (
            self.escalate_at is not None and self.escalate_at <= now and bool(self.escalate_to)
        )

    def may_decide(self, now: str) -> tuple[str, ...]:
        """The people (ids) who may decide it at `now`."""
        if self.escalated(now):
            return tuple(dict.fromkeys((*self.deciders, *self.escalate_to)))
        return self.deciders


#: Why a request escalated: nobody answered by its escalation time, or it expired under a
#: policy whose expiry escalates (`approval.escalated`'s `why`).
Why = Literal["unanswered", "expired"]


def escalation_due(route: Route, expires_at: str, done: Collection[str], now: str) -> Why | None:
    """Which escalation of a pending routed request is due at `now` (database clock), given
    the escalations its log already has (`done`, their `why`s); None: none is. Each is
    recorded once: an expiry's escalation once the request expired under `on_expiry:
    escalate`, an unanswered one once its escalation time came (while it has not expired,
    and only if nothing escalated it before)."""
    if expires_at <= now:
        if route.on_expiry == "escalate" and "expired" not in done:
            return "expired"
        return None
    if route.escalate_at is not None and route.escalate_at <= now and route.escalate_to:
        return None if done else "unanswered"
    return None


def next_escalation(route: Route, expires_at: str, done: Collection[str]) -> str | None:
    """When a pending routed request's next escalation comes due (database clock); None
    when none will."""
    at = route.escalate_at
    if at is not None and route.escalate_to and not done and at < expires_at:
        return at
    if route.on_expiry == "escalate" and "expired" not in done:
        return expires_at
    return None


def route_refusal(route: Route, actor_kind: str, actor_id: str, now: str) -> Refusal | None:
    """Whether this actor may decide a routed request at `now` (None: they may)."""
    if actor_kind == "person" and actor_id in route.may_decide(now):
        return None
    return Refusal(
        "routed_to_named_people",
        f"{actor_kind}:{actor_id} is not one of the people policy {route.policy!r} routes "
        f"this request to: {route_words(route, now)}",
    )


def _names(named: Sequence[str], people: Sequence[str]) -> str:
    who = ", ".join(named)
    ids = ", ".join(people)
    return who if who == ", ".join(PERSON + p for p in people) else f"{who} ({ids})"


def route_words(route: Route, now: str) -> str:
    """ "waiting on group:release (rita, ben); escalates to person:olga at 14:10 UTC" """
    words = f"waiting on {_names(route.named, route.deciders)}"
    if route.escalated(now):
        return words + f"; escalated to {_names(route.escalate_named, route.escalate_to)}"
    if route.escalate_at is not None and route.escalate_to:
        words += (
            f"; escalates to {_names(route.escalate_named, route.escalate_to)} "
            f"at {clock_words(route.escalate_at, now)}"
        )
    if route.on_expiry == "escalate":
        words += "; escalates when it expires"
    return words
