"""`boris retain`, `boris expire`, `boris retention`: how long content is kept, and its expiry
(store.commands.retention, store.services.retention; issue 35 part R).

`retain TASK ITEM --class C` changes an item's class (a person any; an agent only what it
wrote). `expire [--task T] [--dry-run]` retires everything due on the database's clock (a
person's act): a tombstone per item, then the blobs nothing live names. `retention TASK`
lists the classes, due times and tombstones.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .. import commands as c
from ..commands.retention import RETAIN_HELP, SetRetention
from ..reads.retention import retention
from ..services import retention as service
from ..store import Store
from .output import TASK_HELP, _actor, _print, _write

Add = Callable[[str, Any], argparse.ArgumentParser]


def retain_arg(sp: argparse.ArgumentParser) -> None:
    """`--retain CLASS` on the commands that record content (record-artifact, attach-evidence)."""
    sp.add_argument("--retain", metavar="CLASS", help=RETAIN_HELP)


def _retain(a: argparse.Namespace) -> c.Command:
    return SetRetention(task_id=a.task, item=a.item, retain=a.retain_class, reason=a.reason)


def cmd_expire(store: Store, args: argparse.Namespace) -> None:
    if args.dry_run:
        due = service.due_now(store, args.task)
        lines = [f"would retire {x['task_id']} {x['item_kind']} {x['item_id']}" for x in due]
        _print(args, {"due": due, "dry_run": True}, "\n".join(lines) or "nothing is due")
        return
    actor = _actor(args.actor)
    done = service.expire(store, actor, args.task)
    lines = [
        f"retired {x['task_id']} {x['item_kind']} {x['item_id']} (digest {x['digest']})"
        for x in done["retired"]
    ]
    lines.append(f"{len(done['blobs_removed'])} blob(s) removed")
    _print(args, done, "\n".join(lines))


def cmd_retention(store: Store, args: argparse.Namespace) -> None:
    read = retention(store, args.task)
    lines = [f"database clock {read.now}"]
    for x in read.items:
        if x.tombstone is not None:
            when = f"{x.tombstone.words} [{x.weight}]"
        elif x.due_at is None:
            when = "not due" if x.retain == "keep" else "due after completion"
        else:
            when = ("due since " if x.due else "due at ") + x.due_at
        lines.append(f"{x.item_kind:<17} {x.item_id:<24} {x.retain:<22} {when}")
    if not read.items:
        lines.append("(every item is kept: none was given a retention class)")
    _print(args, read, "\n".join(lines))


def register(add: Add) -> None:
    sp = add(
        "retain",
        _write(_retain),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument(
        "item", help="ARTIFACT@VERSION (report@2), an evidence id, or a note's id (note-…)"
    )
    sp.add_argument("--class", dest="retain_class", required=True, help=RETAIN_HELP)
    sp.add_argument("--reason", default="", help="why, in a line")

    sp = add(
        "expire",
        cmd_expire,
    )
    sp.add_argument("--task", help="only this task (default: every task)")
    sp.add_argument("--dry-run", action="store_true", help="print what is due; retire nothing")

    sp = add("retention", cmd_retention)
    sp.add_argument("task", help=TASK_HELP)
