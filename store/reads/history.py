"""What a person decided: their decisions across every task, newest first (an audit).

Which events are decisions is `store.rules`' word (`DECISION_EVENTS`, `decision_kind`); this
module reads them, by the person who wrote them, with the note they wrote and what they
decided on, in one query over the events (no N+1).
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from pydantic import Field
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from .read_model import ReadModel


class PastDecision(ReadModel):
    """A decision a person made: one row of their history (and of its export)."""

    at: str = Field(description="when it was recorded (UTC, ISO 8601)")
    kind: str = Field(description="rules.decision_kind: approved, rejected, reconcile, …")
    task_id: str
    task_title: str = Field(description="the task's title (its id once the task is deleted)")
    seq: int = Field(description="the event that records it")
    subject: str = Field(description="the approval, effect, criterion, checkpoint or wait id")
    what: str = Field(description="what was decided, in words")
    note: str = Field(description="the note or reason the person wrote")
    actor: str = Field(description="who decided (kind:id)")


class DecisionHistory(ReadModel):
    """A person's decisions, newest first, with the database clock they were read at."""

    now: str
    decisions: list[PastDecision]


#: The columns of a decision row, in the order an export writes them.
FIELDS = tuple(PastDecision.model_fields)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _a(word: str) -> str:
    """The word with its article: an initial, a milestone."""
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _describe(kind: str, p: dict[str, Any]) -> tuple[str, str, str]:
    """(subject id, what was decided, the note written) from an event's payload."""
    if kind == "sent_back":
        return p.get("approval_id", ""), "sent the request back", p.get("note", "")
    if kind in {"approved", "rejected", "approval"}:
        edited = " (edited)" if p.get("edited_digest") else ""
        return p.get("approval_id", ""), f"{kind} the request{edited}", p.get("note", "")
    if kind == "reconcile":
        how = "decided by hand" if p.get("decided_by_person") else "from an observation"
        return p.get("effect_id", ""), f"reconciled: {p.get('verdict')} ({how})", p.get("note", "")
    if kind in {"judgement", "waiver"}:
        return p.get("criterion_id", ""), f"judged {p.get('status')}", p.get("note", "")
    if kind == "stop":
        revoked = len(p.get("revoked_approvals") or ())
        cancelled = len(p.get("cancelled_effects") or ())
        what = (
            f"stopped the run ({_count(revoked, 'approval')} revoked, "
            f"{_count(cancelled, 'effect')} cancelled)"
        )
        return "", what, p.get("reason", "")
    if kind == "checkpoint":
        return (
            p.get("checkpoint_id", ""),
            f"wrote {_a(str(p.get('reason')))} checkpoint",
            p.get("note", ""),
        )
    if kind == "takeover":
        return "", f"took the task over (lease token {p.get('token')})", p.get("reason", "")
    if kind == "cancel_wait":
        return p.get("wait_id", ""), "cancelled the wait", p.get("reason", "")
    if kind == "late_acknowledged":
        what = f"acknowledged what changed after completion (through #{p.get('through_seq')})"
        return "", what, p.get("note", "")
    if kind == "follow_up":
        what = f"opened a follow-up task: {p.get('title', '')}"
        return p.get("followup_task_id", ""), what, p.get("note", "")
    return "", kind, ""


def decisions_by(
    conn: Connection, actor_id: str, *, actor_kind: str = "person", limit: int | None = None
) -> list[PastDecision]:
    """The actor's decisions, newest first. Each: `at`, `kind` (rules.decision_kind),
    `task_id`, `task_title`, `seq`, `subject` (approval, effect, criterion or checkpoint id),
    `what`, `note`, `actor` (kind:id)."""
    ev = t.events
    q = (
        sa.select(ev.c.task_id, ev.c.seq, ev.c.type, ev.c.payload, ev.c.at, t.tasks.c.title)
        .select_from(ev.outerjoin(t.tasks, t.tasks.c.task_id == ev.c.task_id))
        .where(
            ev.c.actor_kind == actor_kind,
            ev.c.actor_id == actor_id,
            ev.c.type.in_(sorted(rules.DECISION_EVENTS)),
        )
        .order_by(ev.c.at.desc(), ev.c.id.desc())
    )
    out: list[PastDecision] = []
    for r in conn.execute(q):
        payload = json.loads(r.payload) if isinstance(r.payload, str) else r.payload
        kind = rules.decision_kind(r.type, payload)
        if kind is None:
            continue
        subject, what, note = _describe(kind, payload)
        out.append(
            PastDecision(
                at=r.at,
                kind=kind,
                task_id=r.task_id,
                task_title=r.title or r.task_id,
                seq=r.seq,
                subject=subject,
                what=what,
                note=note or "",
                actor=f"{actor_kind}:{actor_id}",
            )
        )
        if limit is not None and len(out) >= limit:
            break
    return out


def history(store: Any, actor_id: str) -> DecisionHistory:
    """On a worker: the person's decisions, with the database clock they were read at."""
    from .. import db

    with store.read() as conn:
        return DecisionHistory(now=db.database_now(conn), decisions=decisions_by(conn, actor_id))
