"""`boris resume`, `summary` and `narrative`: accounts of a task for the next actor."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..commands.narrative import ClaimIn, RecordNarrative
from ..model import Actor
from ..services import answers
from ..services.narratives import narratives, record_summary, summary_markdown
from ..services.resume import brief_markdown, resume_brief
from ..store import Store
from .output import _actor, execute, lease_token_of


def _dump(value: Any) -> None:
    """The one result object of `--json` (store.answers)."""
    print(json.dumps(answers.ok(value), indent=2, default=str, sort_keys=True))


def cmd_resume(store: Store, args: argparse.Namespace) -> None:
    brief = resume_brief(store, args.task)
    if args.json:
        _dump(brief)
    else:
        print(brief_markdown(brief), end="")


def cmd_summary(store: Store, args: argparse.Namespace) -> None:
    if args.record:
        actor = _actor(args.actor)
        result = record_summary(store, args.task, actor, lease_token=lease_token_of(args))
        if args.json:
            _dump(result)
        else:
            print(f"summary v{result['version']} recorded ({result['digest']})")
        return
    text = summary_markdown(store, args.task)
    if args.json:
        _dump({"task_id": args.task, "markdown": text})
    else:
        print(text, end="")


def _claim(text: str) -> ClaimIn:
    criterion, sep, status = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"a claim is CRITERION=STATUS, not {text!r}")
    return ClaimIn.model_validate({"criterion_id": criterion, "status": status})


def cmd_narrative(store: Store, args: argparse.Namespace) -> None:
    if args.text is None:
        found = narratives(store, args.task)
        if args.json:
            _dump(found)
            return
        for n in found:
            print(f"{n.id} seq {n.seq} by {n.actor.kind}:{n.actor.id}")
            for d in n.discrepancies:
                print(f"  DISAGREES: {d.message}")
        return
    actor: Actor = _actor(args.actor)  # never guessed
    nid = execute(
        store,
        RecordNarrative(task_id=args.task, text=args.text, claims=list(args.claim)),
        args,
        actor,
    )
    if args.json:
        _dump(nid)
    else:
        print(nid)


TASK_HELP = "the task's id (boris tasks lists them)"


def register(add: Any) -> None:
    add("resume", cmd_resume).add_argument("task", help=TASK_HELP)
    sp = add("summary", cmd_summary)
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--record", action="store_true", help="keep it as a new artifact version")
    sp = add("narrative", cmd_narrative)
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--text", help="the narrative to record (omit to list)")
    sp.add_argument(
        "--claim",
        action="append",
        type=_claim,
        default=[],
        help="CRITERION=STATUS the narrative claims, STATUS one of satisfied, failed, waived, "
        "unverified (repeat for more)",
    )
