"""Projections of the effect ledger, approvals, checkpoints and stop.

Like every projection these read only the event and projection rows, so a rebuild from the
log gives the same rows. The conditional update that makes an approval single-use runs in
the command handler (it must be able to lose a race); here consumption is a plain write.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import db, rules
from .. import events as ev
from .. import schema as t
from ..model import actor_json
from ..reads.checkpoints import decode_json
from ..reads.checkpoints import heads as task_heads
from ..record import Event
from .core import _actor, _next_position, applies, applies_moving_head


def _effect_key(task_id: str, effect_id: str) -> sa.ColumnElement[bool]:
    return sa.and_(t.effects.c.task_id == task_id, t.effects.c.effect_id == effect_id)


def _attempt_key(task_id: str, effect_id: str, attempt_no: int) -> sa.ColumnElement[bool]:
    return sa.and_(
        t.attempts.c.task_id == task_id,
        t.attempts.c.effect_id == effect_id,
        t.attempts.c.attempt_no == attempt_no,
    )


def _set_effect(conn: Connection, event: Event, effect_id: str, **values: Any) -> None:
    conn.execute(
        t.effects.update()
        .where(_effect_key(event.task_id, effect_id))
        .values(updated_at=event.at, **values)
    )


def _intent(p: ev.EffectPlanned | ev.EffectRevised, pre_state: Any) -> dict[str, Any]:
    return {
        "pre_state": pre_state,
        "intended": p.intended.model_dump(mode="json"),
        "prepared": p.prepared,
        "prepared_digest": p.prepared_digest,
    }


@applies("effect.planned")
def _effect_planned(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.EffectPlanned)
    pre = p.pre_state.model_dump(mode="json") if p.pre_state else None
    conn.execute(
        t.effects.insert().values(
            task_id=event.task_id,
            effect_id=p.effect_id,
            position=_next_position(conn, t.effects, event.task_id),
            kind=p.kind,
            target=p.target,
            idempotency_key=p.idempotency_key,
            intent={**_intent(p, pre), "policy": p.policy, **_pinned_tool(p)},
            consequence=p.consequence,
            requires_approval=p.requires_approval,
            stage="planned",
            outcome=None,
            reconciliation=None,
            created_at=event.at,
            updated_at=event.at,
        )
    )


def _pinned_tool(p: ev.EffectPlanned) -> dict[str, Any]:
    """The tool definition the intent was planned under, where it named one (issue 35 M),
    and the result schema a person may answer with in the tool's place (issue 42): each
    absent otherwise, so an intent without them reads as it always did."""
    declared = {} if p.result_schema is None else {"result_schema": p.result_schema}
    if p.tool is None:
        return declared
    return {"tool": p.tool, "tool_digest": p.tool_digest, **declared}


@applies("effect.tool_migrated")
def _effect_tool_migrated(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.EffectToolMigrated)
    row = conn.execute(
        sa.select(t.effects.c.intent).where(_effect_key(event.task_id, p.effect_id))
    ).one()
    intent = {**dict(row.intent), "tool": p.tool, "tool_digest": p.to_digest}
    _set_effect(conn, event, p.effect_id, intent=intent)


@applies("effect.revised")
def _effect_revised(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.EffectRevised)
    row = conn.execute(
        sa.select(t.effects.c.intent).where(_effect_key(event.task_id, p.effect_id))
    ).one()
    old = dict(row.intent)
    intent = {**_intent(p, old.get("pre_state")), "policy": old.get("policy", "")}
    # A revision changes the prepared object, not the tool definition it was planned under.
    intent.update({k: old[k] for k in ("tool", "tool_digest", "result_schema") if k in old})
    _set_effect(conn, event, p.effect_id, intent=intent, consequence=p.consequence, stage="planned")


@applies("effect.cancelled")
def _effect_cancelled(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.EffectCancelled)
    _set_effect(conn, event, p.effect_id, stage="cancelled")


@applies("attempt.dispatched")
def _attempt_dispatched(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.AttemptDispatched)
    intent = conn.execute(
        sa.select(t.effects.c.intent).where(_effect_key(event.task_id, p.effect_id))
    ).scalar_one()
    conn.execute(
        t.attempts.insert().values(
            task_id=event.task_id,
            effect_id=p.effect_id,
            attempt_no=p.attempt_no,
            executor=p.executor,
            inputs={"prepared": intent["prepared"], "prepared_digest": p.inputs_digest},
            approval_id=p.approval_id,
            started_at=event.at,
            ended_at=None,
            response=None,
            error=None,
            outcome="unknown",
        )
    )
    # Sent, and nothing known yet: until a response or an observation says more, the
    # outcome is unknown, which forbids a blind retry.
    _set_effect(
        conn, event, p.effect_id, stage="dispatched", outcome="unknown", reconciliation=None
    )


@applies("attempt.responded")
def _attempt_responded(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.AttemptResponded)
    conn.execute(
        t.attempts.update()
        .where(_attempt_key(event.task_id, p.effect_id, p.attempt_no))
        .values(ended_at=event.at, response=p.response, error=p.error, outcome=p.outcome)
    )
    stage = conn.execute(
        sa.select(t.effects.c.stage).where(_effect_key(event.task_id, p.effect_id))
    ).scalar()
    if stage is not None and rules.late_response_reopens(stage):
        # A response after the effect was settled re-opens its reconciliation.
        _set_effect(
            conn, event, p.effect_id, stage="dispatched", outcome=p.outcome, reconciliation=None
        )
        return
    _set_effect(conn, event, p.effect_id, outcome=p.outcome)


@applies("observation.recorded")
def _observation(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ObservationRecorded)
    conn.execute(
        t.observations.insert().values(
            task_id=event.task_id,
            observation_id=p.observation_id,
            effect_id=p.effect_id,
            artifact_id=p.artifact_id,
            target=p.target,
            exists=p.state.exists,
            digest=p.state.digest,
            size=p.state.size,
            mtime_ns=p.mtime_ns,
            purpose=p.purpose,
            observer=_actor(event),
            at=event.at,
            seq=event.seq,
        )
    )
    if p.effect_id is not None:
        conn.execute(
            t.effects.update()
            .where(_effect_key(event.task_id, p.effect_id), t.effects.c.stage == "dispatched")
            .values(stage="observed", updated_at=event.at)
        )


_VERDICT_OUTCOME = {"present": "succeeded", "absent": "absent"}


@applies("effect.reconciled")
def _effect_reconciled(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.EffectReconciled)
    record = {
        "verdict": p.verdict,
        "observation_id": p.observation_id,
        "reasons": list(p.reasons),
        "by": _actor(event),
        "by_person": p.decided_by_person,
        "overrode": p.overrode,
        "note": p.note,
        "at": event.at,
        "seq": event.seq,
    }
    outcome = _VERDICT_OUTCOME.get(p.verdict)
    if outcome is None:
        # A conflict settles nothing: it waits, recorded, for a person's decision.
        _set_effect(conn, event, p.effect_id, reconciliation=record)
        return
    _set_effect(
        conn, event, p.effect_id, stage="reconciled", outcome=outcome, reconciliation=record
    )
    last = conn.execute(
        sa.select(sa.func.max(t.attempts.c.attempt_no)).where(
            t.attempts.c.task_id == event.task_id, t.attempts.c.effect_id == p.effect_id
        )
    ).scalar()
    if last is not None:
        conn.execute(
            t.attempts.update()
            .where(_attempt_key(event.task_id, p.effect_id, int(last)))
            .values(outcome=outcome)
        )


def _approval_key(task_id: str, approval_id: str) -> sa.ColumnElement[bool]:
    # By task as well: an event of one task never touches another task's approval.
    return sa.and_(t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id)


@applies("approval.requested")
def _approval_requested(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ApprovalRequested)
    conn.execute(
        t.approvals.insert().values(
            approval_id=p.approval_id,
            task_id=event.task_id,
            effect_id=p.effect_id,
            payload=p.payload,
            payload_digest=p.payload_digest,
            consequence=p.consequence,
            policy=p.policy,
            requester=_actor(event),
            requested_at=event.at,
            expires_at=p.expires_at,
            state="pending",
            decided_by=None,
            decided_at=None,
            note="",
            consumed_at=None,
            consumed_by=None,
            approvers=p.approvers or 1,
            approved_by=[],
        )
    )


def _quorum(conn: Connection, event: Event, p: ev.ApprovalDecided) -> dict[str, Any]:
    """An approval counts its person once toward the request's quorum: the request stays
    pending until enough distinct people approved the object it binds now. An edit makes a
    new object, so the approvals of the old one no longer count (the list starts again)."""
    row = conn.execute(
        sa.select(t.approvals.c.approvers, t.approvals.c.approved_by).where(
            _approval_key(event.task_id, p.approval_id)
        )
    ).one()
    needed = max(int(row.approvers), p.needed or 1)
    people = [] if p.edited is not None else list(row.approved_by or [])
    if all(x.get("id") != event.actor.id for x in people):
        people.append(_actor(event))
    met = rules.quorum_met([str(x.get("id")) for x in people], needed)
    return {"approvers": needed, "approved_by": people, "state": "approved" if met else "pending"}


@applies("approval.decided")
def _approval_decided(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ApprovalDecided)
    values: dict[str, Any] = {"state": p.decision}
    if p.decision == "approved":
        values = _quorum(conn, event, p)
    state = values["state"]
    if state != "pending":
        # Decided: by the person whose answer settled it (the quorum's last, or any one's
        # rejection). Who approved before stays in `approved_by` and in the log.
        values.update(decided_by=_actor(event), decided_at=event.at, note=p.note)
    conn.execute(
        t.approvals.update().where(_approval_key(event.task_id, p.approval_id)).values(**values)
    )
    if p.edited is not None:
        # Edit, then approve: the approval binds the person's version from here on.
        conn.execute(
            t.approvals.update()
            .where(_approval_key(event.task_id, p.approval_id))
            .values(payload=p.edited, payload_digest=p.edited_digest)
        )
    effect_id = conn.execute(
        sa.select(t.approvals.c.effect_id).where(_approval_key(event.task_id, p.approval_id))
    ).scalar()
    if effect_id is not None and state == "approved":
        conn.execute(
            t.effects.update()
            .where(_effect_key(event.task_id, effect_id), t.effects.c.stage == "planned")
            .values(stage="approved", updated_at=event.at)
        )


@applies("approval.consumed")
def _approval_consumed(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ApprovalConsumed)
    conn.execute(
        t.approvals.update()
        .where(_approval_key(event.task_id, p.approval_id))
        .values(
            state="consumed",
            consumed_at=event.at,
            consumed_by=f"{p.effect_id}#{p.attempt_no}",
        )
    )


@applies("approval.retired")
def _approval_retired(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.ApprovalRetired)
    conn.execute(
        t.approvals.update()
        .where(
            t.approvals.c.task_id == event.task_id, t.approvals.c.approval_id.in_(p.approval_ids)
        )
        .values(state=p.state)
    )


_CK = t.checkpoints
_CK_COLUMNS = [col.name for col in _CK.columns]
# Checkpoints are written often; their statements run on the driver (db.Prepared), so JSON
# columns are given as JSON text here. The state stays in the event (at `event_seq`).
_INSERT_CHECKPOINT = db.Prepared(_CK.insert().values({n: sa.bindparam(n) for n in _CK_COLUMNS}))
# The task's new head and its checkpoint heads in one statement (one row, one page).
_SET_HEADS = db.Prepared(
    t.tasks.update()
    .where(t.tasks.c.task_id == sa.bindparam("task_id"))
    .values(
        last_seq=sa.bindparam("seq"),
        head_hash=sa.bindparam("hash"),
        updated_at=sa.bindparam("at"),
        checkpoint_heads=sa.bindparam("heads"),
    )
)


# Text `json.dumps` writes as it is between quotes: printable ASCII but the quote and the
# backslash (every generated id is).
_PLAIN = re.compile(r"[ !#-\[\]-~]*")


def _ids_json(ids: Sequence[str]) -> str:
    """`json.dumps(list(ids))`, the form these columns have always been written in, built
    without the encoder for the usual lists (none or a few generated ids): three of them
    on every checkpoint write."""
    if not ids:
        return "[]"
    if all(_PLAIN.fullmatch(i) is not None for i in ids):
        return "[" + ", ".join(f'"{i}"' for i in ids) + "]"
    return json.dumps(list(ids))


@applies_moving_head("checkpoint.written")
def _checkpoint_written(conn: Connection, event: Event, heads_stored: Any) -> dict[str, Any]:
    p = event.payload
    assert isinstance(p, ev.CheckpointWritten)
    key = {"task_id": event.task_id}
    replaced = {*p.supersedes, *p.merged}
    # The write transaction read the task's row already: its heads are not read again.
    before = task_heads(conn, event.task_id) if heads_stored is None else decode_json(heads_stored)
    heads = [h for h in before if h not in replaced]
    heads.append(p.checkpoint_id)
    _SET_HEADS.run(
        conn,
        {**key, "seq": event.seq, "hash": event.hash, "at": event.at, "heads": _ids_json(heads)},
    )
    row = checkpoint_row(event)
    _INSERT_CHECKPOINT.run(conn, row)
    return row


def checkpoint_row(event: Event) -> dict[str, Any]:
    """The checkpoints row a `checkpoint.written` event makes, as stored (JSON as text)."""
    p = event.payload
    assert isinstance(p, ev.CheckpointWritten)
    return {
        "task_id": event.task_id,
        "checkpoint_id": p.checkpoint_id,
        "reason": p.reason,
        "supersedes": _ids_json(p.supersedes),
        "merged": _ids_json(p.merged),
        "seq": p.boundary_seq,
        "chain_hash": p.boundary_hash,
        "event_seq": event.seq,
        "state_digest": p.state_digest,
        "author": actor_json(event.actor),
        "note": p.note,
        "at": event.at,
    }


@applies("run.stopped")
def _run_stopped(conn: Connection, event: Event) -> None:
    p = event.payload
    assert isinstance(p, ev.RunStopped)
    conn.execute(
        t.tasks.update()
        .where(t.tasks.c.task_id == event.task_id)
        .values(status="stopped", status_reason=p.reason)
    )
