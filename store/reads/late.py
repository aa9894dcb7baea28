"""What changed after a task completed (issue 35 part L), as the task's state, its header,
the decision queue and the resume brief show it.

The task's row counts the late facts no person answered yet (store.projections.core);
this reads which they are (the events from the first of them), what answered the earlier
ones (acknowledgements, follow-ups), and where a follow-up task came from.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from ..model import Actor
from .judging import _describe
from .read_model import ReadModel

_ANSWERS = ("late_changes.acknowledged", "followup.opened")


class LateFact(ReadModel):
    """A fact recorded after completion that no person answered yet: `by` the actor's label,
    `what` the fact in words."""

    seq: int
    at: str
    by: str
    type: str
    what: str


class LateAnswer(ReadModel):
    """A person's answer to late facts: an acknowledgement (through `through_seq`) or a
    follow-up task (`followup_task_id`)."""

    seq: int
    at: str
    by: str
    type: str
    through_seq: int | None
    followup_task_id: str | None
    note: str


class TaskOrigin(ReadModel):
    """The completed task a follow-up was opened from, and the last late fact it answers."""

    task_id: str
    through_seq: int


class LateChanges(ReadModel):
    """What changed after the task completed: `count` late facts not answered, from
    `since_seq` (at `since_at`), `last_seq` the seq an answer is based on, `words` the
    header's line (None when nothing is waiting), the `facts`, the `answers` so far and the
    `origin` (the task this one follows up, or None)."""

    count: int
    since_seq: int | None
    since_at: str | None
    last_seq: int | None
    words: str | None
    facts: list[LateFact]
    answers: list[LateAnswer]
    origin: TaskOrigin | None


def _what(type_: str, payload: dict[str, Any]) -> str:
    """A late fact in words, naming its subject."""
    if type_ == "observation.recorded":
        state = payload.get("state") or {}
        seen = "present" if state.get("exists") else "absent"
        digest = str(state.get("digest") or "")[:19]
        return f"observed {payload.get('target')} for effect {payload.get('effect_id')}: " + (
            f"{seen} ({digest})" if digest else seen
        )
    if type_ == "effect.reconciled":
        return f"effect {payload.get('effect_id')}: " + _describe(type_, payload)
    if type_ == "criterion.judged":
        return f"criterion {payload.get('criterion_id')}: " + _describe(type_, payload)
    return _describe(type_, payload)


def _events(conn: Connection, task_id: str, types: tuple[str, ...], from_seq: int) -> list[Any]:
    return list(
        conn.execute(
            sa.select(
                t.events.c.seq,
                t.events.c.type,
                t.events.c.payload,
                t.events.c.actor_kind,
                t.events.c.actor_id,
                t.events.c.actor_name,
                t.events.c.at,
            )
            .where(
                t.events.c.task_id == task_id,
                t.events.c.type.in_(types),
                t.events.c.seq >= from_seq,
            )
            .order_by(t.events.c.seq)
        )
    )


def _by(r: Any) -> str:
    return Actor(kind=r.actor_kind, id=r.actor_id, name=r.actor_name).label()


def origin_of(conn: Connection, task_id: str) -> TaskOrigin | None:
    """The completed task this one follows up, from its `task.created` (None: none)."""
    payload = conn.execute(
        sa.select(t.events.c.payload).where(
            t.events.c.task_id == task_id, t.events.c.type == "task.created"
        )
    ).scalar()
    origin = None if payload is None else json.loads(payload).get("origin")
    return TaskOrigin.model_validate(origin) if origin else None


def late_changes(conn: Connection, task_id: str) -> LateChanges:
    """`count` (late facts not answered), `since_seq`, `since_at`, `last_seq` (the seq an
    answer is based on), `words` (the header's line, None when nothing is waiting), `facts`
    (each unanswered one: seq, at, by, type, what), `answers` (acknowledgements and
    follow-ups so far), `origin` (the task this one follows up, or None)."""
    row = conn.execute(
        sa.select(
            t.tasks.c.late_count,
            t.tasks.c.late_since_seq,
            t.tasks.c.late_since_at,
            t.tasks.c.late_last_seq,
        ).where(t.tasks.c.task_id == task_id)
    ).one()
    count = int(row.late_count or 0)
    facts = []
    if count and row.late_since_seq is not None:
        for r in _events(conn, task_id, tuple(sorted(rules.LATE_FACT_EVENTS)), row.late_since_seq):
            facts.append(
                LateFact(
                    seq=int(r.seq),
                    at=r.at,
                    by=_by(r),
                    type=r.type,
                    what=_what(r.type, json.loads(r.payload)),
                )
            )
    answers = []
    for r in _events(conn, task_id, _ANSWERS, 1):
        p = json.loads(r.payload)
        answers.append(
            LateAnswer(
                seq=int(r.seq),
                at=r.at,
                by=_by(r),
                type=r.type,
                through_seq=p.get("through_seq"),
                followup_task_id=p.get("followup_task_id"),
                note=p.get("note", ""),
            )
        )
    return LateChanges(
        count=count,
        since_seq=row.late_since_seq,
        since_at=row.late_since_at,
        last_seq=row.late_last_seq,
        words=rules.late_words(count, row.late_since_at) if count else None,
        facts=facts,
        answers=answers,
        origin=origin_of(conn, task_id),
    )


def late_view(store: Any, task_id: str) -> LateChanges:
    """`late_changes` on a read connection of the store."""
    with store.read() as conn:
        return late_changes(conn, task_id)
