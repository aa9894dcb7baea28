"""`boris verify [TASK]`: check the record end to end (see store.verify), like `git fsck`.

Prints `ok` when the store (or TASK) is clean, else one line per problem
(`TASK: KIND: message`); info items, which are not errors (a fork, an effect's intended
content the store was never given), are printed as `info: …` lines either way. `--json`
prints the whole report instead. When there are problems the command ends with
`VerifyFailed` (a StoreError whose message is the summary), so `boris` exits 3 (an
integrity problem); with `--json` the refusal object carries the report in `details.report`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from . import answers
from .store import Store
from .verify import VerifyFailed, verify

Add = Callable[[str, Any, str], argparse.ArgumentParser]


def cmd_verify(store: Store, args: argparse.Namespace) -> None:
    report = verify(store, args.task, remember=not args.no_remember)
    if args.json:
        # Clean: the report is the result. Not clean: the refusal object carries it
        # (`details.report`), printed by `boris` with the integrity exit code.
        if report.ok:
            print(json.dumps(answers.ok(report.to_json()), indent=2, sort_keys=True))
    else:
        lines = [p.line() for p in report.problems]
        lines += [f"info: {i.line()}" for i in report.info]
        if report.remember_error is not None:
            lines.append(f"warning: {report.remember_error}")
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
