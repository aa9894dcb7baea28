"""Standing rules (issue 42): a person's "allow calls like this", recorded and enforced.

`GrantStandingRule` records a person's rule (`rule.granted`) in the log of the task it was
granted on, signed with that person's key like any of their events, and indexes where it is
(store.reads.standing_rules). `RevokeStandingRule` ends it (`rule.revoked`), based on the
version the person saw: a revocation of a rule someone revoked since is a `Conflict`.
`ReservePolicy` marks a policy whose calls a person decides every time: no rule covers them.

When an approval is requested (store.commands.approvals), `decide_by_rule` looks for a
standing rule that covers the call, judged by the grant on record (a person's event, signed
by a key the store trusts, not revoked or expired at the database's now), and records the
decision as the rule's (`approval.ruled`, naming the rule and where its grant is). Dispatch
(`standing_rule_record.ruled_on_record`, asked by store.commands.authority) and `boris verify` judge that claim
again from the record, never from a table.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import Field

from .. import events as ev
from .. import schema as t
from .. import team
from ..errors import AuthorityRefused, CommandRejected, Conflict
from ..model import Actor
from ..reads import standing_rules as on_record
from ..rules.authority import TeamRole
from ..rules.standing_rules import (
    MAX_RULE_SECONDS,
    CallAsked,
    RuleStanding,
    RuleTerms,
    standing,
    why_not_deciding,
)
from ..tx import Tx
from .core import Command, Ident, TaskCommand, handles, new_id, settle_status
from .standing_rule_record import call_from_log

_PERSONS = "a standing rule is a person's answer"


class UnknownRule(CommandRejected):
    """No standing rule by that id is on record (`boris rules list` names them)."""

    code = "unknown_rule"
    category = "not_found"


class GrantStandingRule(TaskCommand):
    """A person's "allow (or reject) calls like this": recorded on `task_id`, the task whose
    call they were answering (for a task-scoped rule, the task it covers)."""

    type: Literal["grant_standing_rule"] = "grant_standing_rule"
    rule_id: Ident | None = None
    verdict: Literal["approved", "rejected"] = "approved"
    scope: Literal["task", "agent", "session"] = "task"
    agent: str | None = Field(default=None, max_length=140, description="agent scope: kind:id")
    session_id: str | None = Field(default=None, max_length=128)
    tool: str = Field(default="*", min_length=1, max_length=200)
    target: str = Field(default="*", min_length=1, max_length=1000)
    payload: dict[str, Any] | None = None
    expires_in_seconds: float = Field(gt=0, le=MAX_RULE_SECONDS)
    note: str = ""
    answered: Ident | None = Field(default=None, description="the approval it answers, if any")
    origin: str = Field(default="", max_length=120)
    #: Decide the requests pending now that it covers, as the rule (else only later ones).
    decide_pending: bool = True


class RevokeStandingRule(Command):
    """A person ends a rule. `based_on`: the rule's version they saw (1 as granted)."""

    type: Literal["revoke_standing_rule"] = "revoke_standing_rule"
    rule_id: Ident
    reason: str = Field(min_length=1)
    based_on: int | None = Field(default=None, ge=1)


class ReservePolicy(Command):
    """A person's setting: the calls asked under `policy` need a person every time (or no
    longer, with `reserved` false)."""

    type: Literal["reserve_policy"] = "reserve_policy"
    policy: str = Field(min_length=1)
    reserved: bool = True


def _person(actor: Actor, what: str) -> None:
    if actor.kind != "person":
        raise AuthorityRefused(
            "standing_rule_is_a_persons",
            f"{_PERSONS}: only a person {what}, not an {actor.kind} ({actor.id})",
        )


def _plus_seconds(iso: str, seconds: float) -> str:
    import datetime as dt

    start = dt.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    return f"{start + dt.timedelta(seconds=seconds):%Y-%m-%dT%H:%M:%S.%f}Z"


