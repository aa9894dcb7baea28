"""Verified deletion: a person removes a task from the store and the store keeps a receipt.

`delete_task` runs in ONE write transaction on either engine: the rules are checked
(store.rules.deletion_refusal), every row of the task is deleted from every table that holds
one (store.commands.deletion: the log, projections, checkpoints, approvals, leases, waits,
signatures of its events, the head verify last found clean), and a receipt is inserted
(`deletion_receipts`): the task id, the digest of its title (never the title), the head seq
and hash its chain had, what was removed, who, when (the database's clock) and why, signed
with the person's key where the store is signed.

The blobs only this task named go after the commit: a blob is removed only once no
committed row names it any more, so a crash in between leaves an unreferenced blob (an
orphan, which `orphan_blobs` and `boris receipts --orphans` name), never a reference
to a blob that is gone. Whether anything names it is asked again as it is removed, in one
step no writer can come between (`Store.remove_blob`): another task recording the same
content meanwhile keeps it (issue 40). On PostgreSQL that removal deletes the blob's rows
and its copy in this machine's cache.

Afterwards every read of the task raises `TaskDeleted` (an `UnknownTask` saying when and by
whom): see `deleted_error`, asked wherever a task row is missing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import db, notify, rules
from .. import events as ev
from .. import schema as t
from ..blobs import PREFIX
from ..canonical import canonical_json
from ..commands import deletion as rows
from ..errors import DeletionRefused, ReceiptFormatUnknown
from ..model import Actor
from ..reads import heads
from ..reads.deleted import absent
from ..reads.leases import lease_of
from ..signing import keyring
from ..signing.keys import check_signature
from ..signing.seal import Policy, check_signer, encode_signature
from ..store import Store

#: The receipt format this program writes and reads; a newer one is refused in one line.
RECEIPT_FORMAT = 1
#: What a receipt's signature is over (never confusable with a record's signature).
RECEIPT_DOMAIN = b"boris-deletion-receipt-v1\n"


@dataclass(frozen=True)
class DeletionPlan:
    """What deleting the task now would remove, and whether it is refused (for whom)."""

    task_id: str
    title: str
    status: str
    head_seq: int
    head_hash: str
    #: Per table, how many rows go.
    tables: dict[str, int]
    #: Blobs only this task names: they go after the commit.
    blobs: list[str]
    live_agent_lease: str | None
    effects_in_doubt: list[str]
    refusal: rules.Refusal | None = None

    @property
    def counts(self) -> dict[str, int]:
        """The receipt's counts: events, checkpoints, blobs, and every other table's rows."""
        out = {"events": self.tables.get("events", 0), "blobs": len(self.blobs)}
        out.update({k: v for k, v in sorted(self.tables.items()) if k != "events"})
        return out

    def lines(self) -> list[str]:
        """What will be removed, a line each, for a person about to decide."""
        c = self.tables

        def n(table: str, noun: str) -> str:
            count = c.get(table, 0)
            return f"{count} {noun}" + ("" if count == 1 or noun == "evidence" else "s")

        blobs = len(self.blobs)
        out = [
            f"Task {self.task_id} ({self.status}): {n('events', 'event')} up to seq "
            f"{self.head_seq}",
            f"{n('checkpoints', 'checkpoint')}, {n('artifact_versions', 'artifact version')}, "
            f"{n('evidence', 'evidence')}, {n('approvals', 'approval')}, "
            f"{n('effects', 'effect')}",
            f"{blobs} blob{'' if blobs == 1 else 's'} only this task uses (others stay)",
        ]
        rest = {
            k: v
            for k, v in c.items()
            if k
            not in {
                "events",
                "checkpoints",
                "artifact_versions",
                "evidence",
                "approvals",
                "effects",
            }
        }
        if rest:
            out.append("Other rows: " + ", ".join(f"{k} {v}" for k, v in sorted(rest.items())))
        return out


@dataclass
class Receipt:
    receipt_id: int
    format: int
    task_id: str
    title_digest: str
    head_seq: int
    head_hash: str
    counts: dict[str, int]
    actor: dict[str, str]
    deleted_at: str
    reason: str
    body_hash: str
    key_id: str | None = None
    signature: str | None = None
    #: After the commit: blobs whose removal failed (they stay, unreferenced: orphans).
    blobs_left: list[str] = field(default_factory=list)

    def body(self) -> dict[str, Any]:
        return receipt_body(
            self.task_id,
            self.title_digest,
            self.head_seq,
            self.head_hash,
            self.counts,
            self.actor,
            self.deleted_at,
            self.reason,
        )

    @property
    def who(self) -> str:
        return f"{self.actor['kind']}:{self.actor['id']}"

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["deleted_by"] = self.who
        return out

    def line(self) -> str:
        signed = f"signed by {self.key_id}" if self.key_id else "unsigned"
        return (
            f"{self.task_id}  deleted {self.deleted_at} by {self.who}  head seq {self.head_seq} "
            f"({self.head_hash[:12]})  {self.counts.get('events', 0)} events, "
            f"{self.counts.get('blobs', 0)} blobs  {signed}  — {self.reason}"
        )


def receipt_body(
    task_id: str,
    title_digest: str,
    head_seq: int,
    head_hash: str,
    counts: dict[str, int],
    actor: dict[str, str],
    deleted_at: str,
    reason: str,
) -> dict[str, Any]:
    """What a receipt's hash (and signature) covers."""
    return {
        "format": RECEIPT_FORMAT,
        "task_id": task_id,
        "title_digest": title_digest,
        "head_seq": head_seq,
        "head_hash": head_hash,
        "counts": dict(sorted(counts.items())),
        "actor": {"kind": actor["kind"], "id": actor["id"], "name": actor.get("name", "")},
        "deleted_at": deleted_at,
        "reason": reason,
    }


