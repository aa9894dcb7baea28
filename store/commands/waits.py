"""Scheduled waits: waiting as state, not as a process kept awake.

An agent (or a person) records what the task waits for: a rate limit, an approval, a status
check, retry eligibility, a time; the next time to consider it, on the database's clock
(`not_before`, or `after_seconds` from the database's now, read inside the transaction); a
budget reservation it holds (reserved as `ReserveBudget` would, released when the wait
ends); and the condition that cancels it. When it comes due it is *re-evaluated*: its actor
settles it (done waiting) or schedules it again; being due authorizes nothing.

A person cancels a wait with a reason, as does the agent that recorded it. Stop (and closing
the task) retires every open wait in its own transaction (`retire_open_waits`). A wait whose condition came true
(approval X rejected, effect Y reconciled) reads as retired at once (`rules.wait_state`); the
next wait command on the task writes that retirement and releases its reservation.
"""

from __future__ import annotations

from typing import Any, Literal, Self

import sqlalchemy as sa
from pydantic import Field, model_validator

from .. import events as ev
from .. import rules
from .. import schema as t
from ..errors import AuthorityRefused, CommandRejected, UnknownWait, WaitOver
from ..model import Actor
from ..tx import Tx
from .core import (
    Command,
    Ident,
    TaskCommand,
    _budget,
    _check_counter,
    _require_writable,
    handles,
    new_id,
)

WaitKindName = Literal["rate_limit", "approval", "status_check", "retry", "time"]

_WHEN = (
    "the next time to consider it: not_before (an ISO 8601 time with its zone) or "
    "after_seconds (from the database's clock now), one of the two"
)


class WaitReserve(Command):
    """Budget held for what the wait leads to (a retry's tool call): reserved when the wait
    is recorded, by the same rule as reserve_budget; released when the wait ends."""

    counter: str
    amount: float = Field(gt=0)


class _When(TaskCommand):
    not_before: str | None = Field(default=None, description=_WHEN)
    after_seconds: float | None = Field(
        default=None, ge=0, le=rules.MAX_WAIT_SECONDS, description=_WHEN
    )

    @model_validator(mode="after")
    def _one_time(self) -> Self:
        if (self.not_before is None) == (self.after_seconds is None):
            raise ValueError("give exactly one of not_before and after_seconds")
        if self.not_before is not None:
            rules.iso_instant(self.not_before)  # a ValueError says what is wrong with it
        return self


class RecordWait(_When):
    """Record what the task waits for and when to consider it again (database clock)."""

    type: Literal["record_wait"] = "record_wait"
    kind: WaitKindName
    ref: str = Field(
        default="", description="what it waits on: an approval id, an effect id, a host, …"
    )
    reserve: WaitReserve | None = None
    cancel_if: str | None = Field(
        default=None,
        description="what cancels it: approval-rejected:ID or effect-reconciled:ID (the "
        "store checks these), or free text for the reader",
    )
    wait_id: Ident | None = None
    note: str = ""


class SettleWait(TaskCommand):
    """The wait was re-evaluated: `done` (no longer waiting) or `reschedule` (still waiting,
    consider it again at the new time). Whoever works on the task settles it: a later session
    or another agent resumes from the record, not from the recorder's memory."""

    type: Literal["settle_wait"] = "settle_wait"
    wait_id: Ident
    result: Literal["done", "reschedule"]
    not_before: str | None = Field(default=None, description=_WHEN + " (reschedule)")
    after_seconds: float | None = Field(
        default=None, ge=0, le=rules.MAX_WAIT_SECONDS, description=_WHEN + " (reschedule)"
    )
    note: str = ""

    @model_validator(mode="after")
    def _time_only_to_reschedule(self) -> Self:
        timed = self.not_before is not None or self.after_seconds is not None
        if self.result == "done" and timed:
            raise ValueError("a wait settled as done takes no new time")
        if self.result == "reschedule":
            if (self.not_before is None) == (self.after_seconds is None):
                raise ValueError("reschedule with exactly one of not_before and after_seconds")
            if self.not_before is not None:
                rules.iso_instant(self.not_before)
        return self


class CancelWait(TaskCommand):
    """Cancel a wait: a person, saying why; or the agent that recorded it."""

    type: Literal["cancel_wait"] = "cancel_wait"
    wait_id: Ident
    reason: str = ""


# --- reading the waits inside the transaction -------------------------------------------------


