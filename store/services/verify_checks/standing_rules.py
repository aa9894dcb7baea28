"""Standing rules (issue 42): each approval a rule decided, judged again from the record.

A rule's decision (`approval.ruled`) stands only if the rule it names is a person's grant
where it says, signed by a key the store trusts for that person, not revoked nor expired at
the decision's time (database clock), covering the call as the log asked it (tool, target,
payload, scope; never a policy reserved for a person, never a quorum), and written by the
request's own writer (or by the rule's person, deciding what was pending when they granted
it), in the requester's session. Anything else is an `approval_decider` finding: an
approval decided against its rules, as verify names a person's.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from ... import events as ev
from ...commands.standing_rule_record import ruled_on_record
from ...record import Event
from .findings import AuthorityFinding, TaskFindings

#: The events this check keeps (store.services.verify_checks.task gathers them).
WATCHED = frozenset(
    {
        ev.ApprovalRequested.TYPE,
        ev.ApprovalRuled.TYPE,
        ev.LeaseAcquired.TYPE,
        ev.LeaseReleased.TYPE,
        ev.LeaseTakenOver.TYPE,
    }
)


class StandingRulesCheck:
    def __init__(self, found: TaskFindings, conn: Connection) -> None:
        self.found = found
        self.conn = conn
        self.requesters: dict[str, tuple[str, str]] = {}
        #: The lease as the log has it so far: (holder kind, id, session) or None.
        self.lease: tuple[str, str, str] | None = None
        self.ruled: list[tuple[Event, tuple[str, str, str] | None]] = []

    def see(self, e: Event) -> None:
        p = e.payload
        if isinstance(p, ev.ApprovalRequested):
            self.requesters[p.approval_id] = (str(e.actor.kind), e.actor.id)
        elif isinstance(p, ev.LeaseAcquired):
            self.lease = (str(e.actor.kind), e.actor.id, p.session_id)
        elif isinstance(p, ev.LeaseReleased | ev.LeaseTakenOver):
            self.lease = None
        elif isinstance(p, ev.ApprovalRuled):
            self.ruled.append((e, self.lease))

    def check(self) -> None:
        for e, lease in self.ruled:
            p = e.payload
            assert isinstance(p, ev.ApprovalRuled)
            actor = (str(e.actor.kind), e.actor.id)
            why = self._writer(p, actor, lease)
            if why is None:
                payload: dict[str, Any] = p.model_dump(mode="json")
                why = ruled_on_record(self.conn, self.found.task_id, payload, e.at, actor)
            if why is not None:
                self.found.problems.append(
                    AuthorityFinding(
                        self.found.task_id,
                        "approval_decider",
                        f"seq {e.seq} decides approval {p.approval_id} by standing rule "
                        f"{p.rule_id}: {why}",
                        seq=e.seq,
                        actor=f"{actor[0]}:{actor[1]}",
                        rule="standing_rule_on_record",
                    )
                )

    def _writer(
        self, p: ev.ApprovalRuled, actor: tuple[str, str], lease: tuple[str, str, str] | None
    ) -> str | None:
        """The request came before it, and its session was the requester's then (who may
        write it, the requester or the rule's person, is `ruled_on_record`'s)."""
        asked = self.requesters.get(p.approval_id)
        if asked is None:
            return "the log has no request for it before"
        if p.session_id is not None and (lease is None or lease != (*asked, p.session_id)):
            return f"{asked[0]}:{asked[1]} held no lease in session {p.session_id} then"
        return None
