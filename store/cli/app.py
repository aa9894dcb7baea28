"""`boris`: the command line for agents in any language, scripts and tests.

This module builds the parser, holds the task commands and dispatches; each other area of
the record (`ledger`, `resume`, `verify`, `archive`) registers its own subcommands and
imports only `output`, never this module.

Exit 0 on success; otherwise non-zero with a one-line reason on stderr. `--json` gives
machine-readable output on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn, get_args

from pydantic import TypeAdapter, ValidationError

from .. import commands as c
from .. import rules
from ..errors import StoreError
from ..limits import line_problem, read_line
from ..model import BUDGET_COUNTERS, ArtifactRole, EvidenceKind
from ..services import answers
from ..store import Store
from ..version import __version__
from . import archive, decisions, hook, keys, leases, ledger, mcp, resume, team, verify, waits
from . import deletion as cli_deletion
from . import late as cli_late
from . import manifests as cli_manifests
from . import notes as cli_notes
from . import retention as cli_retention
from .inputs import ingest_refusal, recorded_path, stdin_text
from .output import (
    FILE_HELP,
    TASK_HELP,
    _actor,
    _actor_if_given,
    _global_options,
    _print,
    _write,
    with_lease_token,
)

COMMAND_TYPES: list[type[c.Command]] = c.command_classes()

#: The only commands that make a store where there is none; every other one says so.
CREATING_COMMANDS = frozenset({"init", "demo", "create-task", "import", "mcp"})
#: Commands that only print what this program knows, opening no store.
STORELESS_COMMANDS = frozenset({"schema", "roles-sql"})
#: Setting up a store of one's own, at one's own terminal: with nobody named, these act as
#: the person logged in (`person:LOGIN`), whose key is this login's anyway. Every other
#: write still names its actor; an agent never runs these to write a task.
AS_THE_LOGIN = frozenset({"init", "demo"})
#: The exit status when whoever read the output stopped (`boris … | head`): a Unix
#: command's when SIGPIPE ends it (128 + 13), said in no words, with no traceback.
READER_GONE = 141


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
    lines = [f"{r['id']:<22} {r['status']:<18} {r['title']}" for r in rows] or ["(no tasks)"]
    _print(args, rows, "\n".join(lines))


def cmd_show(store: Store, args: argparse.Namespace) -> None:
    from ..signing.check import task_signatures

    s = store.task(args.task)
    with store.read() as conn:
        sigs = task_signatures(conn, args.task)
    s["signatures"] = {
        "signed": sigs["signed"],
        "required": sigs["required"],
        "unsigned_after": sigs["unsigned_after"],
        "signed_seqs": {str(k): v for k, v in sigs["signatures"].items()},
    }
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
        "\n".join(
            f"{r['seq']:>6} {r['at']} {r['type']:<28} {r['actor']['kind']}:{r['actor']['id']}"
            for r in rows
        ),
    )


def cmd_schema(store: Store | None, args: argparse.Namespace) -> None:
    """Every command's JSON Schema, and under `x-authority` who may run each one (actor
    kinds, and the cases that are a person's), from `store.rules.AUTHORITY`; under
    `x-outputs` the `--json` result of the reads programs rely on (store.cli.shapes)."""
    from .. import rules
    from .shapes import output_schemas

    schema = _command_adapter().json_schema()
    types = sorted(str(cls.model_fields["type"].default) for cls in c.command_classes())
    schema["x-authority"] = {t: rules.authority_of(t).as_json() for t in types}
    schema["x-outputs"] = output_schemas()
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


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, like every other failure (and, with --json, as the
    refusal object on stdout)."""

    #: Set by `main` from its argv before parsing: whether refusals are JSON on stdout.
    as_json = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        #: What was added, so a test can read every option's help without argparse internals.
        self.options: list[argparse.Action] = []
        self.subcommands: dict[str, _Parser] = {}
        #: Each `add_subparsers` action, whose `choices` name the nested commands' parsers.
        self.nested: list[argparse.Action] = []
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.options.append(action)
        return action

    def add_subparsers(self, **kwargs: Any) -> Any:
        # Nested commands (`keys new`, `lease acquire`) are listed too, for the reference.
        action = super().add_subparsers(**kwargs)
        self.nested.append(action)
        return action

    def error(self, message: str) -> NoReturn:
        text = f"{message} (see {self.prog} --help)"
        if _Parser.as_json:
            _print_refusal(answers.UsageError(text))
        self.exit(2, f"boris: {text}\n")


