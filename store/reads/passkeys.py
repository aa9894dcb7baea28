"""Passkeys: a person's WebAuthn credentials, registered from the desktop, deciding on a phone.

A registration is an entry in the store's settings (`store_meta`, key `passkey:` + the first
40 hex digits of the credential id's sha256): the credential's COSE public key, the actor it
names, the relying party (`rp_id`, `origin`) it was made for, when, and the Ed25519 signature
of the person's desktop key over `PASSKEY_DOMAIN + canonical(body)`. A revocation is another
entry (`passkey_revoked:` ...), signed the same way. An entry whose signature does not verify
against a person's key the keyring trusted at its time (and that names the same actor) counts
for nothing, so whoever can write the database cannot slip in a passkey (issue 43).

A decision made with a passkey carries a WebAuthn assertion whose challenge is
`decision_challenge`: the store's identity (its keyring's root entry), the task, the
approval, the payload digest decided on, the verdict, the note's digest and a fresh nonce.
The command layer checks it before recording (store.commands.passkeys) and `boris verify`
checks it again offline (store.services.verify_checks.passkeys).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import Connection

from .. import schema as t
from ..canonical import canonical_bytes
from ..signing import keyring
from ..signing.keys import check_signature

PASSKEY_DOMAIN = b"boris-passkey-entry-v1\n"
CHALLENGE_DOMAIN = b"boris-passkey-decision-v1\n"
ADDED = "passkey:"
REVOKED = "passkey_revoked:"
NONCE = "passkey_nonce:"


#: A passkey entry's settings key, as `meta_key` makes it.
ENTRY_KEY = re.compile(r"(passkey|passkey_revoked):[0-9a-f]{40}")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def meta_key(prefix: str, credential_id: str) -> str:
    """The settings key of a credential's entry (a credential id may be 1,023 bytes long)."""
    return prefix + hashlib.sha256(credential_id.encode()).hexdigest()[:40]


def nonce_key(nonce: str) -> str:
    return NONCE + hashlib.sha256(nonce.encode()).hexdigest()[:40]


def note_digest(note: str) -> str:
    return hashlib.sha256(note.encode()).hexdigest()


@dataclass(frozen=True)
class Passkey:
    """A registered passkey, its revocation if any, as the store's signed entries say."""

    credential_id: str
    public_key: str
    actor_kind: str
    actor_id: str
    rp_id: str
    origin: str
    added_at: str
    signer_key_id: str
    revoked_at: str | None = None

    @property
    def actor(self) -> str:
        return f"{self.actor_kind}:{self.actor_id}"

    def active(self, at: str) -> bool:
        return self.revoked_at is None or at < self.revoked_at


@dataclass(frozen=True)
class Registry:
    """Every passkey entry of a store, and the entries that count for nothing (and why)."""

    passkeys: dict[str, Passkey]
    problems: tuple[str, ...]
    #: The credentials whose entries are here but count for nothing, and why.
    refused: dict[str, str] = field(default_factory=dict)

    def get(self, credential_id: str) -> Passkey | None:
        return self.passkeys.get(credential_id)

    def of(self, actor_kind: str, actor_id: str, at: str) -> list[Passkey]:
        return [
            p
            for p in self.passkeys.values()
            if (p.actor_kind, p.actor_id) == (actor_kind, actor_id) and p.active(at)
        ]


def entry_message(body: dict[str, Any]) -> bytes:
    return PASSKEY_DOMAIN + canonical_bytes(body)


def _verified(ring: keyring.Keyring, entry: Any) -> str | None:
    """Why an entry counts for nothing (None: it verifies). Any shape is judged, never
    raised on: the entry may come from a package or a database someone wrote by hand."""
    body = entry.get("body") if isinstance(entry, dict) else None
    if not isinstance(body, dict) or not isinstance(body.get("actor"), dict):
        return "it is not a passkey entry (no body naming an actor)"
    if not all(isinstance(body.get(k), str) for k in ("credential_id", "at")):
        return "it is not a passkey entry (no credential id and time)"
    signer = ring.trusted_person(str(entry.get("signer_key_id")), str(body.get("at")))
    if signer is None:
        return f"signed by {entry.get('signer_key_id')}, not a person's key trusted then"
    actor = body["actor"]
    if not signer.names(str(actor.get("kind")), str(actor.get("id"))):
        return f"signed by {signer.actor}'s key for {actor.get('kind')}:{actor.get('id')}"
    try:
        sig = base64.b64decode(str(entry.get("signature")))
    except ValueError:
        sig = b""
    if not check_signature(signer.public_raw, sig, entry_message(body)):
        return "its signature does not verify"
    return None


