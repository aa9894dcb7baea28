"""Keys of the demo's own actors, so `boris init && boris demo` works on a signed store.

A store made by `boris init` requires every write to be signed by the key of the actor it
claims; the demo writes as an agent, its resumed session and the owner Maria, who are
nobody's real identities. Each gets a key of its own in `demo-workspace/keys/` beside the
store (mode 0600, never the user's config directory: Maria is not the person running the
demo), trusted by the person who runs the demo, whose key the store must already trust.

A blank store (nothing written, nobody chose whether it requires signatures) is first made
as `boris init` makes one (`sign_blank_store`): a newcomer's demo store is the configuration
they will run, not an unsigned one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .. import commands as c
from ..model import Actor
from ..signing import keyring
from ..signing.keys import SigningKey, load_or_create, person_key
from ..signing.seal import SignatureRefused
from ..signing.trust import add_key, require
from ..store import Store


class DemoNeedsTrustedPerson(SignatureRefused):
    """A signed store, and nobody it trusts to vouch for the demo's actors' keys."""


def _needs_person(actors: Iterable[Actor], why: str) -> DemoNeedsTrustedPerson:
    names = ", ".join(f"{a.kind}:{a.id}" for a in actors)
    return DemoNeedsTrustedPerson(
        "demo_needs_trusted_person",
        f"this store requires signatures and {why}, so the demo's actors ({names}) cannot "
        "be given keys: run `boris demo --actor person:ID` as a person the store trusts "
        "(the one who ran `boris init`; `boris keys list` shows them); nothing was written",
    )


class DemoWriter:
    """The part of a Store the demo writes through, signing each write with the key of the
    actor it names (in an unsigned store: unchanged, unsigned)."""

    def __init__(self, store: Store, keys: dict[tuple[str, str], SigningKey]) -> None:
        self.store = store
        self.location = store.location
        self.blobs = store.blobs
        self._keys = keys

    def execute(self, command: c.Command, actor: Actor) -> Any:
        return self.execute_all([command], actor)[0]

    def execute_all(self, commands: Sequence[c.Command], actor: Actor) -> list[Any]:
        key = self._keys.get((actor.kind, actor.id))
        if key is None:
            return self.store.execute_all(commands, actor)
        before, self.store.signer = self.store.signer, key
        try:
            return self.store.execute_all(commands, actor)
        finally:
            self.store.signer = before  # the caller's own writes stay theirs


def demo_writer(store: Store, actors: Sequence[Actor], workspace: Path) -> DemoWriter:
    """Where the store is signed, the demo actors' keys, made on first use and trusted by
    `store.signer` (a person the keyring trusts); else a writer that signs nothing."""
    if not store.is_signed():
        return DemoWriter(store, {})
    vouch = store.signer
    if vouch is None:
        raise _needs_person(actors, "no person was named (--actor person:ID or BORIS_ACTOR)")
    with store.read() as conn:
        ring = keyring.load(conn)
    if ring.trusted_person(vouch.key_id) is None:
        raise _needs_person(actors, f"it does not trust the key {vouch.key_id} you sign with")
    keys: dict[tuple[str, str], SigningKey] = {}
    for actor in actors:
        key = load_or_create(workspace / "keys" / f"{actor.kind}-{actor.id}.pem")
        add_key(store, vouch, key.public_raw, actor)  # idempotent: a second demo adds nothing
        keys[(actor.kind, actor.id)] = key
    return DemoWriter(store, keys)


def blank(store: Store) -> bool:
    """A store nothing was written to: no task, no key trusted, and nobody chose whether it
    requires signatures (`boris init` either way, `keyring.undecided`)."""
    with store.read() as conn:
        undecided = keyring.undecided(conn) and keyring.load(conn).empty
    return undecided and not store.task_ids()


def sign_blank_store(store: Store, person: Actor | None) -> bool:
    """Make a blank store as `boris init` makes one: signatures required, `person`'s own key
    (from the user's config directory, created on first use) its root, and this process
    signing as them. Returns whether it did; a store that is not blank is left as it is.
    The root of trust is a person's key: with no person named, nothing is written."""
    if not blank(store):
        return False
    if person is None or person.kind != "person":
        who = "no person was named" if person is None else f"{person.kind}:{person.id} is no person"
        raise DemoNeedsTrustedPerson(
            "demo_needs_trusted_person",
            "this store is new, and the demo makes it as `boris init` does: requiring "
            f"signatures, a person's own key its root; {who}: run `boris demo --actor "
            "person:ID` (or `boris demo --no-require-signatures` for an unsigned store); "
            "nothing was written",
        )
    require(store, person_key(person.id), person)
    store.sign_as(person)
    return True