def _when(tx: Tx, not_before: str | None, after_seconds: float | None) -> str:
    """The absolute time on the database's clock: `after_seconds` from the transaction's
    now (the database's, read under the write lock), or `not_before` in the store's form."""
    if after_seconds is not None:
        return rules.store_time_after(tx.now, after_seconds)
    assert not_before is not None
    return rules.store_time(rules.iso_instant(not_before))


def _facts(tx: Tx, task_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """Each approval's stored state and each effect's stage: what conditions are judged on."""
    approvals = {
        str(a): str(s)
        for a, s in tx.conn.execute(
            sa.select(t.approvals.c.approval_id, t.approvals.c.state).where(
                t.approvals.c.task_id == task_id
            )
        )
    }
    effects = {
        str(e): str(s)
        for e, s in tx.conn.execute(
            sa.select(t.effects.c.effect_id, t.effects.c.stage).where(
                t.effects.c.task_id == task_id
            )
        )
    }
    return approvals, effects


def _open_rows(tx: Tx, task_id: str) -> list[Any]:
    return list(
        tx.conn.execute(
            sa.select(t.waits)
            .where(t.waits.c.task_id == task_id, t.waits.c.state == rules.WaitState.OPEN.value)
            .order_by(t.waits.c.position)
        )
    )


Ended = Literal["settled", "cancelled", "retired"]


def _end(tx: Tx, row: Any, state: Ended, reason: str, actor: Actor) -> None:
    """End the wait and release what it still holds of its reservation."""
    tx.emit(row.task_id, ev.WaitEnded(wait_id=row.wait_id, state=state, reason=reason), actor)
    if row.reserve_counter is None:
        return
    budget = _budget(tx, row.task_id, row.reserve_counter)
    held = min(float(row.reserve_amount or 0.0), 0.0 if budget is None else float(budget.reserved))
    if held > 0:
        tx.emit(
            row.task_id,
            ev.BudgetReleased(
                counter=row.reserve_counter,
                amount=held,
                reason=f"wait {row.wait_id} {state}: {reason}" if reason else None,
            ),
            actor,
        )


def _sweep(tx: Tx, task_id: str, actor: Actor) -> dict[str, str]:
    """Write the retirement of every open wait whose condition came true (it already reads
    as retired) and release its reservation: done by any wait command on the task. Returns
    the ids retired, with why."""
    approvals, effects = _facts(tx, task_id)
    retired: dict[str, str] = {}
    for row in _open_rows(tx, task_id):
        why = rules.wait_condition_met(row.cancel_if, approvals, effects)
        if why is not None:
            _end(tx, row, "retired", why, actor)
            retired[str(row.wait_id)] = why
    return retired


def _the_open_wait(tx: Tx, task_id: str, wait_id: str) -> Any:
    row = tx.conn.execute(
        sa.select(t.waits).where(t.waits.c.task_id == task_id, t.waits.c.wait_id == wait_id)
    ).first()
    if row is None:
        raise UnknownWait(task_id, wait_id)
    if row.state != rules.WaitState.OPEN:
        raise WaitOver(task_id, wait_id, str(row.state), str(row.end_reason or ""))
    return row


def retire_open_waits(tx: Tx, task_id: str, reason: str, actor: Actor) -> list[str]:
    """Retire every open wait of the task (the stop's part): ended, reservations released,
    in the caller's transaction. Returns their ids."""
    rows = _open_rows(tx, task_id)
    for row in rows:
        _end(tx, row, "retired", reason, actor)
    return [str(r.wait_id) for r in rows]


# --- handlers ----------------------------------------------------------------------------------


@handles(RecordWait)
def _record(tx: Tx, cmd: RecordWait, actor: Actor) -> str:
    status = _require_writable(tx, cmd.task_id)
    refusal = rules.wait_record_refusal(status)
    if refusal is not None:
        raise CommandRejected(f"task {cmd.task_id}: {refusal}")
    _sweep(tx, cmd.task_id, actor)
    wait_id = cmd.wait_id or new_id("wait")
    taken = tx.conn.execute(
        sa.select(t.waits.c.wait_id).where(
            t.waits.c.task_id == cmd.task_id, t.waits.c.wait_id == wait_id
        )
    ).first()
    if taken is not None:
        raise CommandRejected(f"task {cmd.task_id} already has a wait {wait_id!r}")
    approvals, effects = _facts(tx, cmd.task_id)
    condition = rules.parse_wait_condition(cmd.cancel_if) if cmd.cancel_if else None
    # A condition on something the task does not have would never come true: refused.
    if condition and condition["kind"] == "approval_rejected" and condition["ref"] not in approvals:
        raise CommandRejected(f"task {cmd.task_id} has no approval {condition['ref']!r}")
    if condition and condition["kind"] == "effect_reconciled" and condition["ref"] not in effects:
        raise CommandRejected(f"task {cmd.task_id} has no effect {condition['ref']!r}")
    if condition and condition["kind"] == "text" and not condition["text"]:
        condition = None
    already = rules.wait_condition_met(condition, approvals, effects)
    if already is not None:
        raise CommandRejected(f"task {cmd.task_id}: the wait would be over at once: {already}")
    if cmd.kind == "approval" and cmd.ref and cmd.ref not in approvals:
        raise CommandRejected(f"task {cmd.task_id} has no approval {cmd.ref!r} to wait for")
    if cmd.reserve is not None:
        # The rule of reserve_budget: a known counter, never more than is left under a limit.
        _check_counter(cmd.reserve.counter)
        row = _budget(tx, cmd.task_id, cmd.reserve.counter)
        if row is not None and row.limit_value is not None:
            free = rules.budget_left(row.used, row.reserved, row.limit_value)
            if cmd.reserve.amount > free:
                raise CommandRejected(
                    f"cannot reserve {cmd.reserve.amount:g} {cmd.reserve.counter} for the "
                    f"wait: only {max(free, 0):g} left"
                )
    tx.emit(
        cmd.task_id,
        ev.WaitRecorded(
            wait_id=wait_id,
            kind=cmd.kind,
            ref=cmd.ref,
            not_before=_when(tx, cmd.not_before, cmd.after_seconds),
            clock="database",  # rules.WAIT_CLOCK: the only clock a wait is on
            reserve=(
                ev.WaitReservation(counter=cmd.reserve.counter, amount=cmd.reserve.amount)
                if cmd.reserve is not None
                else None
            ),
            cancel_if=ev.WaitCondition.model_validate(condition) if condition else None,
            note=cmd.note,
        ),
        actor,
    )
    if cmd.reserve is not None:
        tx.emit(
            cmd.task_id,
            ev.BudgetReserved(counter=cmd.reserve.counter, amount=cmd.reserve.amount),
            actor,
        )
    return wait_id


@handles(SettleWait)
def _settle(tx: Tx, cmd: SettleWait, actor: Actor) -> str:
    status = _require_writable(tx, cmd.task_id)
    _the_open_wait(tx, cmd.task_id, cmd.wait_id)
    retired = _sweep(tx, cmd.task_id, actor)
    if cmd.wait_id in retired:
        if cmd.result == "done":
            return str(rules.WaitState.RETIRED)  # it is over either way, and now written so
        raise WaitOver(cmd.task_id, cmd.wait_id, rules.WaitState.RETIRED, retired[cmd.wait_id])
    row = _the_open_wait(tx, cmd.task_id, cmd.wait_id)
    if cmd.result == "done":
        _end(tx, row, "settled", cmd.note, actor)
        return str(rules.WaitState.SETTLED)
    refusal = rules.wait_record_refusal(status)
    if refusal is not None:
        raise CommandRejected(f"task {cmd.task_id}: {refusal}")
    tx.emit(
        cmd.task_id,
        ev.WaitRescheduled(
            wait_id=cmd.wait_id,
            not_before=_when(tx, cmd.not_before, cmd.after_seconds),
            note=cmd.note,
        ),
        actor,
    )
    return str(rules.WaitState.OPEN)


@handles(CancelWait)
def _cancel(tx: Tx, cmd: CancelWait, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    row = _the_open_wait(tx, cmd.task_id, cmd.wait_id)
    refusal = rules.wait_cancel_refusal(row.recorded_by, actor.kind, actor.id, cmd.reason)
    if refusal is not None:
        raise AuthorityRefused(refusal.rule, refusal.message)
    if cmd.wait_id in _sweep(tx, cmd.task_id, actor):
        return str(rules.WaitState.RETIRED)  # its condition had ended it: now written so
    _end(tx, row, "cancelled", cmd.reason.strip(), actor)
    return str(rules.WaitState.CANCELLED)
