"""One task verified: its log streamed once, each row handed to the checks that watch it,
then each check's verdict on what it kept, in the order verify always reported them."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ... import events as ev
from ... import schema as t
from ...codec import EventDecoder
from ...errors import StoreError
from ...record import Event
from ...signing.keyring import Keyring
from ...store import Store
from ..verified_heads import VerifiedHead
from .approvals import ApprovalsCheck
from .authority import AuthorityCheck
from .blobs import BlobsCheck
from .budgets import BudgetsCheck
from .chain import ChainCheck, stream_log
from .findings import Finding, TaskFindings
from .lineage import LineageCheck
from .passkeys import PasskeysCheck
from .replay import Replay, Scratch
from .routing import WATCHED as _ROUTING_WATCH
from .routing import RoutingCheck
from .standing_rules import WATCHED as _RULES_WATCH
from .standing_rules import StandingRulesCheck

#: The event types whose payloads the checks after the stream need (see `_gather`); a note
#: kept as content names a blob, a tombstone retires one (retention, issue 35 part R).
_GATHERED = (
    frozenset(
        {
            ev.CheckpointWritten.TYPE,
            ev.ApprovalRequested.TYPE,
            ev.ApprovalConsumed.TYPE,
            ev.ApprovalDecided.TYPE,
            ev.BudgetCharged.TYPE,
            ev.ArtifactVersionRecorded.TYPE,
            ev.EvidenceAttached.TYPE,
            ev.EffectPlanned.TYPE,
            ev.EffectRevised.TYPE,
            ev.NoteStored.TYPE,
            ev.ContentRetired.TYPE,
        }
    )
    | _RULES_WATCH
)
_GATHERED |= _ROUTING_WATCH  # issue 42


class TaskCheck:
    """Every check of one task over one snapshot (`conn`), its replay in `scratch`; `run`
    leaves what was found in `problems` and `info`, and the log's head in `head`."""

    def __init__(
        self,
        store: Store,
        conn: Connection,
        scratch: Scratch,
        task_id: str,
        blob_cache: dict[str, str | None],
        remembered: VerifiedHead | None,
        keys: Keyring | None = None,
    ) -> None:
        self.conn = conn
        self.task_id = task_id
        self.found = TaskFindings(task_id)
        self.scratch = scratch
        self.chain = ChainCheck(self.found, remembered)
        self.replay = Replay(self.found, scratch)
        self.lineage = LineageCheck(self.found, conn)
        self.approvals = ApprovalsCheck(self.found)
        self.budgets = BudgetsCheck(self.found, conn)
        self.blobs = BlobsCheck(self.found, store, blob_cache)
        self.rules = StandingRulesCheck(self.found, conn)
        self.routing = RoutingCheck(self.found)
        self.passkeys = PasskeysCheck(self.found, conn, keys)

    @property
    def problems(self) -> list[Finding]:
        return self.found.problems

    @property
    def info(self) -> list[Finding]:
        return self.found.info

    @property
    def head(self) -> tuple[int, str] | None:
        """The log's last event (seq, hash); None when the task has no events."""
        return self.chain.head

    def run(self) -> TaskCheck:
        authority = AuthorityCheck.of_task(self.found, self.conn)
        self.scratch.begin()
        try:
            self._stream_log(authority)
            task = self.conn.execute(
                sa.select(t.tasks).where(t.tasks.c.task_id == self.task_id)
            ).first()
            self.chain.task_head(task)
            self.chain.remembered()
            self.replay.compare(self.conn)
        finally:
            self.scratch.discard()
        self.lineage.check()
        self.approvals.check(authority.bad_deciders)
        self.rules.check()
        self.passkeys.check()
        self.budgets.check()
        self.blobs.check()
        return self

    def _stream_log(self, authority: AuthorityCheck) -> None:
        """One pass over the log, row by row: the chain, decoding, the authority replay, the
        replay into the scratch database, and what lineage, approvals, budgets and blobs
        need. Memory stays bounded by the task's projections, not by the length of its log."""
        tid = self.task_id
        decoder = EventDecoder()
        for row in stream_log(self.conn, tid):
            seq, type_, fmt, payload, akind, aid, aname, at, prev, digest = row
            self.chain.link(row)
            try:
                decoded, actor = decoder(type_, fmt, payload, akind, aid, aname)
            # JSONDecodeError and pydantic's ValidationError are ValueErrors.
            except (ValueError, StoreError) as exc:
                self.replay.stop()
                reason = " ".join(str(exc).splitlines())[:300]
                self.found.problem(
                    "event_unreadable",
                    f"seq {seq} ({type_}) cannot be read: {reason}; "
                    "the task's projections were not compared with a replay",
                    seq,
                )
                continue
            event = Event(tid, seq, type_, decoded, actor, at, prev, digest)
            authority.see(type_, decoded, akind, aid, at, seq)
            if type_ in _GATHERED:
                self._gather(event)
            self.replay.see(event)
        self.replay.finish()

    def _gather(self, e: Event) -> None:
        """What the checks after the stream need of this event (each keeps its own)."""
        self.lineage.see(e)
        self.approvals.see(e)
        self.budgets.see(e)
        self.blobs.see(e)
        self.rules.see(e)
        self.routing.see(e)
        self.passkeys.see(e)
