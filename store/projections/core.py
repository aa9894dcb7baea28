"""Projections: the registry (`applies`, `apply`) and the task's own tables (objective,
criteria, artifacts, evidence, phases, budgets, status), one small function per event type.

`apply` runs inside the transaction that appends the event, and again, unchanged, when a
rebuild replays the log; so a rebuild gives the same rows by construction, and a property
test checks it. An apply function reads only the event and the projection rows: never the
file system, the clock or the blob store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import db, rules
from .. import events as ev
from .. import schema as t
from ..record import Event

Apply = Callable[[Connection, Event], None]
_APPLY: dict[str, Apply] = {}
#: Apply functions that move the task's head themselves, in the one UPDATE of the task's row
#: they make anyway; given the task's `checkpoint_heads` before the event as the driver
#: returned them when the caller read the row in this transaction (None: not read, so read).
# Returns the row it wrote where the write path has a use for it (a checkpoint's, which the
# head reader keeps), else None.
HeadApply = Callable[[Connection, Event, Any], dict[str, Any] | None]
_MOVES_HEAD: dict[str, HeadApply] = {}


def applies(type_name: str) -> Callable[[Apply], Apply]:
    def register(fn: Apply) -> Apply:
        _APPLY[type_name] = fn
        return fn

    return register


def applies_moving_head(type_name: str) -> Callable[[HeadApply], HeadApply]:
    def register(fn: HeadApply) -> HeadApply:
        _MOVES_HEAD[type_name] = fn
        return fn

    return register


_ADVANCE_HEAD = db.Prepared(
    t.tasks.update()
    .where(t.tasks.c.task_id == sa.bindparam("task_id"))
    .values(
        last_seq=sa.bindparam("seq"), head_hash=sa.bindparam("hash"), updated_at=sa.bindparam("at")
    )
)


def apply(conn: Connection, event: Event, heads_stored: Any = None) -> dict[str, Any] | None:
    """Fold one event into the projections. `heads_stored`: the task's checkpoint heads
    column before the event, as read in this transaction, when the caller has it (the write
    path does); a checkpoint's apply then need not read it again. Returns the checkpoint row
    a `checkpoint.written` made (as stored), else None."""
    own = _MOVES_HEAD.get(event.type)
    if own is not None:
        return own(conn, event, heads_stored)
    if event.type != "task.created":
        # Not read back: on a server it is sent with the next read or the COMMIT.
        _ADVANCE_HEAD.send(
            conn, {"task_id": event.task_id, "seq": event.seq, "hash": event.hash, "at": event.at}
        )
    fn = _APPLY.get(event.type)
    if fn is not None:
        fn(conn, event)
    if event.type in rules.LATE_FACT_EVENTS:
        _LATE_FACT.run(conn, {"task_id": event.task_id, "seq": event.seq, "at": event.at})
    return None


#: A fact of a kind that may arrive after completion, on a task that is completed, is late
#: (issue 35 part L): counted on the task's row, the first and newest remembered. The status
#: is left alone: it never leaves completed by itself.
_LATE_FACT = db.Prepared(
    t.tasks.update()
    .where(t.tasks.c.task_id == sa.bindparam("task_id"), t.tasks.c.status == "completed")
    .values(
        late_count=t.tasks.c.late_count + 1,
        late_since_seq=sa.func.coalesce(t.tasks.c.late_since_seq, sa.bindparam("seq")),
        late_since_at=sa.func.coalesce(t.tasks.c.late_since_at, sa.bindparam("at")),
        late_last_seq=sa.bindparam("seq"),
    )
)


def _late_answered(conn: Connection, event: Event) -> None:
    """A person answered the late facts up to `through_seq` (acknowledged them, or opened a
    follow-up for them): none is waiting any more."""
    conn.execute(
        t.tasks.update()
        .where(t.tasks.c.task_id == event.task_id)
        .values(late_count=0, late_since_seq=None, late_since_at=None)
    )


applies("late_changes.acknowledged")(_late_answered)
applies("followup.opened")(_late_answered)


def only_advances_head(type_name: str) -> bool:
    """Whether applying an event of this type does nothing but move the task's head (a
    replay may then skip it when a later event moves the head again)."""
    return type_name != "task.created" and type_name not in _APPLY and type_name not in _MOVES_HEAD


def _actor(event: Event) -> dict[str, Any]:
    return event.actor.model_dump(mode="json")


def _next_position(conn: Connection, table: sa.Table, task_id: str) -> int:
    q = sa.select(sa.func.coalesce(sa.func.max(table.c.position), 0)).where(
        table.c.task_id == task_id
    )
    return int(conn.execute(q).scalar_one()) + 1


@applies("task.created")
def _task_created(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.TaskCreated)
    conn.execute(
        t.tasks.insert().values(
            task_id=event.task_id,
            title=p.title,
            owner=p.owner,
            status=p.status,
            status_reason="",
            objective_rev=1,
            scope=p.scope.model_dump(mode="json"),
            created_at=event.at,
            updated_at=event.at,
            last_seq=event.seq,
            head_hash=event.hash,
        )
    )
    conn.execute(
        t.objective_revisions.insert().values(
            task_id=event.task_id,
            rev=1,
            text=p.objective,
            reason="initial objective",
            actor=_actor(event),
            at=event.at,
            seq=event.seq,
        )
    )


@applies("objective.amended")
def _objective_amended(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ObjectiveAmended)
    conn.execute(
        t.objective_revisions.insert().values(
            task_id=event.task_id,
            rev=p.rev,
            text=p.text,
            reason=p.reason,
            actor=_actor(event),
            at=event.at,
            seq=event.seq,
        )
    )
    conn.execute(
        t.tasks.update().where(t.tasks.c.task_id == event.task_id).values(objective_rev=p.rev)
    )


@applies("criterion.added")
def _criterion_added(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.CriterionAdded)
    conn.execute(
        t.criteria.insert().values(
            task_id=event.task_id,
            criterion_id=p.criterion_id,
            position=_next_position(conn, t.criteria, event.task_id),
            text=p.text,
            status="unverified",
            evidence_ids=[],
            note="",
            stale_reason="",
            rev=1,
            rev_seq=event.seq,
        )
    )


def _criterion_where(task_id: str, criterion_id: str) -> Any:
    return sa.and_(t.criteria.c.task_id == task_id, t.criteria.c.criterion_id == criterion_id)


def _next_rev(event: Event) -> dict[str, Any]:
    """The criterion's revision moves with every event that touches it."""
    return {"rev": t.criteria.c.rev + 1, "rev_seq": event.seq}