def body_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def title_digest(title: str) -> str:
    return PREFIX + hashlib.sha256(title.encode("utf-8")).hexdigest()


# --- planning and deleting -----------------------------------------------------------------


def _task_digests(store: Store, conn: Connection, task_id: str) -> set[str]:
    """Every blob digest the task's events name (artifacts, evidence, intents, private
    notes' content)."""
    from .archive.common import blob_refs

    events = list(store.load_events(conn, task_id))
    found = set(blob_refs(events))
    found.update(e.payload.digest for e in events if isinstance(e.payload, ev.PrivateNote))
    return found


def _plan(
    store: Store, conn: Connection, task_id: str, actor_kind: str, confirm: str, reason: str
) -> DeletionPlan:
    task = conn.execute(sa.select(t.tasks).where(t.tasks.c.task_id == task_id)).first()
    if task is None:
        raise absent(conn, task_id)
    now = db.database_now(conn)
    lease = lease_of(conn, task_id, now)
    live = None
    if (
        lease is not None
        and lease.standing == rules.LeaseStanding.ALIVE
        and lease.holder.kind != rules.ActorKind.PERSON
    ):
        live = f"{lease.holder.kind}:{lease.holder.id}"
    doubt = [
        str(r.effect_id)
        for r in conn.execute(
            sa.select(t.effects.c.effect_id, t.effects.c.stage, t.effects.c.outcome)
            .where(t.effects.c.task_id == task_id)
            .order_by(t.effects.c.position)
        )
        if rules.effect_to_reconcile(str(r.stage), r.outcome)
    ]
    digests = _task_digests(store, conn, task_id)
    only_here = sorted(digests - rows.shared_elsewhere(conn, task_id, digests))
    refusal = rules.deletion_refusal(
        actor_kind, task_id, confirm, reason, live_agent_lease=live, effects_in_doubt=doubt
    )
    return DeletionPlan(
        task_id=task_id,
        title=str(task.title),
        status=str(task.status),
        head_seq=int(task.last_seq),
        head_hash=str(task.head_hash),
        tables=rows.count_rows(conn, task_id),
        blobs=only_here,
        live_agent_lease=live,
        effects_in_doubt=doubt,
        refusal=refusal,
    )


def plan_deletion(
    store: Store, task_id: str, actor_kind: str = "person", confirm: str = "", reason: str = ""
) -> DeletionPlan:
    """What deleting the task would remove now (nothing is written). `refusal` says why it
    would be refused, given who asks, the id typed and the reason."""
    with store.read() as conn:
        return _plan(store, conn, task_id, actor_kind, confirm or task_id, reason or "-")


