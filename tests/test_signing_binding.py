"""Ed25519 through libsodium (PyNaCl) instead of `cryptography` (issue 36, part F).

Ed25519 is deterministic: the same key and message give the same signature whichever binding
makes it. These tests hold the two bindings byte-identical, show a store's writes are sealed
by libsodium, and show signatures made by `cryptography` (every signature stored before the
switch) verify through the real `boris verify` on both engines.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import nacl.signing
import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from store import commands as c
from store import schema as t
from store.model import Actor
from store.signing import SigningKey
from store.signing.keys import check_signature, check_signature_openssl, load_or_create
from store.signing.seal import record_message
from store.signing.trust import add_key, require
from store.store import Store

BORIS = Path(sys.executable).with_name("boris")
ALICE = Actor(kind="person", id="alice", name="Alice")
BOT = Actor(kind="agent", id="bot")


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.binary(max_size=300))
def test_libsodium_signs_byte_for_byte_as_cryptography(seed: bytes, message: bytes) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = SigningKey(Ed25519PrivateKey.from_private_bytes(seed))
    made = key.sign(message)
    assert made == key.private.sign(message) == key.sign_openssl(message)
    assert made == nacl.signing.SigningKey(seed).sign(message).signature
    assert key.public_raw == bytes(nacl.signing.SigningKey(seed).verify_key)
    for check in (check_signature, check_signature_openssl):
        assert check(key.public_raw, made, message)
        forged = bytes([made[0] ^ 1]) + made[1:]
        assert not check(key.public_raw, forged, message)
        assert not check(key.public_raw, made, message + b"x")


def test_bad_lengths_are_refused_not_raised() -> None:
    key = SigningKey.generate()
    made = key.sign(b"m")
    assert not check_signature(key.public_raw[:31], made, b"m")
    assert not check_signature(key.public_raw, made[:63], b"m")
    assert not check_signature(key.public_raw, b"", b"m")


def test_a_key_file_signs_as_before(tmp_path: Path) -> None:
    """A PEM key file (kept by `cryptography`) signs through libsodium, identically."""
    key = load_or_create(tmp_path / "k.pem")
    again = load_or_create(tmp_path / "k.pem")
    message = record_message("task-1", 7, "ab" * 32)
    assert again.sign(message) == key.private.sign(message) == again.sign_openssl(message)
    assert again.key_id == key.key_id


def test_a_stores_writes_are_sealed_by_libsodium(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bot = SigningKey.generate(), SigningKey.generate()
    require(store, alice, ALICE)
    add_key(store, alice, bot.public_raw, BOT)
    store.signer = bot
    tid = store.execute(c.CreateTask(title="T", owner="alice", objective="x"), BOT)
    calls: list[bytes] = []
    real = nacl.signing.SigningKey.sign

    def counted(self: nacl.signing.SigningKey, message: bytes, encoder: object = None) -> object:
        calls.append(message)
        return real(self, message)

    monkeypatch.setattr(nacl.signing.SigningKey, "sign", counted)
    store.execute(c.RecordNote(task_id=tid, text="hello"), BOT)
    assert len(calls) == 1
    with store.read() as conn:
        seq, signature = conn.execute(
            sa.select(t.signatures.c.seq, t.signatures.c.signature)
            .where(t.signatures.c.task_id == tid)
            .order_by(t.signatures.c.seq.desc())
            .limit(1)
        ).one()
    assert seq == 2
    assert base64.b64decode(signature) == bot.sign_openssl(calls[0])


def test_signatures_made_by_cryptography_verify(
    open_store: Callable[..., Store],
    store_dir: Path,
    store_url: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A store written with the old binding (every signature before the switch) verifies
    through the real `boris verify`, which checks with libsodium; its stored signatures are
    byte for byte what libsodium makes of the same messages."""
    s = open_store()
    try:
        alice, bot = SigningKey.generate(), SigningKey.generate()
        with monkeypatch.context() as m:
            m.setattr(SigningKey, "sign", SigningKey.sign_openssl)
            require(s, alice, ALICE)
            add_key(s, alice, bot.public_raw, BOT)
            s.signer = bot
            tid = s.execute(c.CreateTask(title="T", owner="alice", objective="x"), BOT)
            for n in range(5):
                s.execute(c.RecordNote(task_id=tid, text=f"n{n}"), BOT)
        with s.read() as conn:
            rows = conn.execute(
                sa.select(t.signatures.c.seq, t.signatures.c.signature, t.events.c.hash)
                .join(
                    t.events,
                    sa.and_(
                        t.events.c.task_id == t.signatures.c.task_id,
                        t.events.c.seq == t.signatures.c.seq,
                    ),
                )
                .where(t.signatures.c.task_id == tid)
            ).all()
    finally:
        s.close()
    assert len(rows) == 6
    for seq, signature, digest in rows:
        assert base64.b64decode(signature) == bot.sign(record_message(tid, seq, digest))
    env = {**os.environ, "BORIS_STORE": str(store_dir), "BORIS_ACTOR": "person:alice"}
    if store_url:
        env["BORIS_STORE_URL"] = store_url
    done = subprocess.run(
        [str(BORIS), "--json", "verify", tid], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    report = json.loads(done.stdout)["result"]
    assert report["ok"] is True and report["signed"] is True
