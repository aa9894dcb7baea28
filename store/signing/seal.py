"""Signing a write transaction before it commits (called by Store.transaction).

For each task the transaction wrote, the writer signs `RECORD_DOMAIN + task_id, seq, hash`
of the last event it wrote there: the hash chains every earlier event, so one signature
covers the whole transaction and, with the ones before it, the task's whole history.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import db
from .. import schema as t
from ..errors import CommandRejected
from ..record import Event
from . import keyring
from .keys import SigningKey

RECORD_DOMAIN = b"boris-signed-record-v1\n"

# Run on the driver (db.Prepared) like the rest of the append path: through Core, the insert
# cost more than the signature itself (bench_signing.py).
_SIGNATURE_COLUMNS = ("task_id", "seq", "key_id", "signature")
_INSERT_SIGNATURE = db.Prepared(
    t.signatures.insert().values({n: sa.bindparam(n) for n in _SIGNATURE_COLUMNS})
)


class SignatureRefused(CommandRejected):
    """A write the store's signature policy refuses: unsigned where signatures are
    required, a key the keyring does not trust (unknown or revoked), or a key that does
    not name the actor the write claims."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def record_message(task_id: str, seq: int, chain_hash: str) -> bytes:
    return RECORD_DOMAIN + f"{task_id}\n{seq}\n{chain_hash}".encode()


def encode_signature(sig: bytes) -> str:
    return base64.b64encode(sig).decode("ascii")


# Read before every commit: on the driver (db.Prepared), like the rest of the append path, so
# the transaction needs none of Core's per-statement work nor its transaction object.
KEYRING_HEAD = db.Prepared(
    sa.select(t.keyring.c.seq, t.keyring.c.hash).order_by(t.keyring.c.seq.desc()).limit(1)
)


@dataclass
class Policy:
    """What a store asks of its writers, cached per store and refreshed when the keyring
    grows (one indexed read per transaction)."""

    required: bool = False
    ring: keyring.Keyring = field(default_factory=keyring.Keyring)
    version: tuple[int, str] | None = None

    def refresh(self, conn: Connection) -> None:
        rows = KEYRING_HEAD.run(conn)
        last = rows[0] if rows else None
        version = (int(last[0]), str(last[1])) if last else (0, "")
        if version != self.version:
            self.required = keyring.required(conn)
            self.ring = keyring.load(conn) if last else keyring.Keyring()
            self.version = version

    @property
    def signed(self) -> bool:
        return self.required or not self.ring.empty


def check_signer(
    policy: Policy, signer: SigningKey | None, actors: Iterable[tuple[str, str]], now: str
) -> keyring.Binding | None:
    """The binding the signer writes under, or None for an unsigned write the store
    allows; raises SignatureRefused when the store's policy refuses it."""
    if signer is None:
        if policy.required:
            raise SignatureRefused(
                "signature_required",
                "this store requires every write to be signed: give a key "
                "(--key PATH or BORIS_KEY for an agent; a person's is used automatically)",
            )
        return None
    if policy.ring.empty:
        if policy.required:
            raise SignatureRefused(
                "no_keyring", "this store requires signatures but trusts no key yet"
            )
        return None  # an unsigned store: nothing to sign against
    binding = policy.ring.get(signer.key_id)
    if binding is None:
        raise SignatureRefused(
            "unknown_key",
            f"key {signer.key_id} is not in this store's keyring: "
            "a trusted person adds it (boris keys add)",
        )
    if binding.revoked_by(now):
        raise SignatureRefused(
            "revoked_key",
            f"key {signer.key_id} ({binding.actor}) was {binding.ended}",
        )
    for kind, actor_id in actors:
        if kind != "system" and not binding.names(kind, actor_id):
            raise SignatureRefused(
                "key_names_another_actor",
                f"key {signer.key_id} names {binding.actor}, not {kind}:{actor_id}: "
                "a write is signed by the key of the actor it claims",
            )
    return binding


def seal(
    conn: Connection, policy: Policy, signer: SigningKey | None, emitted: list[Event], now: str
) -> None:
    """Check the writer against the store's policy and sign what it wrote."""
    if not emitted:
        return
    policy.refresh(conn)
    if not policy.signed and signer is None:
        return
    binding = check_signer(policy, signer, {(e.actor.kind, e.actor.id) for e in emitted}, now)
    if binding is None or signer is None:
        return
    last: dict[str, Event] = {}
    for e in emitted:
        last[e.task_id] = e
    for e in last.values():
        _INSERT_SIGNATURE.run(
            conn,
            {
                "task_id": e.task_id,
                "seq": e.seq,
                "key_id": signer.key_id,
                "signature": encode_signature(
                    signer.sign(record_message(e.task_id, e.seq, e.hash))
                ),
            },
        )
