"""Expiry as a workflow: tombstones first (one transaction), then the blobs they free.

A blob goes only after its tombstone is committed, and only when nothing live still names
its digest (another item, in this task or another, an effect's intent, a narrative): a
failed expiry never loses content, and a crash between the two steps leaves a tombstoned
blob, which verify accepts and the next `boris expire` removes. That question and the removal
are one step against writers (`Store.remove_blob`): a writer recording the same content at
that moment keeps the blob, or stores it again (issue 40).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import events as ev
from .. import schema as t
from ..commands.retention import ExpireContent, due_rows, task_ids_of
from ..model import Actor
from ..reads.retention import artifact_item
from ..record import Event

#: Event types that name a digest as the item a tombstone retires (not as a live use of it).
_ITEM_EVENTS = (
    "artifact.version_recorded",
    "evidence.attached",
    "note.stored",
    "retention.set",
    "content.retired",
)


def due_now(store: Any, task_id: str | None) -> list[dict[str, Any]]:
    """What `boris expire` would retire now (--dry-run): nothing is written."""
    with store.read() as conn:
        if task_id is not None:
            store.task(task_id)
        now = store.now()
        return [
            {
                "task_id": tid,
                "item_kind": r.item_kind,
                "item_id": r.item_id,
                "digest": r.digest,
                "due_at": due,
            }
            for tid, r, due in due_rows(conn, task_ids_of(conn, task_id), now)
        ]


def expire(store: Any, actor: Actor, task_id: str | None = None) -> dict[str, Any]:
    """Retire everything due (a person's act, store.rules.expire_refusal), then remove the
    blobs no live item names any more."""
    retired = store.execute(ExpireContent(task_id=task_id), actor)
    removed = remove_freed_blobs(store)
    return {"retired": retired, "blobs_removed": removed}


def _retired_keys(conn: Connection) -> set[tuple[str, str, str]]:
    q = sa.select(t.retention.c.task_id, t.retention.c.item_kind, t.retention.c.item_id).where(
        t.retention.c.retired_at.is_not(None)
    )
    return {(str(a), str(b), str(c)) for a, b, c in conn.execute(q)}


def live_uses(conn: Connection, digest: str) -> list[str]:
    """Whatever still names `digest` and is not retired, anywhere in the store."""
    retired = _retired_keys(conn)
    out = []
    av = t.artifact_versions
    for tid, aid, v in conn.execute(
        sa.select(av.c.task_id, av.c.artifact_id, av.c.version).where(av.c.digest == digest)
    ):
        if (tid, "artifact_version", artifact_item(aid, int(v))) not in retired:
            out.append(f"{tid}: artifact {aid} v{v}")
    e = t.evidence
    for tid, eid in conn.execute(
        sa.select(e.c.task_id, e.c.evidence_id).where(e.c.digest == digest)
    ):
        if (tid, "evidence", eid) not in retired:
            out.append(f"{tid}: evidence {eid}")
    r = t.retention
    for tid, nid in conn.execute(
        sa.select(r.c.task_id, r.c.item_id).where(
            r.c.digest == digest, r.c.item_kind == "note", r.c.retired_at.is_(None)
        )
    ):
        out.append(f"{tid}: note {nid}")
    # Any other event naming it (an effect's intended state, a narrative, a private note).
    ev = t.events
    other = conn.execute(
        sa.select(ev.c.task_id, ev.c.seq, ev.c.type)
        .where(ev.c.payload.contains(digest), ev.c.type.not_in(_ITEM_EVENTS))
        .limit(1)
    ).first()
    if other is not None:
        out.append(f"{other.task_id}: {other.type} (seq {other.seq})")
    return out


def remove_freed_blobs(store: Any) -> list[str]:
    """Remove each tombstoned digest's blob that nothing live names; returns their digests.
    Each is asked again and removed in one step no writer naming the digest can come
    between (`Store.remove_blob`): a writer recording the same content meanwhile either
    keeps the blob (its item is live) or stores it again, on either engine (issue 40)."""
    with store.read() as conn:
        digests = sorted(
            {
                str(d)
                for d in conn.execute(
                    sa.select(t.retention.c.digest).where(t.retention.c.retired_at.is_not(None))
                ).scalars()
            }
        )
        freed = [d for d in digests if not live_uses(conn, d)]
    removed = []
    for digest in freed:
        if store.blobs.problem(digest, verify=False) == "missing":
            continue  # gone already (an earlier expiry): no write transaction for it
        if store.remove_blob(digest, lambda conn, d=digest: bool(live_uses(conn, d))):
            removed.append(digest)
    return removed


# --- what a package carries (store.services.archive) -----------------------------------------


def tombstoned(events: Iterable[Event]) -> set[str]:
    """The digests every item naming them was retired from, by the log alone: an export
    carries their tombstones, not content the store no longer holds."""
    named: Counter[str] = Counter()
    retired: Counter[str] = Counter()
    for e in events:
        p = e.payload
        if isinstance(p, ev.ArtifactVersionRecorded | ev.EvidenceAttached | ev.NoteStored):
            named[p.digest] += 1
        elif isinstance(p, ev.ContentRetired):
            retired[p.digest] += 1
    return {d for d, n in named.items() if retired[d] >= n}


def retired_only(conn: Connection, digest: str) -> bool:
    """Whether the digest's items, as the projections on `conn` hold them (an import's
    staging store), were all retired: a package may then come without its blob."""
    stone = conn.execute(
        sa.select(t.retention.c.item_id)
        .where(t.retention.c.digest == digest, t.retention.c.retired_at.is_not(None))
        .limit(1)
    ).first()
    return stone is not None and not live_uses(conn, digest)
