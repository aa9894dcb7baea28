"""`boris`'s parser: the global options, the exit codes and the command table.

The table names each subcommand, its one-line summary and the module of this package that
declares its arguments and runs it (its `register(add)`). Building the parser imports none of
those modules: a subcommand's module is imported when that subcommand is parsed or its help
is shown, so `boris --version` and `boris --help` do not wait for SQLAlchemy, pydantic or the
command layer, and `boris hook …` imports the hook's code and what it records with, no more.
(pip's command table works the same way.)
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ..version import __version__

#: Every subcommand in the order `boris --help` lists them: (name, the module of store.cli
#: that declares and runs it, the summary shown in the list and atop its own help).
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("init", "app", "create the store if it does not exist"),
    ("demo", "app", "fill the store with demo tasks on real files"),
    ("tasks", "app", "list tasks, those needing attention first"),
    ("show", "app", "a task's whole current state"),
    ("events", "app", "a task's event history"),
    ("schema", "app", "JSON Schema of every command (for writers in other languages)"),
    ("ingest", "app", "apply JSON lines of commands, all or nothing"),
    ("create-task", "app", "create a task"),
    ("amend", "app", "amend the objective"),
    ("add-criterion", "app", "add an acceptance criterion"),
    ("change-criterion", "app", "change a criterion's text (its judgement no longer applies)"),
    ("record-artifact", "app", "record a new artifact version"),
    ("attach-evidence", "app", "attach evidence to a criterion"),
    ("judge", "app", "mark a criterion satisfied, failed, waived or unverified"),
    ("set-budget", "app", "set a budget limit"),
    ("charge", "app", "charge a budget counter"),
    ("set-status", "app", "change the run status"),
    ("plan-effect", "ledger", "record an effect's intent before any dispatch"),
    ("revise-effect", "ledger", "revise an undispatched effect's intent"),
    ("cancel-effect", "ledger", "cancel an undispatched effect"),
    ("request-approval", "ledger", "ask a person to approve an exact payload"),
    ("policy", "ledger", "approval policies: how many people each needs"),
    (
        "rules",
        "standing_rules",
        "standing rules: a person's answer for calls like one (add, list, revoke, reserve)",
    ),
    (
        "route",
        "routing",
        "routing: who decides a policy's requests, how many, and when they escalate",
    ),
    ("approve", "ledger", "decide an approval: approved (a person, never the requester)"),
    ("reject", "ledger", "decide an approval: rejected (a person, never the requester)"),
    (
        "send-back",
        "ledger",
        "answer an approval with changes requested: the note says what to change",
    ),
    (
        "respond",
        "respond",
        "answer an approval as the tool: your result stands for the call's, never run",
    ),
    (
        "decide-batch",
        "batch",
        "decide several pending approvals in one pass (JSON lines); each item recorded or "
        "refused on its own",
    ),
    (
        "dispatch",
        "ledger",
        "record an attempt before the executor runs; prints the attempt number",
    ),
    ("record-response", "ledger", "record what the executor reported (its word, not evidence)"),
    ("observe", "ledger", "observe an effect's target; prints the observation id"),
    ("reconcile", "ledger", "settle an effect against an observation; prints the verdict"),
    (
        "stop",
        "ledger",
        "stop the run: revoke approvals, cancel planned effects; prints the checkpoint id",
    ),
    (
        "close",
        "ledger",
        "close a task that will not be finished (a person's decision; stop a live run first)",
    ),
    ("checkpoint", "ledger", "write a checkpoint; prints its id"),
    ("effects", "ledger", "a task's effects with their attempts"),
    ("approvals", "ledger", "approvals, of one task or all"),
    ("checkpoints", "ledger", "a task's checkpoints, heads and forks"),
    ("resume", "resume", "the resume brief: next actions, blockers, forbidden"),
    ("summary", "resume", "a summary generated from the record"),
    ("narrative", "resume", "record an agent's narrative, or list them with checks"),
    (
        "verify",
        "verify",
        "check hash chains, blobs, projections, lineage, approvals and budgets; "
        "exit non-zero naming each problem",
    ),
    ("export", "archive", "write a task's whole record to one package (.tar.gz)"),
    ("import", "archive", "verify a task package, then add its task to the store"),
    (
        "verify-package",
        "archive",
        "prove a package's history (chain, signatures, approvals, checkpoints) offline "
        "against a keys file; exit 3 naming the task, seq and key of any failure",
    ),
    ("keys", "keys", "the store's keyring (which keys name which actors)"),
    (
        "serve",
        "web",
        "the decision page for a phone (loopback; TLS beyond it): approve with a passkey",
    ),
    ("passkeys", "web", "the passkeys registered to decide on the page: list, revoke"),
    (
        "mcp",
        "mcp",
        "serve the record to an agent over MCP (stdio; --http for streamable HTTP on loopback; "
        "--http --team for every agent of a team store, by token)",
    ),
    (
        "roles-sql",
        "team",
        "print the SQL that creates a team store's database roles (MCP server, reviewers, agents)",
    ),
    (
        "agent-token",
        "team",
        "agents' tokens for boris mcp --http --team: issue (a person), revoke, list",
    ),
    (
        "decisions",
        "decisions",
        "the open decisions across tasks (the window's queue): approvals soonest expiry "
        "first, then the rest longest waiting first",
    ),
    (
        "hook",
        "hook",
        "record a Claude Code tool call from its hooks (JSON on stdin); answer its "
        "PermissionRequest, or PreToolUse with --decide, with a person's decision",
    ),
    (
        "lease",
        "leases",
        "an agent session's lease on a task: acquire it (prints its token), renew it "
        "(a heartbeat: no event), release it",
    ),
    (
        "take-over",
        "leases",
        "take a task over from the session working on it (a person's decision): its lease "
        "ends, its later writes are refused (exit 7); hand back with a handoff checkpoint and "
        "boris lease release",
    ),
    (
        "wait",
        "waits",
        "record what the task waits for and when to consider it again (database clock); "
        "prints the wait's id",
    ),
    ("waits", "waits", "a task's scheduled waits: state, next time, due or not"),
    (
        "settle-wait",
        "waits",
        "a wait re-evaluated: --done (no longer waiting), or a new --not-before/--after",
    ),
    ("cancel-wait", "waits", "cancel a wait (a person says why; an agent cancels only its own)"),
    (
        "delete-task",
        "deletion",
        "delete a task (a person's decision): its events, projections, checkpoints, "
        "approvals, leases, waits, signatures and the blobs only it uses go; a receipt stays",
    ),
    ("receipts", "deletion", "the receipts of deleted tasks (who, when, why, counts)"),
    ("note", "notes", "record a note in a task's history (--private: kept out of exports)"),
    (
        "retain",
        "retention",
        "change how long an item's content is kept (a person: any; an agent: what it wrote)",
    ),
    (
        "expire",
        "retention",
        "retire the content that is due (a person's act): tombstones kept, blobs removed",
    ),
    ("retention", "retention", "a task's retention classes, due times and tombstones"),
    (
        "record-manifest",
        "manifests",
        "record what the model saw for one request (JSON: model, included, omitted with why, "
        "led_to); prints the manifest's id",
    ),
    ("manifests", "manifests", "a task's context manifests: what each request saw"),
    (
        "link-manifest",
        "manifests",
        "name the effect or checkpoint a recorded manifest's request led to",
    ),
    (
        "record-configuration",
        "manifests",
        "a configuration transition at a checkpoint: model, provider, tools by digest "
        "(prints changed, or unchanged when it is the current one)",
    ),
    (
        "configuration",
        "manifests",
        "a task's configuration transitions, and intents planned under an older tool definition",
    ),
    (
        "migrate-effect-tool",
        "manifests",
        "re-pin an intent planned under an older tool definition to the current one "
        "(its approvals go stale)",
    ),
    ("late", "late", "what changed after a task completed, not answered yet"),
    (
        "acknowledge",
        "late",
        "a person: what changed after completion needs no further task (it stays completed)",
    ),
    (
        "follow-up",
        "late",
        "a person: open a follow-up task for what changed after completion (prints its id)",
    ),
)

#: What a module's `register(add)` calls for each of its subcommands: `add(name, handler)`
#: gives the subcommand's parser (made from the table) for its arguments.
Add = Callable[[str, Any], argparse.ArgumentParser]

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


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, like every other failure (and, with --json, as the
    refusal object on stdout). A subcommand's parser is declared on first use (`declare`):
    before it parses, before its help, and when its options are read."""

    #: Set by `main` from its argv before parsing: whether refusals are JSON on stdout.
    as_json = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        #: What was added, so a test can read every option's help without argparse internals.
        self._options: list[argparse.Action] = []
        self.subcommands: dict[str, _Parser] = {}
        #: Each `add_subparsers` action, whose `choices` name the nested commands' parsers.
        self._nested: list[argparse.Action] = []
        #: Declares this parser's arguments (its module's `register`), until it has run.
        self.declare: Callable[[], None] | None = None
        super().__init__(*args, **kwargs)

    def _declared(self) -> None:
        declare, self.declare = self.declare, None
        if declare is not None:
            declare()

    @property
    def options(self) -> list[argparse.Action]:
        self._declared()
        return self._options

    @property
    def nested(self) -> list[argparse.Action]:
        self._declared()
        return self._nested

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self._options.append(action)
        return action

    def add_subparsers(self, **kwargs: Any) -> Any:
        # Nested commands (`keys new`, `lease acquire`) are listed too, for the reference.
        action = super().add_subparsers(**kwargs)
        self._nested.append(action)
        return action

    def parse_known_args(  # type: ignore[override]  # typeshed's overloads, one behaviour
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._declared()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._declared()
        return super().format_usage()

    def format_help(self) -> str:
        self._declared()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        text = f"{message} (see {self.prog} --help)"
        if _Parser.as_json:
            from ..services import answers

            print_refusal(answers.UsageError(text))
        self.exit(2, f"boris: {text}\n")


def print_refusal(exc: BaseException) -> dict[str, Any]:
    from ..services import answers

    answer = answers.refusal(exc)
    print(json.dumps(answer, indent=2, default=str, sort_keys=True))
    return answer


#: The parser, built once a process: the resident process builds it, every subcommand
#: declared, before it forks (store.cli.resident.server.preload), so a command run in a fork
#: parses at once; a process running several commands (`main` called in-process: the
#: tests, an application) reuses it. Parsing leaves a parser as it was: argparse builds a
#: new namespace each time and keeps nothing of the arguments.
_built_ahead: list[_Parser] = []


def build_ahead() -> None:
    p = build_parser()
    for subcommand in p.subcommands.values():
        subcommand._declared()
    _built_ahead.append(p)


def parser_for_run() -> _Parser:
    if not _built_ahead:
        _built_ahead.append(build_parser())
    return _built_ahead[0]


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
    global_options(p, argparse.SUPPRESS)
    global_options(common, argparse.SUPPRESS)
    p.set_defaults(store=None, url=None, json=False, actor=None, key=None, lease_token=None)
    sub = p.add_subparsers(dest="command", required=True)
    for name, module, summary in COMMANDS:
        sp = sub.add_parser(name, help=summary, description=summary, parents=[common])
        assert isinstance(sp, _Parser)
        sp.declare = _declarer(p, module)
        p.subcommands[name] = sp
    return p


def _declarer(p: _Parser, module: str) -> Callable[[], None]:
    """Import `module` and let it declare the arguments and handlers of its subcommands (the
    whole module at once: its other subcommands' parsers are declared with the one used)."""

    def declare() -> None:
        names = {name for name, home, _ in COMMANDS if home == module}

        def add(name: str, fn: Any) -> argparse.ArgumentParser:
            assert name in names, f"store.cli.{module} declares {name}, the table does not"
            sp = p.subcommands[name]
            sp.declare = None
            sp.set_defaults(fn=fn)
            return sp

        for name in names:
            p.subcommands[name].declare = None
        importlib.import_module(f"{__package__}.{module}").register(add)

    return declare


def global_options(p: argparse.ArgumentParser, default: Any) -> None:
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
    p.add_argument(
        "--json",
        action="store_true",
        default=default,
        help='one JSON object on stdout: {"ok": true, "result": …}, or on a refusal '
        '{"ok": false, "error": {code, category, message, rule, exit_code, details}}',
    )
    p.add_argument(
        "--actor",
        default=default,
        help="who acts: kind:id[:name], kind agent, person or system (else BORIS_ACTOR); "
        "required for every write, never guessed",
    )
    p.add_argument(
        "--lease-token",
        dest="lease_token",
        default=default,
        metavar="N",
        help="the token of your lease on the task (boris lease acquire; else "
        "BORIS_LEASE_TOKEN): a write under a token no longer current exits 7",
    )
    p.add_argument(
        "--key",
        default=default,
        help="the signing key file of the actor (an agent's; default BORIS_KEY, or a "
        "person's own key in the user config dir)",
    )
