"""The words the record is written in: each state a thing can be in, and a refusal.

StrEnum: a member is its stored string, so the database, the events and the JSON reads keep
exactly the words they had. Every other rule module speaks these, so they sit apart, at the
bottom of the rules, importing nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ActorKind(StrEnum):
    AGENT = "agent"
    PERSON = "person"
    SYSTEM = "system"


class RunStatus(StrEnum):
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    SCHEDULED = "scheduled"
    PAUSED = "paused"
    BLOCKED = "blocked"
    OUTCOME_UNKNOWN = "outcome_unknown"
    BUDGET_EXHAUSTED = "budget_exhausted"
    STOPPED = "stopped"
    COMPLETED = "completed"
    FAILED = "failed"
    SUPERSEDED = "superseded"


class EffectStage(StrEnum):
    PLANNED = "planned"
    APPROVED = "approved"
    DISPATCHED = "dispatched"
    OBSERVED = "observed"
    RECONCILED = "reconciled"
    CANCELLED = "cancelled"


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    PARTIAL = "partial"
    UNKNOWN = "unknown"
    ABSENT = "absent"


class Verdict(StrEnum):
    PRESENT = "present"
    ABSENT = "absent"
    CONFLICT = "conflict"


class ApprovalState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    # Neither approved nor rejected: a person asked for changes, with a note; the agent
    # revises and asks again under a new digest (a new request).
    SENT_BACK = "sent_back"
    # A person answered in the tool's place ("respond", issue 42): the call is never run.
    ANSWERED = "answered"
    CONSUMED = "consumed"
    EXPIRED = "expired"
    STALE = "stale"
    REVOKED = "revoked"

    @property
    def label(self) -> str:
        """The state as a person reads it ("sent back for changes", not sent_back)."""
        return _APPROVAL_LABELS[self]


_APPROVAL_LABELS: dict[str, str] = {
    "pending": "waiting for a decision",
    "approved": "approved",
    "rejected": "rejected",
    "sent_back": "sent back for changes",
    "answered": "answered as the tool",
    "consumed": "used",
    "expired": "expired unanswered",
    "stale": "stale: its object changed",
    "revoked": "revoked",
}


class CriterionState(StrEnum):
    UNVERIFIED = "unverified"
    SATISFIED = "satisfied"
    FAILED = "failed"
    STALE = "stale"
    WAIVED = "waived"
    # Never stored: a criterion judged satisfied whose evidence cannot be read now.
    EVIDENCE_MISSING = "evidence_missing"


@dataclass(frozen=True)
class Refusal:
    """Why a command is refused: the rule's name and a sentence for the actor."""

    rule: str
    message: str
