"""Trusting keys in a store: the root at init, then keys added and revoked by a person, and
the revocations an imported package carries of keys the store trusts (issue 40)."""

from __future__ import annotations

import dataclasses
from contextlib import AbstractContextManager
from typing import Protocol

from sqlalchemy.engine import Connection

from ..model import Actor
from . import keyring
from .keys import SigningKey, key_id_of
from .seal import SignatureRefused


class _Transaction(Protocol):
    @property
    def conn(self) -> Connection: ...


class Store(Protocol):
    """What trusting keys needs of a store: one write transaction. A protocol, not
    `store.Store`, because the Store itself calls `require` when it creates a store that
    requires signatures, and the record's modules sit below the Store (pyproject's layers)."""

    def transaction(self) -> AbstractContextManager[_Transaction]: ...


def require(store: Store, root: SigningKey | None, person: Actor | None = None) -> None:
    """Make `store` refuse unsigned writes. An empty keyring first trusts `root`, a
    person's key (`person` names them; by default the key's own id), as its root.
    Idempotent: with a root already there (another init was first), it only requires."""
    with store.transaction() as tx:
        keyring.lock(tx.conn)  # before reading: concurrent inits agree on one root
        ring = keyring.load(tx.conn)
        if ring.empty:
            if root is None:
                raise SignatureRefused(
                    "no_keyring", "a store that requires signatures needs a person's key to trust"
                )
            who = person or Actor(kind="person", id=root.key_id)
            if who.kind != "person":
                raise keyring.KeyringRefused("the first key trusted in a store is a person's")
            keyring.append(
                tx.conn,
                root,
                action="added",
                public_raw=root.public_raw,
                actor_kind="person",
                actor_id=who.id,
                actor_name=who.name,
            )
        keyring.set_required(tx.conn)


def decline(store: Store) -> None:
    """Leave `store` unsigned by choice (`boris init --no-require-signatures`), said in its
    settings; a store that requires signatures already is left as it is."""
    with store.transaction() as tx:
        keyring.set_not_required(tx.conn)


def trust_root(store: Store, root: SigningKey, person: Actor) -> None:
    """Trust `root` as the person's key in an unsigned store (its keyring empty), without
    requiring signatures: writes signed from then on are checked, unsigned ones allowed."""
    with store.transaction() as tx:
        keyring.append(
            tx.conn,
            root,
            action="added",
            public_raw=root.public_raw,
            actor_kind="person",
            actor_id=person.id,
            actor_name=person.name,
        )


def add_key(store: Store, signer: SigningKey, public_raw: bytes, actor: Actor) -> dict[str, object]:
    """Bind a public key to `actor`, signed by `signer` (a trusted person's key). A second
    key for the same actor records whom it succeeds. Adding a key already bound to that
    actor (and not revoked) again changes nothing and returns its entry: two people adding
    the agent's key at once both succeed."""
    with store.transaction() as tx:
        keyring.lock(tx.conn)
        held = keyring.load(tx.conn).get(key_id_of(public_raw))
        live = held is not None and held.revoked_at is None and held.imported_at is None
        if held is not None and live and held.names(actor.kind, actor.id):
            return next(
                r
                for r in reversed(keyring.rows(tx.conn))
                if r["key_id"] == held.key_id and r["action"] == "added"
            )
        return keyring.append(
            tx.conn,
            signer,
            action="added",
            public_raw=public_raw,
            actor_kind=actor.kind,
            actor_id=actor.id,
            actor_name=actor.name,
        )


def revoke_key(store: Store, signer: SigningKey, key_id: str) -> dict[str, object]:
    """End a key's trust from now on: what it signed before stays proved."""
    with store.transaction() as tx:
        keyring.lock(tx.conn)
        ring = keyring.load(tx.conn)
        held = ring.get(key_id)
        if held is None:
            raise keyring.KeyringRefused(f"key {key_id} is not in the keyring")
        return keyring.append(
            tx.conn,
            signer,
            action="revoked",
            public_raw=held.public_raw,
            actor_kind=held.actor_kind,
            actor_id=held.actor_id,
        )


def carried_revocations(here: keyring.Keyring, carried: keyring.Keyring) -> dict[str, str]:
    """The revocations a package's keyring (`carried`) holds of keys `here` trusts, each key
    id with the time it was revoked from there: those that revoke it earlier than here (or
    here not at all). A revocation is of the key, whatever actor each keyring binds it to.
    Only an entry the package's chain holds, signed by a person trusted there, is one
    (keyring.fold): the person importing vouches for it (`import_revocations`)."""
    out: dict[str, str] = {}
    for key_id, theirs in carried.bindings.items():
        mine = here.get(key_id)
        if mine is None or theirs.revoked_at is None:
            continue
        if mine.revoked_at is None or theirs.revoked_at < mine.revoked_at:
            out[key_id] = theirs.revoked_at
    return out


def with_revocations(ring: keyring.Keyring, revoked: dict[str, str]) -> keyring.Keyring:
    """`ring` with each key of `revoked` revoked from the time given (the earlier holds)."""
    out = keyring.Keyring(bindings=dict(ring.bindings), problems=list(ring.problems))
    for key_id, since in revoked.items():
        b = out.bindings.get(key_id)
        if b is not None and (b.revoked_at is None or since < b.revoked_at):
            out.bindings[key_id] = dataclasses.replace(b, revoked_at=since)
    return out


def import_revocations(
    conn: Connection, signer: SigningKey, revoked: dict[str, str], now: str
) -> list[dict[str, object]]:
    """Record in the keyring on `conn` each revocation an imported package carried of a key
    this store trusts (`carried_revocations`): a `revoked_imported` entry signed by
    `signer` (the person importing, a trusted person's key), revoked from the time the
    source store revoked it (never later than `now`): the key signs nothing here from then on
    either. Returns the entries written."""
    keyring.lock(conn)
    ring = keyring.load(conn)
    written: list[dict[str, object]] = []
    for key_id, since in sorted(revoked.items()):
        held = ring.get(key_id)
        since = min(since, now)
        if held is None or (held.revoked_at is not None and held.revoked_at <= since):
            continue
        written.append(
            keyring.append(
                conn,
                signer,
                action=keyring.REVOKED_IMPORTED,
                public_raw=held.public_raw,
                actor_kind=held.actor_kind,
                actor_id=held.actor_id,
                at=since,
            )
        )
    return written
