"""A person's decisions, read from the log: what dispatch and completion rest on.

The projection tables are a fast copy of the log, written by whoever writes events; on a team
store the server refuses an agents' role any other write to them (store.team), but a table
is still not the decision. So an approval is usable, and a waiver counts, only when the
events say so: the approval's `approval.decided` (approved) by a person, its request binding
the same object, neither consumed nor retired since; a criterion's last judgement a waiver by
a person. On a team store a person's event comes only through a reviewers' login (the
server refuses it from an agents' role), so an agent cannot make one of these by hand.
A projection that says more than its events is refused, and named, here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from ..reads.routing import routed_deciders
from . import policies
from .standing_rule_record import ruled_on_record

_APPROVAL_EVENTS = (
    "approval.requested",
    "approval.decided",
    "approval.ruled",
    "approval.routed",
    "approval.escalated",
    "approval.consumed",
    "approval.retired",
)
_JUDGING_EVENTS = ("criterion.judged", "criterion.changed")


def _events(
    conn: Connection, task_id: str, types: Iterable[str]
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(type, actor kind, payload) of the task's events of these types, in order (the
    (task_id, type) index finds them)."""
    for type_, actor_kind, _, payload in _events_by(conn, task_id, types):
        yield type_, actor_kind, payload


def _events_by(
    conn: Connection, task_id: str, types: Iterable[str]
) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """(type, actor kind, actor id, payload) of the task's events of these types, in order."""
    rows = conn.execute(
        sa.select(t.events.c.type, t.events.c.actor_kind, t.events.c.actor_id, t.events.c.payload)
        .where(t.events.c.task_id == task_id, t.events.c.type.in_(tuple(types)))
        .order_by(t.events.c.seq)
    )
    for type_, actor_kind, actor_id, payload in rows:
        yield str(type_), str(actor_kind), str(actor_id), json.loads(payload)


@dataclass
class ApprovalOnRecord:
    """One approval as its events tell it."""

    approval_id: str
    requested: bool = False
    effect_id: str | None = None
    payload_digest: str | None = None
    expires_at: str = ""
    decision: str | None = None  # the last decision by a person
    consumed: bool = False
    retired: str | None = None
    # The quorum: how many distinct people must approve (the request's number, a later
    # decision's, the policy's in the store now: the largest), and the people whose
    # approval of the object it binds now is in the log (an edit starts them again).
    needed: int = 1
    approved_by: list[str] = field(default_factory=list)
    #: A routed request (issue 42): the people whose approvals count, each one it was routed
    #: (or, by then, escalated) to when they decided (store.reads.routing).
    routed_to: tuple[str, ...] | None = None

    def why_not_usable(self, effect_id: str, digest: str, now: str) -> str | None:
        """Why the log does not let this approval authorize `digest` for `effect_id` now."""
        if not self.requested:
            return "the log has no request for it"
        if self.decision != rules.ApprovalState.APPROVED:
            return "no person's approval of it is in the log"
        approved_by = self.approved_by
        if self.routed_to is not None:
            approved_by = [p for p in approved_by if p in self.routed_to]
        if not rules.quorum_met(approved_by, self.needed):
            return f"the log has {rules.quorum_words(approved_by, self.needed)}"
        if self.consumed:
            return "the log says it was used already"
        if self.retired is not None:
            return f"the log says it is {self.retired}"
        if self.effect_id != effect_id or self.payload_digest != digest:
            return "the log's request binds another object"
        if self.expires_at <= now:
            return "its request expired"
        return None


def approval_on_record(conn: Connection, task_id: str, approval_id: str) -> ApprovalOnRecord:
    found = ApprovalOnRecord(approval_id)
    for type_, actor_kind, actor_id, p in _events_by(conn, task_id, _APPROVAL_EVENTS):
        if type_ == "approval.retired":
            if approval_id in p.get("approval_ids", ()):
                found.retired = str(p.get("state"))
            continue
        if p.get("approval_id") != approval_id:
            continue
        if type_ == "approval.requested":
            found.requested = True
            found.effect_id = p.get("effect_id")
            found.payload_digest = p.get("payload_digest")
            found.expires_at = str(p.get("expires_at") or "")
            # The policy as the store says now counts too: a request that recorded fewer
            # (written by hand, or before the policy was raised) is not enough.
            found.needed = rules.approvers_needed(
                p.get("approvers"), policies.approvers_of(conn, str(p.get("policy") or ""))
            )
        elif type_ == "approval.decided" and actor_kind == rules.ActorKind.PERSON:
            found.decision = str(p.get("decision"))
            found.needed = rules.approvers_needed(found.needed, p.get("needed"))
            if p.get("edited_digest"):
                # Edit, then approve: the person's version is what the approval binds, and
                # only approvals of it count.
                found.payload_digest = p["edited_digest"]
                found.approved_by = []
            if found.decision == rules.ApprovalState.APPROVED and actor_id not in found.approved_by:
                found.approved_by.append(actor_id)
        elif type_ == "approval.ruled":
            # A standing rule's decision counts only as the rule on record proves it
            # (store.commands.standing_rules): a person's signed grant, standing then,
            # covering the call as its request asked it.
            at = _at_of(conn, task_id, p)
            if ruled_on_record(conn, task_id, p, at, (actor_kind, actor_id)) is None:
                found.decision = str(p.get("decision"))
                found.approved_by = [f"rule:{p.get('rule_id')}"]
        elif type_ == "approval.routed":
            found.routed_to = tuple(routed_deciders(conn, task_id, approval_id) or ())
        elif type_ == "approval.escalated" and p.get("expires_at"):
            # An expiry moved on by its routed policy (on_expiry: escalate).
            found.expires_at = max(found.expires_at, str(p["expires_at"]))
        elif type_ == "approval.consumed":
            found.consumed = True
    return found


def _at_of(conn: Connection, task_id: str, payload: dict[str, Any]) -> str:
    """When a rule's decision was written: its event's time, found by its approval."""
    rows = conn.execute(
        sa.select(t.events.c.payload, t.events.c.at).where(
            t.events.c.task_id == task_id, t.events.c.type == "approval.ruled"
        )
    ).all()
    for text, at in rows:
        if json.loads(text).get("approval_id") == payload.get("approval_id"):
            return str(at)
    return ""


def requires_approval_on_record(conn: Connection, task_id: str, effect_id: str) -> bool:
    """Whether the effect's intent, as planned in the log, asked for an approval."""
    for _, _, p in _events(conn, task_id, ("effect.planned",)):
        if p.get("effect_id") == effect_id:
            return bool(p.get("requires_approval"))
    return False


def waivers_on_record(conn: Connection, task_id: str) -> set[str]:
    """The criteria whose last judgement in the log is a person's waiver."""
    last: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for type_, actor_kind, p in _events(conn, task_id, _JUDGING_EVENTS):
        last[str(p.get("criterion_id"))] = (type_, actor_kind, p)
    return {
        cid
        for cid, (type_, actor_kind, p) in last.items()
        if type_ == "criterion.judged"
        and p.get("status") == rules.CriterionState.WAIVED
        and actor_kind == rules.ActorKind.PERSON
    }
