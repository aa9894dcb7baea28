"""`boris late`, `boris acknowledge`, `boris follow-up`: what changed after a task completed,
and a person's answer to it (store.reads.late, store.commands.late; issue 35 part L).

`late TASK` lists the late facts not answered yet. `acknowledge TASK --through SEQ` says no
further task is needed (SEQ: the newest late fact you saw; a newer one is a conflict).
`follow-up TASK --title T` opens a new task from this one's objective and scope (edited by
`--objective`), naming this one as its origin. Both are a person's decisions.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..commands.late import AcknowledgeLateChanges, OpenFollowup
from ..reads.late import late_view
from ..store import Store
from .output import TASK_HELP, _print, _write

Add = Callable[[str, Any], argparse.ArgumentParser]

_THROUGH = "the seq of the newest late fact you saw (boris late TASK); a newer one is a conflict"


def cmd_late(store: Store, args: argparse.Namespace) -> None:
    read = late_view(store, args.task)
    if not read.count:
        lines = ["nothing changed after completion that a person has not answered"]
    else:
        lines = [f"{read.words} (acknowledge through #{read.last_seq})"]
        lines += [f"#{f.seq} {f.at} {f.by}: {f.what}" for f in read.facts]
    if read.origin:
        lines.append(f"a follow-up of {read.origin.task_id}")
    _print(args, read, "\n".join(lines))


def _acknowledge(a: argparse.Namespace) -> AcknowledgeLateChanges:
    return AcknowledgeLateChanges(task_id=a.task, through_seq=a.through, note=a.note)


def _follow_up(a: argparse.Namespace) -> OpenFollowup:
    return OpenFollowup(
        task_id=a.task,
        through_seq=a.through,
        title=a.title,
        objective=a.objective,
        followup_task_id=a.id,
        note=a.note,
    )


def register(add: Add) -> None:
    sp = add("late", cmd_late)
    sp.add_argument("task", help=TASK_HELP)

    sp = add(
        "acknowledge",
        _write(_acknowledge),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--through", type=int, required=True, metavar="SEQ", help=_THROUGH)
    sp.add_argument("--note", default="", help="why, in a line")

    sp = add(
        "follow-up",
        _write(_follow_up),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--title", required=True, help="the follow-up task's title")
    sp.add_argument("--through", type=int, required=True, metavar="SEQ", help=_THROUGH)
    sp.add_argument("--objective", help="its objective (default: this task's, as a draft)")
    sp.add_argument("--id", help="its id (default: a new one)")
    sp.add_argument("--note", default="", help="why, in a line")
