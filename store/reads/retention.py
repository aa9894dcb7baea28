"""Retention as read: each item's class, when it falls due (database clock), whether it was
retired, what it proved and what still rests on it (blocking) or not (degraded).

A retired item is a typed absence: `retired_items` maps it to its tombstone, and the task's
state, the brief and the window say "retired on <date>", never "missing".
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from .actors import ActorRef
from .read_model import ReadModel

_R = t.retention


class Tombstone(ReadModel):
    """What stays of retired content: when and by whom, its digest, size, media type and
    class, what it proved, and the words the window and the brief say in its place."""

    retired_at: str
    retired_by: ActorRef | None
    digest: str
    size: int
    media_type: str
    retain: str
    proved: list[str]
    words: str


class RetiredItem(Tombstone):
    """A retired item weighed for the next actor: `blocking` while something still rests on
    it (`required_by`), `degraded` when only optional content went."""

    kind: str
    id: str
    weight: rules.RetiredWeight
    required_by: list[str]


class RetentionItem(ReadModel):
    """An item with a retention class, as `boris retention TASK` prints it."""

    item_kind: str
    item_id: str
    retain: str
    due_at: str | None
    due: bool
    digest: str
    size: int
    media_type: str
    written_by: ActorRef
    set_by: ActorRef
    state: str
    tombstone: Tombstone | None
    weight: rules.RetiredWeight | None
    required_by: list[str]


class Retention(ReadModel):
    """`boris retention TASK`: the items with a class, read at `now` (database clock)."""

    task_id: str
    now: str
    items: list[RetentionItem]


#: An artifact version's item id: `report@2` (the rules name items so too).
artifact_item = rules.artifact_item


def completed_at(conn: Connection, task_id: str) -> str | None:
    """When the task last became completed (its `run.status_changed` to completed), on the
    database's clock; None while it is not completed."""
    status = conn.execute(sa.select(t.tasks.c.status).where(t.tasks.c.task_id == task_id)).scalar()
    if status != rules.RunStatus.COMPLETED:
        return None
    rows = conn.execute(
        sa.select(t.events.c.payload, t.events.c.at)
        .where(t.events.c.task_id == task_id, t.events.c.type == "run.status_changed")
        .order_by(t.events.c.seq.desc())
    )
    for payload, at in rows:
        if json.loads(payload).get("to_status") == rules.RunStatus.COMPLETED:
            return str(at)
    return None


def due_at(row: Any, completed: str | None) -> str | None:
    """The row's due time: as recorded, or, for until-completion, the completion plus N."""
    if row.due_at is not None:
        return str(row.due_at)
    return rules.retention_due(rules.retention_class(str(row.retain)), str(row.set_at), completed)


def rows(conn: Connection, task_id: str) -> list[Any]:
    q = sa.select(_R).where(_R.c.task_id == task_id).order_by(_R.c.seq, _R.c.item_id)
    return list(conn.execute(q))


def retired_items(conn: Connection, task_id: str) -> dict[tuple[str, str], Tombstone]:
    """(item kind, item id) -> its tombstone: when, by whom, digest, size, media type, class."""
    q = sa.select(_R).where(_R.c.task_id == task_id, _R.c.retired_at.is_not(None))
    return {(str(r.item_kind), str(r.item_id)): tombstone(r) for r in conn.execute(q)}


def tombstone(row: Any) -> Tombstone:
    return Tombstone.model_validate(tombstone_fields(row))


def tombstone_fields(row: Any) -> dict[str, Any]:
    """A retired row's tombstone as JSON-ready data."""
    return {
        "retired_at": row.retired_at,
        "retired_by": _decoded(row.retired_by),
        "digest": row.digest,
        "size": int(row.size),
        "media_type": row.media_type,
        "retain": row.retain,
        "proved": list(_decoded(row.proved) or []),
        "words": retired_words(row.retired_at, row.digest, int(row.size), str(row.media_type)),
    }


def _decoded(value: Any) -> Any:
    """A JSON column as the driver gives it: text on some paths, decoded on others."""
    return json.loads(value) if isinstance(value, str) else value


def retired_words(at: str, digest: str, size: int, media_type: str) -> str:
    """What the window and the brief say in place of retired content."""
    return f"retired on {at[:10]} (kept: digest {digest[:19]}…, {size} bytes, {media_type})"


