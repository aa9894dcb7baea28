"""`boris verify [TASK]`: check the record end to end (see store.verify), like `git fsck`.

Prints `ok` when the store (or TASK) is clean, else one line per problem
(`TASK: KIND: message`); info items, which are not errors (a fork, an effect's intended
content the store was never given), are printed as `info: …` lines either way. `--json`
prints the whole report instead, each finding with its `seq`, `key_id`, `digest` and `code`
as fields (`boris schema`: `x-outputs.verify`). When there are problems the command ends with
`VerifyFailed` (a StoreError whose message is the summary), so `boris` exits 3 (an
integrity problem); with `--json` the refusal object carries the report in `details.report`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..services import answers
from ..services.verify import VerifyFailed, verify
from ..signing.check import read_keys_file
from ..store import Store

Add = Callable[[str, Any], argparse.ArgumentParser]


def cmd_verify(store: Store, args: argparse.Namespace) -> None:
    keys = read_keys_file(Path(args.keys)) if args.keys else None
    report = verify(store, args.task, remember=not args.no_remember and keys is None, keys=keys)
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
        if report.ok and not report.signed:
            # On stderr: stdout stays the report scripts read ("ok" when clean).
            print("boris: note: unsigned store: no signatures to check", file=sys.stderr)
        if report.ok:
            lines.append("ok")
        print("\n".join(lines))
    if not report.ok:
        raise VerifyFailed(report)


def register(add: Add) -> None:
    sp = add(
        "verify",
        cmd_verify,
    )
    sp.add_argument("task", nargs="?", help="one task (default: every task)")
    sp.add_argument(
        "--no-remember",
        action="store_true",
        help="do not record the heads found clean (the next verify compares with older ones)",
    )
    sp.add_argument(
        "--keys",
        help="check signatures against these public keys only (lines 'KEY_ID KIND:ID KEY'), "
        "trusting nothing in the store",
    )
