"""Scheduled waits as read now: each wait with its state, whether it is due, and whether it
needs a person, judged by the database's clock at the read (store.rules: `wait_state`,
`wait_due`, `wait_needs_person`). One batch of queries for any number of tasks, so the
task view (`waits` in its state) and the decision queue read them the same way.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from .actors import ActorRef
from .read_model import ReadModel

_W = t.waits


class WaitReservation(ReadModel):
    """What the wait holds of a budget: `held` until the wait's end is written."""

    counter: str
    amount: float
    held: bool


class WaitCondition(ReadModel):
    """What cancels the wait (store.events.WaitCondition), in `words`, and why it holds now
    (`met`; None: it does not, or it is text only a reader can judge)."""

    kind: str
    ref: str = ""
    text: str = ""
    words: str
    met: str | None


class Wait(ReadModel):
    """A scheduled wait judged at the read: its `state`, whether it is `due`, and why it is
    a person's decision now (`needs_person`; None: it is not)."""

    id: str
    wait_id: str
    task_id: str
    kind: rules.WaitKind
    ref: str
    waiting_for: str
    not_before: str
    clock: str
    due: bool
    state: rules.WaitState
    reservation: WaitReservation | None
    condition: WaitCondition | None
    note: str
    recorded_by: ActorRef
    recorded_at: str
    considered: int
    ended_at: str | None
    ended_by: ActorRef | None
    end_reason: str | None
    needs_person: str | None


class TaskWaits(ReadModel):
    """A task's waits with the database clock they were read at: `boris waits`."""

    task_id: str
    now: str
    waits: list[Wait]


def waiting_for(kind: str, ref: str) -> str:
    """What the wait waits for, in words: "rate limit api.example.org", "approval A1"."""
    return kind.replace("_", " ") + (f" {ref}" if ref else "")


def wait_rows(
    conn: Connection, now: str, task_ids: Collection[str] | None = None, *, open_only: bool = False
) -> list[Wait]:
    """The waits of `task_ids` (every task's when None), in each task's order, as read at
    `now`. `open_only`: only waits still open as written (the decision queue's)."""
    q = (
        sa.select(_W, t.tasks.c.status.label("task_status"))
        .join(t.tasks, t.tasks.c.task_id == _W.c.task_id)
        .order_by(_W.c.task_id, _W.c.position)
    )
    if task_ids is not None:
        q = q.where(_W.c.task_id.in_(list(task_ids)))
    if open_only:
        q = q.where(_W.c.state == rules.WaitState.OPEN.value)
    rows = [dict(r._mapping) for r in conn.execute(q)]
    if not rows:
        return []
    live = sorted({r["task_id"] for r in rows if r["state"] == rules.WaitState.OPEN})
    approvals: dict[str, dict[str, str]] = {}
    effects: dict[str, dict[str, str]] = {}
    exhausted: set[tuple[str, str]] = set()
    if live:
        for task_id, aid, state in conn.execute(
            sa.select(t.approvals.c.task_id, t.approvals.c.approval_id, t.approvals.c.state).where(
                t.approvals.c.task_id.in_(live)
            )
        ):
            approvals.setdefault(task_id, {})[aid] = state
        for task_id, eid, stage in conn.execute(
            sa.select(t.effects.c.task_id, t.effects.c.effect_id, t.effects.c.stage).where(
                t.effects.c.task_id.in_(live)
            )
        ):
            effects.setdefault(task_id, {})[eid] = stage
        for task_id, counter, used, limit in conn.execute(
            sa.select(
                t.budgets.c.task_id, t.budgets.c.counter, t.budgets.c.used, t.budgets.c.limit_value
            ).where(t.budgets.c.task_id.in_(live))
        ):
            if rules.budget_exhausted(used, limit):
                exhausted.add((task_id, counter))
    return [_shape(r, now, approvals, effects, exhausted) for r in rows]


def _shape(
    r: dict[str, Any],
    now: str,
    approvals: dict[str, dict[str, str]],
    effects: dict[str, dict[str, str]],
    exhausted: set[tuple[str, str]],
) -> Wait:
    task_id, stored = r["task_id"], str(r["state"])
    met = None
    if stored == rules.WaitState.OPEN:
        met = rules.wait_condition_met(
            r["cancel_if"], approvals.get(task_id, {}), effects.get(task_id, {})
        )
    record_open = rules.record_open(str(r["task_status"]))
    state = rules.wait_state(stored, met, record_open)
    counter = r["reserve_counter"]
    spent = counter if counter is not None and (task_id, counter) in exhausted else None
    end_reason = r["end_reason"]
    if state != stored:
        end_reason = met or f"the task's record is closed ({r['task_status']})"
    return Wait.model_validate(
        {
            "id": r["wait_id"],
            "wait_id": r["wait_id"],
            "task_id": task_id,
            "kind": r["kind"],
            "ref": r["ref"],
            "waiting_for": waiting_for(r["kind"], r["ref"]),
            "not_before": r["not_before"],
            "clock": r["clock"],
            "due": state == rules.WaitState.OPEN and rules.wait_due(r["not_before"], now),
            "state": str(state),
            "reservation": (
                {
                    "counter": counter,
                    "amount": r["reserve_amount"],
                    # Held by the budget until the wait's end is written (a stop, a cancel, …).
                    "held": stored == rules.WaitState.OPEN,
                }
                if counter is not None
                else None
            ),
            "condition": (
                {**r["cancel_if"], "words": rules.wait_condition_words(r["cancel_if"]), "met": met}
                if r["cancel_if"]
                else None
            ),
            "note": r["note"],
            "recorded_by": r["recorded_by"],
            "recorded_at": r["recorded_at"],
            "considered": r["considered"],
            "ended_at": r["ended_at"],
            "ended_by": r["ended_by"],
            "end_reason": end_reason,
            "needs_person": rules.wait_needs_person(
                r["kind"], str(state), r["not_before"], now, spent
            ),
        }
    )


def task_waits(conn: Connection, task_id: str, now: str) -> list[Wait]:
    """One task's waits, in the order they were recorded."""
    return wait_rows(conn, now, (task_id,))


def waits(store: Any, task_id: str) -> TaskWaits:
    """A task's waits with the database clock they were read at (`now`): `boris waits`,
    the MCP tool `list_waits`."""
    from .. import db
    from .queries import task_row

    with store.read() as conn:
        task_row(conn, task_id)  # an unknown task is refused, not an empty list
        now = db.database_now(conn)
        return TaskWaits(task_id=task_id, now=now, waits=task_waits(conn, task_id, now))