@applies("criterion.changed")
def _criterion_changed(conn: Connection, event: Event) -> None:
    # A changed criterion has not been demonstrated yet: its old judgement no longer applies.
    p = event.payload
    assert isinstance(p, ev.CriterionChanged)
    conn.execute(
        t.criteria.update()
        .where(_criterion_where(event.task_id, p.criterion_id))
        .values(
            text=p.text,
            status="unverified",
            artifact_id=None,
            artifact_version=None,
            evidence_ids=[],
            note=p.reason,
            judged_by=None,
            judged_at=None,
            stale_reason="",
            **_next_rev(event),
        )
    )


@applies("criterion.judged")
def _criterion_judged(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.CriterionJudged)
    conn.execute(
        t.criteria.update()
        .where(_criterion_where(event.task_id, p.criterion_id))
        .values(
            status=p.status,
            artifact_id=p.artifact_id,
            artifact_version=p.artifact_version,
            evidence_ids=list(p.evidence_ids),
            note=p.note,
            judged_by=_actor(event),
            judged_at=event.at,
            stale_reason="",
            **_next_rev(event),
        )
    )


@applies("artifact.version_recorded")
def _artifact_version(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ArtifactVersionRecorded)
    key = sa.and_(
        t.artifacts.c.task_id == event.task_id, t.artifacts.c.artifact_id == p.artifact_id
    )
    if p.version == 1:
        conn.execute(
            t.artifacts.insert().values(
                task_id=event.task_id,
                artifact_id=p.artifact_id,
                position=_next_position(conn, t.artifacts, event.task_id),
                name=p.name,
                role=p.role,
                current_version=1,
            )
        )
    else:
        conn.execute(t.artifacts.update().where(key).values(current_version=p.version, name=p.name))
    conn.execute(
        t.artifact_versions.insert().values(
            task_id=event.task_id,
            artifact_id=p.artifact_id,
            version=p.version,
            digest=p.digest,
            media_type=p.media_type,
            size=p.size,
            path=p.path,
            producer=p.producer.model_dump(mode="json"),
            note=p.note,
            at=event.at,
            seq=event.seq,
        )
    )
    # A criterion satisfied against an older version no longer speaks for the current one.
    conn.execute(
        t.criteria.update()
        .where(
            t.criteria.c.task_id == event.task_id,
            t.criteria.c.artifact_id == p.artifact_id,
            # rules.criterion_stales_on_change, said in SQL
            t.criteria.c.status == rules.CriterionState.SATISFIED.value,
            t.criteria.c.artifact_version < p.version,
        )
        .values(
            status="stale",
            stale_reason=f"{p.artifact_id} has version {p.version} (recorded at seq {event.seq})",
            **_next_rev(event),
        )
    )
    _invalidate_phases(conn, event.task_id, f"artifact:{p.artifact_id}", event.seq)