@handles(GrantStandingRule)
def _grant(tx: Tx, cmd: GrantStandingRule, actor: Actor) -> str:
    _person(actor, "grants one")
    tx.task(cmd.task_id)
    if cmd.scope == "agent":
        if not cmd.agent or not cmd.agent.startswith("agent:") or len(cmd.agent) < 7:
            raise CommandRejected("an agent-scoped rule names its agent as agent:ID (--agent)")
    elif cmd.agent is not None:
        raise CommandRejected("--agent names the agent of an agent-scoped rule only")
    if cmd.scope == "session":
        if not cmd.session_id:
            raise CommandRejected("a session-scoped rule names its session (--session)")
    elif cmd.session_id is not None:
        raise CommandRejected("--session names the session of a session-scoped rule only")
    rule_id = cmd.rule_id or new_id("rule")
    if on_record.where_is(tx.conn, rule_id) is not None:
        raise CommandRejected(f"rule {rule_id} already exists")
    tx.emit(
        cmd.task_id,
        ev.RuleGranted(
            rule_id=rule_id,
            verdict=cmd.verdict,
            scope=cmd.scope,
            agent=cmd.agent,
            session_id=cmd.session_id,
            tool=cmd.tool,
            target=cmd.target,
            payload=cmd.payload,
            expires_at=_plus_seconds(tx.now, cmd.expires_in_seconds),
            note=cmd.note,
            answered=cmd.answered,
            origin=cmd.origin,
        ),
        actor,
    )
    seq = tx.conn.execute(
        sa.select(t.events.c.seq)
        .where(t.events.c.task_id == cmd.task_id)
        .order_by(t.events.c.seq.desc())
        .limit(1)
    ).scalar_one()
    place = json.dumps({"task_id": cmd.task_id, "seq": int(seq)}, sort_keys=True)
    tx.conn.execute(sa.insert(t.store_meta).values(key=on_record.index_key(rule_id), value=place))
    if cmd.decide_pending:
        # Signed when this transaction commits (store.signing.seal): not provable yet.
        found = on_record.grant_on_record(tx.conn, rule_id, cmd.task_id, int(seq), prove=False)
        if not isinstance(found, str):
            _decide_pending(tx, found.terms, actor)
    return rule_id


def _decide_pending(tx: Tx, terms: RuleTerms, person: Actor) -> None:
    """The requests pending now that the new rule covers, decided by it in the person's
    transaction ("allow calls like this" clears the prompts already waiting)."""
    rows = tx.conn.execute(
        sa.select(t.approvals.c.task_id, t.approvals.c.approval_id)
        .where(
            t.approvals.c.state == "pending",
            t.approvals.c.effect_id.is_not(None),
            t.approvals.c.expires_at > tx.now,
        )
        .order_by(t.approvals.c.requested_at)
    ).all()
    for task_id, approval_id in rows:
        requester = tx.conn.execute(
            sa.select(t.approvals.c.requester).where(
                t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id
            )
        ).scalar_one()
        holder = Actor.model_validate(requester)
        session = _session_of(tx, str(task_id), holder)
        call = call_from_log(tx.conn, str(task_id), str(approval_id), session)
        if isinstance(call, str) or why_not_deciding(terms, call, tx.now) is not None:
            continue
        tx.task(str(task_id))  # the task's row lock, as a person's decision takes it
        state = tx.conn.execute(
            sa.select(t.approvals.c.state).where(
                t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id
            )
        ).scalar_one()
        if state != "pending":
            continue  # decided by someone while this waited for the task's lock
        record_ruled(tx, str(task_id), str(approval_id), terms, session, person)
        settle_status(tx, str(task_id), person)


@handles(RevokeStandingRule)
def _revoke(tx: Tx, cmd: RevokeStandingRule, actor: Actor) -> str:
    _person(actor, "revokes one")
    # The rule's row first, then the task's (whose lock reads the transaction's time): a
    # request deciding by the rule meanwhile is either before this time or sees this.
    place = on_record.where_is(tx.conn, cmd.rule_id, lock="update")
    if place is None:
        raise UnknownRule(f"no standing rule {cmd.rule_id!r} (boris rules list names them)")
    task_id, seq = place
    tx.task(task_id)  # the task's row lock: two revocations queue here
    found = on_record.grant_on_record(tx.conn, cmd.rule_id, task_id, seq)
    if isinstance(found, str):
        raise CommandRejected(f"rule {cmd.rule_id} is not on record: {found}")
    if cmd.based_on is not None and cmd.based_on != found.version:
        r = found.terms
        raise Conflict(
            "rule",
            cmd.rule_id,
            cmd.based_on,
            found.version,
            changed_by=f"person:{r.revoked_by}" if r.revoked_by else "",
            changed_at=r.revoked_at or "",
            change=f"revoked: {found.revoke_reason}" if r.revoked_at else "",
        )
    if found.terms.revoked_at is not None:
        raise CommandRejected(
            f"rule {cmd.rule_id} was revoked already, at {found.terms.revoked_at} by "
            f"{found.terms.revoked_by}"
        )
    tx.emit(task_id, ev.RuleRevoked(rule_id=cmd.rule_id, reason=cmd.reason), actor)
    return cmd.rule_id