EPILOG = """\
exit codes (with --json, the refusal object on stdout says the same as "exit_code"):
  0   ok
  1   refused: the rules said no (a scope, an authority, pending work); nothing was written
  2   usage: a malformed command line or input, or a write without --actor
  3   integrity: the record is damaged (verify's problems, a bad blob, a corrupt file)
  4   not found: no such task, store or file
  5   busy: another writer held the store too long; try again
  6   environment: the store cannot be used here (read-only, disk full, too new, unreachable)
  7   lease lost: the write's --lease-token is no longer the task's (taken over); stop
  70  internal: a bug in boris (the traceback is on stderr)

relative paths (--file, --target, --scope) are taken from the current directory.
"""


def build_parser() -> _Parser:
    p = _Parser(
        prog="boris",
        description="The durable record of agents' tasks.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"boris {__version__}")
    # The global options are accepted before or after the subcommand.
    common = _Parser(add_help=False)
    _global_options(p, argparse.SUPPRESS)
    _global_options(common, argparse.SUPPRESS)
    p.set_defaults(store=None, url=None, json=False, actor=None, key=None, lease_token=None)
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, fn: Any, help_: str) -> _Parser:
        sp = sub.add_parser(name, help=help_, description=help_, parents=[common])
        assert isinstance(sp, _Parser)
        sp.set_defaults(fn=fn)
        p.subcommands[name] = sp
        return sp

    sp = add("init", cmd_init, "create the store if it does not exist")
    sp.add_argument(
        "--require-signatures",
        dest="require_signatures",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="refuse unsigned writes, trusting your person key as the root (default: yes)",
    )
    sp = add("demo", cmd_demo, "fill the store with demo tasks on real files")
    sp.add_argument(
        "--require-signatures",
        dest="require_signatures",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="on a new store, as `boris init`: refuse unsigned writes, trusting your person "
        "key as the root (default: yes); the demo's actors get keys in demo-workspace/keys/",
    )
    add("tasks", cmd_tasks, "list tasks, those needing attention first")
    add("show", cmd_show, "a task's whole current state").add_argument("task", help=TASK_HELP)
    add("events", cmd_events, "a task's event history").add_argument("task", help=TASK_HELP)
    add("schema", cmd_schema, "JSON Schema of every command (for writers in other languages)")
    add("ingest", cmd_ingest, "apply JSON lines of commands, all or nothing").add_argument(
        "file", help='a file of JSON lines ({"type": "add_criterion", ...}; see boris schema), or -'
    )

    def based_on_arg(sp: argparse.ArgumentParser, what: str) -> None:
        sp.add_argument(
            "--based-on",
            type=int,
            metavar="N",
            help=f"{what}: refused as a conflict (naming who changed it, when) if it changed",
        )

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
        "create a task",
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
        "amend the objective",
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--text", required=True, help="the objective's new text")
    sp.add_argument("--reason", required=True, help="why it changed (kept with the revision)")
    based_on_arg(sp, "the objective revision you amended")

    sp = add(
        "add-criterion",
        _write(lambda a: c.AddCriterion(task_id=a.task, text=a.text, criterion_id=a.id)),
        "add an acceptance criterion",
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
        "change a criterion's text (its judgement no longer applies)",
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("criterion", help="the criterion's id (e.g. C1)")
    sp.add_argument("--text", required=True, help="what must hold, as it now reads")
    sp.add_argument("--reason", required=True, help="why it changed")
    based_on_arg(sp, "the criterion's rev you changed")

    def content_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--file", help=FILE_HELP)
        sp.add_argument("--text", help="the content itself (without --file or --text: stdin)")
        sp.add_argument("--media-type", help="e.g. text/markdown (default: guessed from the name)")

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
        "record a new artifact version",
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
    based_on_arg(sp, "the artifact's current version you edited (0: none yet)")
    content_args(sp)
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
        "attach evidence to a criterion",
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
    content_args(sp)
    cli_retention.retain_arg(sp)

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
        "mark a criterion satisfied, failed, waived or unverified",
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
    based_on_arg(sp, "the criterion's rev you judged (boris show --json: criteria[].rev)")

    sp = add(
        "set-budget",
        _write(
            lambda a: c.SetBudget(
                task_id=a.task, counter=a.counter, limit=a.limit, based_on=a.based_on
            )
        ),
        "set a budget limit",
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("counter", choices=BUDGET_COUNTERS, help="the budget counter")
    sp.add_argument("limit", type=float, help="the limit (raising one is a person's)")
    based_on_arg(sp, "how many times this counter's limit had been set when you decided")

    sp = add(
        "charge",
        _write(
            lambda a: c.ChargeBudget(
                task_id=a.task, counter=a.counter, amount=a.amount, note=a.note
            )
        ),
        "charge a budget counter",
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("counter", choices=BUDGET_COUNTERS, help="the budget counter")
    sp.add_argument("amount", type=float, help="how much was spent (> 0)")
    sp.add_argument("--note", default="", help="what it was spent on")

    sp = add(
        "set-status",
        _write(lambda a: c.SetStatus(task_id=a.task, status=a.status, reason=a.reason)),
        "change the run status",
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument(
        "status", choices=RUN_STATUSES, help="the new run status (the transition table decides)"
    )
    sp.add_argument("--reason", default="", help="why")

    # Each area of the record registers its own subcommands.
    areas = (ledger, resume, verify, archive, keys, mcp, team, decisions, hook, leases, waits)
    for area in areas:
        area.register(add)
    cli_deletion.register(add)  # delete-task, receipts (issue 35 part D)
    cli_notes.register(add)  # note (--private, --retain)
    cli_retention.register(add)  # retain, expire, retention (issue 35 part R)
    cli_manifests.register(add)  # record-manifest, manifests, configuration (issue 35 part M)
    cli_late.register(add)  # late, acknowledge, follow-up (issue 35 part L)
    return p


def _print_refusal(exc: BaseException) -> dict[str, Any]:
    answer = answers.refusal(exc)
    print(json.dumps(answer, indent=2, default=str, sort_keys=True))
    return answer


def fail(exc: BaseException, as_json: bool) -> int:
    """One line on stderr and, with --json, the refusal object on stdout; the exit code is
    the refusal's category's (store.answers.EXIT_CODES), from its type, never its words."""
    answer = answers.refusal(exc)
    if as_json:
        _print_refusal(exc)
    error = answer["error"]
    if error["category"] == "internal":
        traceback.print_exception(exc, file=sys.stderr)
    print(f"boris: {error['message']}", file=sys.stderr)
    return int(error["exit_code"])


def main(argv: Sequence[str] | None = None) -> int:
    # A path whose name is not UTF-8 (Python's \udcff for byte 0xff) is printed as stderr
    # prints it, \udcff, never a UnicodeEncodeError after the work was done.
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    try:
        code = _main(argv)
        sys.stdout.flush()  # a reader gone is met here, not in the interpreter's exit
    except BrokenPipeError:
        return _reader_gone()
    return code


def _reader_gone() -> int:
    """The output's reader went away: what is left to print goes nowhere (else the
    interpreter's last flush at exit prints a BrokenPipeError of its own), quietly."""
    import os

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return READER_GONE


def _as_the_login(args: argparse.Namespace) -> None:
    """`boris init` and `boris demo` with no --actor nor BORIS_ACTOR: the person logged in."""
    import getpass
    import os

    if args.command not in AS_THE_LOGIN or args.actor or os.environ.get("BORIS_ACTOR"):
        return
    # No login name (no LOGNAME/USER and no passwd entry): the refusal says what to add.
    with contextlib.suppress(OSError, KeyError, ImportError):
        args.actor = "person:" + getpass.getuser()


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = _Parser.as_json = "--json" in argv
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        # To Claude Code, 2 from a hook blocks the agent's tool call: a typo must not.
        return hook.NOT_RECORDED if code == 2 and hook.invoked(argv) else code
    try:
        if args.command in STORELESS_COMMANDS:
            args.fn(None, args)
            return 0
        if getattr(args, "storeless", False):  # reads only the files it is given
            code = args.fn(None, args)  # `boris hook` answers in Claude Code's exit codes
            return code if isinstance(code, int) else 0
        create = args.command in CREATING_COMMANDS
        _as_the_login(args)
        if args.command == "init" and args.require_signatures:
            # A signed store's root is a person's key: who they are is settled before
            # anything is made, so a refusal leaves no half-made store behind.
            _actor(args.actor)
        with Store.open(args.store, url=args.url, create=create, signer=args.key) as store:
            keys.sign_as(store, _actor_if_given(args.actor))
            args.fn(store, args)
        return 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise  # the reader went away: main() ends quietly
    except Exception as exc:
        return fail(exc, as_json)


if __name__ == "__main__":
    sys.exit(main())