def delete_task(store: Store, task_id: str, actor: Actor, *, confirm: str, reason: str) -> Receipt:
    """Remove the task (a person's decision), keep its receipt, then remove the blobs only it
    named. Raises DeletionRefused (nothing removed) when the rules refuse."""
    with store.transaction() as tx:
        conn = tx.conn
        # On a server, the task's row locked: no writer appends to it until this commits.
        conn.execute(
            sa.select(t.tasks.c.task_id).where(t.tasks.c.task_id == task_id).with_for_update()
        )
        plan = _plan(store, conn, task_id, actor.kind, confirm, reason)
        if plan.refusal is not None:
            raise DeletionRefused(plan.refusal.message, rule=plan.refusal.rule)
        who = {"kind": str(actor.kind), "id": actor.id, "name": actor.name}
        body = receipt_body(
            task_id,
            title_digest(plan.title),
            plan.head_seq,
            plan.head_hash,
            plan.counts,
            who,
            tx.now,
            reason.strip(),
        )
        digest = body_hash(body)
        key_id, signature = _receipt_signature(store, conn, actor, digest, tx.now)
        inserted = conn.execute(
            t.deletion_receipts.insert().values(
                format=RECEIPT_FORMAT,
                task_id=task_id,
                title_digest=body["title_digest"],
                head_seq=plan.head_seq,
                head_hash=plan.head_hash,
                counts=body["counts"],
                actor_kind=who["kind"],
                actor_id=who["id"],
                actor_name=who["name"],
                deleted_at=tx.now,
                reason=body["reason"],
                body_hash=digest,
                key_id=key_id,
                signature=signature,
            )
        )
        receipt_id = int((inserted.inserted_primary_key or (0,))[0])
        # The receipt first: the events' guard lets an event go only when a receipt of its
        # task names a head at or after it (migration 0015).
        _remove_task_rows(conn, plan)
        notify.announce(conn, [task_id])
    # Committed. What this process kept of the task's head goes with it.
    heads.wrote(store, {})
    _truncate_wal(store)
    receipt = Receipt(
        receipt_id,
        RECEIPT_FORMAT,
        task_id,
        body["title_digest"],
        plan.head_seq,
        plan.head_hash,
        body["counts"],
        who,
        tx.now,
        body["reason"],
        digest,
        key_id,
        signature,
    )
    receipt.blobs_left = _remove_blobs(store, task_id, plan.blobs)
    return receipt


def _receipt_signature(
    store: Store, conn: Connection, actor: Actor, digest: str, now: str
) -> tuple[str | None, str | None]:
    """(key id, signature) of the receipt's body, by the person's key, where the store is
    signed or a signer is given (check_signer refuses a key that is not the person's);
    (None, None) on an unsigned store."""
    policy = Policy(where=store.location)
    policy.refresh(conn)
    if policy.signed or store.signer is not None:
        binding = check_signer(policy, store.signer, {(actor.kind, actor.id)}, now)
        if binding is not None and store.signer is not None:
            signature = encode_signature(store.signer.sign(RECEIPT_DOMAIN + digest.encode()))
            return store.signer.key_id, signature
    return None, None


def _remove_task_rows(conn: Connection, plan: DeletionPlan) -> None:
    """Every row of the task, from every table; on SQLite with its freed pages zeroed. A
    count other than the plan's means a writer got in between: nothing is removed."""
    sqlite = conn.dialect.name == "sqlite"
    if sqlite:
        # Freed pages zeroed as they are freed: the file keeps no copy of what went.
        conn.exec_driver_sql("PRAGMA secure_delete = ON")
    try:
        removed = rows.remove_rows(conn, plan.task_id)
    finally:
        if sqlite:
            conn.exec_driver_sql("PRAGMA secure_delete = OFF")
    if removed != plan.tables:
        raise DeletionRefused(
            f"task {plan.task_id} changed while it was being deleted; nothing was removed"
        )


def _truncate_wal(store: Store) -> None:
    """SQLite: copy the write-ahead log into the database and empty it, so its older frames
    (the task's pages as they were) do not stay on disk. Best effort: a reader holding an
    old snapshot keeps the log until it is done, and the next checkpoint empties it."""
    if store.location.sqlite_file is None:
        return
    with contextlib.suppress(sa.exc.DBAPIError), store.engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")


