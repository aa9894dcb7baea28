"""Signing a write transaction before it commits (called by Store.transaction).

For each task the transaction wrote, the writer signs `RECORD_DOMAIN + task_id, seq, hash`
of the last event it wrote there: the hash chains every earlier event, so one signature
covers the whole transaction and, with the ones before it, the task's whole history.
"""

from __future__ import annotations

import base64
import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import db
from .. import schema as t
from ..errors import CommandRejected
from ..location import Location, resolve
from ..record import Event
from . import keyring
from .keys import SigningKey, agent_key_path, person_key_path

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
    not name the actor the write claims. The message is one line ending in the next step
    that works: the `boris keys new` / `boris keys add` commands, with this key's path and
    actor, and where the key then goes (BORIS_KEY, --key)."""

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
    #: The store, as a refusal's next step names it (`boris keys add ... --store DIR`).
    where: Location | None = None
    #: The bindings `check_signer` accepted while the keyring is at `version`, by key and
    #: actors: every check but the key's revocation by time depends on those alone.
    accepted: dict[tuple[str, frozenset[tuple[str, str]]], keyring.Binding] = field(
        default_factory=dict
    )

    def refresh(self, conn: Connection) -> None:
        rows = KEYRING_HEAD.run(conn)
        last = rows[0] if rows else None
        version = (int(last[0]), str(last[1])) if last else (0, "")
        if version != self.version:
            self.required = keyring.required(conn)
            self.ring = keyring.load(conn) if last else keyring.Keyring()
            self.version = version
            self.accepted = {}

    @property
    def signed(self) -> bool:
        return self.required or not self.ring.empty


def check_signer(
    policy: Policy,
    signer: SigningKey | None,
    actors: Iterable[tuple[str, str]],
    now: str,
) -> keyring.Binding | None:
    """The binding the signer writes under, or None for an unsigned write the store
    allows; raises SignatureRefused when the store's policy refuses it, naming the next
    step (for the store `policy.where`, as the command line reaches it). A transaction of the
    store's own events only (`system:`: a generated summary, an import's retirements, an
    observation) is signed by a person's key: an agent's key never proves an event in the
    store's name (verify names one as `system_signer`)."""
    actors = list(actors)
    claimed = sorted({(str(k), a) for k, a in actors if k != "system"}) or [("system", "boris")]
    kind, actor_id = claimed[0]
    hint = _Hint(policy.ring, policy.where)
    if signer is None:
        if policy.required:
            raise SignatureRefused("signature_required", hint.no_key(kind, actor_id))
        return None
    if policy.ring.empty:
        if policy.required:
            raise SignatureRefused(
                "no_keyring",
                f"{hint.store} requires signatures but trusts no key yet: a person trusts "
                f"theirs first — boris keys trust --require --actor person:YOU{hint.option}",
            )
        return None  # an unsigned store: nothing to sign against
    binding = policy.ring.get(signer.key_id)
    if binding is None:
        raise SignatureRefused("unknown_key", hint.untrusted(signer, kind, actor_id))
    if binding.revoked_by(now):
        raise SignatureRefused(
            "revoked_key",
            f"key {signer.key_id} ({binding.actor}) was {binding.ended}: "
            + hint.make_key(kind, actor_id, _successor(signer, now)),
        )
    for k, a in actors:
        if k != "system" and not binding.names(k, a):
            raise SignatureRefused(
                "key_names_another_actor", hint.another_actor(signer, binding, str(k), a)
            )
    if all(k == "system" for k, _ in actors) and binding.actor_kind != "person":
        raise SignatureRefused(
            "system_signed_by_a_person",
            f"key {signer.key_id} ({binding.actor}) cannot sign the store's own write "
            f"(system:{actor_id}): a person's key signs it — record it as {binding.actor} "
            f"(--actor {binding.actor}), or have a person run it without --key and BORIS_KEY",
        )
    return binding


def _shown(path: Path) -> str:
    """A path as a shell reads it back: under the home directory as ~/..., quoted."""
    home = Path(os.path.expanduser("~"))
    try:
        rel = path.relative_to(home)
    except ValueError:
        return shlex.quote(str(path))
    return "~/" + shlex.quote(str(rel)) if str(rel) != "." else "~"


def _successor(signer: SigningKey, now: str) -> Path | None:
    """Where a key that no longer signs is replaced: beside it, named for today."""
    if signer.path is None:
        return None
    return signer.path.with_name(f"{signer.path.stem}-{now[:10]}{signer.path.suffix or '.pem'}")


