"""`boris`'s task commands: the store (init, demo, tasks, show, events, schema, ingest) and
the writes on a task's objective, criteria, artifacts, evidence, budgets and status.

`register` declares their arguments when one of them is used (store.cli.parser's table names
this module for them); each other area of the record (`ledger`, `resume`, `verify`,
`archive` …) declares and runs its own subcommands the same way and imports only `output`,
never this module. `main` and `build_parser` are store.cli.entry's and store.cli.parser's.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, get_args

from pydantic import TypeAdapter, ValidationError

from .. import commands as c
from .. import rules
from ..errors import StoreError
from ..limits import line_problem, read_line
from ..model import BUDGET_COUNTERS, ArtifactRole, EvidenceKind
from ..services import answers
from ..store import Store
from . import keys, team
from . import retention as cli_retention
from .entry import main
from .inputs import ingest_refusal, recorded_path, stdin_text
from .output import (
    FILE_HELP,
    TASK_HELP,
    _actor,
    _actor_if_given,
    _print,
    _write,
    with_lease_token,
)
from .parser import Add, build_parser

COMMAND_TYPES: list[type[c.Command]] = c.command_classes()


def _command_adapter() -> TypeAdapter[Any]:
    from typing import Annotated, Union

    from pydantic import Field

    union = Union[tuple(COMMAND_TYPES)]  # type: ignore[valid-type]  # noqa: UP007
    return TypeAdapter(Annotated[union, Field(discriminator="type")])  # type: ignore[arg-type]


def cmd_init(store: Store, args: argparse.Namespace) -> None:

    signed = keys.init_signatures(store, args)
    if not signed:
        from ..signing.trust import decline

        decline(store)  # unsigned by choice, said so: `boris demo` leaves it so
    where = store.location.describe()
    human = f"store ready at {where}" + (" (signatures required)" if signed else " (unsigned)")
    result: dict[str, Any] = {"store": where, "signatures_required": signed}
    sql = team.init_sql(store)
    if sql is not None:
        # A team store: the SQL an admin runs to give agents and reviewers roles of their own.
        result["roles_sql"] = sql
        human += (
            "\nto give agents and reviewers database roles of their own, run this as the "
            "database's owner (also: boris roles-sql):\n" + sql.rstrip()
        )
    _print(args, result, human)


def cmd_demo(store: Store, args: argparse.Namespace) -> None:
    from ..services.demo import fill_demo_store

    # A new store is made as `boris init` makes one (signed, the person's key its root).
    person = _actor_if_given(args.actor)
    ids = fill_demo_store(store, person, require_signatures=args.require_signatures)
    _print(args, {"tasks": ids}, "demo tasks: " + ", ".join(ids))


def cmd_tasks(store: Store, args: argparse.Namespace) -> None:
    rows = store.tasks()
    lines = [f"{r.id:<22} {r.status:<18} {r.title}" for r in rows] or ["(no tasks)"]
    _print(args, rows, "\n".join(lines))


def cmd_show(store: Store, args: argparse.Namespace) -> None:
    from ..reads.state_models import ShownTask
    from ..signing.check import task_signatures

    state = store.task(args.task)
    with store.read() as conn:
        sigs = task_signatures(conn, args.task)
    s = ShownTask.model_validate(
        {
            **dict(state),
            "signatures": {
                "signed": sigs["signed"],
                "required": sigs["required"],
                "unsigned_after": sigs["unsigned_after"],
                "signed_seqs": {str(k): v for k, v in sigs["signatures"].items()},
            },
        }
    )
    if args.json:
        _print(args, s, "")
        return
    out = [f"{s.title}  [{s.status}]  id {s.id}  owner {s.owner}"]
    if s.objective is not None:
        out.append(f"objective (rev {s.objective.rev}): {s.objective.text}")
    for cr in s.criteria:
        against = f" against {cr.artifact_id} v{cr.artifact_version}" if cr.artifact_id else ""
        out.append(f"  criterion {cr.criterion_id}: {cr.status}{against} — {cr.text}")
    for a in s.artifacts:
        cur = a.current
        if cur is not None:
            out.append(
                f"  artifact {a.artifact_id} v{a.current_version} {cur.digest[:19]} {cur.size} B"
            )
    for b in s.budgets:
        out.append(f"  budget {b.counter}: {_budget(b.used, b.limit_value)}")
    for p in s.problems:
        out.append(f"  PROBLEM {p.kind} {p.id}: blob {p.digest} is {p.problem}")
    out.append(_signature_line(sigs))
    print("\n".join(out))


def _signature_line(sigs: dict[str, Any]) -> str:
    if not sigs["signed"]:
        return "signatures: unsigned store (writes are not signed; `boris keys trust` starts)"
    n = len(sigs["signatures"])
    tail = sigs["unsigned_after"]
    line = f"signatures: {n} signed write{'s' if n != 1 else ''}"
    if sigs["signatures"]:
        last = sigs["signatures"][max(sigs["signatures"])]
        line += f", last by {last['actor'] or 'UNKNOWN KEY'} key {last['key_id']}"
    if tail is not None:
        line += f"; UNSIGNED events after seq {tail}"
    return line


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
        "\n".join(f"{r.seq:>6} {r.at} {r.type:<28} {r.actor.kind}:{r.actor.id}" for r in rows),
    )


def cmd_schema(store: Store | None, args: argparse.Namespace) -> None:
    """Every command's JSON Schema, and under `x-authority` who may run each one (actor
    kinds, and the cases that are a person's), from `store.rules.AUTHORITY`; under
    `x-outputs` the `--json` result of the reads programs rely on (store.cli.shapes, and
    the task's state and its parts: store.cli.state_shapes)."""
    from .. import rules
    from . import state_shapes
    from .shapes import output_schemas

    schema = _command_adapter().json_schema()
    types = sorted(str(cls.model_fields["type"].default) for cls in c.command_classes())
    schema["x-authority"] = {t: rules.authority_of(t).as_json() for t in types}
    schema["x-outputs"] = {**output_schemas(), **state_shapes.output_schemas()}
    print(json.dumps(schema, indent=2, sort_keys=True))


def cmd_ingest(store: Store, args: argparse.Namespace) -> None:
    """JSON lines of commands, all or nothing: the first bad line is named and nothing lands.
    Each line is read with a cap (store.limits.read_line): one over the limit is refused
    having held about the limit, and nothing after it is read."""
    actor = _actor(args.actor)
    stream = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")
    adapter = _command_adapter()
    parsed: list[c.Command] = []
    with stream:
        n = 0
        while (read := read_line(stream, skip=False)) is not None:
            n += 1
            problem = line_problem(read)
            if problem is not None:
                raise answers.UsageError(f"line {n} {problem}; nothing was written")
            try:
                line = read.data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise answers.UsageError(
                    f"line {n}: not UTF-8 text (byte {exc.start + 1} of the line); "
                    "nothing was written"
                ) from None
            if not line.strip():
                continue
            try:
                parsed.append(with_lease_token(adapter.validate_json(line), args))
            except ValidationError as exc:
                raise ingest_refusal(n, line, exc) from None
    with store.transaction() as tx:
        results = []
        for n, command in enumerate(parsed, 1):
            try:
                results.append(c.execute(tx, command, actor))
            except StoreError as exc:
                # The same refusal (its code, category and rule), saying which command.
                exc.args = (
                    f"command {n} ({getattr(command, 'type', '?')}): {exc}; nothing was written",
                )
                raise
    _print(args, {"applied": len(parsed), "results": results}, f"applied {len(parsed)} commands")


def _content(args: argparse.Namespace) -> c.Content:
    if args.file:
        return c.Content(path=recorded_path(args.file, "--file"), media_type=args.media_type)
    if args.text is not None:
        return c.Content(text=args.text, media_type=args.media_type)
    return c.Content(text=stdin_text(), media_type=args.media_type)


EVIDENCE_KINDS = list(get_args(EvidenceKind))
ARTIFACT_ROLES = list(get_args(ArtifactRole))
RUN_STATUSES = [str(x) for x in rules.RunStatus]


def register(add: Add) -> None:
    _register_store(add)
    _register_task(add)
    _register_content(add)
    _register_judge(add)
    _register_budget_and_status(add)


def _register_store(add: Add) -> None:
    """The store itself: make it, fill it, list and read its tasks, its schema, ingest."""
    sp = add("init", cmd_init)
    sp.add_argument(
        "--require-signatures",
        dest="require_signatures",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="refuse unsigned writes, trusting your person key as the root (default: yes)",
    )
    sp = add("demo", cmd_demo)
    sp.add_argument(
        "--require-signatures",
        dest="require_signatures",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="on a new store, as `boris init`: refuse unsigned writes, trusting your person "
        "key as the root (default: yes); the demo's actors get keys in demo-workspace/keys/",
    )
    add("tasks", cmd_tasks)
    add("show", cmd_show).add_argument("task", help=TASK_HELP)
    add("events", cmd_events).add_argument("task", help=TASK_HELP)
    add("schema", cmd_schema)
    add("ingest", cmd_ingest).add_argument(
        "file", help='a file of JSON lines ({"type": "add_criterion", ...}; see boris schema), or -'
    )


def _based_on_arg(sp: argparse.ArgumentParser, what: str) -> None:
    sp.add_argument(
        "--based-on",
        type=int,
        metavar="N",
        help=f"{what}: refused as a conflict (naming who changed it, when) if it changed",
    )


def _content_args(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--file", help=FILE_HELP)
    sp.add_argument("--text", help="the content itself (without --file or --text: stdin)")
    sp.add_argument("--media-type", help="e.g. text/markdown (default: guessed from the name)")


def _register_task(add: Add) -> None:
    """A task made, its objective amended, its criteria added and changed."""
    sp = add(
        "create-task",
        _write(
            lambda a: c.CreateTask(
                task_id=a.id,
                title=a.title,
                owner=a.owner,
                objective=a.objective,
                scope_paths=[recorded_path(x, "--scope") for x in a.scope],
                destinations=a.destination,
            )
        ),
    )
    sp.add_argument("--id", help="the task's id (default: generated, printed)")
    sp.add_argument("--title", required=True, help="a short title for the inbox")
    sp.add_argument("--owner", required=True, help="the person who owns the task")
    sp.add_argument("--objective", required=True, help="the outcome the user asked for")
    sp.add_argument(
        "--scope",
        action="append",
        default=[],
        help="a directory or file the task may touch (repeat for more; relative to the "
        "current directory)",
    )
    sp.add_argument(
        "--destination",
        action="append",
        default=[],
        help="a destination it may send to: a URL prefix (https://host/path/) or one address "
        "(mailto:team@example.org); repeat for more",
    )

    sp = add(
        "amend",
        _write(
            lambda a: c.AmendObjective(
                task_id=a.task, text=a.text, reason=a.reason, based_on=a.based_on
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--text", required=True, help="the objective's new text")
    sp.add_argument("--reason", required=True, help="why it changed (kept with the revision)")
    _based_on_arg(sp, "the objective revision you amended")

    sp = add(
        "add-criterion",
        _write(lambda a: c.AddCriterion(task_id=a.task, text=a.text, criterion_id=a.id)),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--text", required=True, help="what must hold for the task to be done")
    sp.add_argument("--id", help="the criterion's id (default C1, C2, …)")

    sp = add(
        "change-criterion",
        _write(
            lambda a: c.ChangeCriterion(
                task_id=a.task,
                criterion_id=a.criterion,
                text=a.text,
                reason=a.reason,
                based_on=a.based_on,
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("criterion", help="the criterion's id (e.g. C1)")
    sp.add_argument("--text", required=True, help="what must hold, as it now reads")
    sp.add_argument("--reason", required=True, help="why it changed")
    _based_on_arg(sp, "the criterion's rev you changed")

    def _content_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--file", help=FILE_HELP)
        sp.add_argument("--text", help="the content itself (without --file or --text: stdin)")
        sp.add_argument("--media-type", help="e.g. text/markdown (default: guessed from the name)")


def _register_content(add: Add) -> None:
    """Content recorded: an artifact's new version, evidence on a criterion."""
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
                based_on=a.based_on,
                retain=a.retain,
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("name", help="the artifact's name (e.g. report.md)")
    sp.add_argument("--id", help="the artifact's id (default: from the name)")
    sp.add_argument(
        "--role",
        default="draft",
        choices=ARTIFACT_ROLES,
        help="what the artifact is, on its first version (default draft)",
    )
    sp.add_argument("--note", default="", help="a note kept with the version")
    _based_on_arg(sp, "the artifact's current version you edited (0: none yet)")
    _content_args(sp)
    cli_retention.retain_arg(sp)

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
                artifact_id=a.artifact,
                artifact_version=a.version,
                retain=a.retain,
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("criterion", help="the criterion's id (e.g. C1)")
    sp.add_argument("--kind", required=True, choices=EVIDENCE_KINDS, help="what kind of evidence")
    sp.add_argument("--id", help="the evidence's id (default: generated, printed)")
    sp.add_argument("--description", default="", help="what it shows, in a line")
    sp.add_argument("--locator", default="", help="where in the source it is (e.g. file:12-30)")
    sp.add_argument("--artifact", help="the artifact the evidence was made on")
    sp.add_argument(
        "--version",
        type=int,
        help="the version of --artifact it was made on (default: the one current now)",
    )
    _content_args(sp)
    cli_retention.retain_arg(sp)


def _register_judge(add: Add) -> None:
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
                based_on=a.based_on,
                older_evidence_reason=a.older_evidence_reason,
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("criterion", help="the criterion's id (e.g. C1)")
    sp.add_argument(
        "status",
        choices=["satisfied", "failed", "waived", "unverified"],
        help="satisfied needs --artifact and --evidence; waived needs --note (a person's)",
    )
    sp.add_argument("--artifact", help="the artifact it was checked against (its current version)")
    sp.add_argument("--version", type=int, help="that artifact's version (default: the current)")
    sp.add_argument(
        "--evidence",
        action="append",
        default=[],
        help="an evidence id attached to this criterion (repeat for more)",
    )
    sp.add_argument("--note", default="", help="why (required to waive)")
    sp.add_argument(
        "--older-evidence-reason",
        help="why evidence made on an older version of the artifact still holds "
        "(satisfied on such evidence is refused without it)",
    )
    _based_on_arg(sp, "the criterion's rev you judged (boris show --json: criteria[].rev)")


def _register_budget_and_status(add: Add) -> None:
    sp = add(
        "set-budget",
        _write(
            lambda a: c.SetBudget(
                task_id=a.task, counter=a.counter, limit=a.limit, based_on=a.based_on
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("counter", choices=BUDGET_COUNTERS, help="the budget counter")
    sp.add_argument("limit", type=float, help="the limit (raising one is a person's)")
    _based_on_arg(sp, "how many times this counter's limit had been set when you decided")

    sp = add(
        "charge",
        _write(
            lambda a: c.ChargeBudget(
                task_id=a.task, counter=a.counter, amount=a.amount, note=a.note
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("counter", choices=BUDGET_COUNTERS, help="the budget counter")
    sp.add_argument("amount", type=float, help="how much was spent (> 0)")
    sp.add_argument("--note", default="", help="what it was spent on")

    sp = add(
        "set-status",
        _write(lambda a: c.SetStatus(task_id=a.task, status=a.status, reason=a.reason)),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument(
        "status", choices=RUN_STATUSES, help="the new run status (the transition table decides)"
    )
    sp.add_argument("--reason", default="", help="why")


__all__ = ["build_parser", "main", "register"]