@handles(ReservePolicy)
def _reserve(tx: Tx, cmd: ReservePolicy, actor: Actor) -> bool:
    _person(actor, "reserves a policy for people")
    on_record.set_reserved(tx.conn, cmd.policy, cmd.reserved, actor.model_dump(mode="json"), tx.now)
    return cmd.reserved


# --- a request decided by a rule -------------------------------------------------------------


def _session_of(tx: Tx, task_id: str, requester: Actor) -> str | None:
    row = tx.conn.execute(
        sa.select(t.leases.c.session_id, t.leases.c.holder, t.leases.c.ended_at).where(
            t.leases.c.task_id == task_id
        )
    ).first()
    if row is None or row.ended_at is not None:
        return None
    holder = dict(row.holder or {})
    if holder.get("kind") != requester.kind or holder.get("id") != requester.id:
        return None
    return str(row.session_id)


def _agents_role(tx: Tx) -> bool:
    """Whether this transaction's database login is a team store's agents' role."""
    if tx.conn.dialect.name != "postgresql":
        return False
    me = str(tx.conn.execute(sa.text("SELECT current_user")).scalar())
    kinds = team.member_kinds(tx.conn, [me])[me]
    return TeamRole.AGENTS in kinds and TeamRole.REVIEWERS not in kinds


def decide_by_rule(tx: Tx, task_id: str, approval_id: str, actor: Actor) -> str | None:
    """Decide the request just made by the first standing rule that covers it (an approving
    rule before a rejecting one only if it is older: the oldest covering rule decides);
    the rule's id, or None when none covers it (a person decides)."""
    places = on_record.indexed(tx.conn)
    if not places:
        return None  # no rule: nothing more to read
    if _agents_role(tx):
        # A team store's server refuses an agents' role the approved state a rule's decision
        # writes (store.team's projection guard), and the share lock on the rule's row that
        # deciding by it takes: a person decides it (a reviewers' login), or the rule's own
        # person's process does, when it ticks (store.commands.rule_ticks).
        return None
    session = _session_of(tx, task_id, actor)
    call = call_from_log(tx.conn, task_id, approval_id, session)
    if isinstance(call, str) or call.reserved or call.needed > 1:
        return None  # a rule covers tool calls and effects (what has a target), one person's
    terms = covering_rule(tx.conn, places, call, tx.now, lock=True)
    if terms is None:
        return None
    record_ruled(tx, task_id, approval_id, terms, session, actor)
    return terms.rule_id


def covering_rule(
    conn: Any,
    places: list[tuple[str, str, int]],
    call: CallAsked,
    now: str,
    *,
    lock: bool,
    asked_at: str | None = None,
) -> RuleTerms | None:
    """The standing rule that decides `call` at `now`: the oldest active one that covers it
    whose grant a person's trusted key signed; None when none does. `lock`: each candidate's
    lock shared before its grant is read again (a revocation that was being written is seen).
    `asked_at`: only a rule granted by the time the call was asked."""
    found = (on_record.grant_on_record(conn, *p, prove=False) for p in places)
    grants = [g for g in found if not isinstance(g, str)]
    for g in sorted(grants, key=lambda g: g.terms.granted_at):
        if asked_at is not None and g.terms.granted_at > asked_at:
            continue
        if standing(g.terms, now) != RuleStanding.ACTIVE:
            continue
        if why_not_deciding(g.terms, call, now) is not None:
            continue
        # Read again (under its lock, where asked), and its signature checked: only a
        # person's proved grant decides.
        if lock:
            on_record.where_is(conn, g.terms.rule_id, lock="share")
        again = on_record.grant_on_record(conn, g.terms.rule_id, g.terms.task_id, g.terms.seq)
        if isinstance(again, str) or again.unsigned is not None:
            continue
        if why_not_deciding(again.terms, call, now) is not None:
            continue
        return again.terms
    return None


def record_ruled(
    tx: Tx, task_id: str, approval_id: str, r: RuleTerms, session: str | None, actor: Actor
) -> None:
    """The record of a request decided by rule `r` (`approval.ruled`), written by `actor`:
    the call's requester as it asks, or the rule's own person."""
    tx.emit(
        task_id,
        ev.ApprovalRuled(
            approval_id=approval_id,
            rule_id=r.rule_id,
            rule_task_id=r.task_id,
            rule_seq=r.seq,
            granted_by=r.granted_by,
            decision=r.verdict,  # type: ignore[arg-type]  # RuleVerdict's values
            session_id=session,
        ),
        actor,
    )
