"""`boris keys …`: the keys that sign a store's record (store.signing), and how the CLI
picks the key it signs with: the one rule, `signing.keys.signer_for`.

The CLI signs with `--key PATH` or BORIS_KEY when given (a key file, created on first use);
otherwise, for a person, with that person's own key in the user config dir — but only on a
store that is signed (it has a keyring or requires signatures), so using an old unsigned
store never creates key files. An agent without --key or BORIS_KEY signs nothing, and a
signed store refuses it naming the `boris keys new` / `boris keys add` lines that fix it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..model import Actor
from ..services import answers
from ..signing import keyring
from ..signing.check import read_keys_file
from ..signing.keys import (
    KeyNotFound,
    SigningKey,
    decode_public,
    encode_public,
    load_key,
    load_or_create,
    signer_for,
)
from ..signing.trust import add_key, require, revoke_key, trust_root
from ..store import Store
from .output import _actor as parse
from .output import _print, here
from .parser import global_options
from .shapes import KeyLine, KeyNew, KeyringEntry, KeyringProblem, KeysExport, KeysList, KeyTrusted

Add = Callable[[str, Any], argparse.ArgumentParser]


def _actor(args: argparse.Namespace) -> Actor:
    return parse(args.actor)


def sign_as(store: Store, actor: Actor | None) -> None:
    """The key this run signs with (`signing.keys.signer_for`): the one given (--key, opened
    with the store) or BORIS_KEY's, else the acting person's own where the store is signed;
    none where nobody is named (a read) or an agent has no key given."""
    if actor is not None:
        store.sign_as(actor)


def _person_signer(store: Store, args: argparse.Namespace) -> tuple[Actor, SigningKey]:
    actor = _actor(args)
    if actor.kind != "person":
        raise answers.UsageError(
            f"only a person changes or exports a keyring's keys, not {actor.kind}:{actor.id}: "
            "give --actor person:ID"
        )
    # The rule, on a store signed or about to be (init, keys trust): never None for a person.
    signer = store.signer or signer_for(actor, store_signed=True)
    assert signer is not None
    return actor, signer


def init_signatures(store: Store, args: argparse.Namespace) -> bool:
    """`boris init`: unless --no-require-signatures, require signatures, trusting the
    person's key as the root when the keyring is empty. Returns whether they are required."""
    if not args.require_signatures:
        with store.read() as conn:
            return keyring.required(conn)
    actor, signer = _person_signer(store, args)
    require(store, signer, actor)
    store.signer = signer
    return True


def _key_line(b: keyring.Binding) -> KeyLine:
    return KeyLine(
        key_id=b.key_id,
        actor=b.actor,
        public_key=encode_public(b.public_raw),
        revoked_at=b.revoked_at,
        imported_at=b.imported_at,
        line=b.line(),
    )


def cmd_keys_list(store: Store, args: argparse.Namespace) -> None:
    with store.read() as conn:
        ring = keyring.load(conn)
        entries = keyring.rows(conn)
        required = keyring.required(conn)
    value = KeysList(
        signatures_required=required,
        entries=[KeyringEntry.model_validate(e) for e in entries],
        problems=[KeyringProblem(seq=s, message=m) for s, m in ring.problems],
    )
    lines = []
    for e in value.entries:
        succ = f" succeeds {e.succeeds}" if e.succeeds else ""
        lines.append(
            f"{e.seq:>4} {e.at} {e.action:<8} {e.key_id} "
            f"{e.actor_kind}:{e.actor_id}{succ} (signed by {e.signer_key_id})"
        )
    lines += [f"PROBLEM keyring entry {s}: {m}" for s, m in ring.problems]
    human = "\n".join(lines) if entries else "(no keys: this store is unsigned)"
    _print(args, value.to_json(), human)


def cmd_keys_export(store: Store, args: argparse.Namespace) -> None:
    """The keys file lines: your own key (default), or every key the keyring holds, a
    revoked one with since when (`revoked=AT`), so what it signed before still verifies."""
    if args.all:
        with store.read() as conn:
            ring = keyring.load(conn)
        bindings = list(ring.bindings.values())
    else:
        actor, signer = _person_signer(store, args)
        bindings = [keyring.Binding(signer.key_id, signer.public_raw, actor.kind, actor.id)]
    listed = KeysExport(keys=[_key_line(b) for b in bindings])
    _print(args, listed.to_json(), "\n".join(b.line() for b in bindings))