def _invalidate_phases(conn: Connection, task_id: str, input_key: str, seq: int) -> None:
    """Retire the current result of every phase that used `input_key`, and of their dependents.

    The result stays in the phase's history, marked as no longer current, so it can still be
    read but cannot authorize anything.
    """
    pending = [input_key]
    seen: set[str] = set()
    rows = {
        r.phase_id: dict(r._mapping)
        for r in conn.execute(sa.select(t.phases).where(t.phases.c.task_id == task_id))
    }
    while pending:
        key = pending.pop()
        if key in seen:
            continue
        seen.add(key)
        for row in rows.values():
            keys = {f"{i['kind']}:{i['ref']}" for i in row["inputs"]}
            if key not in keys or row["result"] is None:
                continue
            retired = dict(row["result"], retired_at_seq=seq, retired_because=key)
            history = [*row["history"][:-1], retired] if row["history"] else [retired]
            conn.execute(
                t.phases.update()
                .where(t.phases.c.task_id == task_id, t.phases.c.phase_id == row["phase_id"])
                .values(result=None, history=history)
            )
            row.update(result=None, history=history)
            pending.append(f"phase:{row['phase_id']}")


@applies("evidence.attached")
def _evidence_attached(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.EvidenceAttached)
    conn.execute(
        t.evidence.insert().values(
            task_id=event.task_id,
            evidence_id=p.evidence_id,
            criterion_id=p.criterion_id,
            kind=p.kind,
            digest=p.digest,
            media_type=p.media_type,
            size=p.size,
            description=p.description,
            locator=p.locator,
            actor=_actor(event),
            at=event.at,
            artifact_id=p.artifact_id,
            artifact_version=p.artifact_version,
            seq=event.seq,
        )
    )
    # Evidence attached is a change to the criterion a person judging it must have seen.
    conn.execute(
        t.criteria.update()
        .where(_criterion_where(event.task_id, p.criterion_id))
        .values(**_next_rev(event))
    )


@applies("phase.added")
def _phase_added(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.PhaseAdded)
    conn.execute(
        t.phases.insert().values(
            task_id=event.task_id,
            phase_id=p.phase_id,
            position=_next_position(conn, t.phases, event.task_id),
            name=p.name,
            inputs=[i.model_dump(mode="json") for i in p.inputs],
            result=None,
            history=[],
        )
    )


@applies("phase.completed")
def _phase_completed(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.PhaseCompleted)
    key = sa.and_(t.phases.c.task_id == event.task_id, t.phases.c.phase_id == p.phase_id)
    row = conn.execute(sa.select(t.phases.c.history).where(key)).one()
    result = {
        "ok": p.ok,
        "summary": p.summary,
        "input_identities": p.input_identities,
        "seq": event.seq,
        "at": event.at,
        "actor": _actor(event),
    }
    conn.execute(t.phases.update().where(key).values(result=result, history=[*row.history, result]))
    # Phases that used an earlier result of this phase must be re-evaluated.
    _invalidate_dependents(conn, event.task_id, p.phase_id, event.seq)


