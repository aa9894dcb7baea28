"""`boris route set|remove|group|list|escalate`: who decides a policy's requests (issue 42).

`set` routes a policy to people and groups with a quorum, an escalation after N minutes and
what its expiry does; `group` names a group's people; `list` prints them
(`--json`: store.reads.routing.Routing); `escalate` records the escalations due now on the
database clock, as the store's own action (store.services.escalations; run it from cron where
no window, `boris serve` or `boris mcp` runs: the decision rule itself never waits for it, it
is judged when a request is decided).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .. import db
from ..commands import routing as rc
from ..reads.routing import routing
from ..services import escalations
from ..store import Store
from .output import _actor, _print, execute
from .parser import global_options

Add = Callable[[str, Any], argparse.ArgumentParser]


def cmd_list(store: Store, args: argparse.Namespace) -> None:
    with store.read() as conn:
        found = routing(conn)
    lines = [
        f"{p.policy}: {', '.join(p.deciders)}; {p.approvers} approver(s)"
        + (
            f"; escalates to {', '.join(p.escalate_to)} after {p.escalate_after_minutes:g} min"
            if p.escalate_after_minutes and p.escalate_to
            else ""
        )
        + f"; on expiry {p.on_expiry}  (set by {p.set_by} at {p.set_at})"
        for p in found.policies
    ]
    lines += [f"group:{g.name}: {', '.join(g.members)}" for g in found.groups]
    _print(args, found.to_json(), "\n".join(lines) or "(no routed policy)")


def _run(store: Store, args: argparse.Namespace, command: Any) -> Any:
    actor = _actor(args.actor)
    store.sign_as(actor)
    return execute(store, command, args, actor)  # with the command line's lease token


def cmd_set(store: Store, args: argparse.Namespace) -> None:
    command = rc.SetRoute(
        policy=args.policy,
        deciders=args.decider or [],
        approvers=args.approvers,
        escalate_after_minutes=args.escalate_after,
        escalate_to=args.escalate_to or [],
        on_expiry=args.on_expiry,
    )
    _print(args, _run(store, args, command), "routed")


def cmd_remove(store: Store, args: argparse.Namespace) -> None:
    _print(args, _run(store, args, rc.SetRoute(policy=args.policy, remove=True)), "removed")


def cmd_group(store: Store, args: argparse.Namespace) -> None:
    result = _run(store, args, rc.SetGroup(name=args.name, members=args.member))
    _print(args, result, f"group:{result}")


def cmd_escalate(store: Store, args: argparse.Namespace) -> None:
    """The escalations due now, recorded as the store's own action (whoever runs it: cron,
    a person); with --dry-run only listed."""
    actor = _actor(args.actor)
    store.sign_as(actor)  # the caller's key signs it
    if args.dry_run:
        due, now = escalations.due_now(store)
        due += escalations.rules_due_now(store, actor)  # what her rules decide (a team store)
        _print(args, due, "\n".join(due) or f"(nothing due at {now})")
        return
    done = escalations.escalate_due(store, actor)
    if done:
        _print(args, done, "\n".join(done))
        return
    with store.read() as conn:
        now = db.database_now(conn)
    _print(args, done, f"(nothing due at {now})")


def register(add: Add) -> None:
    sp = add("route", cmd_list)
    sub = sp.add_subparsers(dest="route_command")
    common = argparse.ArgumentParser(add_help=False)
    global_options(common, argparse.SUPPRESS)
    sub.add_parser("list", help="the routed policies and groups", parents=[common]).set_defaults(
        fn=cmd_list
    )
    s = sub.add_parser(
        "set", help="who decides POLICY's requests from now on (a person's)", parents=[common]
    )
    s.set_defaults(fn=cmd_set)
    s.add_argument("policy", help="the policy's name, as requests give it (--policy)")
    s.add_argument(
        "--decider",
        action="append",
        help="person:ID or group:NAME who may decide (repeat); nobody else may",
    )
    s.add_argument(
        "--approvers", type=int, default=1, help="distinct people who must approve (default 1)"
    )
    s.add_argument(
        "--escalate-after",
        type=float,
        metavar="MINUTES",
        help="when nobody answered in this many minutes, --escalate-to may decide too",
    )
    s.add_argument("--escalate-to", action="append", help="person:ID or group:NAME (repeat)")
    s.add_argument(
        "--on-expiry",
        choices=["reject", "escalate"],
        default="reject",
        help="what an unanswered request's expiry does: reject (it can no longer be approved, "
        "as any request) or escalate (to --escalate-to, its expiry moved on)",
    )
    r = sub.add_parser("remove", help="route POLICY no more (a person's)", parents=[common])
    r.set_defaults(fn=cmd_remove)
    r.add_argument("policy", help="the policy's name")
    g = sub.add_parser("group", help="the people of group NAME (a person's)", parents=[common])
    g.set_defaults(fn=cmd_group)
    g.add_argument("name", help="the group's name, routed as group:NAME")
    g.add_argument("--member", action="append", required=True, help="person:ID (repeat)")
    e = sub.add_parser(
        "escalate",
        help="record the escalations due now (database clock); prints TASK/APPROVAL each",
        parents=[common],
    )
    e.set_defaults(fn=cmd_escalate)
    e.add_argument("--dry-run", action="store_true", help="list what is due now; record nothing")
