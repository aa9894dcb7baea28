"""Routing (issue 42): a person names who decides a policy's requests, and when they widen.

`SetRoute` (a person's) routes a policy to people and groups (`person:ID`, `group:NAME`), with
how many distinct people must approve (kept as the policy's quorum, store.commands.policies),
an escalation after N minutes to more people, and what expiry does (reject, as any request, or
escalate). `SetGroup` names a group's people. On a signed store each person named must hold a
key the keyring trusts: a decider who cannot sign could never decide.

A request under a routed policy records its route in its own transaction (`route_request`:
`approval.routed`, groups resolved to people then); a decision by anyone else is refused
(`decide_refusal`); `EscalateDue` records the escalations that are due on the database clock
(`approval.escalated`), and moves an expired request's expiry on where its policy says so.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

import sqlalchemy as sa
from pydantic import Field

from .. import events as ev
from .. import schema as t
from .. import team
from ..errors import AuthorityRefused, CommandRejected, RoleRefused
from ..model import Actor
from ..reads import routing as routes
from ..reads.leases import lease_view
from ..rules.authority import TeamRole
from ..rules.leases import fence_refuses_every_token
from ..rules.routing import GROUP, PERSON, Route, escalation_due, route_refusal
from ..signing import keyring
from ..tx import Tx
from . import policies
from .core import Command, handles

_NAME = r"^(person|group):[A-Za-z0-9][A-Za-z0-9._@-]{0,56}$"
MAX_ESCALATE_MINUTES = 7 * 24 * 60


class SetRoute(Command):
    """A person's setting: who decides the requests made under `policy` from now on."""

    type: Literal["set_route"] = "set_route"
    policy: str = Field(min_length=1)
    deciders: list[str] = Field(default_factory=list, description="person:ID or group:NAME")
    approvers: int = Field(default=1, ge=1, le=9)
    escalate_after_minutes: float | None = Field(default=None, gt=0, le=MAX_ESCALATE_MINUTES)
    escalate_to: list[str] = Field(default_factory=list)
    on_expiry: Literal["reject", "escalate"] = "reject"
    #: Route it no more (its requests made since keep the route they recorded).
    remove: bool = False


class SetGroup(Command):
    """A person's setting: the people in a group routing names (`group:NAME`)."""

    type: Literal["set_group"] = "set_group"
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,56}$")
    members: list[str] = Field(min_length=1, description="person:ID each")


class EscalateDue(Command):
    """Record every escalation that is due now (database clock): a routed request nobody
    answered by its escalation time, or one that expired under `on_expiry: escalate`."""

    type: Literal["escalate_due"] = "escalate_due"


def _person(tx: Tx, actor: Actor, what: str) -> None:
    if actor.kind != "person":
        raise AuthorityRefused(
            "routing_is_a_persons", f"only a person {what}, not an {actor.kind} ({actor.id})"
        )
    role = _agents_login(tx)
    if role is not None:
        # The server refuses it too (an agents' role may not write the store's settings);
        # said here first, in the store's words, with the role.
        raise RoleRefused(
            "person_setting_needs_reviewer_role",
            f"database role {role} is an agents' role: a person {what} through a reviewers' "
            "login, whatever actor the writer names",
            role,
        )


def _agents_login(tx: Tx) -> str | None:
    """The connection's database role when it is a team store's agents' role (and no
    reviewers'); None elsewhere (SQLite, the owner, a reviewers' login)."""
    if tx.conn.dialect.name != "postgresql":
        return None
    me = str(tx.conn.execute(sa.text("SELECT current_user")).scalar())
    kinds = team.member_kinds(tx.conn, [me])[me]
    if TeamRole.AGENTS in kinds and TeamRole.REVIEWERS not in kinds:
        return me
    return None


def _trusted_people(tx: Tx) -> set[str] | None:
    """The people the keyring trusts now; None when the store signs nothing."""
    ring = keyring.load(tx.conn)
    if ring.empty and not keyring.required(tx.conn):
        return None
    return {
        b.actor_id
        for b in ring.bindings.values()
        if ring.trusted_person(b.key_id, tx.now) is not None
    }


