"""Standing rules for callers (issue 42): a person's "allow calls like this" from any front end.

`rule_from_answer` is what a framework adapter calls when a person answered a prompt with its
framework's "always" (Claude Code's `updatedPermissions`, the Agent SDK's suggestions, OpenAI's
`always_approve` / `always_reject`): the call the approval asked about is decided now (unless
`decide_this_one` is false) and a rule covering calls like it is granted, in one transaction
signed by the person. `grant_standing_rule`, `revoke_standing_rule` and `list_standing_rules`
are the CLI's and the window's, through store.api.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import Field

from .. import db
from .. import schema as t
from ..commands.approvals import DecideApproval
from ..commands.standing_rule_record import call_from_log
from ..commands.standing_rules import GrantStandingRule, ReservePolicy, RevokeStandingRule
from ..errors import CommandRejected, UnknownApproval
from ..model import Actor
from ..reads.read_model import ReadModel
from ..reads.standing_rules import StandingRule, StandingRules, standing_rules
from ..store import Store

#: How long a rule stands when its answer names no expiry: one working day.
DEFAULT_RULE_SECONDS = 8 * 3600.0

Verdict = Literal["approved", "rejected"]
Scope = Literal["task", "agent", "session"]


def _person(actor: Actor | str) -> Actor:
    return Actor.parse(actor) if isinstance(actor, str) else actor


def _rule(store: Store, rule_id: str) -> StandingRule:
    with store.read() as conn:
        found = standing_rules(conn, db.database_now(conn))
    for r in found.rules:
        if r.id == rule_id:
            return r
    raise CommandRejected(f"rule {rule_id} is not on record")  # pragma: no cover


def grant_standing_rule(
    store: Store,
    person: Actor | str,
    task_id: str,
    *,
    verdict: Verdict = "approved",
    scope: Scope = "task",
    agent: str | None = None,
    session_id: str | None = None,
    tool: str = "*",
    target: str = "*",
    payload: Mapping[str, Any] | None = None,
    expires_in_seconds: float = DEFAULT_RULE_SECONDS,
    note: str = "",
    origin: str = "",
    decide_pending: bool = True,
) -> StandingRule:
    """Grant a rule on `task_id` in the person's name (signed with their key); the rule.
    `decide_pending`: the requests already waiting that it covers are decided by it now."""
    who = _person(person)
    store.sign_as(who)
    rule_id = store.execute(
        GrantStandingRule(
            task_id=task_id,
            verdict=verdict,
            scope=scope,
            agent=agent,
            session_id=session_id,
            tool=tool,
            target=target,
            payload=dict(payload) if payload is not None else None,
            expires_in_seconds=expires_in_seconds,
            note=note,
            origin=origin,
            decide_pending=decide_pending,
        ),
        who,
    )
    return _rule(store, str(rule_id))


def rule_from_answer(
    store: Store,
    person: Actor | str,
    task_id: str,
    approval_id: str,
    *,
    verdict: Verdict = "approved",
    scope: Scope = "task",
    fields: Sequence[str] = (),
    any_target: bool = False,
    expires_in_seconds: float = DEFAULT_RULE_SECONDS,
    origin: str = "",
    note: str = "",
    decide_this_one: bool = True,
) -> StandingRule:
    """A framework's "always" answer to the call approval `approval_id` asked about: the rule
    covers calls of the same tool, to the same target (`any_target`: any target), whose
    payload has the same values in `fields` (none: any payload), by the same scope (the task;
    the requesting agent; the requester's session, from its lease). With `decide_this_one`
    the call itself is decided `verdict` by the person in the same transaction.

    Signed as `Store.sign_as(person)` picks: a key given to `store` (its `signer`) if it is
    the person's, else the person's own key from the user's config directory; an agent's key
    given to the store is refused (SignatureRefused), as a person's write signed by it is.
    Refused (CommandRejected, AuthorityRefused) as the commands refuse it: `person` not a
    person, an approval already decided or expired, a session scope with no session."""
    who = _person(person)
    draft = rule_draft(store, task_id, approval_id)
    missing = [f for f in fields if f not in draft.payload]
    if missing:
        raise CommandRejected(f"the call's payload has no {', '.join(map(repr, missing))}")
    if scope == "agent" and not draft.requester.startswith("agent:"):
        raise CommandRejected(
            f"approval {approval_id} was asked by {draft.requester}, not an agent"
        )
    grant = GrantStandingRule(
        task_id=task_id,
        verdict=verdict,
        scope=scope,
        agent=draft.requester if scope == "agent" else None,
        session_id=draft.session_id if scope == "session" else None,
        tool=draft.tool,
        target="*" if any_target else draft.target,
        payload={f: _literal_value(draft.payload[f]) for f in fields} or None,
        expires_in_seconds=expires_in_seconds,
        note=note,
        answered=approval_id,
        origin=origin,
    )
    commands: list[Any] = [grant]
    if decide_this_one:
        decision = DecideApproval(
            task_id=task_id, approval_id=approval_id, decision=verdict, note=note
        )
        commands.insert(0, decision)
    store.sign_as(who)
    done = store.execute_all(commands, who)
    return _rule(store, str(done[-1]))


class RuleDraft(ReadModel):
    """What a rule answering a pending request would cover, as the window offers it: the
    call's tool and target as exact globs, its payload, who asked and in which session."""

    task_id: str
    approval_id: str
    tool: str = Field(description="the call's tool, as a glob matching exactly it")
    target: str = Field(description="the call's target, as a glob matching exactly it")
    payload: dict[str, Any] = Field(description="the call's payload (pick fields to match)")
    requester: str = Field(description="kind:id")
    session_id: str | None


def rule_draft(store: Store, task_id: str, approval_id: str) -> RuleDraft:
    """The rule `rule_from_answer` would make from this request, before anyone decides."""
    with store.read() as conn:
        row = conn.execute(
            sa.select(t.approvals).where(
                t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id
            )
        ).first()
        if row is None:
            raise UnknownApproval(task_id, approval_id)
        requester = dict(row.requester or {})
        lease = conn.execute(
            sa.select(t.leases.c.session_id, t.leases.c.holder).where(
                t.leases.c.task_id == task_id, t.leases.c.ended_at.is_(None)
            )
        ).first()
        # The requester's session: the lease they hold on the task now, if they hold it.
        session = None
        if lease is not None and dict(lease.holder or {}).get("id") == requester.get("id"):
            session = str(lease.session_id)
        call = call_from_log(conn, task_id, approval_id, session)
    if isinstance(call, str):
        raise CommandRejected(f"no rule can be made from approval {approval_id}: {call}")
    return RuleDraft(
        task_id=task_id,
        approval_id=approval_id,
        tool=_literal(call.tool),
        target=_literal(call.target),
        payload=dict(call.payload),
        requester=f"{call.requester_kind}:{call.requester_id}",
        session_id=call.session_id,
    )


def _literal(text: str) -> str:
    """A glob that matches exactly `text` (its wildcards escaped)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _literal_value(value: Any) -> Any:
    return _literal(value) if isinstance(value, str) else value


def revoke_standing_rule(
    store: Store, person: Actor | str, rule_id: str, reason: str, based_on: int | None = None
) -> StandingRule:
    """End a rule in the person's name; `based_on` the version they saw (a stale one is a
    Conflict naming who revoked it since)."""
    who = _person(person)
    store.sign_as(who)
    store.execute(RevokeStandingRule(rule_id=rule_id, reason=reason, based_on=based_on), who)
    return _rule(store, rule_id)


def reserve_policy(store: Store, person: Actor | str, policy: str, reserved: bool = True) -> bool:
    """Whether no rule may decide the calls asked under `policy` (a person decides each)."""
    who = _person(person)
    store.sign_as(who)
    return bool(store.execute(ReservePolicy(policy=policy, reserved=reserved), who))


def list_standing_rules(
    store: Store, *, active_only: bool = False, task_id: str | None = None
) -> StandingRules:
    """The rules on record, newest first, each judged at the database's now."""
    with store.read() as conn:
        return standing_rules(conn, db.database_now(conn), active_only=active_only, task_id=task_id)
