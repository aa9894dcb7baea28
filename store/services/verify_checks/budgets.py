"""Budgets: each counter's `used` equals the sum of its `budget.charged` amounts."""

from __future__ import annotations

import math

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ... import events as ev
from ... import schema as t
from ...record import Event
from .findings import TaskFindings

_FLOAT_TOLERANCE = 1e-9


class BudgetsCheck:
    """Each counter's charges summed exactly as the log streams by (`see`), then compared
    with the budgets rows (`check`)."""

    def __init__(self, found: TaskFindings, conn: Connection) -> None:
        self.found = found
        self.conn = conn
        #: Each counter's number of charges and their sum, as exact partials.
        self.charged: dict[str, tuple[int, list[float]]] = {}

    def see(self, e: Event) -> None:
        p = e.payload
        if isinstance(p, ev.BudgetCharged):
            n, partials = self.charged.get(p.counter, (0, []))
            _add_exact(partials, p.amount)
            self.charged[p.counter] = (n + 1, partials)

    def check(self) -> None:
        rows = {
            r.counter: r
            for r in self.conn.execute(
                sa.select(t.budgets).where(t.budgets.c.task_id == self.found.task_id)
            )
        }
        for counter in sorted(set(rows) | set(self.charged)):
            n, partials = self.charged.get(counter, (0, []))
            total = math.fsum(partials)
            row = rows.get(counter)
            if row is None:
                self.found.problem(
                    "budget",
                    f"counter {counter} has {n} charges ({total:g}) but no budgets row",
                )
            elif not math.isclose(
                float(row.used), total, rel_tol=_FLOAT_TOLERANCE, abs_tol=_FLOAT_TOLERANCE
            ):
                self.found.problem(
                    "budget",
                    f"counter {counter}: used is {row.used:g}, but its {n} charges "
                    f"sum to {total:g}",
                )


def _add_exact(partials: list[float], x: float) -> None:
    """Add `x` to a sum kept as non-overlapping partials (Shewchuk, as `math.fsum` does
    inside), so a counter's charges are summed exactly without keeping every one."""
    i = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            partials[i] = lo
            i += 1
        x = hi
    partials[i:] = [x]