def _check_names(tx: Tx, names: list[str]) -> None:
    import re

    trusted = _trusted_people(tx)
    for name in names:
        if not re.match(_NAME, name):
            raise CommandRejected(f"{name!r} is not person:ID or group:NAME")
        if name.startswith(GROUP):
            if routes.group_members(tx.conn, name[len(GROUP) :]) is None:
                raise CommandRejected(f"no {name} (boris route group NAME --member person:ID)")
        elif trusted is not None and name[len(PERSON) :] not in trusted:
            raise CommandRejected(
                f"{name} holds no key the keyring trusts: they could not sign a decision "
                "(boris keys add … --for " + name + ")"
            )


def resolve(tx: Tx, names: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The people (ids) named, groups resolved now, each once, in order."""
    people: list[str] = []
    for name in names:
        if name.startswith(GROUP):
            people += routes.group_members(tx.conn, name[len(GROUP) :]) or ()
        else:
            people.append(name[len(PERSON) :])
    return tuple(dict.fromkeys(people))


@handles(SetRoute)
def _set_route(tx: Tx, cmd: SetRoute, actor: Actor) -> str:
    _person(tx, actor, "routes a policy")
    if cmd.remove:
        routes.put_meta(tx.conn, routes.route_key(cmd.policy), None)
        return "removed"
    if not cmd.deciders:
        raise CommandRejected("a route names who decides: --decider person:ID or group:NAME")
    if cmd.escalate_to and cmd.escalate_after_minutes is None and cmd.on_expiry != "escalate":
        raise CommandRejected(
            "--escalate-to needs --escalate-after MINUTES or --on-expiry escalate"
        )
    _check_names(tx, [*cmd.deciders, *cmd.escalate_to])
    value = cmd.model_dump(mode="json", exclude={"type", "remove"})
    value.update(set_by=f"{actor.kind}:{actor.id}", set_at=tx.now)
    routes.put_meta(tx.conn, routes.route_key(cmd.policy), value)
    # The quorum is the policy's own setting (store.commands.policies), as `boris policy set`.
    policies.set_approvers(
        tx.conn, cmd.policy, cmd.approvers, actor.model_dump(mode="json"), tx.now
    )
    return "routed"


@handles(SetGroup)
def _set_group(tx: Tx, cmd: SetGroup, actor: Actor) -> str:
    _person(tx, actor, "names a group")
    bad = [m for m in cmd.members if not m.startswith(PERSON)]
    if bad:
        raise CommandRejected(f"a group's members are people (person:ID), not {', '.join(bad)}")
    _check_names(tx, cmd.members)
    value = {
        "name": cmd.name,
        "members": [m[len(PERSON) :] for m in cmd.members],
        "set_by": f"{actor.kind}:{actor.id}",
        "set_at": tx.now,
    }
    routes.put_meta(tx.conn, routes.group_key(cmd.name), value)
    return cmd.name


def _plus_minutes(iso: str, minutes: float) -> str:
    start = dt.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    return f"{start + dt.timedelta(minutes=minutes):%Y-%m-%dT%H:%M:%S.%f}Z"


def route_request(tx: Tx, task_id: str, approval_id: str, policy: str, actor: Actor) -> bool:
    """Record the route of a request made under a routed policy (in its transaction)."""
    route = routes.route_of(tx.conn, policy)
    if route is None:
        return False
    after = route.get("escalate_after_minutes")
    tx.emit(
        task_id,
        ev.ApprovalRouted(
            approval_id=approval_id,
            policy=policy,
            named=tuple(route["deciders"]),
            deciders=resolve(tx, route["deciders"]),
            escalate_at=_plus_minutes(tx.now, float(after)) if after else None,
            escalate_to=resolve(tx, route.get("escalate_to") or ()),
            escalate_named=tuple(route.get("escalate_to") or ()),
            on_expiry=route.get("on_expiry") or "reject",
        ),
        actor,
    )
    return True


def decide_refusal(tx: Tx, task_id: str, approval_id: str, actor: Actor) -> None:
    """Refuse a decision of a routed request by someone it is not routed to (now)."""
    route = routes.route_on_record(tx.conn, task_id, approval_id)
    if route is None:
        return
    refused = route_refusal(route, str(actor.kind), actor.id, tx.now)
    if refused is not None:
        raise AuthorityRefused(refused.rule, refused.message)


@handles(EscalateDue)
def _escalate_due(tx: Tx, cmd: EscalateDue, actor: Actor) -> list[str]:
    """Each routed request still pending whose escalation is due, escalated once: however
    many processes tick at the same moment, the task's row lock is taken before its log's
    escalations are read (store.rules.escalation_due), so the second finds the first's."""
    done: list[str] = []
    for (task_id, approval_id), pending in routes.pending_routes(tx.conn).items():
        if escalation_due(pending.route, pending.expires_at, pending.escalations, tx.now) is None:
            continue
        tx.task(task_id)  # the task's row lock: one escalation, however many ticks
        if _fenced(tx, task_id, actor):
            continue  # a person holds the task: theirs (or the store's) to record, not the agent's
        route = routes.route_on_record(tx.conn, task_id, approval_id)
        expires_at = _expires_at(tx, task_id, approval_id)
        if route is None or expires_at is None:
            continue  # decided meanwhile
        why = escalation_due(route, expires_at, _escalations(tx, task_id, approval_id), tx.now)
        if why == "expired":
            minutes = _minutes(route, requested_at=_requested_at(tx, task_id, approval_id))
            payload = ev.ApprovalEscalated(
                approval_id=approval_id,
                to=route.escalate_to or route.deciders,
                why="expired",
                expires_at=_plus_minutes(tx.now, minutes),
            )
        elif why == "unanswered":
            payload = ev.ApprovalEscalated(
                approval_id=approval_id, to=route.escalate_to, why="unanswered"
            )
        else:
            continue
        tx.emit(task_id, payload, actor)
        done.append(f"{task_id}/{approval_id}")
    return done


def _fenced(tx: Tx, task_id: str, actor: Actor) -> bool:
    """Whether the task's lease fences every write of this actor's (an agent's, while a person
    holds the task): `boris verify` would judge its event there written past the fence."""
    if actor.kind != "agent":
        return False
    row = tx.lease(task_id)
    view = None if row is None else lease_view(row, tx.now)
    return fence_refuses_every_token(actor.kind, view) is not None


def _expires_at(tx: Tx, task_id: str, approval_id: str) -> str | None:
    """The request's expiry, while it is pending (None: decided, or no such request)."""
    found = tx.conn.execute(
        sa.select(t.approvals.c.expires_at).where(
            t.approvals.c.task_id == task_id,
            t.approvals.c.approval_id == approval_id,
            t.approvals.c.state == "pending",
        )
    ).scalar()
    return None if found is None else str(found)


def _escalations(tx: Tx, task_id: str, approval_id: str) -> set[str]:
    return {
        str(p.get("why"))
        for p, _ in routes.events_of(tx.conn, task_id, "approval.escalated")
        if p.get("approval_id") == approval_id
    }


def _requested_at(tx: Tx, task_id: str, approval_id: str) -> str:
    return str(
        tx.conn.execute(
            sa.select(t.approvals.c.requested_at).where(
                t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id
            )
        ).scalar_one()
    )


def _minutes(route: Route, requested_at: str) -> float:
    """How long an escalated expiry lasts: the route's escalation time, else an hour."""
    if route.escalate_at is None:
        return 60.0
    start = dt.datetime.strptime(requested_at, "%Y-%m-%dT%H:%M:%S.%fZ")
    end = dt.datetime.strptime(route.escalate_at, "%Y-%m-%dT%H:%M:%S.%fZ")
    return max((end - start).total_seconds() / 60, 1.0)
