"""The store's keyring: public keys bound to actors, as a hash chain of signed entries.

Entry `n` is `{seq, action, key_id, public_key, actor, succeeds, at}` chained like events
(`hash = sha256(prev_hash + "\\n" + canonical_json(body))`) and signed by `signer_key_id`
over `KEYRING_DOMAIN + hash`. The first entry adds a person's key signed by itself: the
store's root of trust, set at `boris init`. Every later entry is signed by a person's key
trusted at that point. Revoking a key ends its trust from the entry's time on.

An `imported` entry binds a key that signed a task imported from a package (whose signatures
verified against it): the person importing vouches for it as history. It proves signatures on
events written before the import and nothing after: it signs no new write, and it is never a
trusted person's key here, whatever actor it names.

A `revoked_imported` entry is a revocation that came with an imported package (the source
store's keyring revoked a key this store trusts, issue 40): signed by the person importing,
its `at` is when the source store revoked the key, not when it was imported here, so the key
signs nothing from that time on, here as there (what it signed before stays proved).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import db
from .. import schema as t
from ..canonical import GENESIS_HASH, chain_hash
from ..errors import CommandRejected
from .keys import SigningKey, check_signature, decode_public, key_id_of

KEYRING_DOMAIN = b"boris-keyring-entry-v1\n"
REQUIRE_KEY = "require_signatures"
#: The action of a revocation carried by an imported package (see the module's doc).
REVOKED_IMPORTED = "revoked_imported"


class KeyringRefused(CommandRejected):
    """A keyring change that is not allowed (signer not a trusted person, unknown key)."""


@dataclass(frozen=True)
class Binding:
    """A trusted public key and the actor it names."""

    key_id: str
    public_raw: bytes
    actor_kind: str
    actor_id: str
    actor_name: str = ""
    added_at: str = ""
    revoked_at: str | None = None
    succeeds: str | None = None
    #: When the key came with an imported task (an `imported` entry): it signs history only.
    imported_at: str | None = None

    @property
    def actor(self) -> str:
        return f"{self.actor_kind}:{self.actor_id}"

    def names(self, actor_kind: str, actor_id: str) -> bool:
        return (self.actor_kind, self.actor_id) == (actor_kind, actor_id)

    def revoked_by(self, at: str) -> bool:
        ends = self.signs_until
        return ends is not None and at >= ends

    @cached_property
    def signs_until(self) -> str | None:
        """From when the key signs nothing (its revocation or import), or None: judged on
        every signed write (store.signing.seal), so worked out once."""
        ends = [t for t in (self.revoked_at, self.imported_at) if t is not None]
        return min(ends) if ends else None

    @property
    def ended(self) -> str:
        """Why the key signs nothing from some time on, for a message."""
        if self.revoked_at is not None and (
            self.imported_at is None or self.revoked_at <= self.imported_at
        ):
            return f"revoked at {self.revoked_at}"
        return f"imported with a task at {self.imported_at}: it signs only what came before"

    def line(self) -> str:
        """This key as a line of a keys file: `KEY_ID KIND:ID PUBLIC_KEY`, then since when it
        signs nothing (`revoked=AT`, `imported=AT`; see check.read_keys_file), so an auditor
        accepts what it signed before and refuses what came after."""
        ends = "".join(
            f" {word}={at}"
            for word, at in (("revoked", self.revoked_at), ("imported", self.imported_at))
            if at is not None
        )
        return f"{self.key_id} {self.actor} {base64.b64encode(self.public_raw).decode()}{ends}"


@dataclass
class Keyring:
    bindings: dict[str, Binding] = field(default_factory=dict)
    #: Problems found walking the chain: (keyring seq, message).
    problems: list[tuple[int, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.bindings

    def get(self, key_id: str) -> Binding | None:
        return self.bindings.get(key_id)

    def trusted_person(self, key_id: str, at: str | None = None) -> Binding | None:
        b = self.bindings.get(key_id)
        if b is None or b.actor_kind != "person" or b.imported_at is not None:
            return None
        if b.revoked_at is not None and (at is None or at >= b.revoked_at):
            return None
        return b


def entry_body(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "seq": row["seq"],
        "action": row["action"],
        "key_id": row["key_id"],
        "public_key": row["public_key"],
        "actor": {"kind": row["actor_kind"], "id": row["actor_id"], "name": row["actor_name"]},
        "succeeds": row["succeeds"],
        "at": row["at"],
    }


def fold(rows: Iterable[Mapping[str, Any]]) -> Keyring:
    """The keyring from its entries, checking each one's chain link and signature."""
    ring = Keyring()
    prev = GENESIS_HASH
    for r in rows:
        seq = int(r["seq"])
        digest = chain_hash(prev, entry_body(r))
        if r["prev_hash"] != prev or r["hash"] != digest:
            ring.problems.append((seq, "keyring entry does not chain (edited or inserted)"))
            break
        prev = digest
        try:
            raw = decode_public(r["public_key"])
        except ValueError:
            ring.problems.append((seq, "keyring entry holds no Ed25519 public key"))
            continue
        if key_id_of(raw) != r["key_id"]:
            ring.problems.append((seq, f"key id {r['key_id']} is not its public key's"))
            continue
        if seq == 1:
            signer_raw = raw if r["signer_key_id"] == r["key_id"] else None
            ok_signer = r["action"] == "added" and r["actor_kind"] == "person"
        else:
            signer = ring.trusted_person(r["signer_key_id"], r["at"])
            signer_raw = signer.public_raw if signer else None
            ok_signer = signer is not None
        if not ok_signer or signer_raw is None:
            ring.problems.append(
                (seq, f"signed by {r['signer_key_id']}, not a person's key trusted then")
            )
            continue
        try:
            sig = base64.b64decode(r["signature"])
        except ValueError:
            sig = b""
        if not check_signature(signer_raw, sig, KEYRING_DOMAIN + digest.encode()):
            ring.problems.append((seq, f"signature by {r['signer_key_id']} does not verify"))
            continue
        if r["action"] == "added":
            ring.bindings[r["key_id"]] = Binding(
                r["key_id"],
                raw,
                r["actor_kind"],
                r["actor_id"],
                r["actor_name"],
                r["at"],
                None,
                r["succeeds"],
            )
        elif r["action"] == "imported" and r["key_id"] not in ring.bindings:
            ring.bindings[r["key_id"]] = Binding(
                r["key_id"],
                raw,
                r["actor_kind"],
                r["actor_id"],
                r["actor_name"],
                r["at"],
                imported_at=r["at"],
            )
        elif r["action"] in ("revoked", REVOKED_IMPORTED) and r["key_id"] in ring.bindings:
            old = ring.bindings[r["key_id"]]
            since = r["at"]
            if r["action"] == REVOKED_IMPORTED and old.revoked_at is not None:
                since = min(since, old.revoked_at)  # the earlier revocation holds
            ring.bindings[r["key_id"]] = Binding(
                old.key_id,
                old.public_raw,
                old.actor_kind,
                old.actor_id,
                old.actor_name,
                old.added_at,
                since,
                old.succeeds,
                old.imported_at,
            )
    return ring


