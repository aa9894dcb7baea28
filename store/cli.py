"""`boris`: the command line for agents in any language, scripts and tests.

Exit 0 on success; otherwise non-zero with a one-line reason on stderr. `--json` gives
machine-readable output on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from pydantic import TypeAdapter, ValidationError

from . import answers
from . import commands as c
from .errors import StoreError
from .model import Actor
from .store import Store
from .version import __version__


def _actor(text: str | None) -> Actor:
    raw = text or os.environ.get("BORIS_ACTOR") or f"person:{os.environ.get('USER', 'reviewer')}"
    return Actor.parse(raw)


def _print(args: argparse.Namespace, value: Any, human: str) -> None:
    if args.json:
        print(json.dumps(value, indent=2, default=str, sort_keys=True))
    else:
        print(human)


COMMAND_TYPES: list[type[c.Command]] = c.command_classes()

#: The only commands that make a store where there is none; every other one says so.
CREATING_COMMANDS = frozenset({"init", "demo", "create-task", "import", "mcp"})


def _command_adapter() -> TypeAdapter[Any]:
    from typing import Annotated, Union

    from pydantic import Field

    union = Union[tuple(COMMAND_TYPES)]  # type: ignore[valid-type]  # noqa: UP007
    return TypeAdapter(Annotated[union, Field(discriminator="type")])  # type: ignore[arg-type]


def cmd_init(store: Store, args: argparse.Namespace) -> None:
    _print(
        args, {"store": store.location.describe()}, f"store ready at {store.location.describe()}"
    )


def cmd_demo(store: Store, args: argparse.Namespace) -> None:
    from .demo import fill_demo

    ids = fill_demo(store)
    _print(args, {"tasks": ids}, "demo tasks: " + ", ".join(ids))


def cmd_tasks(store: Store, args: argparse.Namespace) -> None:
    rows = store.tasks()
    lines = [f"{r['id']:<22} {r['status']:<18} {r['title']}" for r in rows] or ["(no tasks)"]
    _print(args, rows, "\n".join(lines))


def cmd_show(store: Store, args: argparse.Namespace) -> None:
    s = store.task(args.task)
    if args.json:
        _print(args, s, "")
        return
    out = [f"{s['title']}  [{s['status']}]  id {s['id']}  owner {s['owner']}"]
    out.append(f"objective (rev {s['objective']['rev']}): {s['objective']['text']}")
    for cr in s["criteria"]:
        against = (
            f" against {cr['artifact_id']} v{cr['artifact_version']}" if cr["artifact_id"] else ""
        )
        out.append(f"  criterion {cr['criterion_id']}: {cr['status']}{against} — {cr['text']}")
    for a in s["artifacts"]:
        cur = a["current"]
        out.append(
            f"  artifact {a['artifact_id']} v{a['current_version']} {cur['digest'][:19]} {cur['size']} B"
        )
    for b in s["budgets"]:
        out.append(f"  budget {b['counter']}: {_budget(b['used'], b['limit_value'])}")
    for p in s["problems"]:
        out.append(f"  PROBLEM {p['kind']} {p['id']}: blob {p['digest']} is {p['problem']}")
    print("\n".join(out))


def _number(value: float) -> str:
    """2.0 as 2, 0.25 as 0.25: amounts as a person writes them."""
    return f"{value:g}" if abs(value) < 1e15 else f"{value:.0f}"


def _budget(used: float, limit: float | None) -> str:
    if limit is None:
        return f"{_number(used)} (no limit)"
    return f"{_number(used)} / {_number(limit)}"


def cmd_events(store: Store, args: argparse.Namespace) -> None:
    rows = store.events(args.task)
    _print(
        args,
        rows,
        "\n".join(
            f"{r['seq']:>6} {r['at']} {r['type']:<28} {r['actor']['kind']}:{r['actor']['id']}"
            for r in rows
        ),
    )


def cmd_schema(store: Store | None, args: argparse.Namespace) -> None:
    """Every command's JSON Schema, and under `x-authority` who may run each one (actor
    kinds, and the cases that are a person's), from `store.rules.AUTHORITY`."""
    from . import rules

    schema = _command_adapter().json_schema()
    types = sorted(str(cls.model_fields["type"].default) for cls in c.command_classes())
    schema["x-authority"] = {t: rules.authority_of(t).as_json() for t in types}
    print(json.dumps(schema, indent=2, sort_keys=True))


