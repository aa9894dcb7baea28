"""`boris decide-batch FILE|-`: several pending approvals decided in one pass (issue 42).

Each line of FILE (or stdin, `-`) is one JSON object, a batch item (store.services.batch's
`BatchItem`): `{"task_id", "approval_id", "verdict", "based_on", "note", "edited",
"edited_message", "result"}`
where `verdict` is approve, reject, send-back or respond (the store's words are taken too)
and `based_on` the payload digest you decided on (`boris approvals TASK --json` shows it as
`payload_digest`). A malformed line refuses the whole batch before anything is written; then
each item is recorded on its own, signed by you: a stale one is refused with its conflict, the
others recorded. One line per item is printed (`--json`: `{"results": [...]}` and the counts);
the exit code is 0 when the batch was read, whatever each item's result.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ..services import answers
from ..services.batch import BatchItem, BatchItemResult, decide_batch
from ..store import Store
from .output import _actor, _print

Add = Callable[[str, Any], argparse.ArgumentParser]

#: The most items one batch decides (a screenful of pre-flight rows, many times over).
MAX_ITEMS = 1000


def read_items(text: str, where: str) -> list[BatchItem]:
    """The batch's items, every line checked before any is decided."""
    items: list[BatchItem] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append(BatchItem.model_validate(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise answers.UsageError(f"{where} line {n} is not JSON: {exc.msg}") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(map(str, first["loc"])) or "the item"
            raise answers.UsageError(f"{where} line {n}: {field}: {first['msg']}") from None
    if not items:
        raise answers.UsageError(f"{where} holds no batch items (one JSON object a line)")
    if len(items) > MAX_ITEMS:
        raise answers.UsageError(f"{where} holds {len(items)} items; at most {MAX_ITEMS}")
    return items


def line(r: BatchItemResult) -> str:
    head = f"{r.task_id} {r.approval_id} {r.verdict}"
    if r.recorded:
        return f"recorded  {head} -> {r.state}"
    return f"REFUSED   {head}: {r.code}: {r.message}"


def cmd_decide_batch(store: Store, args: argparse.Namespace) -> None:
    person = _actor(args.actor)
    if args.file == "-":
        text, where = sys.stdin.read(), "stdin"
    else:
        try:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise answers.UsageError(f"cannot read {args.file}: {exc.strerror}") from None
        where = args.file
    items = read_items(text, where)
    done = decide_batch(store, person, items)
    human = "\n".join(line(r) for r in done.results)
    human += f"\n{done.recorded} recorded, {done.refused} refused"
    _print(args, done.to_json(), human, recorded=done.recorded, refused=done.refused)


def register(add: Add) -> None:
    sp = add("decide-batch", cmd_decide_batch)
    sp.add_argument(
        "file",
        help="JSON lines, one item each: task_id, approval_id, verdict (approve, reject, "
        "send-back, respond), based_on (the payload digest you decided on), and note, "
        "edited or result as the verdict needs; - reads stdin",
    )
