"""Budgets: how a counter stands against its limit, and what spending it may do.

Budgets bind: a run whose counter reaches its limit is budget_exhausted, nothing that spends
that counter is accepted, and only a person raises the limit or resumes it. A reservation is
promised spending, so it counts toward "near the limit" and a person releasing one says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from .states import ActorKind, Refusal, RunStatus


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


_RANK = {str(s): i for i, s in enumerate(BUDGET_PRESSING)}


def most_pressing(a: str, b: str) -> str:
    """Of two standings, the one that asks more of a person (a standing's value, or the
    standing itself: a StrEnum is its value)."""
    return a if _RANK[a] >= _RANK[b] else b


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


#: The counter an artifact version's bytes are charged to, where it has a budget.
ARTIFACT_BYTES = "artifact_bytes"
