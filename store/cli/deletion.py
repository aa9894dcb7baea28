"""`boris delete-task` and `boris receipts`: verified deletion (store.services.deletion).

`delete-task TASK --confirm TASK --reason R` is a person's decision: the task's events,
projections, checkpoints, approvals, leases, waits, signatures and the blobs only it names
are removed and a receipt kept (`--dry-run` prints what would go). `receipts` lists the
receipts (`--orphans`: blobs no event names, what an interrupted deletion leaves).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..errors import DeletionRefused
from ..services import deletion
from ..store import Store
from .output import TASK_HELP, _actor, _print

Add = Callable[[str, Any], argparse.ArgumentParser]


def cmd_delete_task(store: Store, args: argparse.Namespace) -> None:
    actor = _actor(args.actor)
    if args.dry_run:
        plan = deletion.plan_deletion(store, args.task, actor.kind, args.confirm, args.reason)
        if plan.refusal is not None:
            raise DeletionRefused(plan.refusal.message, rule=plan.refusal.rule)
        value = {
            "task_id": plan.task_id,
            "head_seq": plan.head_seq,
            "head_hash": plan.head_hash,
            "counts": plan.counts,
            "dry_run": True,
        }
        _print(args, value, "would remove:\n" + "\n".join(plan.lines()))
        return
    receipt = deletion.delete_task(
        store, args.task, actor, confirm=args.confirm, reason=args.reason
    )
    human = f"deleted task {receipt.task_id}; receipt {receipt.receipt_id}: {receipt.line()}"
    if receipt.blobs_left:
        human += (
            f"\n{len(receipt.blobs_left)} blobs could not be removed (boris receipts --orphans)"
        )
    _print(args, receipt.to_json(), human)


def cmd_receipts(store: Store, args: argparse.Namespace) -> None:
    if args.orphans:
        found = deletion.orphan_blobs(store)
        _print(args, found, "\n".join(found) or "no blob is left without an event naming it")
        return
    found_receipts = deletion.receipts(store, args.task)
    _print(
        args,
        [r.to_json() for r in found_receipts],
        "\n".join(r.line() for r in found_receipts) or "no task was deleted",
    )


def register(add: Add) -> None:
    sp = add(
        "delete-task",
        cmd_delete_task,
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--confirm", required=True, metavar="TASK", help="the task id, typed again")
    sp.add_argument("--reason", required=True, help="why it is deleted (kept in the receipt)")
    sp.add_argument(
        "--dry-run", action="store_true", help="print what would be removed; remove nothing"
    )

    sp = add("receipts", cmd_receipts)
    sp.add_argument("task", nargs="?", help="only this task's receipts")
    sp.add_argument(
        "--orphans",
        action="store_true",
        help="instead: the blobs no event names (an interrupted deletion leaves them)",
    )