def required_by(conn: Connection, task_id: str, item_kind: str, item_id: str) -> list[str]:
    """What still rests on the item: a satisfied criterion judged on it (the evidence, or
    the artifact version), the artifact's current version (what the next actor works on),
    the head checkpoint's state or an open approval naming its digest. Empty: optional."""
    out: list[str] = []
    crits = conn.execute(
        sa.select(t.criteria).where(t.criteria.c.task_id == task_id).order_by(t.criteria.c.position)
    )
    for c in crits:
        if c.status != rules.CriterionState.SATISFIED:
            continue
        if item_kind == "evidence" and item_id in (c.evidence_ids or []):
            out.append(f"criterion {c.criterion_id} was judged satisfied on it")
        judged_on = artifact_item(str(c.artifact_id), int(c.artifact_version or 0))
        if item_kind == "artifact_version" and c.artifact_id is not None and judged_on == item_id:
            out.append(f"criterion {c.criterion_id} was judged satisfied on it")
    if item_kind == "artifact_version":
        artifact_id, _, version = item_id.rpartition("@")
        current = conn.execute(
            sa.select(t.artifacts.c.current_version).where(
                t.artifacts.c.task_id == task_id, t.artifacts.c.artifact_id == artifact_id
            )
        ).scalar()
        if current is not None and str(current) == version:
            out.append(f"it is the current version of {artifact_id}")
    digest = conn.execute(
        sa.select(_R.c.digest).where(
            _R.c.task_id == task_id, _R.c.item_kind == item_kind, _R.c.item_id == item_id
        )
    ).scalar()
    if digest and item_kind != "note":
        heads = conn.execute(
            sa.select(t.tasks.c.checkpoint_heads).where(t.tasks.c.task_id == task_id)
        ).scalar()
        if isinstance(heads, str):
            heads = json.loads(heads)
        for cp_id in heads or []:
            # The head's state is in its event's payload (store.checkpoint_reads).
            text = conn.execute(
                sa.select(t.events.c.payload)
                .select_from(
                    t.checkpoints.join(
                        t.events,
                        sa.and_(
                            t.events.c.task_id == t.checkpoints.c.task_id,
                            t.events.c.seq == t.checkpoints.c.event_seq,
                        ),
                    )
                )
                .where(t.checkpoints.c.task_id == task_id, t.checkpoints.c.checkpoint_id == cp_id)
            ).scalar()
            if text and digest in str(text):
                out.append(f"checkpoint {cp_id} names it")
        approvals = conn.execute(
            sa.select(t.approvals.c.approval_id, t.approvals.c.payload, t.approvals.c.state).where(
                t.approvals.c.task_id == task_id
            )
        )
        for a_id, payload, state in approvals:
            if state in ("pending", "approved") and digest in json.dumps(payload, default=str):
                out.append(f"approval {a_id} names it")
    return out


def item_rows(conn: Connection, task_id: str, now: str) -> list[RetentionItem]:
    """Every item with a class, as `boris retention TASK` prints it."""
    completed = completed_at(conn, task_id)
    out = []
    for r in rows(conn, task_id):
        due = due_at(r, completed)
        retired = r.retired_at is not None
        need = [] if not retired else required_by(conn, task_id, r.item_kind, r.item_id)
        out.append(
            RetentionItem.model_validate(
                {
                    "item_kind": r.item_kind,
                    "item_id": r.item_id,
                    "retain": r.retain,
                    "due_at": due,
                    "due": bool(due is not None and not retired and due <= now),
                    "digest": r.digest,
                    "size": int(r.size),
                    "media_type": r.media_type,
                    "written_by": r.written_by,
                    "set_by": r.set_by,
                    "state": "retired" if retired else "live",
                    "tombstone": tombstone(r) if retired else None,
                    "weight": str(rules.retired_weight(r.item_kind, need)) if retired else None,
                    "required_by": need,
                }
            )
        )
    return out


def retention(store: Any, task_id: str) -> Retention:
    """`boris retention TASK`: the items with a class, their due times and tombstones."""
    with store.read() as conn:
        store.task(task_id)
        now = store.now()
        return Retention(task_id=task_id, now=now, items=item_rows(conn, task_id, now))


def retired_problems(conn: Connection, task_id: str) -> list[RetiredItem]:
    """Each retired item, weighed for the next actor: blocking when something still rests on
    it, degraded when only optional content went (rules.retired_weight)."""
    out = []
    for (kind, item_id), stone in retired_items(conn, task_id).items():
        need = required_by(conn, task_id, kind, item_id)
        out.append(
            RetiredItem(
                kind=kind,
                id=item_id,
                weight=rules.retired_weight(kind, need),
                required_by=need,
                **dict(stone),
            )
        )
    return out
