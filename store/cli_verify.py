"""`boris verify [TASK]`: check the record end to end (see store.verify), like `git fsck`.

Prints `ok` when the store (or TASK) is clean, else one line per problem
(`TASK: KIND: message`); info items, which are not errors (a fork, an effect's intended
content the store was never given), are printed as `info: …` lines either way. `--json`
prints the whole report instead. When there are problems the command ends with
`VerifyFailed` (a StoreError whose message is the summary), so `boris` exits non-zero.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from .errors import StoreFull, StoreReadOnly
from .store import Store
from .verify import VerifyFailed, verify

Add = Callable[[str, Any, str], argparse.ArgumentParser]


def cmd_verify(store: Store, args: argparse.Namespace) -> None:
    remember = not args.no_remember
    not_remembered = ""
    if remember and store.read_only:
        remember, not_remembered = False, "the store is read-only here"
    try:
        report = verify(store, args.task, remember=remember)
    except (StoreFull, StoreReadOnly) as exc:
        if not remember:
            raise
        # Checking needs no space; only remembering the heads found clean does. Check again
        # without it, and say what could not be kept.
        try:
            report = verify(store, args.task, remember=False)
        except StoreFull:
            raise StoreFull(
                "the disk holding the store is full: verify needs a little room for its "
                "replay; free some space and run it again"
            ) from exc
        not_remembered = str(exc).split(";")[0]
    if args.json:
        print(json.dumps(report.to_json(), indent=2, sort_keys=True))
    else:
        lines = [p.line() for p in report.problems]
        lines += [f"info: {i.line()}" for i in report.info]
        if not_remembered:
            lines.append(f"info: the heads found clean were not remembered: {not_remembered}")
        if report.ok:
            lines.append("ok")
        print("\n".join(lines))
    if not report.ok:
        raise VerifyFailed(report)


def register(add: Add) -> None:
    sp = add(
        "verify",
        cmd_verify,
        "check hash chains, blobs, projections, lineage, approvals and budgets; "
        "exit non-zero naming each problem",
    )
    sp.add_argument("task", nargs="?", help="one task (default: every task)")
    sp.add_argument(
        "--no-remember",
        action="store_true",
        help="do not record the heads found clean (the next verify compares with older ones)",
    )
