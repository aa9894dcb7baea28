"""`boris decisions`: the decision queue from the command line, as the window's shows it.

What is open, and in what order, is `store.reads.decisions`; who may make a decision
(`--mine`) is `store.rules.may_decide`, the rule the window's "Mine" filter asks. This module
only filters and prints. `--json` prints the read's own model (store.reads.decisions.Decisions:
`{"now", "decider", "decisions": [row, …]}`, `boris schema`: `x-outputs.decisions`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .. import rules
from ..errors import UnknownTask
from ..reads.decisions import KINDS, Decision, decisions
from ..services import answers
from ..store import Store
from .output import _actor_if_given, _print

Add = Callable[[str, Any], argparse.ArgumentParser]

#: The human table's widths: a decision's `what` is cut to fit a terminal line.
_WHAT_WIDTH = 48


def cmd_decisions(store: Store, args: argparse.Namespace) -> None:
    decider = _actor_if_given(args.actor)
    if args.mine and decider is None:
        raise answers.UsageError(
            "--mine lists the decisions you may make, so it needs who you are: add "
            "--actor person:ID (or agent:ID), or set BORIS_ACTOR"
        )
    if args.task:
        known = set(store.task_ids())
        for task_id in args.task:
            if task_id not in known:
                raise UnknownTask(task_id)
    read = decisions(store)
    rows = [
        d
        for d in read.decisions
        if (not args.kind or d.kind in args.kind)
        and (not args.task or d.task_id in args.task)
        and (not args.mine or (decider is not None and _may_decide(d, decider.kind, decider.id)))
    ]
    who = f"{decider.kind}:{decider.id}" if args.mine and decider is not None else None
    shown = read.model_copy(update={"decider": who, "decisions": rows})
    _print(args, shown.to_json(), _table(rows))


def _may_decide(d: Decision, actor_kind: str, actor_id: str) -> bool:
    requester = None if d.requester is None else d.requester.to_json()
    return rules.may_decide(d.kind, requester, actor_kind, actor_id, d.waits_on)


def _table(rows: list[Decision]) -> str:
    if not rows:
        return "(no open decisions)"
    # The kind column is as wide as the longest kind this program knows (late_changes).
    kind_width = max(len(k) for k in KINDS)
    lines = [
        f"{'KIND':<{kind_width}} {'TASK':<20} {'KEY':<20} {'WHAT':<{_WHAT_WIDTH}} {'WAITING SINCE':<20} EXPIRES"
    ]
    for d in rows:
        lines.append(
            f"{d.kind:<{kind_width}} {d.task_id:<20} {d.key:<20} "
            f"{_cut(d.what, _WHAT_WIDTH):<{_WHAT_WIDTH}} {_second(d.since):<20} "
            f"{_second(d.expires_at) or '-'}"
        )
    return "\n".join(lines)


def _cut(text: Any, width: int) -> str:
    one_line = " ".join(str(text or "").split())
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"


def _second(at: str | None) -> str:
    """2026-12-06T09:33:07.286072Z as 2026-12-06T09:33:07Z: to the second, as people read it."""
    if not at:
        return ""
    return at.split(".")[0].removesuffix("Z") + "Z"


def register(add: Add) -> None:
    sp = add(
        "decisions",
        cmd_decisions,
    )
    sp.add_argument(
        "--mine",
        action="store_true",
        help="only those the rules let --actor (or BORIS_ACTOR) make: an approval, a "
        "conflict or a resume a person's (an approval not its requester's); a reconcile by "
        "observation or a judgement anyone's",
    )
    sp.add_argument(
        "--kind",
        action="append",
        choices=list(KINDS),
        help="only decisions of this kind (repeat for more)",
    )
    sp.add_argument("--task", action="append", help="only this task's decisions (repeat for more)")
