"""Verifying a store's signatures: against its keyring, or only against out-of-band keys.

Each signature row `(task_id, seq, key_id, signature)` covers the events after the previous
signature up to `seq`: one write transaction. It must verify over `record_message(task_id,
seq, hash)` with a key trusted by the chosen keyring, not revoked at the event's time, and
every event it covers (except the system's) must be by the actor the key names: so a
person's decision (the authority table's person-only commands are refused for any other
actor) stands only under that person's key. The store's own events (`system:`) are signed by
the key of whoever caused them: in a transaction with another actor's events, that actor's
key (as for its own events); in a transaction of the store's own (an import, a generated
summary, an observation), a person's key (`system_signer`): an agent's key alone never
proves an event in the store's name. Events after a task's last signature are an unsigned
tail.

What the signatures prove of who may write what, beside who wrote it, is the authority
replay's (store.rules.event_authority, run by verify over the same transactions).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import schema as t
from ..errors import StoreError
from . import keyring
from .keys import check_signature, decode_public, key_id_of
from .seal import record_message


class KeysFileError(StoreError):
    """A keys file line that is not `KEY_ID KIND:ID PUBLIC_KEY [revoked=AT] [imported=AT]`."""

    code = "keys_file"
    category = "usage"


#: A keys file line's optional fields: since when the key signs nothing (Binding.revoked_by).
_ENDS = ("revoked", "imported")


@dataclass(frozen=True)
class SigFinding:
    task_id: str
    kind: str
    message: str
    #: The event and the key concerned, when there is one (verify's Finding carries them).
    seq: int | None = None
    key_id: str | None = None
    #: The actor of the event concerned (`kind:id`), where it is about who wrote it.
    actor: str | None = None


def read_keys_file(path: Path) -> keyring.Keyring:
    """Out-of-band keys: one line per key, `KEY_ID KIND:ID PUBLIC_KEY` (# comments), then
    optionally `revoked=AT` (revoked since AT) and `imported=AT` (came with an imported
    task at AT): what the key signed before AT verifies, anything at or after is reported
    (`boris keys export --all` writes them). A field this reader does not know refuses
    the file rather than trusting the key without it."""
    ring = keyring.Keyring()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        try:
            kid, actor, pub = parts[:3]
            kind, _, actor_id = actor.partition(":")
            raw = decode_public(pub)
        except ValueError as exc:
            raise KeysFileError(f"{path}:{n}: not 'KEY_ID KIND:ID PUBLIC_KEY'") from exc
        if key_id_of(raw) != kid or not actor_id:
            raise KeysFileError(f"{path}:{n}: key id {kid} is not its public key's")
        ends: dict[str, str] = {}
        for extra in parts[3:]:
            word, eq, at = extra.partition("=")
            if word not in _ENDS or not eq or not at or word in ends:
                raise KeysFileError(f"{path}:{n}: {extra!r} is not revoked=TIME or imported=TIME")
            ends[word] = at
        ring.bindings[kid] = keyring.Binding(
            kid,
            raw,
            kind,
            actor_id,
            revoked_at=ends.get("revoked"),
            imported_at=ends.get("imported"),
        )
    return ring


def check_task(
    task_id: str,
    events: Iterable[Mapping[str, Any]],
    sigs: Mapping[int, tuple[str, str]],
    ring: keyring.Keyring,
    *,
    signed: bool,
) -> list[SigFinding]:
    """Findings for one task's events (`seq, hash, actor_kind, actor_id, at` each) and its
    signatures by seq (`key_id, signature`). Each signature closes one transaction: the
    events since the one before it."""
    out: list[SigFinding] = []
    pending: list[Mapping[str, Any]] = []
    seqs: set[int] = set()
    for e in events:
        seq = int(e["seq"])
        seqs.add(seq)
        pending.append(e)
        if seq not in sigs:
            continue
        covered, pending = pending, []
        out += _check_transaction(task_id, covered, sigs[seq], ring)
    return out + _unmatched(task_id, sigs, seqs, pending, signed=signed)


def _check_transaction(
    task_id: str, covered: list[Mapping[str, Any]], sig: tuple[str, str], ring: keyring.Keyring
) -> list[SigFinding]:
    """One signature over its transaction (`covered`, the last event the one signed): by a
    key the ring knows, verifying, not revoked then, and bound to who wrote the events."""
    e = covered[-1]
    seq = int(e["seq"])
    key_id, sig_text = sig
    b = ring.get(key_id)
    if b is None:
        return [
            SigFinding(
                task_id,
                "unknown_key",
                f"seq {seq}: signed by unknown key {key_id}",
                seq=seq,
                key_id=key_id,
            )
        ]
    try:
        raw = base64.b64decode(sig_text, validate=True)
    except ValueError:
        raw = b""
    if not check_signature(b.public_raw, raw, record_message(task_id, seq, e["hash"])):
        return [
            SigFinding(
                task_id,
                "bad_signature",
                f"seq {seq}: signature by key {key_id} ({b.actor}) does not verify",
                seq=seq,
                key_id=key_id,
            )
        ]
    out: list[SigFinding] = []
    if b.revoked_by(str(e["at"])):
        out.append(
            SigFinding(
                task_id,
                "revoked_key",
                f"seq {seq}: signed at {e['at']} by key {key_id} ({b.actor}), {b.ended}",
                seq=seq,
                key_id=key_id,
            )
        )
    return out + _signer_of(task_id, covered, key_id, b)


def _signer_of(
    task_id: str, covered: list[Mapping[str, Any]], key_id: str, b: keyring.Binding
) -> list[SigFinding]:
    """Whether the key is the writer's: an actor's events signed by the key bound to that
    actor, and a transaction of the store's own events (system:) by a person's key."""
    seq = int(covered[-1]["seq"])
    out: list[SigFinding] = []
    store_only = True
    for c in covered:
        if c["actor_kind"] == "system":
            continue
        store_only = False
        if not b.names(c["actor_kind"], c["actor_id"]):
            out.append(
                SigFinding(
                    task_id,
                    "key_names_another_actor",
                    f"seq {c['seq']}: by {c['actor_kind']}:{c['actor_id']} but signed "
                    f"(seq {seq}) by key {key_id} bound to {b.actor}",
                    seq=int(c["seq"]),
                    key_id=key_id,
                    actor=f"{c['actor_kind']}:{c['actor_id']}",
                )
            )
    if store_only and b.actor_kind != "person":
        first = covered[0]
        out.append(
            SigFinding(
                task_id,
                "system_signer",
                f"{_seqs(int(first['seq']), seq)}: the store's own events "
                f"(system:{first['actor_id']}) signed by key {key_id} bound to {b.actor}: "
                "a transaction of the store's own is signed by a person's key",
                seq=int(first["seq"]),
                key_id=key_id,
                actor=f"system:{first['actor_id']}",
            )
        )
    return out


def _unmatched(
    task_id: str,
    sigs: Mapping[int, tuple[str, str]],
    seqs: set[int],
    pending: list[Mapping[str, Any]],
    *,
    signed: bool,
) -> list[SigFinding]:
    """A signature naming no event, and the events after the last signature (on a signed
    store, or a task with any signature, every transaction is signed)."""
    out = [
        SigFinding(task_id, "signature_without_event", f"seq {seq}: no such event", seq=seq)
        for seq in sorted(set(sigs) - seqs)
    ]
    if pending and (signed or sigs):
        first, last = pending[0]["seq"], pending[-1]["seq"]
        out.append(
            SigFinding(
                task_id,
                "unsigned_tail",
                f"seq {first}..{last}: events after the last signature (not signed by any key)",
                seq=int(first),
            )
        )
    return out


def _seqs(first: int, last: int) -> str:
    return f"seq {last}" if first == last else f"seqs {first}..{last}"


def check_store(
    conn: Connection, task_ids: Iterable[str], keys: keyring.Keyring | None = None
) -> tuple[list[SigFinding], list[SigFinding], bool]:
    """(problems, info, signed) for the tasks: against `keys` alone when given, else
    against the store's keyring (whose own chain is checked too)."""
    problems: list[SigFinding] = []
    info: list[SigFinding] = []
    required = keyring.required(conn)
    if keys is None:
        ring = keyring.load(conn)
        for seq, msg in ring.problems:
            problems.append(SigFinding("keyring", "keyring", f"entry {seq}: {msg}"))
    else:
        ring = keys
    has_sigs = conn.execute(sa.select(sa.func.count()).select_from(t.signatures)).scalar_one()
    signed = required or bool(has_sigs) or (keys is None and not ring.empty)
    if not signed:
        info.append(
            SigFinding("store", "unsigned", "this store is unsigned: no signatures checked")
        )
        return problems, info, False
    for task_id in task_ids:
        ev = conn.execute(
            sa.select(
                t.events.c.seq,
                t.events.c.hash,
                t.events.c.actor_kind,
                t.events.c.actor_id,
                t.events.c.at,
            )
            .where(t.events.c.task_id == task_id)
            .order_by(t.events.c.seq)
        )
        sg = conn.execute(
            sa.select(t.signatures.c.seq, t.signatures.c.key_id, t.signatures.c.signature).where(
                t.signatures.c.task_id == task_id
            )
        )
        sigs = {int(r.seq): (str(r.key_id), str(r.signature)) for r in sg}
        problems += check_task(task_id, (dict(r._mapping) for r in ev), sigs, ring, signed=True)
    return problems, info, True


def task_signatures(conn: Connection, task_id: str) -> dict[str, Any]:
    """How a task's record is signed, for `boris show` and the desktop: `signed` (the store
    is), and per signed seq the key and the actor the store's keyring binds it to."""
    required = keyring.required(conn)
    ring = keyring.load(conn)
    rows = conn.execute(
        sa.select(t.signatures.c.seq, t.signatures.c.key_id)
        .where(t.signatures.c.task_id == task_id)
        .order_by(t.signatures.c.seq)
    ).all()
    last = conn.execute(
        sa.select(sa.func.max(t.events.c.seq)).where(t.events.c.task_id == task_id)
    ).scalar()
    by_seq: dict[int, dict[str, Any]] = {}
    for seq, key_id in rows:
        b = ring.get(str(key_id))
        by_seq[int(seq)] = {
            "key_id": str(key_id),
            "actor": b.actor if b else None,
            "name": b.actor_name if b else "",
            "known": b is not None,
        }
    signed = required or not ring.empty or bool(rows)
    last_signed = max(by_seq) if by_seq else 0
    return {
        "signed": signed,
        "required": required,
        "signatures": by_seq,
        "unsigned_after": last_signed if signed and (last or 0) > last_signed else None,
    }


def signer_of(signatures: Mapping[int, Mapping[str, Any]], seq: int) -> Mapping[str, Any] | None:
    """The signature covering event `seq`: the first at or after it."""
    later = [s for s in signatures if s >= seq]
    return signatures[min(later)] if later else None