#: pg_advisory_xact_lock's key for keyring changes (any constant no other lock uses).
_KEYRING_LOCK = 0x626F726973_6B6579  # "boris" "key"


def lock(conn: Connection) -> None:
    """Serialize keyring changes until the transaction ends. Each entry takes the next seq
    after the entries it read: on PostgreSQL two transactions (concurrent inits, `keys add`)
    would read the same head and collide on the key. SQLite's write transaction is already
    exclusive (BEGIN IMMEDIATE). An advisory lock needs no privilege on any table."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_KEYRING_LOCK)))


def rows(conn: Connection) -> list[dict[str, Any]]:
    q = sa.select(t.keyring).order_by(t.keyring.c.seq)
    return [dict(r._mapping) for r in conn.execute(q)]


def load(conn: Connection) -> Keyring:
    return fold(rows(conn))


def required(conn: Connection) -> bool:
    v = conn.execute(
        sa.select(t.store_meta.c.value).where(t.store_meta.c.key == REQUIRE_KEY)
    ).scalar()
    return v == "1"


def set_required(conn: Connection) -> None:
    lock(conn)
    conn.execute(sa.delete(t.store_meta).where(t.store_meta.c.key == REQUIRE_KEY))
    conn.execute(sa.insert(t.store_meta).values(key=REQUIRE_KEY, value="1"))


def undecided(conn: Connection) -> bool:
    """Whether nobody has said if the store requires signatures: no `boris init` either way
    (`set_required`, `set_not_required`)."""
    v = conn.execute(
        sa.select(t.store_meta.c.value).where(t.store_meta.c.key == REQUIRE_KEY)
    ).scalar()
    return v is None


def set_not_required(conn: Connection) -> None:
    """`boris init --no-require-signatures`: the store is unsigned by a person's choice, and
    says so (so the demo does not make it signed: store.services.demo_keys). A store that
    requires signatures already stays as it is."""
    lock(conn)
    if undecided(conn):
        conn.execute(sa.insert(t.store_meta).values(key=REQUIRE_KEY, value="0"))


def append(
    conn: Connection,
    signer: SigningKey,
    *,
    action: str,
    public_raw: bytes,
    actor_kind: str,
    actor_id: str,
    actor_name: str = "",
    at: str | None = None,
) -> dict[str, Any]:
    """Add an entry signed by `signer`; refused unless the signer may (see module doc).
    `at`: only for a `revoked_imported` entry, the time the source store revoked the key
    from (by default, as for every other entry, the database's clock now)."""
    lock(conn)
    entries = rows(conn)
    ring = fold(entries)
    if ring.problems:
        seq, msg = ring.problems[0]
        raise KeyringRefused(f"the keyring is damaged at entry {seq}: {msg}")
    kid = key_id_of(public_raw)
    succeeds = None
    if not entries:
        if action != "added" or kid != signer.key_id or actor_kind != "person":
            raise KeyringRefused("the first key trusted in a store is a person's own key")
    else:
        if ring.trusted_person(signer.key_id) is None:
            raise KeyringRefused(
                f"key {signer.key_id} is not a trusted person's key in this store: "
                "only a trusted person adds or revokes keys"
            )
        if action == "added":
            if kid in ring.bindings:
                raise KeyringRefused(f"key {kid} is already in the keyring")
            earlier = [
                b
                for b in ring.bindings.values()
                if b.names(actor_kind, actor_id) and b.revoked_at is None
            ]
            succeeds = earlier[-1].key_id if earlier else None
        elif action == "imported":
            if kid in ring.bindings:
                raise KeyringRefused(f"key {kid} is already in the keyring")
        elif action == REVOKED_IMPORTED:
            held = ring.bindings.get(kid)
            if held is None:
                raise KeyringRefused(f"key {kid} is not in the keyring")
            if at is None or (held.revoked_at is not None and held.revoked_at <= at):
                raise KeyringRefused(f"key {kid} is already revoked since {held.revoked_at}")
            actor_kind, actor_id, actor_name = held.actor_kind, held.actor_id, held.actor_name
        else:
            held = ring.bindings.get(kid)
            if held is None:
                raise KeyringRefused(f"key {kid} is not in the keyring")
            if held.revoked_at is not None:
                raise KeyringRefused(f"key {kid} is already revoked")
            actor_kind, actor_id, actor_name = held.actor_kind, held.actor_id, held.actor_name
    prev = entries[-1]["hash"] if entries else GENESIS_HASH
    row: dict[str, Any] = {
        "seq": len(entries) + 1,
        "action": action,
        "key_id": kid,
        "public_key": base64.b64encode(public_raw).decode("ascii"),
        "actor_kind": actor_kind,
        "actor_id": actor_id,
        "actor_name": actor_name,
        "succeeds": succeeds,
        "at": at if action == REVOKED_IMPORTED and at is not None else db.database_now(conn),
        "prev_hash": prev,
    }
    row["hash"] = chain_hash(prev, entry_body(row))
    row["signer_key_id"] = signer.key_id
    row["signature"] = base64.b64encode(signer.sign(KEYRING_DOMAIN + row["hash"].encode())).decode(
        "ascii"
    )
    conn.execute(sa.insert(t.keyring).values(**row))
    return row
