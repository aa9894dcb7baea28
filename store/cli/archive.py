"""`boris export` and `boris import`: a task's whole record as one package file.

`store.cli.build_parser` wires these with `cli_archive.register(add)`, as it does the ledger's.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..services.archive import export_with_manifest, import_package
from ..store import Store
from .output import _print

Add = Callable[[str, Any, str], argparse.ArgumentParser]


def cmd_export(store: Store, args: argparse.Namespace) -> None:
    path, manifest = export_with_manifest(store, args.task, args.out, force=args.force)
    counts = manifest["counts"]
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
        },
        f"exported task {manifest['task_id']} to {path}: {counts['events']} events, "
        f"{counts['checkpoints']} checkpoints, {counts['blobs']} blobs",
    )


def cmd_import(store: Store, args: argparse.Namespace) -> None:
    result = import_package(store, args.package)
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
    _print(args, result, human)


def register(add: Add) -> None:
    sp = add("export", cmd_export, "write a task's whole record to one package (.tar.gz)")
    sp.add_argument("task", help="the task's id (boris tasks lists them)")
    sp.add_argument("out", help="the package file to write (e.g. task.tar.gz)")
    sp.add_argument("--force", action="store_true", help="replace an existing file at OUT")

    sp = add("import", cmd_import, "verify a task package, then add its task to the store")
    sp.add_argument("package", help="the package file (.tar.gz) boris export wrote")