def cmd_ingest(store: Store, args: argparse.Namespace) -> None:
    """JSON lines of commands, all or nothing: the first bad line is named and nothing lands."""
    stream = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")
    adapter = _command_adapter()
    parsed: list[c.Command] = []
    with stream:
        for n, raw in enumerate(stream, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise StoreError(
                    f"line {n}: not UTF-8 text (byte {exc.start + 1} of the line); "
                    "nothing was written"
                ) from None
            if not line.strip():
                continue
            try:
                parsed.append(adapter.validate_json(line))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(x) for x in first["loc"])
                msg = " ".join(str(first["msg"]).split())
                raise StoreError(
                    f"line {n}: {where + ': ' if where else ''}{msg}; nothing was written"
                ) from None
    actor = _actor(args.actor)
    try:
        with store.transaction() as tx:
            results = []
            for n, command in enumerate(parsed, 1):
                try:
                    results.append(c.execute(tx, command, actor))
                except StoreError as exc:
                    raise StoreError(
                        f"command {n} ({getattr(command, 'type', '?')}): {exc}; nothing was written"
                    ) from None
    except StoreError:
        raise
    _print(args, {"applied": len(parsed), "results": results}, f"applied {len(parsed)} commands")


def _write(build: Any) -> Any:
    def run(store: Store, args: argparse.Namespace) -> None:
        result = store.execute(build(args), _actor(args.actor))
        _print(args, {"result": result}, str(result) if result is not None else "ok")

    return run


def _content(args: argparse.Namespace) -> c.Content:
    if args.file:
        return c.Content(path=args.file, media_type=args.media_type)
    if args.text is not None:
        return c.Content(text=args.text, media_type=args.media_type)
    return c.Content(text=sys.stdin.read(), media_type=args.media_type)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, like every other failure."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"boris: {message} (see {self.prog} --help)\n")


