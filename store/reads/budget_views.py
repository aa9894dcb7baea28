"""A budget as a person changes it: one counter's numbers, and what a change would do.

`budget_view` reads one counter of a task (used, reserved, limit, standing, the revision of
its limit that a change is based on, who set it last) with what the run's status depends on.
`budget_change` says, before anything is sent, what a new limit and a released reservation
would do: the limit, the reservation and the standing before and after, and the run's status
after by the store's own rules (`rules.limit_change_reopens`, `rules.ledger_status`): a
budget_exhausted run whose counters are all within their limits afterwards goes on. The
window renders both and adds no rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from ..errors import CommandRejected
from ..limits import MAX_NUMBER
from ..model import BUDGET_COUNTERS
from .judging import VersionChange, budget_limit_rev, change_at

if TYPE_CHECKING:
    from .state_models import Budget


@dataclass(frozen=True)
class CounterLine:
    """One counter of the task as it stands (the dialog's choice of counter)."""

    counter: str
    used: float
    reserved: float
    limit: float | None
    standing: rules.BudgetStanding


@dataclass(frozen=True)
class BudgetView:
    """One counter of a task as a person changes it. `limit_rev`: how many times its limit was
    set (SetBudget's `based_on`); `last_change`: who set it last, when (None: never set).
    `counters`: every counter of the task (a change is judged against all of them: the run
    goes on only when none is exhausted). `uncertain_effect` / `pending_approval`: what the
    run's ledger holds (`rules.ledger_status`). `task_seq`: the task's last event when read."""

    task_id: str
    counter: str
    used: float
    reserved: float
    limit: float | None
    standing: rules.BudgetStanding
    limit_rev: int
    last_change: VersionChange | None
    status: str
    status_reason: str
    counters: tuple[CounterLine, ...]
    uncertain_effect: str | None
    pending_approval: str | None
    task_seq: int
    now: str

    @property
    def exhausted(self) -> list[str]:
        """The task's counters at or past their limit now."""
        return rules.exhausted_counters(
            {"counter": c.counter, "used": c.used, "limit": c.limit} for c in self.counters
        )


@dataclass(frozen=True)
class BudgetChange:
    """What a change would do, in lines a person reads before it is sent. `refusal`: why it
    cannot be sent as it stands (None: it can); `status_after`: the run's status after."""

    lines: tuple[str, ...]
    standing_after: rules.BudgetStanding
    status_after: str
    refusal: str | None


def _num(x: float | None) -> str:
    return "none" if x is None else f"{x:g}"


def _words(s: str) -> str:
    return s.replace("_", " ")


def number_refusal(value: float, what: str) -> str | None:
    """Why `value` cannot be a limit or an amount: finite, not negative, within the store's
    bound (store.limits), as every command's number is."""
    if not math.isfinite(value):
        return f"the {what} must be a finite number"
    if value < 0:
        return f"the {what} cannot be negative"
    if value > MAX_NUMBER:
        return f"the {what} is at most {MAX_NUMBER}"
    return None


def budget_change(
    view: BudgetView,
    *,
    set_limit: bool,
    limit: float | None,
    release: float = 0.0,
    reason: str = "",
) -> BudgetChange:
    """What setting the limit to `limit` (when `set_limit`; None: no limit) and releasing
    `release` of the reservation would do, as a person's change."""
    new_limit = limit if set_limit else view.limit
    # What the reservation would be, shown even while the reason is still to be given.
    release_ok = number_refusal(release, "amount released") is None and release <= view.reserved
    reserved_after = view.reserved - release if release_ok and release > 0 else view.reserved
    if set_limit and limit is not None and number_refusal(limit, "limit") is not None:
        new_limit = view.limit
    refusal = None
    if set_limit and limit is not None:
        refusal = number_refusal(limit, "limit")
    if refusal is None:
        refusal = number_refusal(release, "amount released")
    if refusal is None and release > 0:
        r = rules.release_refusal(view.counter, view.reserved, release, "person", reason)
        refusal = None if r is None else r.message
    if refusal is None and (not set_limit or new_limit == view.limit) and release <= 0:
        refusal = "nothing changes: set a new limit or release part of the reservation"
    standing_after = rules.budget_standing(view.used, max(reserved_after, 0.0), new_limit)
    lines = []
    if set_limit and new_limit != view.limit:
        lines.append(f"Limit: {_num(view.limit)} → {_num(new_limit)}")
    else:
        lines.append(f"Limit stays {_num(view.limit)}")
    if reserved_after != view.reserved:
        lines.append(
            f"Reserved: {_num(view.reserved)} → {_num(reserved_after)} "
            f"({release:g} released, with your reason)"
        )
    if standing_after != view.standing:
        lines.append(f"Standing: {_words(view.standing)} → {_words(standing_after)}")
    else:
        lines.append(f"Standing stays {_words(view.standing)}")
    status_after, run_line = _run_after(view, new_limit, standing_after)
    lines.append(run_line)
    return BudgetChange(tuple(lines), standing_after, status_after, refusal)


def _run_after(
    view: BudgetView, new_limit: float | None, standing_after: rules.BudgetStanding
) -> tuple[str, str]:
    """The run's status after the change, and the line that says it."""
    status = view.status
    after = [
        {
            "counter": c.counter,
            "used": c.used,
            "limit": new_limit if c.counter == view.counter else c.limit,
        }
        for c in view.counters
    ]
    if not any(c.counter == view.counter for c in view.counters):
        after.append({"counter": view.counter, "used": view.used, "limit": new_limit})
    exhausted_after = rules.exhausted_counters(after)
    if rules.limit_change_reopens(status, exhausted_after):
        settled, why = rules.ledger_status(view.uncertain_effect, view.pending_approval)
        line = f"The run goes on: budget exhausted → {_words(settled)}"
        if settled != rules.RunStatus.RUNNING:
            line += f" ({why})"
        return settled, line
    if status == rules.RunStatus.BUDGET_EXHAUSTED:
        return status, (
            "The run stays budget exhausted: still at its limit: " + ", ".join(exhausted_after)
        )
    if status == rules.RunStatus.STOPPED:
        return status, "The run stays stopped: only resuming it (Actions › Resume) lets it go on"
    if standing_after == rules.BudgetStanding.EXHAUSTED and rules.record_open(status):
        return status, (
            f"The run stays {_words(status)}; its next {view.counter} charge stops it "
            "(budget exhausted)"
        )
    return status, f"The run stays {_words(status)}"


# --- reading -----------------------------------------------------------------------------------


def read_budget_view(conn: Connection, task_id: str, counter: str, now: str) -> BudgetView:
    """One counter of a task as a person changes it. UnknownTask when there is no task; a
    counter the store does not know is refused as SetBudget refuses it."""
    if counter not in BUDGET_COUNTERS:
        raise CommandRejected(
            f"unknown budget counter {counter!r}; one of {', '.join(BUDGET_COUNTERS)}"
        )
    task = conn.execute(
        sa.select(t.tasks.c.status, t.tasks.c.status_reason, t.tasks.c.last_seq).where(
            t.tasks.c.task_id == task_id
        )
    ).first()
    if task is None:
        from .deleted import absent  # deleted by a person: when and by whom

        raise absent(conn, task_id)
    counters = tuple(
        CounterLine(
            str(r.counter),
            float(r.used),
            float(r.reserved),
            r.limit_value,
            rules.budget_standing(float(r.used), float(r.reserved), r.limit_value),
        )
        for r in conn.execute(
            sa.select(t.budgets).where(t.budgets.c.task_id == task_id).order_by(t.budgets.c.counter)
        )
    )
    mine = next(
        (c for c in counters if c.counter == counter),
        CounterLine(counter, 0.0, 0.0, None, rules.BudgetStanding.UNLIMITED),
    )
    rev, seq = budget_limit_rev(conn, task_id, counter)
    uncertain = conn.execute(
        sa.select(t.effects.c.effect_id).where(
            t.effects.c.task_id == task_id,
            t.effects.c.stage.in_(sorted(rules.RECONCILABLE)),
            t.effects.c.outcome.in_((rules.Outcome.UNKNOWN.value, rules.Outcome.PARTIAL.value)),
        )
    ).first()
    pending = conn.execute(
        sa.select(t.approvals.c.approval_id).where(
            t.approvals.c.task_id == task_id,
            t.approvals.c.state == rules.ApprovalState.PENDING.value,
            t.approvals.c.expires_at > now,
        )
    ).first()
    return BudgetView(
        task_id=task_id,
        counter=counter,
        used=mine.used,
        reserved=mine.reserved,
        limit=mine.limit,
        standing=mine.standing,
        limit_rev=rev,
        last_change=None if seq is None else change_at(conn, task_id, seq),
        status=str(task.status),
        status_reason=str(task.status_reason or ""),
        counters=counters,
        uncertain_effect=None if uncertain is None else str(uncertain.effect_id),
        pending_approval=None if pending is None else str(pending.approval_id),
        task_seq=int(task.last_seq),
        now=now,
    )


def budget_view(store: Any, task_id: str, counter: str) -> BudgetView:
    """On a worker: `read_budget_view` at the database clock now."""
    from .. import db

    with store.read() as conn:
        return read_budget_view(conn, task_id, counter, db.database_now(conn))


def most_pressing_counter(budgets: Sequence[Budget]) -> str | None:
    """Of a task's budgets (its state's `budgets`), the counter that asks most of a person
    (exhausted first): the one a budget change is about when none is chosen."""
    best: tuple[int, str] | None = None
    for b in budgets:
        standing = rules.budget_standing(b.used, b.reserved, b.limit_value)
        rank = rules.BUDGET_PRESSING.index(standing)
        if best is None or rank > best[0]:
            best = (rank, b.counter)
    return None if best is None else best[1]
