"""`boris lease acquire|renew|release TASK` and `boris take-over TASK --reason R`: who works on
a task now (store.commands.leases).

`acquire` prints the lease's token (with --json, the whole lease): an agent sends it with
every later write, as `--lease-token N` or BORIS_LEASE_TOKEN, and a write under a token a
person has since taken over exits 7 (lease lost; nothing was written): the session stops.
"""

from __future__ import annotations

import argparse
import os
import secrets
from collections.abc import Callable
from typing import Any

from .. import commands as c
from .. import rules
from ..reads.inbox import Lease
from ..store import Store
from .output import TASK_HELP, _actor, _print, lease_token_of

Add = Callable[[str, Any], argparse.ArgumentParser]


def _words(lease: Lease) -> str:
    holder = lease.holder
    if lease.ended_at:
        return f"token {lease.token} of {holder.kind}:{holder.id} {lease.end_reason}"
    until = lease.expires_at or "released"
    return f"{holder.kind}:{holder.id} holds token {lease.token} ({lease.standing}, until {until})"


def cmd_lease(store: Store, args: argparse.Namespace) -> None:
    actor = _actor(args.actor)
    token = lease_token_of(args)
    command: c.Command
    if args.action == "acquire":
        session = args.session or os.environ.get("BORIS_SESSION") or f"cli-{secrets.token_hex(4)}"
        command = c.AcquireLease(
            task_id=args.task,
            session_id=session,
            ttl_seconds=args.ttl or rules.LEASE_TTL_DEFAULT,
        )
    elif args.action == "renew":
        command = c.RenewLease(task_id=args.task, lease_token=token, ttl_seconds=args.ttl)
    else:
        command = c.ReleaseLease(task_id=args.task, lease_token=token, note=args.note)
    lease: Lease = store.execute(command, actor)
    # Plain output: the token alone for acquire (TOKEN=$(boris lease acquire …)), else words.
    human = str(lease.token) if args.action == "acquire" else _words(lease)
    _print(args, lease.to_json(), human)


def cmd_take_over(store: Store, args: argparse.Namespace) -> None:
    actor = _actor(args.actor)
    lease: Lease = store.execute(c.TakeOver(task_id=args.task, reason=args.reason), actor)
    _print(args, lease.to_json(), _words(lease))


def register(add: Add) -> None:
    sp = add(
        "lease",
        cmd_lease,
    )
    sp.add_argument("action", choices=["acquire", "renew", "release"], help="what to do")
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument(
        "--ttl",
        type=int,
        metavar="SECONDS",
        help=f"how long the lease lasts without a renew (default {rules.LEASE_TTL_DEFAULT}; "
        "renew: as acquired)",
    )
    sp.add_argument(
        "--session",
        help="acquire: the session's id (default BORIS_SESSION, else a new one); the same "
        "session acquiring again gets its own lease back",
    )
    sp.add_argument("--note", default="", help="release: a note kept with the release")

    sp = add(
        "take-over",
        cmd_take_over,
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--reason", required=True, help="why you take it over (kept in the record)")
