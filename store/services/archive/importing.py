"""Import: a package verified completely, staged aside and verified as `boris verify` would,
and only then written into the store in one transaction.

1. The first pass (`scan.Scan`) streams every member once: hostile members are refused from
   their headers, each member is hashed and compared with the manifest, and the event log is
   checked a line at a time (rows, seqs, the hash chain, formats, approvals, checkpoints) while
   it is written into a staging store in a temporary directory and replayed into the staging
   projections; checkpoints.json must be exactly what that replay gives.
2. `verify` runs on the staging store's copy of the task. Anything it reports refuses the
   package (`PackageFailsVerify`, naming the problems): a forged history re-chained so that
   its hashes hold (an approval consumed twice, say) never reaches the store.
3. Then, in one transaction of the real store: the rows copied from the staging store as they
   are, replayed into the projections, pending or approved approvals retired, and a second pass
   over the package puts each blob (hashed again while it streams to a temporary file, so the
   package cannot change in between) before the commit.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ... import db, projections, rules, tempfiles
from ... import events as ev
from ... import schema as t
from ...blobs import PREFIX, BlobStore
from ...errors import StoreError
from ...model import SYSTEM
from ...rules import iso_instant, store_time
from ...signing import keyring
from ...signing.keyring import Keyring
from ...signing.seal import SignatureRefused
from ...signing.trust import carried_revocations, import_revocations, with_revocations
from ...store import Store
from ...tx import Tx
from .common import (
    BLOB_MEMBER,
    CHECKPOINTS,
    EVENT_COLUMNS,
    MANIFEST,
    RETIRE_REASON,
    SIGNATURE_KINDS,
    Limits,
    PackageFailsVerify,
    PackageKeyUntrusted,
    PackageSignaturesFail,
    PackageUnsigned,
    checkpoint_rows_json,
    pretty,
    refuse,
)
from .scan import BATCH, Scan, Scanned, event_of
from .tarstream import Entry

if TYPE_CHECKING:
    from ..verify import Report
from .walk import walk

#: verify's findings about blobs are about the staging store, which is given no blobs: the
#: first pass already proved every blob the events need is in the package with its digest.
_STAGING_BLOB_KINDS = frozenset({"blob_missing", "blob_corrupt"})
#: How many of verify's problems the refusal names before counting the rest.
_PROBLEMS_NAMED = 5


def import_package(
    store: Store,
    pkg_path: str | os.PathLike[str],
    *,
    limits: Limits | None = None,
    keys: Keyring | None = None,
    trust: Iterable[str] = (),
) -> dict[str, Any]:
    """Verify a package completely, then write its task into `store` in one transaction.

    Into a signed store, its signatures are checked against the keys this store already
    trusts (its keyring), or only `keys` when given (out-of-band public keys), plus the
    package's own keys whose ids are in `trust` (the person importing vouches for each, as
    the actor the package's keyring names). A key none of them trusts refuses the package
    (`PackageKeyUntrusted`, naming the key and the actor it claims): a forger who re-signs
    a task with keys of their own never gets them bound to a person here. An unsigned
    package is refused there (`PackageUnsigned`): its events would stand unproved.

    Into an unsigned store (which checks no signatures), against the keyring the package
    carries (whose own chain must hold), or only `keys`; a package from an unsigned store
    (or an older format) carries none: it imports, and the result says `signed: false`.
    A package whose signatures fail is refused with `PackageSignaturesFail`.

    Returns the task id, how many events were imported, the blobs, the approvals revoked,
    whether it was signed and whether the task was already here (then nothing is written).
    Raises `PackageRefused` naming the member, event, version or verify problem at fault;
    nothing is written then.
    """
    limits = limits or Limits()
    pkg = check_path(pkg_path)
    label = str(pkg)
    with (
        open(pkg, "rb") as raw,
        tempfiles.private_directory("boris-import-") as tmp,
        Store.open(Path(tmp) / "staging") as staging,
    ):
        scanned = stage(staging, label, raw, limits)
        signed_here = store.is_signed()
        ring = (
            _trusted(store, staging, scanned.task_id, keys, frozenset(trust))
            if signed_here
            else keys
        )
        signed = _verify_staged(staging, scanned, ring)
        result = _write(store, staging, scanned, label, raw, limits, Path(tmp), ring, signed_here)
        return {**result, "signed": signed}


def check_path(pkg_path: str | os.PathLike[str]) -> Path:
    pkg = Path(pkg_path)
    if not pkg.exists():
        raise StoreError(f"no package at {pkg}")
    if not pkg.is_file():  # a directory, device or pipe: never opened
        raise StoreError(f"{pkg} is not a regular file, so not a package")
    return pkg


def stage(staging: Store, label: str, raw: BinaryIO, limits: Limits) -> Scanned:
    """The first pass: the package's record (events, keyring, signatures) written into the
    staging store, every member checked against the manifest."""
    with staging.transaction() as tx:
        scan = Scan(tx.conn, limits)
        walk(label, raw, limits, scan.visit)
        scanned = scan.finish()
        rebuilt = pretty(checkpoint_rows_json(tx.conn, scanned.task_id))
        if hashlib.sha256(rebuilt).hexdigest() != scanned.digests[CHECKPOINTS][0]:
            raise refuse(f"{CHECKPOINTS} does not match the checkpoints its events record")
    return scanned


def verify_staged(staging: Store, task_id: str, keys: Keyring | None) -> Report:
    """verify's report on the staged task, without its findings about the staging store's
    blobs (it is given none: the first pass proved every blob the events need is in the
    package with its digest)."""
    from ..verify import verify

    report = verify(staging, task_id, remember=False, keys=keys)
    report.problems = [p for p in report.problems if p.kind not in _STAGING_BLOB_KINDS]
    return report


def _trusted(
    store: Store, staging: Store, task_id: str, keys: Keyring | None, trust: frozenset[str]
) -> Keyring:
    """What a signed store checks a package's signatures against: the keys file given, else
    the keys this store's keyring holds, plus the package's keys named in `trust` (as the
    actor the package's keyring binds each to). Refuses an unsigned package, and one
    signed by a key none of these trusts, naming each such key and the actor it claims."""
    with staging.read() as source:
        signers = sorted(
            {
                str(k)
                for (k,) in source.execute(
                    sa.select(t.signatures.c.key_id).where(t.signatures.c.task_id == task_id)
                )
            }
        )
        carried = keyring.load(source)
    if not signers:
        raise PackageUnsigned(
            f"task {task_id} in the package carries no signatures, and this store is signed: "
            "nothing would prove who wrote its events here (import it into an unsigned store "
            "instead); nothing was imported"
        )
    if keys is None:
        with store.read() as conn:
            keys = keyring.load(conn)
    # A key the package's keyring revoked is revoked for the check too, from the time it was
    # revoked there (issue 40): what it signed after that proves nothing here either.
    ring = with_revocations(Keyring(bindings=dict(keys.bindings)), _revocations(keys, carried))
    untrusted: dict[str, str | None] = {}
    for key_id in signers:
        if key_id in ring.bindings:
            continue
        claimed = carried.get(key_id)
        if key_id in trust and claimed is not None:
            ring.bindings[key_id] = claimed
        else:
            untrusted[key_id] = claimed.actor if claimed is not None else None
    if untrusted:
        named = ", ".join(f"{k} (claims {a or 'no actor'})" for k, a in untrusted.items())
        raise PackageKeyUntrusted(
            f"task {task_id} in the package is signed by keys this store does not trust: "
            f"{named}; nothing was imported. Only if you vouch for a key as that actor, "
            "import again with --trust-key KEY_ID (or add it first: boris keys add)",
            untrusted,
        )
    return ring


def _verify_staged(staging: Store, scanned: Scanned, keys: Keyring | None) -> bool:
    """Whether the package is signed; refuses it when verify reports anything."""
    report = verify_staged(staging, scanned.task_id, keys)
    problems = report.problems
    if not problems:
        return bool(report.signed)
    named = "; ".join(f"{p.kind}: {p.message}" for p in problems[:_PROBLEMS_NAMED])
    more = len(problems) - _PROBLEMS_NAMED
    if more > 0:
        named += f"; and {more} more"
    found = [(p.kind, p.message) for p in problems]
    sig = [p for p in problems if p.kind in SIGNATURE_KINDS]
    if sig:
        raise PackageSignaturesFail(
            f"task {scanned.task_id} in the package: its signatures fail ({named}); "
            "nothing was imported",
            found,
        )
    raise PackageFailsVerify(
        f"task {scanned.task_id} in the package fails verify ({named}); nothing was imported",
        found,
    )


def _hash_at(staging: Store, task_id: str, seq: int) -> str | None:
    with staging.read() as conn:
        found = conn.execute(
            sa.select(t.events.c.hash).where(t.events.c.task_id == task_id, t.events.c.seq == seq)
        ).scalar()
    return None if found is None else str(found)


def _already_there(conn: Connection, plan: Scanned, staging: Store) -> bool:
    """True when this store holds the package's history (perhaps with later events); refuses a
    different history under the same task id."""
    row = conn.execute(
        sa.select(t.tasks.c.last_seq, t.tasks.c.head_hash).where(t.tasks.c.task_id == plan.task_id)
    ).first()
    if row is None:
        stray = conn.execute(
            sa.select(sa.func.count()).where(t.events.c.task_id == plan.task_id)
        ).scalar_one()
        if stray:
            raise refuse(
                f"this store has events of task {plan.task_id} but no task row: "
                "rebuild its projections first"
            )
        return False
    local = conn.execute(
        sa.select(t.events.c.hash).where(
            t.events.c.task_id == plan.task_id, t.events.c.seq == plan.head_seq
        )
    ).scalar()
    if local == plan.head_hash:
        return True
    mine = int(row.last_seq)
    if mine < plan.head_seq and _hash_at(staging, plan.task_id, mine) == row.head_hash:
        raise refuse(
            f"the package continues task {plan.task_id} past this store's copy (seq {mine} "
            f"{row.head_hash} to seq {plan.head_seq} {plan.head_hash}); extending a task "
            "already here is not supported"
        )
    raise refuse(
        f"task {plan.task_id} already exists in this store with a different history: its head "
        f"is seq {row.last_seq} {row.head_hash}, the package's is seq {plan.head_seq} "
        f"{plan.head_hash}"
    )


def _approval_clash(conn: Connection, plan: Scanned) -> None:
    if not plan.approvals:
        return
    clash = sorted(
        r.approval_id
        for r in conn.execute(
            sa.select(t.approvals.c.approval_id).where(
                t.approvals.c.approval_id.in_(sorted(plan.approvals))
            )
        )
    )
    if clash:
        raise refuse(
            f"approval ids {', '.join(clash)} of task {plan.task_id} already belong to "
            "another task in this store"
        )


def _copy_events(conn: Connection, staging: Store, task_id: str) -> None:
    """The staged rows, as they are, into the store, replayed into its projections; a batch
    at a time, so memory does not grow with the log."""

    def flush(batch: list[Any]) -> None:
        conn.execute(t.events.insert(), [{n: r._mapping[n] for n in EVENT_COLUMNS} for r in batch])
        for r in batch:
            projections.apply(conn, event_of(r))

    with staging.read() as source:
        rows = source.execute(
            sa.select(t.events).where(t.events.c.task_id == task_id).order_by(t.events.c.seq)
        )
        batch: list[Any] = []
        for r in rows:
            batch.append(r)
            if len(batch) >= BATCH:
                flush(batch)
                batch = []
        flush(batch)


def _retire_approvals(store_tx: Tx, task_id: str) -> list[str]:
    from ...commands.core import settle_status

    ids = [
        r.approval_id
        for r in store_tx.conn.execute(
            sa.select(t.approvals.c.approval_id)
            .where(
                t.approvals.c.task_id == task_id,
                t.approvals.c.state.in_(("pending", "approved")),
            )
            .order_by(t.approvals.c.requested_at, t.approvals.c.approval_id)
        )
    ]
    if ids:
        store_tx.emit(
            task_id,
            ev.ApprovalRetired(approval_ids=tuple(ids), state="revoked", reason=RETIRE_REASON),
            SYSTEM,
        )
        # As when a run's approvals are revoked in place: a run awaiting approval is not.
        settle_status(store_tx, task_id, SYSTEM)
    return ids


#: Why an imported lease is ended: who worked on the task there holds nothing here.
LEASE_NOTE = rules.IMPORT_LEASE_NOTE


def _end_lease(store_tx: Tx, task_id: str) -> None:
    """A lease open in the package arrives ended, as approvals arrive revoked: live authority
    never travels (issue 35 part D). Its token stays history."""
    row = store_tx.conn.execute(
        sa.select(t.leases.c.token).where(
            t.leases.c.task_id == task_id, t.leases.c.ended_at.is_(None)
        )
    ).first()
    if row is not None:
        store_tx.emit(task_id, ev.LeaseReleased(token=int(row.token), note=LEASE_NOTE), SYSTEM)


def _put_blobs(
    blobs: BlobStore, label: str, raw: BinaryIO, scanned: Scanned, limits: Limits, tmp: Path
) -> int:
    """Second pass: each blob the store lacks, streamed to a temporary file while hashed again
    (the package file could have changed since the first pass), then put into the store, as
    the import's write transaction sees it (`BlobStore.within`): a blob found is held for the
    events that name it, so a concurrent removal cannot take it (issue 40)."""
    written = 0

    def visit(entry: Entry, chunks: Any) -> None:
        nonlocal written
        name = entry.name
        if name == MANIFEST:
            return
        if scanned.digests.get(name, (None, -1))[1] != entry.size:
            raise refuse(f"the package changed while it was imported (member {name!r})")
        if not BLOB_MEMBER.fullmatch(name):
            return  # text members were read in the first pass; the reader skips them
        digest = PREFIX + scanned.digests[name][0]
        if blobs.has(digest):
            return
        h = hashlib.sha256()
        part = tmp / "blob"
        with open(part, "wb") as out:
            for chunk in chunks:
                h.update(chunk)
                out.write(chunk)
        if (h.hexdigest(), entry.size) != scanned.digests[name]:
            raise refuse(f"the package changed while it was imported (member {name!r})")
        got, _ = blobs.put_file(part)
        part.unlink()
        if got != digest:  # pragma: no cover - put_file hashes what it keeps
            raise refuse(f"member {name!r} was stored as {got}")
        written += 1

    walk(label, raw, limits, visit)
    return written


def _write(
    store: Store,
    staging: Store,
    scanned: Scanned,
    label: str,
    raw: BinaryIO,
    limits: Limits,
    tmp: Path,
    keys: Keyring | None = None,
    signed_here: bool = False,
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "task_id": scanned.task_id,
        "head_seq": scanned.head_seq,
        "head_hash": scanned.head_hash,
        "blobs": len(scanned.blobs),
    }
    with store.read() as conn:
        if _already_there(conn, scanned, staging):
            return {**result, **_nothing_done()}
        _approval_clash(conn, scanned)
    try:
        with store.transaction() as tx:
            # Checked again under the write lock: another importer may have been first.
            if _already_there(tx.conn, scanned, staging):
                return {**result, **_nothing_done()}
            _approval_clash(tx.conn, scanned)
            _copy_events(tx.conn, staging, scanned.task_id)
            carried = _carry_signatures(store, tx.conn, staging, scanned.task_id, keys, signed_here)
            revocations = _carry_revocations(store, tx.conn, staging, signed_here)
            revoked = _retire_approvals(tx, scanned.task_id)
            _end_lease(tx, scanned.task_id)
            appended = len(tx.emitted)
            written = _put_blobs(tx.blobs, label, raw, scanned, limits, tmp)
    except sa.exc.IntegrityError as exc:
        raise refuse(f"the store refused the package's rows: {exc.orig}") from exc
    return {
        **result,
        "already_imported": False,
        "events_imported": scanned.event_count,
        "events_appended": appended,
        "approvals_revoked": revoked,
        "blobs_written": written,
        "signatures_kept": carried,
        "revocations_imported": revocations,
    }


def _revocations(here: Keyring, carried: Keyring) -> dict[str, str]:
    """`carried_revocations`, each time checked to be one (a store writes its clock's
    time; anything else in a package's keyring is refused, not compared as text)."""
    found = carried_revocations(here, carried)
    for key_id, since in found.items():
        try:
            found[key_id] = store_time(iso_instant(since))
        except ValueError:
            raise refuse(
                f"keyring.json revokes key {key_id} at {since!r}, which is not a time"
            ) from None
    return found


def _carry_revocations(
    store: Store, conn: Connection, staging: Store, signed_here: bool
) -> list[str]:
    """In a signed store, each revocation the package's keyring holds of a key this store
    trusts (and has not revoked as early) is recorded in this store's keyring as
    `revoked_imported`, signed by the person importing, revoked from the time the source
    store revoked it: the key signs nothing here after that time either (issue 40). Returns
    the key ids revoked."""
    if not signed_here:
        return []
    with staging.read() as source:
        theirs = keyring.load(source)
    found = _revocations(keyring.load(conn), theirs)
    if not found:
        return []
    if store.signer is None:
        raise SignatureRefused(
            "signature_required",
            "the package revokes keys this store trusts, and recording that takes your key "
            "(--actor person:ID)",
        )
    done = import_revocations(conn, store.signer, found, db.database_now(conn))
    return [str(r["key_id"]) for r in done]


def _carry_signatures(
    store: Store,
    conn: Connection,
    staging: Store,
    task_id: str,
    keys: Keyring | None,
    signed_here: bool,
) -> int:
    """In a signed store, the package's signatures come with its events, and each key that
    made them and is not in the keyring yet (one the keys file gave, or the person named
    with `trust`: `_trusted` refused any other) is bound here as `imported` (signed by the
    person importing, who vouches for it as history: it proves what it signed before and
    signs nothing new), so this store's verify proves the imported history too. An unsigned
    store keeps none (it checks none)."""
    with staging.read() as source:
        sigs = [
            dict(r._mapping)
            for r in source.execute(
                sa.select(t.signatures).where(t.signatures.c.task_id == task_id)
            )
        ]
    here = keyring.load(conn)
    if not (here.empty and not keyring.required(conn)) and not signed_here:
        # Signed since the package was checked (against its own keyring): check it again.
        raise refuse("this store became signed while the package was imported; import it again")
    if not sigs or not signed_here:
        return 0
    ring = keys if keys is not None else here
    if store.signer is None:
        raise SignatureRefused(
            "signature_required",
            "importing a signed package into a signed store takes your key: the keys that "
            "signed it are recorded here as vouched for by you (--actor person:ID)",
        )
    for key_id in sorted({str(s["key_id"]) for s in sigs}):
        theirs = ring.get(key_id)
        if theirs is None:  # pragma: no cover - verify refused the package already
            raise refuse(f"key {key_id} of task {task_id} is not a key this import trusts")
        mine = here.get(key_id)
        if mine is not None:
            if not mine.names(theirs.actor_kind, theirs.actor_id):
                raise refuse(
                    f"key {key_id} names {theirs.actor} in the package but {mine.actor} here"
                )
            continue
        keyring.append(
            conn,
            store.signer,
            action="imported",
            public_raw=theirs.public_raw,
            actor_kind=theirs.actor_kind,
            actor_id=theirs.actor_id,
            actor_name=theirs.actor_name,
        )
    conn.execute(t.signatures.insert(), sigs)
    return len(sigs)


def _nothing_done() -> dict[str, Any]:
    return {
        "already_imported": True,
        "events_imported": 0,
        "events_appended": 0,
        "approvals_revoked": [],
        "blobs_written": 0,
        "signatures_kept": 0,
        "revocations_imported": [],
    }
