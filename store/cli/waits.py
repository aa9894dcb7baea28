"""`boris wait`, `boris waits`, `boris settle-wait`, `boris cancel-wait`: scheduled waits.

A wait is state in the record (store.commands.waits), so nothing has to stay awake for it:
any later process reads `boris waits TASK` or the resume brief, which lists due waits under
"Re-evaluate", and settles or reschedules them. Times are on the database's clock.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .. import commands as c
from .. import rules
from ..reads.waits import Wait, waits
from ..services import answers
from ..store import Store
from .output import TASK_HELP, _print, _write

Add = Callable[[str, Any], argparse.ArgumentParser]

WAIT_HELP = "the wait's id (boris waits TASK lists them)"
_KINDS = ["rate_limit", "approval", "status_check", "retry", "time"]


def _reserve(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    counter, sep, amount = text.partition("=")
    try:
        value = float(amount)
    except ValueError:
        value = None
    if not sep or not counter.strip() or value is None:
        raise answers.UsageError(f"--reserve {text!r} is not COUNTER=AMOUNT (tool_calls=1)")
    return {"counter": counter.strip(), "amount": value}


def _record(a: argparse.Namespace) -> c.RecordWait:
    return c.RecordWait(
        task_id=a.task,
        kind=a.kind,
        ref=a.ref,
        not_before=a.not_before,
        after_seconds=a.after,
        reserve=_reserve(a.reserve),  # type: ignore[arg-type]  # validated by the model
        cancel_if=a.cancel_if,
        wait_id=a.id,
        note=a.note,
    )


def _settle(a: argparse.Namespace) -> c.SettleWait:
    return c.SettleWait(
        task_id=a.task,
        wait_id=a.wait,
        result="done" if a.done else "reschedule",
        not_before=a.not_before,
        after_seconds=a.after,
        note=a.note,
    )


def _cancel(a: argparse.Namespace) -> c.CancelWait:
    return c.CancelWait(task_id=a.task, wait_id=a.wait, reason=a.reason)


def cmd_waits(store: Store, args: argparse.Namespace) -> None:
    read = waits(store, args.task)
    _print(args, read, _table(read.waits, read.now))


def _table(rows: list[Wait], now: str) -> str:
    if not rows:
        return f"(no waits; database clock {now})"
    lines = [f"database clock {now}"]
    for w in rows:
        when = ("due since " if w.due else "consider at ") + w.not_before
        if w.state != rules.WaitState.OPEN:
            when = f"{w.state}" + (f": {w.end_reason}" if w.end_reason else "")
        extra = []
        if w.reservation:
            r = w.reservation
            extra.append(f"reserves {r.amount:g} {r.counter}")
        if w.condition:
            extra.append(w.condition.words)
        if w.needs_person:
            extra.append(f"needs a person: {w.needs_person}")
        lines.append(
            f"{w.wait_id:<20} {w.waiting_for:<32} {when}"
            + ("".join(f"\n{'':<21}{x}" for x in extra))
        )
    return "\n".join(lines)


def _when(sp: argparse.ArgumentParser, *, done: bool = False) -> None:
    group = sp.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--not-before",
        dest="not_before",
        help="when to consider it again: an ISO 8601 time with its zone (2026-12-24T09:00:00Z)",
    )
    group.add_argument(
        "--after",
        type=float,
        help="when to consider it again: this many seconds from now, on the database's clock",
    )
    if done:
        group.add_argument("--done", action="store_true", help="done waiting: the wait ends")


def register(add: Add) -> None:
    sp = add(
        "wait",
        _write(_record),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--for", dest="kind", required=True, choices=_KINDS, help="what it waits for")
    sp.add_argument("--ref", default="", help="on what: an approval id, an effect id, a host, …")
    _when(sp)
    sp.add_argument(
        "--reserve",
        metavar="COUNTER=AMOUNT",
        help="budget to hold for it (tool_calls=1), reserved now and released when it ends",
    )
    sp.add_argument(
        "--cancel-if",
        dest="cancel_if",
        help="what cancels it: approval-rejected:ID, effect-reconciled:ID, or free text",
    )
    sp.add_argument("--id", help="the wait's id (default: generated, printed)")
    sp.add_argument("--note", default="", help="why it waits, in a line")

    sp = add("waits", cmd_waits)
    sp.add_argument("task", help=TASK_HELP)

    sp = add(
        "settle-wait",
        _write(_settle),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("wait", help=WAIT_HELP)
    _when(sp, done=True)
    sp.add_argument("--note", default="", help="what the re-evaluation found")

    sp = add(
        "cancel-wait",
        _write(_cancel),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("wait", help=WAIT_HELP)
    sp.add_argument("--reason", default="", help="why (a person must say)")
