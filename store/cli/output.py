"""What every `boris` subcommand shares: who is acting, printing (`--json` or a line for
people), running one command as a subcommand, the global options and paths from the
command line."""

from __future__ import annotations

import argparse
import json
import math
import os
from typing import Any

from pydantic import ValidationError

from ..model import Actor
from ..services import answers
from ..store import Store


class ActorRequired(answers.UsageError):
    """A write with nobody named as its actor: the record never guesses who acted."""

    code = "actor_required"


def _actor(text: str | None) -> Actor:
    """Who acts: --actor, else BORIS_ACTOR; never a default, so an agent that forgets to say
    who it is cannot write as a person."""
    raw = text or os.environ.get("BORIS_ACTOR")
    if not raw:
        user = os.environ.get("USER") or "NAME"
        raise ActorRequired(
            "this command writes to the record, so it needs who acts: add "
            f"--actor person:{user} (a person) or --actor agent:ID (an agent), "
            "or set BORIS_ACTOR; nothing was written"
        )
    try:
        return Actor.parse(raw)
    except ValidationError:
        raise answers.UsageError(
            f"--actor {raw!r} is not kind:id[:name] with kind agent, person or system"
        ) from None


def _actor_if_given(text: str | None) -> Actor | None:
    """Who acts where it was said, else None: a read names nobody and needs no one."""
    return _actor(text) if text or os.environ.get("BORIS_ACTOR") else None


def _print(args: argparse.Namespace, value: Any, human: str, **extra: Any) -> None:
    """A result: with --json the one object `{"ok": true, "result": …}` (answers)."""
    if args.json:
        print(strict_json(answers.ok(value, **extra)))
    else:
        print(human)


def strict_json(value: Any) -> str:
    """JSON as every parser reads it: never `Infinity` or `NaN` (Python's extension). No
    command accepts a non-finite number any more; a record written before that may still
    hold one in a table, and it is printed as null, as its event has it."""
    try:
        return json.dumps(value, indent=2, default=str, sort_keys=True, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), indent=2, default=str, sort_keys=True)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def lease_token_of(args: argparse.Namespace) -> int | None:
    """The lease token a write carries: --lease-token, else BORIS_LEASE_TOKEN, else none."""
    raw = getattr(args, "lease_token", None) or os.environ.get("BORIS_LEASE_TOKEN")
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise answers.UsageError(f"the lease token must be a number, not {raw!r}") from None


def with_lease_token(command: Any, args: argparse.Namespace) -> Any:
    """The command carrying the lease token of the command line, where it names none itself:
    every write under a lease carries its fencing token (store.commands.leases)."""
    token = lease_token_of(args)
    if token is not None and getattr(command, "lease_token", "absent") is None:
        return command.model_copy(update={"lease_token": token})
    return command


def execute(store: Store, command: Any, args: argparse.Namespace, actor: Actor) -> Any:
    """A write of a subcommand that prints its own answer (`boris note`, `boris narrative`):
    with the lease token of the command line, as every `_write` carries it, so the task's
    lease fences it as every other write (the lease's own commands judge their token)."""
    return store.execute(with_lease_token(command, args), actor)


def _write(build: Any) -> Any:
    def run(store: Store, args: argparse.Namespace) -> None:
        actor = _actor(args.actor)  # before anything is read or built
        command = with_lease_token(build(args), args)
        result = store.execute(command, actor)
        facts = answers.facts_after(store, command, result)
        # Plain output stays the bare result (a script's `$(boris plan-effect …)` is the id);
        # --json adds what comes with it (an effect's prepared_digest).
        _print(args, result, str(result) if result is not None else "ok", **facts)

    return run


TASK_HELP = "the task's id (boris tasks lists them)"
FILE_HELP = (
    "a file inside the task's scope; a relative path is taken from the current directory "
    "(an error names the absolute path it looked at)"
)


def here(path: str) -> str:
    """A path given on the command line, taken from the current directory (as a shell
    user expects), so the command layer sees exactly the file meant."""
    return os.path.abspath(os.path.expanduser(path))
