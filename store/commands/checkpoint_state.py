"""The structured state a checkpoint holds: what another process needs to continue.

Identities and digests, not content, so a typical checkpoint stays well under 10 KB. It is
read inside the checkpoint's own write transaction, one small query per part, on the driver
(`db.Prepared`): a checkpoint is written often and the reads are fixed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa

from .. import db, rules
from .. import schema as t
from ..canonical import canonical_json, same_json, sha256_hex
from ..projections import state_parts
from ..tx import KnownState, Tx

_TASK: sa.BindParameter[str] = sa.bindparam("task_id")
_c, _a, _v = t.criteria, t.artifacts, t.artifact_versions

_OBJECTIVE = db.Prepared(
    sa.select(t.objective_revisions.c.rev, t.objective_revisions.c.text)
    .where(t.objective_revisions.c.task_id == _TASK)
    .order_by(t.objective_revisions.c.rev.desc())
    .limit(1)
)
_ARTIFACTS = db.Prepared(
    sa.select(_a.c.artifact_id, _a.c.current_version, _v.c.digest, _v.c.size)
    .select_from(
        _a.outerjoin(
            _v,
            sa.and_(
                _v.c.task_id == _a.c.task_id,
                _v.c.artifact_id == _a.c.artifact_id,
                _v.c.version == _a.c.current_version,
            ),
        )
    )
    .where(_a.c.task_id == _TASK)
    .order_by(_a.c.position)
)
_CRITERIA = db.Prepared(
    sa.select(_c.c.criterion_id, _c.c.status, _c.c.artifact_id, _c.c.artifact_version)
    .where(_c.c.task_id == _TASK)
    .order_by(_c.c.position)
)
_EFFECTS = db.Prepared(
    sa.select(
        t.effects.c.effect_id,
        t.effects.c.kind,
        t.effects.c.target,
        t.effects.c.stage,
        t.effects.c.outcome,
        t.effects.c.idempotency_key,
        t.effects.c.requires_approval,
    )
    .where(t.effects.c.task_id == _TASK)
    .order_by(t.effects.c.position)
)
_APPROVALS = db.Prepared(
    sa.select(
        t.approvals.c.approval_id,
        t.approvals.c.effect_id,
        t.approvals.c.state,
        t.approvals.c.payload_digest,
        t.approvals.c.expires_at,
    )
    .where(
        t.approvals.c.task_id == _TASK,
        # Spelled out, not IN (...): an expanding IN cannot be compiled once for the driver.
        sa.or_(t.approvals.c.state == "pending", t.approvals.c.state == "approved"),
    )
    .order_by(t.approvals.c.requested_at)
)
_BUDGETS = db.Prepared(
    sa.select(t.budgets.c.counter, t.budgets.c.used, t.budgets.c.limit_value, t.budgets.c.reserved)
    .where(t.budgets.c.task_id == _TASK)
    .order_by(t.budgets.c.counter)
)
_HAS_PHASES = db.Prepared(
    sa.select(t.phases.c.phase_id).where(t.phases.c.task_id == _TASK).limit(1)
)
_HAS_OPEN_WAIT = db.Prepared(
    sa.select(t.waits.c.wait_id)
    .where(t.waits.c.task_id == _TASK, t.waits.c.state == rules.WaitState.OPEN.value)
    .limit(1)
)


recovery = rules.recovery
pending_work = rules.pending_work


def _objective(tx: Tx, task_id: str, key: dict[str, str]) -> dict[str, Any]:
    rev, text = _OBJECTIVE.run(tx.conn, key)[0]
    return {
        "rev": rev,
        "digest": "sha256:" + sha256_hex(text.encode("utf-8")),
        # Objectives are short; a long one is kept by digest only.
        "text": text if len(text) <= 2000 else None,
    }


def _criteria(tx: Tx, task_id: str, key: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"id": cid, "status": status, "artifact_id": aid, "artifact_version": version}
        for cid, status, aid, version in _CRITERIA.run(tx.conn, key)
    ]


def _artifacts(tx: Tx, task_id: str, key: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"id": aid, "version": version, "digest": digest, "size": size}
        for aid, version, digest, size in _ARTIFACTS.run(tx.conn, key)
    ]


def _effects(tx: Tx, task_id: str, key: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "id": eid,
            "kind": kind,
            "target": target,
            "stage": stage,
            "outcome": outcome,
            "idempotency_key": ikey,
            "safe_recovery": recovery(stage, outcome, bool(needs_approval)),
        }
        for eid, kind, target, stage, outcome, ikey, needs_approval in _EFFECTS.run(tx.conn, key)
        if rules.effect_unresolved(stage, outcome)
    ]


def _approvals(tx: Tx, task_id: str, key: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "id": aid,
            "effect_id": eid,
            "state": str(rules.approval_state(astate, expires, tx.now)),
            "payload_digest": digest,
            "expires_at": expires,
        }
        for aid, eid, astate, digest, expires in _APPROVALS.run(tx.conn, key)
    ]


def _budgets(tx: Tx, task_id: str, key: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"counter": counter, "used": used, "limit": limit, "reserved": reserved}
        for counter, used, limit, reserved in _BUDGETS.run(tx.conn, key)
    ]


def _phases(tx: Tx, task_id: str, key: dict[str, str]) -> list[dict[str, Any]]:
    if not _HAS_PHASES.run(tx.conn, key):
        return []
    from ..reads.queries import derive_phases

    return [
        {"id": p["phase_id"], "status": p["readiness"], "blocked_by": p["blocked_by"]}
        for p in derive_phases(tx.conn, task_id).values()
        if p["readiness"] != "done"
    ]


def _waits(tx: Tx, task_id: str, key: dict[str, str]) -> list[dict[str, Any]]:
    # Waits still open as read now (a met condition or a closed record retires one: the
    # `wait_state` rule, by store.reads.waits); times left out, so the state holds as the
    # clock moves and only events change it. A wait written as anything but open is never
    # open now (rules.wait_state): with none, nothing more is read.
    if not _HAS_OPEN_WAIT.run(tx.conn, key):
        return []
    from ..reads.waits import task_waits

    return [
        {"id": w.wait_id, "kind": str(w.kind), "ref": w.ref}
        for w in task_waits(tx.conn, task_id, tx.now)
        if w.state == rules.WaitState.OPEN
    ]


_Part = Callable[[Tx, str, dict[str, str]], Any]
#: Each part of the state and how it is read (store.projections.state_parts names what
#: each event may change), in the state's order.
_PARTS: dict[str, _Part] = {
    "status": lambda tx, task_id, _: tx.task(task_id).status,
    "objective": _objective,
    "criteria": _criteria,
    "artifacts": _artifacts,
    "unresolved_effects": _effects,
    "open_approvals": _approvals,
    "budgets": _budgets,
    "pending_phases": _phases,
    "open_waits": _waits,
}
assert tuple(_PARTS) == state_parts.PARTS


def task_checkpoint_state(tx: Tx, task_id: str) -> dict[str, Any]:
    """The state read afresh from the projections, every part."""
    return _read(tx, task_id, {}, _PARTS)


def _read(tx: Tx, task_id: str, kept: dict[str, Any], parts: Iterable[str]) -> dict[str, Any]:
    """`kept` with `parts` read again, and the pending work worked out from the whole."""
    key = {"task_id": task_id}
    state = dict(kept)
    for name in parts:
        state[name] = _PARTS[name](tx, task_id, key)
    state.pop("pending_work", None)
    state["pending_work"] = pending_work(state)
    return state


# --- the state as last written ---------------------------------------------------------------


def known_state(tx: Tx, task_id: str) -> KnownState:
    """The task's checkpoint state at the transaction's current head. The state known at an
    earlier head (this transaction's or the store's memo) is carried over the events since,
    and only the parts they may have changed are read again (issue 44); the whole is read
    when nothing is known from the same chain."""
    head = tx._head(task_id)
    known = tx.learned.get(task_id) or (tx.memo.get(task_id) if tx.memo else None)
    if known is not None and known.head != head:
        known = known.after(e for e in tx.emitted if e.task_id == task_id)
    if known is None or known.head != head:
        return _known(head, task_checkpoint_state(tx, task_id))
    if known.holds(head, tx.now):
        return known
    stale = set(known.stale)
    if known.valid_until is not None and tx.now >= known.valid_until:
        stale |= state_parts.READ_FROM["approvals"]  # an approval expired since
    parts = [p for p in _PARTS if p in stale]
    if state_parts.REDONE in stale:
        return _known(head, _read(tx, task_id, known.state, parts))
    key = {"task_id": task_id}
    fresh = {name: _PARTS[name](tx, task_id, key) for name in parts}
    if all(same_json(fresh[p], known.state[p]) for p in parts):
        # The events since changed none of what they might have (an effect revised before
        # its approval, a wait that does not open): the state, its JSON and its digest hold
        # at the new head, not made again. Compared as their JSON, which the event stores.
        return KnownState(head, known.state, known.state_json, known.digest, known.valid_until)
    return _known(head, _read(tx, task_id, {**known.state, **fresh}, ()))


def _known(head: tuple[int, str], state: dict[str, Any]) -> KnownState:
    text = canonical_json(state)
    expiries = [a["expires_at"] for a in state["open_approvals"] if a["state"] != "expired"]
    return KnownState(
        head,
        state,
        text,
        "sha256:" + sha256_hex(text.encode("utf-8")),
        min(expiries) if expiries else None,
    )
