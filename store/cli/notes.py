"""`boris note`: a remark or a message to the agent in a task's history.

`--private` keeps the text out of an export unless the export asks for private notes
(store.services.archive); `--retain CLASS` lets the text expire (store.commands.retention),
after which a tombstone keeps its digest and size.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .. import commands as c
from .. import rules
from ..store import Store
from .output import TASK_HELP, _actor, _print, execute
from .retention import retain_arg

Add = Callable[[str, Any], argparse.ArgumentParser]


def cmd_note(store: Store, args: argparse.Namespace) -> None:
    visibility = rules.Visibility.PRIVATE if args.private else rules.Visibility.SHARED
    actor = _actor(args.actor)
    note_id = execute(
        store,
        c.RecordNote(
            task_id=args.task,
            text=args.text,
            kind=args.kind,
            visibility=visibility,
            retain=args.retain,
        ),
        args,
        actor,
    )
    said = f"{visibility.value} {args.kind} recorded on {args.task}"
    if note_id is not None:
        said += f" as {note_id} (retained: {args.retain})"
    _print(
        args,
        {"task_id": args.task, "visibility": visibility.value, "note_id": note_id},
        said,
    )


def register(add: Add) -> None:
    sp = add("note", cmd_note)
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("text", help="the note")
    sp.add_argument(
        "--kind",
        choices=["note", "message"],
        default="note",
        help="a remark (note, the default) or a message to the agent",
    )
    sp.add_argument(
        "--private",
        action="store_true",
        help="a private note: its text stays out of an export unless --include private",
    )
    retain_arg(sp)