def _remove_blobs(store: Store, task_id: str, digests: Iterable[str]) -> list[str]:
    """Remove each blob no committed event names, asked again as it is removed, in one step
    no writer naming it can come between (`Store.remove_blob`): another writer storing the
    same content meanwhile keeps it, or stores it again (issue 40). Those that could not be
    removed are returned."""
    wanted = list(digests)
    if not wanted:
        return []
    with store.read() as conn:
        keep = rows.shared_elsewhere(conn, task_id, wanted)
    left = []
    for digest in wanted:
        if digest in keep:
            continue
        try:
            removed = store.remove_blob(digest, functools.partial(_named, digest=digest))
        except Exception:
            left.append(digest)
            continue
        if removed:
            # The file store's fan-out directory, when this was its last blob.
            with contextlib.suppress(OSError, ValueError):
                (store.blobs.root / digest[len(PREFIX) :][:2]).rmdir()
    return left


def _named(conn: Connection, *, digest: str) -> bool:
    """Whether any event names the digest (the deleted task's are gone: any other's)."""
    return bool(rows.shared_elsewhere(conn, "", [digest]))


# --- reading receipts ----------------------------------------------------------------------


def _receipt(row: Any) -> Receipt:
    if int(row.format) > RECEIPT_FORMAT:
        raise ReceiptFormatUnknown(
            f"the deletion receipt of task {row.task_id} is in format {row.format}; this "
            f"program reads receipts up to format {RECEIPT_FORMAT}"
        )
    counts = row.counts if isinstance(row.counts, dict) else {}
    return Receipt(
        int(row.receipt_id),
        int(row.format),
        str(row.task_id),
        str(row.title_digest),
        int(row.head_seq),
        str(row.head_hash),
        {str(k): int(v) for k, v in counts.items()},
        {"kind": str(row.actor_kind), "id": str(row.actor_id), "name": str(row.actor_name)},
        str(row.deleted_at),
        str(row.reason),
        str(row.body_hash),
        row.key_id,
        row.signature,
    )


def receipts_of(conn: Connection, task_id: str | None = None) -> list[Receipt]:
    q = sa.select(t.deletion_receipts).order_by(t.deletion_receipts.c.receipt_id)
    if task_id is not None:
        q = q.where(t.deletion_receipts.c.task_id == task_id)
    return [_receipt(r) for r in conn.execute(q)]


def receipts(store: Store, task_id: str | None = None) -> list[Receipt]:
    with store.read() as conn:
        return receipts_of(conn, task_id)


def receipt_problem(receipt: Receipt, ring: keyring.Keyring, signed: bool) -> str | None:
    """Why verify does not accept a receipt, or None: its hash must be its body's; on a
    signed store it must carry a signature by a trusted key of the person it names, valid
    when it was made."""
    if body_hash(receipt.body()) != receipt.body_hash:
        return "the receipt's content does not match its hash (it was changed)"
    if receipt.actor.get("kind") != rules.ActorKind.PERSON:
        return f"the receipt names {receipt.who}, not a person"
    if receipt.key_id is None or receipt.signature is None:
        return "the store is signed but the receipt is not" if signed else None
    import base64
    import binascii

    binding = ring.get(receipt.key_id)
    if binding is None:
        return f"signed by key {receipt.key_id}, which the keyring does not hold"
    if not binding.names(receipt.actor["kind"], receipt.actor["id"]):
        return f"signed by key {receipt.key_id} of {binding.actor}, not of {receipt.who}"
    if binding.revoked_by(receipt.deleted_at):
        return f"signed by key {receipt.key_id}, which was {binding.ended}"
    try:
        sig = base64.b64decode(receipt.signature, validate=True)
    except (binascii.Error, ValueError):
        return "its signature is not base64"
    if not check_signature(binding.public_raw, sig, RECEIPT_DOMAIN + receipt.body_hash.encode()):
        return f"its signature by key {receipt.key_id} does not verify"
    return None


# --- orphans -------------------------------------------------------------------------------


def orphan_blobs(store: Store) -> list[str]:
    """Blobs no event names: what a deletion interrupted between its commit and its blob
    removal leaves (or any other write that stored content and then failed)."""
    from ..blob_db import ServerBlobStore

    if isinstance(store.blobs, ServerBlobStore):
        with store.read() as conn:
            held = [str(d) for (d,) in conn.execute(sa.select(t.blob_contents.c.digest))]
    else:
        root = store.blobs.root
        held = sorted(
            PREFIX + p.parent.name + p.name
            for p in root.glob("??/*")
            if p.is_file() and len(p.parent.name + p.name) == 64
        )
    with store.read() as conn:
        named = rows.shared_elsewhere(conn, "", held)
    return sorted(set(held) - named)
