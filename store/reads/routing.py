"""Routing (issue 42) as the store holds it: the routed policies and the groups a person set
(the store's settings, as `boris policy set` keeps a quorum), and each request's route as its
log recorded it (`approval.routed`, `approval.escalated`): what the decision view shows and
what the decision, dispatch and `boris verify` judge by.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa
from pydantic import Field
from sqlalchemy.engine import Connection

from .. import schema as t
from ..rules.routing import Route, route_refusal, route_words
from .read_model import ReadModel

ROUTE_PREFIX = "route:"
GROUP_PREFIX = "group:"


def route_key(policy: str) -> str:
    return ROUTE_PREFIX + hashlib.sha256(policy.encode("utf-8")).hexdigest()[:56]


def group_key(name: str) -> str:
    return GROUP_PREFIX + name


def _meta(conn: Connection, key: str) -> Any:
    value = conn.execute(sa.select(t.store_meta.c.value).where(t.store_meta.c.key == key)).scalar()
    return None if value is None else json.loads(value)


def put_meta(conn: Connection, key: str, value: Any) -> None:
    """Delete and insert: what a reviewers' role may do to the store's settings."""
    conn.execute(sa.delete(t.store_meta).where(t.store_meta.c.key == key))
    if value is not None:
        conn.execute(
            sa.insert(t.store_meta).values(key=key, value=json.dumps(value, sort_keys=True))
        )


def route_of(conn: Connection, policy: str) -> dict[str, Any] | None:
    """The routed policy's setting, where a person set one."""
    found = _meta(conn, route_key(policy))
    return found if isinstance(found, dict) else None


def group_members(conn: Connection, name: str) -> tuple[str, ...] | None:
    found = _meta(conn, group_key(name))
    return None if not isinstance(found, dict) else tuple(found["members"])


def events_of(conn: Connection, task_id: str, type_: str) -> list[tuple[dict[str, Any], str]]:
    e = t.events
    rows = conn.execute(
        sa.select(e.c.payload, e.c.at)
        .where(e.c.task_id == task_id, e.c.type == type_)
        .order_by(e.c.seq)
    ).all()
    return [(json.loads(p), str(at)) for p, at in rows]


def route_on_record(conn: Connection, task_id: str, approval_id: str) -> Route | None:
    """The request's route as its log recorded it; None when it was not routed."""
    found = None
    for p, _at in events_of(conn, task_id, "approval.routed"):
        if p.get("approval_id") == approval_id:
            found = p
            break
    if found is None:
        return None
    on_expiry = any(
        p.get("approval_id") == approval_id and p.get("why") == "expired"
        for p, _ in events_of(conn, task_id, "approval.escalated")
    )
    return _route(approval_id, found, on_expiry)


def routed_deciders(conn: Connection, task_id: str, approval_id: str) -> set[str] | None:
    """The people whose decisions of a routed request the log lets count: each was one it
    was routed to when they decided (an escalation counts from its time, or from the
    request's expiry where its policy escalates then); None when it was not routed."""
    route = route_on_record(conn, task_id, approval_id)
    if route is None:
        return None
    base = replace(route, escalated_on_expiry=False)
    expired_at = _expiry_escalation(conn, task_id, approval_id, route)
    e = t.events
    rows = conn.execute(
        sa.select(e.c.payload, e.c.actor_kind, e.c.actor_id, e.c.at)
        .where(e.c.task_id == task_id, e.c.type == "approval.decided")
        .order_by(e.c.seq)
    ).all()
    counted: set[str] = set()
    for payload, kind, who, at in rows:
        if json.loads(payload).get("approval_id") != approval_id or kind != "person":
            continue
        now = replace(base, escalated_on_expiry=expired_at is not None and expired_at <= str(at))
        if route_refusal(now, "person", str(who), str(at)) is None:
            counted.add(str(who))
    return counted


def _expiry_escalation(
    conn: Connection, task_id: str, approval_id: str, route: Route
) -> str | None:
    """When the request was escalated on its expiry, where its policy says so and the log's
    escalation came after the expiry it had; else None."""
    if route.on_expiry != "escalate":
        return None
    expiry = ""
    for p, _ in events_of(conn, task_id, "approval.requested"):
        if p.get("approval_id") == approval_id:
            expiry = str(p.get("expires_at") or "")
    for p, at in events_of(conn, task_id, "approval.escalated"):
        if p.get("approval_id") == approval_id and p.get("why") == "expired" and at >= expiry:
            return at
    return None


