"""`boris export`, `boris import` and `boris verify-package`: a task's whole record as one
package file, and its history proved offline against a keys file.

`store.cli.build_parser` wires these with `cli_archive.register(add)`, as it does the ledger's.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..services import answers
from ..services.archive import export_with_manifest, import_package, verify_package
from ..services.verify import VerifyFailed
from ..signing.check import read_keys_file
from ..store import Store
from .output import _print

Add = Callable[[str, Any], argparse.ArgumentParser]


def cmd_export(store: Store, args: argparse.Namespace) -> None:
    path, manifest = export_with_manifest(
        store, args.task, args.out, force=args.force, include=args.include or ()
    )
    counts = manifest["counts"]
    withheld = manifest["visibility"]["withheld"]["private"]
    _print(
        args,
        {
            "task_id": manifest["task_id"],
            "package": str(path),
            "events": counts["events"],
            "checkpoints": counts["checkpoints"],
            "blobs": counts["blobs"],
            "head_seq": manifest["head_seq"],
            "head_hash": manifest["head_hash"],
            "visibility": manifest["visibility"],
        },
        f"exported task {manifest['task_id']} to {path}: {counts['events']} events, "
        f"{counts['checkpoints']} checkpoints, {counts['blobs']} blobs; carries "
        + ", ".join(manifest["visibility"]["carried"])
        + (f" (private notes withheld: {len(withheld)})" if withheld else ""),
    )


def cmd_import(store: Store, args: argparse.Namespace) -> None:
    keys = read_keys_file(Path(args.keys)) if args.keys else None
    result = import_package(store, args.package, keys=keys, trust=args.trust_key or ())
    if not result["signed"]:
        # On stderr: stdout stays the answer scripts read.
        print("boris: note: unsigned package: no signatures to check", file=sys.stderr)
    if result["already_imported"]:
        human = f"task {result['task_id']} was already imported; nothing changed"
    else:
        human = (
            f"imported task {result['task_id']}: {result['events_imported']} events, "
            f"{result['blobs']} blobs"
        )
        if result["approvals_revoked"]:
            human += "; approvals revoked (history here, not authority): " + ", ".join(
                result["approvals_revoked"]
            )
        if result["revocations_imported"]:
            human += "; keys revoked here as the package's store revoked them: " + ", ".join(
                result["revocations_imported"]
            )
    _print(args, result, human)


def cmd_verify_package(store: Store | None, args: argparse.Namespace) -> None:
    """Needs no store: the package and the keys file are all it reads."""
    report = verify_package(args.package, read_keys_file(Path(args.keys)))
    if args.json:
        if report.ok:
            print(json.dumps(answers.ok(report.to_json()), indent=2, sort_keys=True))
    else:
        lines = [p.line() for p in report.problems]
        lines += [f"info: {i.line()}" for i in report.info]
        if report.ok:
            lines.append("ok")
        print("\n".join(lines))
    if not report.ok:
        raise VerifyFailed(report)


def register(add: Add) -> None:
    sp = add("export", cmd_export)
    sp.add_argument("task", help="the task's id (boris tasks lists them)")
    sp.add_argument("out", help="the package file to write (e.g. task.tar.gz)")
    sp.add_argument("--force", action="store_true", help="replace an existing file at OUT")
    sp.add_argument(
        "--include",
        action="append",
        choices=["private"],
        help="also carry this visibility class (private notes' text); shared is always carried",
    )

    sp = add("import", cmd_import)
    sp.add_argument("package", help="the package file (.tar.gz) boris export wrote")
    sp.add_argument(
        "--keys",
        help="check its signatures against these public keys only (lines 'KEY_ID KIND:ID KEY'), "
        "not the keyring the package carries nor, in a signed store, the store's keyring",
    )
    sp.add_argument(
        "--trust-key",
        action="append",
        metavar="KEY_ID",
        help="in a signed store: vouch for this key of the package as the actor the package "
        "names for it (it is recorded as imported, signing history only); repeatable. "
        "Without it a key the store does not trust refuses the import",
    )

    sp = add(
        "verify-package",
        cmd_verify_package,
    )
    sp.add_argument("package", help="the package file (.tar.gz) boris export wrote")
    sp.add_argument(
        "--keys",
        required=True,
        help="the public keys to trust (lines 'KEY_ID KIND:ID KEY', e.g. boris keys export)",
    )
    sp.set_defaults(storeless=True)