def _invalidate_dependents(conn: Connection, task_id: str, phase_id: str, seq: int) -> None:
    for row in conn.execute(sa.select(t.phases).where(t.phases.c.task_id == task_id)).all():
        if row.result is None or row.phase_id == phase_id:
            continue
        used = row.result.get("input_identities", {}).get(f"phase:{phase_id}")
        if used is not None and used != f"seq:{seq}":
            _invalidate_phases(conn, task_id, f"phase:{phase_id}", seq)
            return


# Budget events are frequent (an agent charges per tool call) and a replay applies each of
# them: their statements run on the driver (db.Prepared).
_B = t.budgets
_B_KEY = (_B.c.task_id == sa.bindparam("task_id"), _B.c.counter == sa.bindparam("counter"))
_BUDGET_ROW = db.Prepared(sa.select(_B.c.used, _B.c.reserved).where(*_B_KEY))
_NEW_BUDGET = db.Prepared(
    _B.insert().values(
        task_id=sa.bindparam("task_id"),
        counter=sa.bindparam("counter"),
        limit_value=sa.bindparam("limit"),
        used=sa.bindparam("used"),
        reserved=sa.bindparam("reserved"),
    )
)
_SET_LIMIT = db.Prepared(_B.update().where(*_B_KEY).values(limit_value=sa.bindparam("value")))
_SET_USED = db.Prepared(_B.update().where(*_B_KEY).values(used=sa.bindparam("value")))
_SET_RESERVED = db.Prepared(_B.update().where(*_B_KEY).values(reserved=sa.bindparam("value")))


def _budget_row(conn: Connection, task_id: str, counter: str) -> tuple[dict[str, str], Any]:
    """The counter's key and its (used, reserved), the row made first if it is new."""
    key = {"task_id": task_id, "counter": counter}
    rows = _BUDGET_ROW.run(conn, key)
    if not rows:
        _NEW_BUDGET.run(conn, {**key, "limit": None, "used": 0.0, "reserved": 0.0})
        rows = _BUDGET_ROW.run(conn, key)
    return key, rows[0]


@applies("budget.limit_set")
def _budget_limit(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.BudgetLimitSet)
    key, _ = _budget_row(conn, event.task_id, p.counter)
    _SET_LIMIT.run(conn, {**key, "value": p.limit})


@applies("budget.charged")
def _budget_charged(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.BudgetCharged)
    key, (used, _) = _budget_row(conn, event.task_id, p.counter)
    _SET_USED.run(conn, {**key, "value": used + p.amount})


@applies("budget.reserved")
def _budget_reserved(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.BudgetReserved)
    key, (_, reserved) = _budget_row(conn, event.task_id, p.counter)
    _SET_RESERVED.run(conn, {**key, "value": reserved + p.amount})


@applies("budget.released")
def _budget_released(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.BudgetReleased)
    key, (_, reserved) = _budget_row(conn, event.task_id, p.counter)
    _SET_RESERVED.run(conn, {**key, "value": max(0.0, reserved - p.amount)})


@applies("run.status_changed")
def _status_changed(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.RunStatusChanged)
    conn.execute(
        t.tasks.update()
        .where(t.tasks.c.task_id == event.task_id)
        .values(status=p.to_status, status_reason=p.reason)
    )


def clear(conn: Connection, task_id: str) -> None:
    for table in reversed(t.PROJECTIONS):
        conn.execute(table.delete().where(table.c.task_id == task_id))


def dump(conn: Connection, task_id: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every projection row of a task, in a stable order: what rebuild is compared by."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in t.PROJECTIONS:
        order = [c for c in table.primary_key.columns]
        rows = conn.execute(
            sa.select(table).where(table.c.task_id == task_id).order_by(*order)
        ).all()
        out[table.name] = [tuple(r) for r in rows]
    return out
