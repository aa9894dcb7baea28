"""`boris`: the command line for agents in any language, scripts and tests.

`main` parses the command line (store.cli.parser: the table of subcommands, each declared and
run by its own module of this package, imported only when it is used), opens the store the
subcommand needs and runs it.

Exit 0 on success; otherwise non-zero with a one-line reason on stderr. `--json` gives
machine-readable output on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import traceback
from collections.abc import Sequence

from .parser import _Parser, parser_for_run, print_refusal

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


def fail(exc: BaseException, as_json: bool) -> int:
    """One line on stderr and, with --json, the refusal object on stdout; the exit code is
    the refusal's category's (store.answers.EXIT_CODES), from its type, never its words."""
    from ..services import answers

    answer = answers.refusal(exc)
    if as_json:
        print_refusal(exc)
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


def _parse(argv: list[str]) -> argparse.Namespace | int:
    """The parsed command line, or the exit code when parsing ended the command (--help,
    --version, or a usage error already printed)."""
    try:
        return parser_for_run().parse_args(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        if code != 2 or "hook" not in argv:
            return code
        from . import hook

        # To Claude Code, 2 from a hook blocks the agent's tool call: a typo must not.
        return hook.NOT_RECORDED if hook.invoked(argv) else code


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = _Parser.as_json = "--json" in argv
    args = _parse(argv)
    if isinstance(args, int):
        return args
    try:
        if args.command in STORELESS_COMMANDS:
            args.fn(None, args)
            return 0
        if getattr(args, "storeless", False):  # reads only the files it is given
            code = args.fn(None, args)  # `boris hook` answers in Claude Code's exit codes
            return code if isinstance(code, int) else 0
        return _run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise  # the reader went away: main() ends quietly
    except Exception as exc:
        return fail(exc, as_json)


def _run(args: argparse.Namespace) -> int:
    """The subcommand on the store it names, opened (made, for the creating commands)."""
    from ..store import Store
    from . import keys
    from .output import _actor, _actor_if_given

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
