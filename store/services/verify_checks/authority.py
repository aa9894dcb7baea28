"""Authority: the log replayed through the rules the commands enforce (store.rules
`event_authority`, over the state `fold_log_state` folds as the projections do), each event
one its actor's kind could have written at that point, whatever wrote the rows. A signed
task's transactions are known exactly (each signature closes one), an unsigned task's only
by their shared time."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ... import events as ev
from ... import rules
from ... import schema as t
from .findings import AuthorityFinding, TaskFindings

#: An event as the rules read it: (type, payload, actor kind, actor id, at).
_Seen = tuple[str, Any, str, str, str]


class AuthorityCheck:
    """Each decoded event of the log in turn (`see`): judged against the rules on the state
    before it, then folded into that state."""

    def __init__(self, found: TaskFindings, signed_seqs: frozenset[int]) -> None:
        self.found = found
        # The state the rules ask of the log so far, and the seqs that close a signed
        # transaction.
        self.log_state = rules.LogState()
        self.person_holds = False  # a person holds the task's lease (no agent writes)
        self.signed_seqs = signed_seqs
        self.signed_to = max(signed_seqs, default=0)
        #: Approvals decided against their rules: (seq, message, actor, rule), said with the
        #: approvals' problems (approvals.ApprovalsCheck), as verify always named them.
        self.bad_deciders: list[tuple[int, str, str, str]] = []
        self._last: _Seen | None = None

    @classmethod
    def of_task(cls, found: TaskFindings, conn: Connection) -> AuthorityCheck:
        sg = t.signatures
        signed = frozenset(
            int(seq)
            for (seq,) in conn.execute(sa.select(sg.c.seq).where(sg.c.task_id == found.task_id))
        )
        return cls(found, signed)

    def see(self, type_: str, decoded: Any, akind: str, aid: str, at: str, seq: int) -> None:
        """Only an event a rule judges, one in or after the store's name, or an agent's while
        a person holds the task is judged; the rest only moves the state the rules read,
        where it does (most do not)."""
        last = self._last
        last_kind = last[2] if last is not None else ""
        if (
            type_ in rules.JUDGED_EVENTS
            or akind == "system"
            or last_kind == "system"
            or (self.person_holds and akind == "agent")
        ):
            self._judge(rules.LogEvent(type_, decoded, akind, aid, at), seq, last)
        elif type_ in rules.LOG_STATE_EVENTS:
            self._fold(rules.LogEvent(type_, decoded, akind, aid, at))
        self._last = (type_, decoded, akind, aid, at)

    def _judge(self, e: rules.LogEvent, seq: int, last: _Seen | None) -> None:
        """The event against the rules, on the state before it; then the state after it."""
        # The event before it in the same transaction: one transaction's events share its
        # time, and on a signed task a signature closes one (an unsigned task's transactions
        # are only guessed from their time: two may share one on a server).
        prev = None
        if last is not None and last[4] == e.at and (seq - 1) not in self.signed_seqs:
            prev = rules.LogEvent(*last)
        refused = rules.event_authority(e, self.log_state, prev, exact=seq <= self.signed_to)
        if refused is not None:
            self._refused(e, seq, refused)
        if e.type in rules.LOG_STATE_EVENTS:
            self._fold(e)

    def _fold(self, e: rules.LogEvent) -> None:
        state = self.log_state
        rules.fold_log_state(state, e)
        lease = state.lease
        self.person_holds = (
            lease is not None and lease.holder_kind == rules.ActorKind.PERSON and not lease.ended
        )

    def _refused(self, e: rules.LogEvent, seq: int, refused: rules.Refusal) -> None:
        actor = f"{e.actor_kind}:{e.actor_id}"
        if e.type == ev.ApprovalDecided.TYPE and refused.rule.startswith("approval_"):
            # As verify always named it: an approval decided against its rules.
            said = f"seq {seq} decides approval {e.payload.approval_id}: {refused.message}"
            self.bad_deciders.append((seq, said, actor, refused.rule))
            return
        kind = "not_by_the_store" if e.actor_kind == rules.ActorKind.SYSTEM else "not_authorized"
        self.found.problems.append(
            AuthorityFinding(
                self.found.task_id,
                kind,
                f"seq {seq} ({e.type}) by {actor}: {refused.message}",
                seq=seq,
                actor=actor,
                rule=refused.rule,
            )
        )
