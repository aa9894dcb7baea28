"""`boris rules add|list|revoke|reserve`: standing rules (issue 42), a person's "allow calls
like this", recorded as their signed event and enforced by the store.

`add` grants a rule on a task (a task-scoped rule covers that task; an agent's or a
session's covers their calls on any task); `list` prints the rules on record
(`--json`: store.reads.standing_rules.StandingRules, `boris schema`: `x-outputs.rules list`);
`revoke` ends one, based on the version you saw (`--based-on`, else the current); `reserve`
marks a policy whose calls a person decides every time (no rule covers them).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from typing import Any

from ..reads.standing_rules import StandingRule
from ..services import answers
from ..services import standing_rules as service
from ..store import Store
from .output import TASK_HELP, _actor, _print
from .parser import global_options

Add = Callable[[str, Any], argparse.ArgumentParser]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds_of(text: str) -> float:
    """`90`, `90s`, `30m`, `8h`, `7d` as seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if m is None or float(m.group(1)) <= 0:
        raise answers.UsageError(f"--expires-in {text!r} is not a duration (90s, 30m, 8h, 7d)")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def _payload(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise answers.UsageError(f"--payload is not JSON: {exc}") from exc
    if not isinstance(value, dict) or not value:
        raise answers.UsageError('--payload is a JSON object of fields: {"command": "git *"}')
    return value


def line(r: StandingRule) -> str:
    until = f"revoked {r.revoked_at} by {r.revoked_by}" if r.revoked_at else f"until {r.expires_at}"
    fields = f" payload {json.dumps(r.payload, sort_keys=True)}" if r.payload else ""
    proof = "" if r.proved else f"  NOT PROVED: {r.why_unproved}"
    return (
        f"{r.id:<14} {r.standing:<8} {r.verdict:<8} {r.covers}: tool {r.tool} target "
        f"{r.target}{fields}  by {r.granted_by.id}, {until}, decided {r.decided}{proof}"
    )


def cmd_list(store: Store, args: argparse.Namespace) -> None:
    found = service.list_standing_rules(store, active_only=args.active, task_id=args.task)
    _print(args, found.to_json(), "\n".join(line(r) for r in found.rules) or "(no rules)")


def cmd_add(store: Store, args: argparse.Namespace) -> None:
    if args.from_approval:
        rule = _from_approval(store, args)
        _print(args, rule.to_json(), rule.id)
        return
    rule = service.grant_standing_rule(
        store,
        _actor(args.actor),
        args.task,
        verdict="rejected" if args.reject else "approved",
        scope=args.scope,
        agent=args.agent,
        session_id=args.session,
        tool=args.tool,
        target=args.target,
        payload=_payload(args.payload),
        expires_in_seconds=seconds_of(args.expires_in),
        note=args.note,
        decide_pending=not args.leave_pending,
    )
    _print(args, rule.to_json(), rule.id)


def _from_approval(store: Store, args: argparse.Namespace) -> StandingRule:
    """`--from-approval APR`: "always", answered to a pending request: it is decided now and
    the rule covers calls of its tool to its target (the same --field values)."""
    given = [
        o for o in ("tool", "payload", "agent", "session") if getattr(args, o) not in (None, "*")
    ]
    if given or args.target != "*":
        raise answers.UsageError(
            "--from-approval makes the rule from the request's call: name what must match "
            "with --field (and --any-target), not --tool/--target/--payload/--agent/--session"
        )
    return service.rule_from_answer(
        store,
        _actor(args.actor),
        args.task,
        args.from_approval,
        verdict="rejected" if args.reject else "approved",
        scope=args.scope,
        fields=args.field or (),
        any_target=args.any_target,
        expires_in_seconds=seconds_of(args.expires_in),
        note=args.note,
        origin="boris rules add --from-approval",
    )


def cmd_revoke(store: Store, args: argparse.Namespace) -> None:
    rule = service.revoke_standing_rule(
        store, _actor(args.actor), args.rule, args.reason, based_on=args.based_on
    )
    _print(args, rule.to_json(), f"{rule.id} revoked")


def cmd_reserve(store: Store, args: argparse.Namespace) -> None:
    reserved = service.reserve_policy(store, _actor(args.actor), args.policy, not args.off)
    _print(args, reserved, "reserved" if reserved else "no longer reserved")


def _register_add(sub: Any, common: argparse.ArgumentParser) -> None:
    a = sub.add_parser(
        "add",
        help="grant a standing rule (a person's): calls it covers are decided without asking",
        parents=[common],
    )
    a.set_defaults(fn=cmd_add)
    a.add_argument("task", help=TASK_HELP + "; the rule is recorded there")
    a.add_argument(
        "--scope",
        choices=["task", "agent", "session"],
        default="task",
        help="whose calls: this task's (default), one agent's (--agent) or one session's "
        "(--session), on any task",
    )
    a.add_argument("--agent", help="agent scope: the agent, agent:ID")
    a.add_argument("--session", help="session scope: the session id (its lease's)")
    a.add_argument("--tool", default="*", help="a glob over the tool's name (default: any)")
    a.add_argument(
        "--target",
        default="*",
        help="a glob over the call's target, e.g. claude-code://tools/* (default: any)",
    )
    a.add_argument(
        "--payload",
        help='fields the call\'s payload must match, as JSON: {"command": "git *"} '
        "(a string is a glob; anything else must be equal)",
    )
    a.add_argument(
        "--expires-in",
        default="8h",
        help="how long it stands, on the database clock: 90s, 30m, 8h (default), 7d",
    )
    a.add_argument("--reject", action="store_true", help="reject the calls it covers")
    a.add_argument(
        "--from-approval",
        metavar="APPROVAL",
        help="answer this pending request with 'always': it is decided now, and the rule "
        "covers calls of its tool to its target (and --scope: its agent's, its session's)",
    )
    a.add_argument(
        "--field",
        action="append",
        help="with --from-approval: a payload field whose value must be the same (repeat)",
    )
    a.add_argument(
        "--any-target", action="store_true", help="with --from-approval: any target of the tool"
    )
    a.add_argument("--note", default="", help="why, for whoever reads the rule")
    a.add_argument(
        "--leave-pending",
        action="store_true",
        help="decide only later calls (by default the calls already waiting that it covers "
        "are decided by it now)",
    )


def register(add: Add) -> None:
    sp = add("rules", cmd_list)
    sp.set_defaults(active=False, task=None)
    sub = sp.add_subparsers(dest="rules_command")
    common = argparse.ArgumentParser(add_help=False)
    global_options(common, argparse.SUPPRESS)

    ls = sub.add_parser("list", help="the standing rules on record, newest first", parents=[common])
    ls.set_defaults(fn=cmd_list)
    ls.add_argument("--active", action="store_true", help="only the rules deciding now")
    ls.add_argument("--task", help="only the rules granted on this task")

    _register_add(sub, common)
    r = sub.add_parser("revoke", help="end a standing rule (a person's)", parents=[common])
    r.set_defaults(fn=cmd_revoke)
    r.add_argument("rule", help="the rule's id (boris rules list names them)")
    r.add_argument("--reason", required=True, help="why it ends")
    r.add_argument(
        "--based-on",
        type=int,
        help="the rule's version you saw (boris rules list --json): refused as a conflict "
        "if it changed since",
    )

    k = sub.add_parser(
        "reserve",
        help="a policy whose calls a person decides every time: no rule covers them",
        parents=[common],
    )
    k.set_defaults(fn=cmd_reserve)
    k.add_argument("policy", help="the policy's name, as requests give it (--policy)")
    k.add_argument("--off", action="store_true", help="let rules cover it again")