def _global_options(p: argparse.ArgumentParser, default: Any) -> None:
    p.add_argument(
        "--store",
        default=default,
        help="store directory (default: BORIS_STORE or the user data dir)",
    )
    p.add_argument(
        "--url",
        default=default,
        help="database URL (e.g. postgresql+psycopg://…); blobs stay in --store",
    )
    p.add_argument("--json", action="store_true", default=default, help="machine-readable output")
    p.add_argument(
        "--actor",
        default=default,
        help="who acts: kind:id[:name] (default BORIS_ACTOR or person:$USER)",
    )


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="boris", description="The durable record of agents' tasks.")
    p.add_argument("--version", action="version", version=f"boris {__version__}")
    # The global options are accepted before or after the subcommand.
    common = _Parser(add_help=False)
    _global_options(p, argparse.SUPPRESS)
    _global_options(common, argparse.SUPPRESS)
    p.set_defaults(store=None, url=None, json=False, actor=None)
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, fn: Any, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, parents=[common])
        sp.set_defaults(fn=fn)
        return sp

    add("init", cmd_init, "create the store if it does not exist")
    add("demo", cmd_demo, "fill the store with demo tasks on real files")
    add("tasks", cmd_tasks, "list tasks, those needing attention first")
    add("show", cmd_show, "a task's whole current state").add_argument("task")
    add("events", cmd_events, "a task's event history").add_argument("task")
    add("schema", cmd_schema, "JSON Schema of every command (for writers in other languages)")
    add("ingest", cmd_ingest, "apply JSON lines of commands, all or nothing").add_argument("file")

    sp = add(
        "create-task",
        _write(
            lambda a: c.CreateTask(
                task_id=a.id,
                title=a.title,
                owner=a.owner,
                objective=a.objective,
                scope_paths=[os.path.abspath(x) for x in a.scope],
                destinations=a.destination,
            )
        ),
        "create a task",
    )
    sp.add_argument("--id")
    sp.add_argument("--title", required=True)
    sp.add_argument("--owner", required=True)
    sp.add_argument("--objective", required=True)
    sp.add_argument("--scope", action="append", default=[], help="a path the task may touch")
    sp.add_argument(
        "--destination", action="append", default=[], help="a URL prefix it may send to"
    )

    sp = add(
        "amend",
        _write(lambda a: c.AmendObjective(task_id=a.task, text=a.text, reason=a.reason)),
        "amend the objective",
    )
    sp.add_argument("task")
    sp.add_argument("--text", required=True)
    sp.add_argument("--reason", required=True)

    sp = add(
        "add-criterion",
        _write(lambda a: c.AddCriterion(task_id=a.task, text=a.text, criterion_id=a.id)),
        "add an acceptance criterion",
    )
    sp.add_argument("task")
    sp.add_argument("--text", required=True)
    sp.add_argument("--id")

    def content_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--file", help="a file inside the task's scope")
        sp.add_argument("--text", help="the content itself (else read from stdin)")
        sp.add_argument("--media-type")

    sp = add(
        "record-artifact",
        _write(
            lambda a: c.RecordArtifact(
                task_id=a.task,
                name=a.name,
                artifact_id=a.id,
                role=a.role,
                content=_content(a),
                note=a.note,
            )
        ),
        "record a new artifact version",
    )
    sp.add_argument("task")
    sp.add_argument("name")
    sp.add_argument("--id")
    sp.add_argument("--role", default="draft")
    sp.add_argument("--note", default="")
    content_args(sp)

    sp = add(
        "attach-evidence",
        _write(
            lambda a: c.AttachEvidence(
                task_id=a.task,
                criterion_id=a.criterion,
                kind=a.kind,
                content=_content(a),
                evidence_id=a.id,
                description=a.description,
                locator=a.locator,
            )
        ),
        "attach evidence to a criterion",
    )
    sp.add_argument("task")
    sp.add_argument("criterion")
    sp.add_argument("--kind", required=True)
    sp.add_argument("--id")
    sp.add_argument("--description", default="")
    sp.add_argument("--locator", default="")
    content_args(sp)

    sp = add(
        "judge",
        _write(
            lambda a: c.JudgeCriterion(
                task_id=a.task,
                criterion_id=a.criterion,
                status=a.status,
                artifact_id=a.artifact,
                artifact_version=a.version,
                evidence_ids=a.evidence,
                note=a.note,
            )
        ),
        "mark a criterion satisfied, failed, waived or unverified",
    )
    sp.add_argument("task")
    sp.add_argument("criterion")
    sp.add_argument("status", choices=["satisfied", "failed", "waived", "unverified"])
    sp.add_argument("--artifact")
    sp.add_argument("--version", type=int)
    sp.add_argument("--evidence", action="append", default=[])
    sp.add_argument("--note", default="")

    sp = add(
        "set-budget",
        _write(lambda a: c.SetBudget(task_id=a.task, counter=a.counter, limit=a.limit)),
        "set a budget limit",
    )
    sp.add_argument("task")
    sp.add_argument("counter")
    sp.add_argument("limit", type=float)

    sp = add(
        "charge",
        _write(
            lambda a: c.ChargeBudget(
                task_id=a.task, counter=a.counter, amount=a.amount, note=a.note
            )
        ),
        "charge a budget counter",
    )
    sp.add_argument("task")
    sp.add_argument("counter")
    sp.add_argument("amount", type=float)
    sp.add_argument("--note", default="")

    sp = add(
        "set-status",
        _write(lambda a: c.SetStatus(task_id=a.task, status=a.status, reason=a.reason)),
        "change the run status",
    )
    sp.add_argument("task")
    sp.add_argument("status")
    sp.add_argument("--reason", default="")

    # Each area of the record registers its own subcommands.
    from . import cli_archive, cli_ledger, cli_mcp, cli_resume, cli_verify

    for area in (cli_ledger, cli_resume, cli_verify, cli_archive, cli_mcp):
        area.register(add)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        if args.command == "schema":
            cmd_schema(None, args)
            return 0
        create = args.command in CREATING_COMMANDS
        with Store.open(args.store, url=args.url, create=create) as store:
            args.fn(store, args)
        return 0
    except OSError as exc:
        # Files the command was given (a missing ingest file, an unreadable package).
        what = f"cannot read {exc.filename}: {exc.strerror}" if exc.filename else str(exc)
        print(f"boris: {' '.join(what.splitlines())}", file=sys.stderr)
        return 1
    except StoreError as exc:
        print(f"boris: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        # `verify` tells "problems found" (3) from "could not run" (1); bad input is 2.
        return 2 if isinstance(exc, answers.UsageError) else int(getattr(exc, "exit_code", 1))
    except ValidationError as exc:
        first = exc.errors()[0]
        print(f"boris: {'.'.join(str(x) for x in first['loc'])}: {first['msg']}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
