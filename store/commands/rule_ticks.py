"""A person's standing rules, applied by the person's own processes on a team store (issue 42).

On a team store (PostgreSQL with `boris team` roles) an agents' login may not write the state
a rule's decision writes, so a call a person's rule covers, asked through it, is left pending
as it is asked (store.commands.standing_rules.decide_by_rule). The rule's own person's
processes decide it: the tick that records due escalations (store.services.escalations: the
open window's timer, `boris serve`, `boris route escalate` from cron) runs
`DecideByStandingRules` in the person's name, signed by their key, and each such request is
recorded as the rule decided it (`approval.ruled`, the same record `decide_by_rule` makes),
written by the rule's person, which dispatch and `boris verify` accept.

Which requests: pending ones whose request was written by an agents' login (`events.db_role`;
on SQLite none, as the rule decides there as the call is asked), that the oldest active
standing rule covering them, granted by the time they were asked, decides (as `decide_by_rule`
picks it), and that rule is this person's. Never a request whose policy is reserved for a
person or needs several people, a routed one, a rule revoked (whenever) or expired by the
decision's time, one whose grant no trusted key of the person signed. Each request once
however many processes tick: the rule's lock is shared, then the task's row locked, and the
request's state read again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa

from .. import schema as t
from .. import team
from ..model import Actor
from ..reads import standing_rules as on_record
from ..rules.authority import TeamRole
from ..rules.standing_rules import RuleStanding, RuleTerms, standing
from ..tx import Tx
from .core import Command, handles, settle_status
from .standing_rule_record import call_from_log
from .standing_rules import _agents_role, _person, covering_rule, record_ruled


@dataclass(frozen=True)
class RuleDue:
    """A pending request that a person's own standing rule decides now."""

    task_id: str
    approval_id: str
    rule_id: str

    @property
    def key(self) -> str:
        return f"{self.task_id}/{self.approval_id}"


class DecideByStandingRules(Command):
    """The requests pending now that the actor's own standing rules decide, asked through a
    team store's agents' login (which may not write a rule's decision): each recorded as
    decided by the rule, in the rule's person's name. TASK/APPROVAL each."""

    type: Literal["decide_by_standing_rules"] = "decide_by_standing_rules"


def _session_of(conn: Any, task_id: str, requester: dict[str, Any]) -> str | None:
    """The session of the requester's open lease on the task, as the request was judged."""
    row = conn.execute(
        sa.select(t.leases.c.session_id, t.leases.c.holder, t.leases.c.ended_at).where(
            t.leases.c.task_id == task_id
        )
    ).first()
    if row is None or row.ended_at is not None:
        return None
    holder = dict(row.holder or {})
    if holder.get("kind") != requester.get("kind") or holder.get("id") != requester.get("id"):
        return None
    return str(row.session_id)


class _AgentsLogins:
    """Which pending requests an agents' login asked: each task's requests read once, each
    database role's team roles asked once (one tick's reads)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._roles: dict[str, dict[str, str | None]] = {}
        self._agents: dict[str, bool] = {}

    def asked(self, task_id: str, approval_id: str) -> bool:
        """Whether the request's event was written by a team store's agents' login."""
        if task_id not in self._roles:
            e = t.events
            rows = self.conn.execute(
                sa.select(e.c.payload, e.c.db_role).where(
                    e.c.task_id == task_id, e.c.type == "approval.requested"
                )
            ).all()
            self._roles[task_id] = {
                str(json.loads(payload).get("approval_id")): db_role for payload, db_role in rows
            }
        role = self._roles[task_id].get(approval_id)
        if not role:
            return False  # a row without its role: decided as it was asked
        if role not in self._agents:
            kinds = team.member_kinds(self.conn, [role])[role]
            self._agents[role] = TeamRole.AGENTS in kinds and TeamRole.REVIEWERS not in kinds
        return self._agents[role]


