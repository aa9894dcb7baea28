"""Routing (issue 42): each routed request's decisions and escalations, replayed from the log.

A decision of a routed request stands only if its person was one it was routed to at that
time (its deciders, or the escalation's people once its escalation time came or it expired
and was escalated: store.rules.route_refusal); an escalation only once it was due (its time
came, or the request expired under `on_expiry: escalate`). Anything else is an
`approval_decider` finding, as verify names a decision against the approvals' rules.
"""

from __future__ import annotations

from dataclasses import replace

from ... import events as ev
from ...record import Event
from ...rules.routing import Route, route_refusal
from .findings import AuthorityFinding, TaskFindings

WATCHED = frozenset(
    {
        ev.ApprovalRequested.TYPE,
        ev.ApprovalRouted.TYPE,
        ev.ApprovalDecided.TYPE,
        ev.ApprovalEscalated.TYPE,
    }
)


class RoutingCheck:
    def __init__(self, found: TaskFindings) -> None:
        self.found = found
        self.expires: dict[str, str] = {}
        self.routes: dict[str, Route] = {}

    def see(self, e: Event) -> None:
        p = e.payload
        if isinstance(p, ev.ApprovalRequested):
            self.expires[p.approval_id] = p.expires_at
        elif isinstance(p, ev.ApprovalRouted):
            self.routes[p.approval_id] = Route(
                approval_id=p.approval_id,
                policy=p.policy,
                named=p.named,
                deciders=p.deciders,
                escalate_at=p.escalate_at,
                escalate_to=p.escalate_to,
                escalate_named=p.escalate_named,
                on_expiry=p.on_expiry,
            )
        elif isinstance(p, ev.ApprovalDecided):
            route = self.routes.get(p.approval_id)
            if route is not None and e.actor.kind == "person":
                refused = route_refusal(route, "person", e.actor.id, e.at)
                if refused is not None:
                    self._finding(e, p.approval_id, refused.message, refused.rule)
        elif isinstance(p, ev.ApprovalEscalated):
            self._escalated(e, p)

    def _escalated(self, e: Event, p: ev.ApprovalEscalated) -> None:
        route = self.routes.get(p.approval_id)
        why = None
        if route is None:
            why = "it was never routed"
        elif p.why == "unanswered" and (route.escalate_at is None or route.escalate_at > e.at):
            why = f"its escalation time is {route.escalate_at}, after this escalation"
        elif p.why == "expired":
            expiry = self.expires.get(p.approval_id, "")
            if route.on_expiry != "escalate" or expiry > e.at:
                why = f"it expires at {expiry} and its policy does not escalate it then"
            else:
                self.routes[p.approval_id] = replace(route, escalated_on_expiry=True)
                if p.expires_at:
                    self.expires[p.approval_id] = p.expires_at
        if why is not None:
            self._finding(e, p.approval_id, f"escalated early: {why}", "escalation_when_due")

    def _finding(self, e: Event, approval_id: str, why: str, rule: str) -> None:
        self.found.problems.append(
            AuthorityFinding(
                self.found.task_id,
                "approval_decider",
                f"seq {e.seq} ({e.type}) of routed approval {approval_id}: {why}",
                seq=e.seq,
                actor=f"{e.actor.kind}:{e.actor.id}",
                rule=rule,
            )
        )