def _cli_option(where: Location | None) -> str:
    """What a `boris` command line in this environment adds to reach the store at `where`:
    nothing where it reaches it by itself (BORIS_STORE, BORIS_STORE_URL, the default)."""
    if where is None:
        return ""
    try:
        if resolve(None, None) == where:
            return ""
        option = ""
        if resolve(where.directory, None).directory != resolve(None, None).directory:
            option = f" --store {_shown(where.directory)}"
        if resolve(where.directory, None).url != where.url:
            from sqlalchemy.engine import make_url

            if where.sqlite_file is not None:
                option += f" --url sqlite:///{shlex.quote(str(where.sqlite_file))}"
            else:  # never the password: the server's own (PGPASSWORD, .pgpass) is used
                url = make_url(where.url).set(password=None)
                option += " --url " + shlex.quote(url.render_as_string(hide_password=False))
        return option
    except Exception:  # a refusal's hint never hides the refusal
        return ""


@dataclass(frozen=True)
class _Hint:
    """The next step a refusal names, for the store at `where` and the actor it refused."""

    ring: keyring.Keyring
    where: Location | None

    @property
    def store(self) -> str:
        return f"store {self.where.describe()}" if self.where is not None else "this store"

    @property
    def option(self) -> str:
        return _cli_option(self.where)

    @property
    def person(self) -> str:
        """The person who can trust a key: the one the store trusts, when only one does."""
        people = sorted(
            {b.actor for b in self.ring.bindings.values() if self.ring.trusted_person(b.key_id)}
        )
        return people[0] if len(people) == 1 else "person:YOU"

    def add(self, key_file: str, kind: str, actor_id: str) -> str:
        return (
            f"boris keys add {key_file} --for {kind}:{actor_id} --actor {self.person}{self.option}"
        )

    def make_key(self, kind: str, actor_id: str, new_file: Path | None = None) -> str:
        if new_file is None:
            new_file = agent_key_path(actor_id) if kind != "person" else person_key_path(actor_id)
        path = _shown(new_file)
        return (
            f"make one and have a person trust it — boris keys new {path} && "
            f"{self.add(path, kind, actor_id)} — then set BORIS_KEY to that file (or pass --key)"
        )

    def no_key(self, kind: str, actor_id: str) -> str:
        head = f"{self.store} requires signatures and {kind}:{actor_id} has no key here"
        if kind == "person":
            path = _shown(person_key_path(actor_id))
            return (
                f"{head}: a person signs with their own key ({path}), which the boris command "
                "line and Boris Desktop use by themselves; in Python call "
                "store.sign_as(actor) before writing, or set BORIS_KEY to your key file"
            )
        return f"{head}: " + self.make_key(kind, actor_id)

    def untrusted(self, signer: SigningKey, kind: str, actor_id: str) -> str:
        source = _shown(signer.path) if signer.path is not None else signer.public_text
        return (
            f"key {signer.key_id} ({source}) is not in this store's keyring ({self.store}): "
            f"a person it trusts adds it — {self.add(source, kind, actor_id)}"
        )

    def another_actor(
        self, signer: SigningKey, binding: keyring.Binding, kind: str, actor_id: str
    ) -> str:
        head = (
            f"key {signer.key_id} names {binding.actor}, not {kind}:{actor_id}: a write is "
            "signed by the key of the actor it claims"
        )
        if kind == "person":
            return (
                f"{head} — a person's command runs without --key and without BORIS_KEY "
                f"(env -u BORIS_KEY boris ...), and boris signs with their own key"
            )
        return f"{head} — give {kind}:{actor_id}'s own key (BORIS_KEY or --key), or " + (
            self.make_key(kind, actor_id)
        )


def seal(
    conn: Connection, policy: Policy, signer: SigningKey | None, emitted: list[Event], now: str
) -> None:
    """Check the writer against the store's policy and sign what it wrote."""
    if not emitted:
        return
    policy.refresh(conn)
    if not policy.signed and signer is None:
        return
    if len(emitted) == 1:  # most writes: one event, one actor, the task's last event
        actor = emitted[0].actor
        actors = frozenset(((actor.kind, actor.id),))
        last: Iterable[Event] = emitted
    else:
        actors = frozenset((e.actor.kind, e.actor.id) for e in emitted)
        last = {e.task_id: e for e in emitted}.values()
    if signer is None:
        check_signer(policy, None, actors, now)  # refused where signatures are required
        return
    key_id = signer.key_id
    binding = policy.accepted.get((key_id, actors))
    if binding is None or binding.revoked_by(now):
        binding = check_signer(policy, signer, actors, now)
        if binding is None:
            return
        policy.accepted[(key_id, actors)] = binding
    for e in last:
        _INSERT_SIGNATURE.run(
            conn,
            {
                "task_id": e.task_id,
                "seq": e.seq,
                "key_id": key_id,
                "signature": encode_signature(
                    signer.sign(record_message(e.task_id, e.seq, e.hash))
                ),
            },
        )