def _decides(
    conn: Any, places: list[tuple[str, str, int]], row: Any, now: str
) -> tuple[RuleTerms, str | None] | None:
    """The rule that decides this pending request now (as `decide_by_rule` picks it, among
    the rules granted by the time it was asked), and the call's session; None when none
    does."""
    task_id, approval_id = str(row.task_id), str(row.approval_id)
    session = _session_of(conn, task_id, dict(row.requester or {}))
    call = call_from_log(conn, task_id, approval_id, session)
    if isinstance(call, str) or call.reserved or call.needed > 1:
        return None
    asked_at = str(row.requested_at)
    terms = covering_rule(conn, places, call, now, lock=False, asked_at=asked_at)
    return None if terms is None else (terms, session)


def _pending(conn: Any, now: str, since: str) -> list[Any]:
    a = t.approvals
    return list(
        conn.execute(
            sa.select(a.c.task_id, a.c.approval_id, a.c.requester, a.c.requested_at)
            .where(
                a.c.state == "pending",
                a.c.effect_id.is_not(None),
                a.c.expires_at > now,
                a.c.requested_at >= since,
            )
            .order_by(a.c.requested_at)
        ).all()
    )


def rules_due(conn: Any, person: str, now: str) -> list[RuleDue]:
    """The pending requests, asked through an agents' login, that `person`'s own standing
    rules decide at `now` (database clock). A read; [] at once when the person has no active
    rule (the tick of an idle window)."""
    if conn.dialect.name != "postgresql":
        return []  # SQLite: a rule decides a call as it is asked, whoever asks
    places = on_record.indexed(conn)
    if not places:
        return []
    found = (on_record.grant_on_record(conn, *p, prove=False) for p in places)
    mine = [
        g.terms
        for g in found
        if not isinstance(g, str)
        and g.terms.granted_by == person
        and standing(g.terms, now) == RuleStanding.ACTIVE
    ]
    if not mine:
        return []
    since = min(r.granted_at for r in mine)
    due = []
    logins = _AgentsLogins(conn)
    for row in _pending(conn, now, since):
        if not logins.asked(str(row.task_id), str(row.approval_id)):
            continue
        decided = _decides(conn, places, row, now)
        if decided is not None and decided[0].granted_by == person:
            due.append(RuleDue(str(row.task_id), str(row.approval_id), decided[0].rule_id))
    return due


@handles(DecideByStandingRules)
def _decide_by_own_rules(tx: Tx, cmd: DecideByStandingRules, actor: Actor) -> list[str]:
    _person(actor, "applies their rules")
    if _agents_role(tx):
        return []  # the server would refuse the decisions: a reviewers' login writes them
    done: list[str] = []
    found = rules_due(tx.conn, actor.id, tx.now)
    # The rules' locks first, then the tasks' rows (the order a revocation takes them, so the
    # two never wait on each other in a circle): a revocation being written is seen, and a
    # second ticker finds this one's decisions.
    for rule_id in sorted({d.rule_id for d in found}):
        on_record.where_is(tx.conn, rule_id, lock="share")
    for due in found:
        tx.task(due.task_id)
        a = t.approvals
        row = tx.conn.execute(
            sa.select(
                a.c.task_id, a.c.approval_id, a.c.requester, a.c.requested_at, a.c.state
            ).where(a.c.task_id == due.task_id, a.c.approval_id == due.approval_id)
        ).first()
        if row is None or row.state != "pending":
            continue  # decided by someone while this waited for the task's lock
        decided = _decides(tx.conn, on_record.indexed(tx.conn), row, tx.now)
        if decided is None:
            continue
        terms, session = decided
        if terms.rule_id != due.rule_id or terms.granted_by != actor.id:
            continue
        if terms.revoked_at is not None:
            continue  # revoked, even after this transaction's time: it decides no more
        record_ruled(tx, due.task_id, due.approval_id, terms, session, actor)
        settle_status(tx, due.task_id, actor)
        done.append(due.key)
    return done