def registry(conn: Connection, trusted: keyring.Keyring | None = None) -> Registry:
    """The passkeys the store's signed entries register, revocations applied: each entry
    signed by a person's key the store's keyring trusted at its time, or only `trusted`
    (the keys a person gives `verify --keys` or `verify-package`, out of band)."""
    ring = trusted if trusted is not None else keyring.load(conn)
    rows = conn.execute(
        sa.select(t.store_meta.c.key, t.store_meta.c.value).where(
            sa.or_(t.store_meta.c.key.startswith(ADDED), t.store_meta.c.key.startswith(REVOKED))
        )
    ).all()
    added: dict[str, Passkey] = {}
    revoked: dict[str, str] = {}
    problems: list[str] = []
    refused: dict[str, str] = {}
    for key, value in sorted(rows, key=lambda r: not str(r[0]).startswith(ADDED)):
        try:
            entry = json.loads(value)
        except ValueError:
            entry = None
        why = _verified(ring, entry)
        body = entry.get("body") if isinstance(entry, dict) else None
        cred = str(body.get("credential_id")) if isinstance(body, dict) else key
        if why is None and meta_key(ADDED if key.startswith(ADDED) else REVOKED, cred) != key:
            why = "it is filed under another credential's key"
        if why is not None or not isinstance(body, dict):
            problems.append(f"passkey entry {key}: {why}")
            refused[cred] = str(why)
            continue
        actor = body["actor"]
        if key.startswith(ADDED):
            added[cred] = Passkey(
                credential_id=cred,
                public_key=str(body["public_key"]),
                actor_kind=str(actor["kind"]),
                actor_id=str(actor["id"]),
                rp_id=str(body["rp_id"]),
                origin=str(body["origin"]),
                added_at=str(body["at"]),
                signer_key_id=str(entry["signer_key_id"]),
            )
        else:
            revoked[cred] = str(body["at"])
    for cred, at in revoked.items():
        p = added.get(cred)
        if p is not None:
            added[cred] = Passkey(**{**p.__dict__, "revoked_at": at})
    return Registry(added, tuple(problems), refused)


def entries_of(conn: Connection, credential_ids: Iterable[str]) -> list[tuple[str, str]]:
    """The stored entries (settings key, value) registering or revoking these credentials,
    as a package carries them (store.services.archive): a store's own entries, never
    another's."""
    keys = sorted({meta_key(p, c) for c in credential_ids for p in (ADDED, REVOKED)})
    if not keys:
        return []
    rows = conn.execute(
        sa.select(t.store_meta.c.key, t.store_meta.c.value)
        .where(t.store_meta.c.key.in_(keys))
        .order_by(t.store_meta.c.key)
    ).all()
    return [(str(k), str(v)) for k, v in rows]


def store_identity(conn: Connection) -> str:
    """The store's identity in a challenge: the hash of its keyring's root entry (set once,
    at `boris init`, and signed), so an assertion made for one store proves nothing in
    another. An unsigned store has none (and takes no passkey)."""
    root = conn.execute(sa.select(t.keyring.c.hash).where(t.keyring.c.seq == 1)).scalar()
    return str(root or "")


def decision_challenge(
    store_id: str,
    task_id: str,
    approval_id: str,
    payload_digest: str,
    verdict: str,
    note: str,
    nonce: str,
) -> bytes:
    """The WebAuthn challenge of one decision: what the person's passkey signs."""
    body = {
        "store": store_id,
        "task": task_id,
        "approval": approval_id,
        "digest": payload_digest,
        "verdict": verdict,
        "note": note_digest(note),
        "nonce": nonce,
    }
    return hashlib.sha256(CHALLENGE_DOMAIN + canonical_bytes(body)).digest()


def nonce_used(conn: Connection, nonce: str) -> bool:
    return (
        conn.execute(
            sa.select(t.store_meta.c.key).where(t.store_meta.c.key == nonce_key(nonce))
        ).first()
        is not None
    )


class PasskeyAssertion(BaseModel):
    """A WebAuthn assertion as the record keeps it (base64url fields, as the browser's
    `PublicKeyCredential.toJSON()` gives them), with the nonce and digest it was made for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    credential_id: str = Field(min_length=1, max_length=1400)
    client_data_json: str = Field(min_length=1, max_length=8192)
    authenticator_data: str = Field(min_length=1, max_length=8192)
    signature: str = Field(min_length=1, max_length=1024)
    user_handle: str | None = Field(default=None, max_length=1024)
    nonce: str = Field(min_length=16, max_length=128)
    #: The payload digest the person saw and decided on.
    digest: str = Field(min_length=1, max_length=128)

    @classmethod
    def of_browser(cls, credential: dict[str, Any], nonce: str, digest: str) -> PasskeyAssertion:
        """From `PublicKeyCredential.toJSON()` of an assertion."""
        response = credential.get("response") or {}
        return cls(
            credential_id=str(credential.get("id") or credential.get("rawId") or ""),
            client_data_json=str(response.get("clientDataJSON") or ""),
            authenticator_data=str(response.get("authenticatorData") or ""),
            signature=str(response.get("signature") or ""),
            user_handle=response.get("userHandle"),
            nonce=nonce,
            digest=digest,
        )

    def browser_json(self) -> dict[str, Any]:
        """Back to the WebAuthn JSON form the `webauthn` library verifies."""
        response = {
            "clientDataJSON": self.client_data_json,
            "authenticatorData": self.authenticator_data,
            "signature": self.signature,
        }
        if self.user_handle:
            response["userHandle"] = self.user_handle
        return {
            "id": self.credential_id,
            "rawId": self.credential_id,
            "type": "public-key",
            "response": response,
            "clientExtensionResults": {},
        }


def webauthn_problem(passkey: Passkey, assertion: PasskeyAssertion, challenge: bytes) -> str | None:
    """Why the assertion does not prove this challenge with this passkey (None: it does),
    checked by the `webauthn` library: the challenge, the origin and relying party the
    passkey was registered for, user presence, and the signature over it all. Offline: it
    needs only the record. (The signature counter is not judged: a nonce is used once.)"""
    try:
        from webauthn import verify_authentication_response
        from webauthn.helpers.exceptions import WebAuthnException
    except ImportError:
        return "the webauthn library is not installed: pip install 'boris-desktop[web]'"
    try:
        verify_authentication_response(
            credential=assertion.browser_json(),
            expected_challenge=challenge,
            expected_rp_id=passkey.rp_id,
            expected_origin=passkey.origin,
            credential_public_key=unb64url(passkey.public_key),
            credential_current_sign_count=0,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        return str(exc) or type(exc).__name__
    return None
