"""`boris record-manifest`, `boris manifests`, `boris link-manifest`, `boris
record-configuration`, `boris configuration`, `boris migrate-effect-tool`: what the model
saw and what it ran under (store.commands.manifests, store.reads.manifests).

A manifest is given as JSON (a file, or `-` for stdin): the fields of `record_manifest`
(`boris schema` prints them) without `task_id`, which the command line names. Only
digests, sizes and token counts are recorded, never the content itself.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..commands import manifests as m
from ..reads import manifests as reads
from ..services import answers
from ..store import Store
from .inputs import json_file
from .output import TASK_HELP, _print, _write

Add = Callable[[str, Any], argparse.ArgumentParser]


def _json_source(source: str) -> dict[str, Any]:
    value = json_file(source)
    if not isinstance(value, dict):
        raise answers.UsageError(f"{source} holds {type(value).__name__}, not a JSON object")
    if "task_id" in value:
        raise answers.UsageError(f"{source} names a task_id: the command line names the task")
    return value


def _record(a: argparse.Namespace) -> m.RecordManifest:
    data = _json_source(a.source)
    data.pop("type", None)
    return m.RecordManifest.model_validate({**data, "task_id": a.task})


def _link(a: argparse.Namespace) -> m.LinkManifest:
    kind, ref = ("effect", a.effect) if a.effect else ("checkpoint", a.checkpoint)
    return m.LinkManifest.model_validate(
        {"task_id": a.task, "manifest_id": a.manifest, "led_to": {"kind": kind, "id": ref}}
    )


def _tool(text: str) -> dict[str, str]:
    name, sep, digest = text.rpartition("=")
    if not sep or not name:
        raise answers.UsageError(f"--tool {text!r} is not NAME=DIGEST (write_file=sha256:…)")
    return {"name": name, "digest": digest}


def _configure(a: argparse.Namespace) -> m.RecordConfiguration:
    return m.RecordConfiguration.model_validate(
        {
            "task_id": a.task,
            "checkpoint_id": a.checkpoint,
            "provider": a.provider,
            "model": a.model,
            "parameters_digest": a.parameters_digest,
            "tools": [_tool(x) for x in a.tool or []],
            "reason": a.reason,
        }
    )


def _migrate(a: argparse.Namespace) -> m.MigrateEffectTool:
    return m.MigrateEffectTool(task_id=a.task, effect_id=a.effect, reason=a.reason)


def manifest_lines(rows: list[reads.Manifest]) -> str:
    if not rows:
        return "(no context manifests)"
    out: list[str] = []
    for r in rows:
        led = r.led_to
        to = f" -> {led.kind} {led.id}" if led else " -> (not linked)"
        model = r.model
        out.append(f"{r.manifest_id}  {r.at}  {model.provider} {model.model}{to}")
        if r.purpose:
            out.append(f"  {r.purpose}")
        for i in r.included:
            out.append(f"  + {i.kind} {i.ref} {i.digest} ({i.size} B)")
        for i in r.omitted:
            out.append(f"  - {i.kind} {i.ref} {i.digest}: left out ({i.reason})")
    return "\n".join(out)


def cmd_manifests(store: Store, args: argparse.Namespace) -> None:
    rows = reads.read_manifests(store, args.task, effect=args.effect, checkpoint=args.checkpoint)
    _print(args, [r.to_json() for r in rows], manifest_lines(rows))


def cmd_configuration(store: Store, args: argparse.Namespace) -> None:
    read = reads.read_configuration(store, args.task)
    lines = [line for r in read.transitions for line in r.changes]
    lines = lines or ["(no configuration recorded)"]
    lines += [f"effect {d.effect_id}: {d.drift}" for d in read.drift]
    _print(args, read.to_json(), "\n".join(lines))


def register(add: Add) -> None:
    sp = add(
        "record-manifest",
        _write(_record),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument(
        "source",
        metavar="FILE",
        help="the manifest as JSON (the fields of record_manifest, boris schema), or - for stdin",
    )

    sp = add("manifests", cmd_manifests)
    sp.add_argument("task", help=TASK_HELP)
    which = sp.add_mutually_exclusive_group()
    which.add_argument("--effect", help="only those that led to this effect")
    which.add_argument("--checkpoint", help="only those that led to this checkpoint")

    sp = add(
        "link-manifest",
        _write(_link),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("manifest", help="the manifest's id (boris manifests TASK)")
    to = sp.add_mutually_exclusive_group(required=True)
    to.add_argument("--effect", help="the effect it led to")
    to.add_argument("--checkpoint", help="the checkpoint it led to")

    sp = add(
        "record-configuration",
        _write(_configure),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("checkpoint", help="the checkpoint it is recorded at")
    sp.add_argument("--provider", required=True, help="the model's provider")
    sp.add_argument("--model", required=True, help="the model id")
    sp.add_argument(
        "--parameters-digest", dest="parameters_digest", help="sha256:… of its parameters"
    )
    sp.add_argument(
        "--tool",
        action="append",
        metavar="NAME=DIGEST",
        help="a tool and its definition digest (repeat for each tool in the catalogue)",
    )
    sp.add_argument("--reason", default="", help="why it changed")

    sp = add(
        "configuration",
        cmd_configuration,
    )
    sp.add_argument("task", help=TASK_HELP)

    sp = add(
        "migrate-effect-tool",
        _write(_migrate),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("effect", help="the effect's id")
    sp.add_argument("--reason", required=True, help="why the intent means the same under it")