def cmd_keys_new(store: Store | None, args: argparse.Namespace) -> None:
    """Create a key file (an agent's), mode 0600; print its keys-file line for `add`.
    Needs no store: it only makes the file."""
    key = load_or_create(Path(args.path))
    made = KeyNew(key_id=key.key_id, public_key=key.public_text, path=str(key.path))
    _print(args, made.to_json(), f"{key.key_id} {key.public_text}")


def _public_key(given: str) -> bytes:
    """The public key `keys add` was given: a key file's, else a base64 public key."""
    source = Path(given)
    if source.is_file():
        return load_key(source).public_raw
    try:
        return decode_public(given)
    except ValueError:
        raise KeyNotFound(
            f"no key file at {here(given)}, and {given!r} is not a base64 Ed25519 public key; "
            "nothing was added"
        ) from None


def cmd_keys_add(store: Store, args: argparse.Namespace) -> None:
    """Bind a public key (a key file, or its base64 public key) to an actor; signed by your
    person key, which the store must already trust."""
    raw = _public_key(args.public)
    _, signer = _person_signer(store, args)
    who = Actor.parse(args.actor_for)
    row = KeyringEntry.model_validate(add_key(store, signer, raw, who))
    succ = f", succeeding {row.succeeds}" if row.succeeds else ""
    _print(args, row.to_json(), f"{row.key_id} bound to {who.kind}:{who.id}{succ}")


def cmd_keys_revoke(store: Store, args: argparse.Namespace) -> None:
    _, signer = _person_signer(store, args)
    row = KeyringEntry.model_validate(revoke_key(store, signer, args.key_id))
    _print(args, row.to_json(), f"{row.key_id} revoked at {row.at}")


def cmd_keys_trust(store: Store, args: argparse.Namespace) -> None:
    """Trust your person key as the root of an unsigned store (its keyring empty)."""
    actor, signer = _person_signer(store, args)
    if args.require:
        require(store, signer, actor)
    else:
        trust_root(store, signer, actor)
    trusted = KeyTrusted(
        key_id=signer.key_id, actor=f"{actor.kind}:{actor.id}", required=args.require
    )
    _print(args, trusted.to_json(), f"{signer.key_id} trusted as {actor.kind}:{actor.id}")


def register(add: Add) -> None:
    sp = add("keys", cmd_keys_list)
    sub = sp.add_subparsers(dest="keys_command")
    common = argparse.ArgumentParser(add_help=False)
    global_options(common, argparse.SUPPRESS)

    def keys_cmd(name: str, fn: Any, help_: str) -> argparse.ArgumentParser:
        k = sub.add_parser(name, help=help_, parents=[common])
        k.set_defaults(fn=fn)
        return k

    keys_cmd("list", cmd_keys_list, "list the keyring's entries")
    keys_cmd("export", cmd_keys_export, "print your public key as a keys-file line").add_argument(
        "--all",
        action="store_true",
        help="every key the keyring holds (a revoked one with revoked=TIME)",
    )
    k = keys_cmd("new", cmd_keys_new, "create a key file (mode 0600); needs no store")
    k.add_argument("path")
    k.set_defaults(storeless=True)
    k = keys_cmd("add", cmd_keys_add, "bind a public key to an actor (signed by you)")
    k.add_argument("public", help="a key file, or a base64 Ed25519 public key")
    k.add_argument("--for", dest="actor_for", required=True, help="kind:id[:name]")
    keys_cmd("revoke", cmd_keys_revoke, "revoke a key from now on").add_argument("key_id")
    keys_cmd(
        "trust", cmd_keys_trust, "trust your key as the root of an unsigned store"
    ).add_argument("--require", action="store_true", help="and refuse unsigned writes from now on")


__all__ = ["init_signatures", "read_keys_file", "register", "sign_as"]
