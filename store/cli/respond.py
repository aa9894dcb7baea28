"""`boris respond TASK APPROVAL --result-json JSON`: answer as the tool (issue 42).

A person supplies the result of the call an approval asked about instead of letting it run:
checked against the result schema the request carries, recorded as answered by them (their
signed `approval.answered`), never as run. `--json` prints `{"ok": true, "result": "answered",
"answer": {…}}` with the result, its digest and who answered.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..services import respond as service
from ..store import Store
from .inputs import parse_json
from .output import TASK_HELP, _actor, _print

Add = Callable[[str, Any], argparse.ArgumentParser]


def cmd_respond(store: Store, args: argparse.Namespace) -> None:
    person = _actor(args.actor)
    result = parse_json(args.result_json, "--result-json")
    answer = service.respond(
        store,
        person,
        args.task,
        args.approval,
        result,
        note=args.note,
        based_on=args.based_on,
    )
    facts = {
        "answer": {
            "task_id": answer.task_id,
            "approval_id": answer.approval_id,
            "result": answer.result,
            "result_digest": answer.result_digest,
            "answered_by": f"{answer.answered_by.kind}:{answer.answered_by.id}",
            "answered_at": answer.answered_at,
            "schema_checked": answer.schema_checked,
            "seq": answer.seq,
        }
    }
    _print(args, "answered", f"answered {answer.approval_id} ({answer.result_digest})", **facts)


def register(add: Add) -> None:
    sp = add("respond", cmd_respond)
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("approval", help="the approval's id (boris approvals lists them)")
    sp.add_argument(
        "--result-json",
        required=True,
        help="the tool's result as you give it (any JSON value), checked against the result "
        "schema the request carries",
    )
    sp.add_argument("--note", default="", help="the reviewer's note, kept with the answer")
    sp.add_argument(
        "--based-on",
        help="the payload digest you answered (boris approvals shows it): refused if it "
        "changed since",
    )
