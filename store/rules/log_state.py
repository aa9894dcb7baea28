"""A task's log as the authority replay reads it: its events and the state folded from them.

`LogState` is what the rules of `log_authority` ask of a task's state before an event, folded
from the events as the projections fold them (`fold_log_state`). Nothing here judges: the
state is the same whoever wrote the rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .leases import LeaseView, lease_standing
from .retention import artifact_item
from .states import ApprovalState, RunStatus

#: What an import appends in the store's name (store.services.archive): the package's open
#: approvals revoked as history, and its open lease ended (live authority never travels).
IMPORT_RETIRE_REASON = "imported from an archive: approvals are history here"
IMPORT_LEASE_NOTE = "imported: a lease is not carried to another store"
#: The artifact the summary the store generates is kept as (store.services.narratives).
SUMMARY_ARTIFACT = "summary"


class LogEvent(NamedTuple):
    """An event as the log's rules read it: its type, its payload (the event's model), who
    wrote it and its transaction's time."""

    type: str
    payload: Any
    actor_kind: str
    actor_id: str
    at: str


@dataclass(frozen=True)
class LoggedLease:
    """A task's current (or last) lease as its log tells it, with the expiry its acquisition
    granted. A heartbeat is not in the log and may have pushed that expiry out: a lease alive
    by its log was alive; one expired by its log may not have been. A person's has none."""

    token: int
    holder_kind: str
    holder_id: str
    session_id: str
    expires_at: str | None
    ended: bool = False

    def view(self, now: str) -> LeaseView:
        standing = lease_standing(now if self.ended else None, self.expires_at, now)
        return LeaseView(self.token, self.holder_kind, self.holder_id, self.session_id, standing)


@dataclass
class LogState:
    """What the rules ask of a task's state before an event, folded from its log."""

    status: str = ""
    lease: LoggedLease | None = None
    #: Each approval's requester (kind, id), and those still open (pending or approved).
    requesters: dict[str, tuple[str, str]] = field(default_factory=dict)
    open_approvals: dict[str, None] = field(default_factory=dict)
    #: Each counter's limit (absent: none ever set) and what was charged to it.
    limits: dict[str, float | None] = field(default_factory=dict)
    used: dict[str, float] = field(default_factory=dict)
    #: Who wrote each item that may carry a retention class ((item kind, id) -> (kind, id)),
    #: and the items retired.
    writers: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    retired: set[tuple[str, str]] = field(default_factory=set)
    #: Who recorded each wait.
    waits: dict[str, tuple[str, str]] = field(default_factory=dict)


def _fold_created(s: LogState, e: LogEvent) -> None:
    s.status = str(e.payload.status)


def _fold_status(s: LogState, e: LogEvent) -> None:
    s.status = str(e.payload.to_status)


def _fold_stopped(s: LogState, e: LogEvent) -> None:
    s.status = RunStatus.STOPPED


def _fold_acquired(s: LogState, e: LogEvent) -> None:
    p = e.payload
    s.lease = LoggedLease(int(p.token), e.actor_kind, e.actor_id, str(p.session_id), p.expires_at)


def _fold_taken_over(s: LogState, e: LogEvent) -> None:
    s.lease = LoggedLease(int(e.payload.token), e.actor_kind, e.actor_id, "", None)


def _fold_released(s: LogState, e: LogEvent) -> None:
    lease = s.lease
    if lease is not None and lease.token == int(e.payload.token):
        s.lease = LoggedLease(
            lease.token,
            lease.holder_kind,
            lease.holder_id,
            lease.session_id,
            lease.expires_at,
            ended=True,
        )


def _fold_requested(s: LogState, e: LogEvent) -> None:
    aid = str(e.payload.approval_id)
    s.requesters[aid] = (e.actor_kind, e.actor_id)
    s.open_approvals[aid] = None


def _fold_decided(s: LogState, e: LogEvent) -> None:
    if e.payload.decision != ApprovalState.APPROVED:  # rejected, sent back: settled
        s.open_approvals.pop(str(e.payload.approval_id), None)


def _fold_consumed(s: LogState, e: LogEvent) -> None:
    s.open_approvals.pop(str(e.payload.approval_id), None)


def _fold_approvals_retired(s: LogState, e: LogEvent) -> None:
    for aid in e.payload.approval_ids:
        s.open_approvals.pop(str(aid), None)


def _fold_limit(s: LogState, e: LogEvent) -> None:
    s.limits[str(e.payload.counter)] = e.payload.limit


def _fold_charged(s: LogState, e: LogEvent) -> None:
    counter = str(e.payload.counter)
    s.used[counter] = s.used.get(counter, 0.0) + float(e.payload.amount)


def _fold_artifact(s: LogState, e: LogEvent) -> None:
    p = e.payload
    item = ("artifact_version", artifact_item(str(p.artifact_id), int(p.version)))
    s.writers[item] = (str(p.producer.actor.kind), str(p.producer.actor.id))


def _fold_evidence(s: LogState, e: LogEvent) -> None:
    s.writers[("evidence", str(e.payload.evidence_id))] = (e.actor_kind, e.actor_id)


def _fold_note_stored(s: LogState, e: LogEvent) -> None:
    s.writers[("note", str(e.payload.note_id))] = (e.actor_kind, e.actor_id)


def _fold_content_retired(s: LogState, e: LogEvent) -> None:
    s.retired.add((str(e.payload.item_kind), str(e.payload.item_id)))


def _fold_wait(s: LogState, e: LogEvent) -> None:
    s.waits[str(e.payload.wait_id)] = (e.actor_kind, e.actor_id)


_FOLDS: dict[str, Callable[[LogState, LogEvent], None]] = {
    "task.created": _fold_created,
    "run.status_changed": _fold_status,
    "run.stopped": _fold_stopped,
    "lease.acquired": _fold_acquired,
    "lease.taken_over": _fold_taken_over,
    "lease.released": _fold_released,
    "approval.requested": _fold_requested,
    "approval.decided": _fold_decided,
    "approval.consumed": _fold_consumed,
    "approval.answered": _fold_consumed,  # answered in the tool's place: settled (issue 42)
    "approval.retired": _fold_approvals_retired,
    "budget.limit_set": _fold_limit,
    "budget.charged": _fold_charged,
    "artifact.version_recorded": _fold_artifact,
    "evidence.attached": _fold_evidence,
    "note.stored": _fold_note_stored,
    "content.retired": _fold_content_retired,
    "wait.recorded": _fold_wait,
}

#: The event types that change a `LogState` (others leave it as it is).
LOG_STATE_EVENTS: frozenset[str] = frozenset(_FOLDS)


def fold_log_state(state: LogState, e: LogEvent) -> None:
    """`state` after the event `e`."""
    fold = _FOLDS.get(e.type)
    if fold is not None:
        fold(state, e)