@dataclass(frozen=True)
class PendingRoute:
    """A pending routed request: its route as its log recorded it, its expiry now, and the
    escalations its log has (their `why`s)."""

    task_id: str
    approval_id: str
    expires_at: str
    route: Route
    escalations: frozenset[str]

    def waits_on(self, now: str) -> tuple[str, ...]:
        """The people (ids) who may decide it at `now`."""
        return self.route.may_decide(now)

    def words(self, now: str) -> str:
        return route_words(self.route, now)


_ROUTE_EVENTS = ("approval.routed", "approval.escalated")


def pending_routes(
    conn: Connection, task_ids: Collection[str] | None = None
) -> dict[tuple[str, str], PendingRoute]:
    """Every pending request that was routed (of `task_ids`, else of every task), keyed by
    (task, approval): one query, the log's routing events of the tasks with a pending
    approval (through the events' (task, type) index), however many there are."""
    a, e = t.approvals, t.events
    q = (
        sa.select(a.c.task_id, a.c.approval_id, a.c.expires_at, e.c.type, e.c.payload)
        .join(e, sa.and_(e.c.task_id == a.c.task_id, e.c.type.in_(_ROUTE_EVENTS)))
        .where(a.c.state == "pending")
        .order_by(e.c.task_id, e.c.seq)
    )
    if task_ids is not None:
        q = q.where(a.c.task_id.in_(sorted(set(task_ids))))
    routed: dict[tuple[str, str], dict[str, Any]] = {}
    whys: dict[tuple[str, str], set[str]] = {}
    expiry: dict[tuple[str, str], str] = {}
    for task_id, approval_id, expires_at, type_, payload in conn.execute(q):
        p = json.loads(payload)
        if p.get("approval_id") != approval_id:
            continue
        key = (str(task_id), str(approval_id))
        expiry[key] = str(expires_at)
        if type_ == "approval.routed":
            routed.setdefault(key, p)
        else:
            whys.setdefault(key, set()).add(str(p.get("why")))
    return {
        key: PendingRoute(
            key[0],
            key[1],
            expiry[key],
            _route(key[1], p, "expired" in whys.get(key, ())),
            frozenset(whys.get(key, ())),
        )
        for key, p in routed.items()
    }


def _route(approval_id: str, found: dict[str, Any], on_expiry: bool) -> Route:
    return Route(
        approval_id=approval_id,
        policy=str(found["policy"]),
        named=tuple(found["named"]),
        deciders=tuple(found["deciders"]),
        escalate_at=found.get("escalate_at"),
        escalate_to=tuple(found.get("escalate_to") or ()),
        escalate_named=tuple(found.get("escalate_named") or ()),
        on_expiry=str(found.get("on_expiry") or "reject"),
        escalated_on_expiry=on_expiry,
    )


def routing_words(conn: Connection, task_id: str, approval_id: str, now: str) -> str | None:
    """What the decision view says of a routed request (None: not routed)."""
    route = route_on_record(conn, task_id, approval_id)
    return None if route is None else route_words(route, now)


# --- the read model of `boris route list` ---------------------------------------------------


class RoutedPolicy(ReadModel):
    """One routed policy, as a person set it."""

    policy: str
    deciders: list[str] = Field(description="person:ID or group:NAME, as set")
    approvers: int = Field(description="how many distinct people must approve")
    escalate_after_minutes: float | None
    escalate_to: list[str]
    on_expiry: str = Field(description="reject (as any request) or escalate")
    set_by: str
    set_at: str


class Group(ReadModel):
    name: str
    members: list[str] = Field(description="the people (ids) in it")
    set_by: str
    set_at: str


class Routing(ReadModel):
    """`boris route list --json`: the routed policies and the groups."""

    policies: list[RoutedPolicy]
    groups: list[Group]


def routing(conn: Connection) -> Routing:
    rows = conn.execute(
        sa.select(t.store_meta.c.key, t.store_meta.c.value).where(
            sa.or_(
                t.store_meta.c.key.startswith(ROUTE_PREFIX),
                t.store_meta.c.key.startswith(GROUP_PREFIX),
            )
        )
    ).all()
    policies, groups = [], []
    for key, value in rows:
        v = json.loads(value)
        if str(key).startswith(ROUTE_PREFIX):
            policies.append(RoutedPolicy.model_validate(v))
        else:
            groups.append(Group.model_validate(v))
    return Routing(
        policies=sorted(policies, key=lambda p: p.policy),
        groups=sorted(groups, key=lambda g: g.name),
    )
