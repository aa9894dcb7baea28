"""The WebAuthn ceremonies of the page, through the `webauthn` library: registering a
passkey (its options, then the browser's answer verified), signing in with one, and the
options of one decision's assertion (its challenge is the store's `decision_challenge`).

Challenges are issued here and kept, each for one session and a few minutes; what a decision's
assertion proves is judged again by the store when it records it (store.commands.passkeys).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from ..reads import passkeys as pk

CHALLENGE_SECONDS = 300.0


class CeremonyRefused(Exception):
    """A ceremony the page refuses (bad, stale or foreign answer); `code` names why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Pending:
    """A challenge issued to one session: what it is for, and until when."""

    sid: str
    purpose: str
    challenge: bytes
    expires: float
    actor: str = ""
    #: A decision's: the task, approval, digest shown, verdict and note it was issued for.
    decision: tuple[str, str, str, str, str] | None = None


@dataclass
class Challenges:
    by_key: dict[str, Pending] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def issue(self, key: str, pending: Pending) -> None:
        now = time.monotonic()
        with self.lock:
            for k in [k for k, p in self.by_key.items() if p.expires <= now]:
                del self.by_key[k]
            self.by_key[key] = pending

    def take(self, key: str, sid: str, purpose: str, *, keep: bool = False) -> Pending:
        """The challenge `key` names, issued to this session for this purpose. `keep`: a
        decision's stays until it expires, so a replay reaches the store, which refuses it."""
        with self.lock:
            p = self.by_key.get(key)
            if p is None or p.sid != sid or p.purpose != purpose or p.expires <= time.monotonic():
                raise CeremonyRefused("challenge_unknown", "no such challenge: start again")
            if not keep:
                del self.by_key[key]
            return p


@dataclass(frozen=True)
class RelyingParty:
    """Who the passkeys are for: the page's origin and its host (the WebAuthn rp id)."""

    origin: str
    rp_id: str


def registration_options(
    rp: RelyingParty, actor: str, name: str, known: list[str]
) -> tuple[bytes, str]:
    challenge = secrets.token_bytes(32)
    options = generate_registration_options(
        rp_id=rp.rp_id,
        rp_name="Boris",
        user_name=actor,
        user_id=hashlib.sha256(actor.encode()).digest()[:16],
        user_display_name=name or actor,
        challenge=challenge,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
        exclude_credentials=[PublicKeyCredentialDescriptor(id=pk.unb64url(c)) for c in known],
    )
    return challenge, options_to_json(options)


def registered(rp: RelyingParty, credential: dict[str, Any], challenge: bytes) -> tuple[str, str]:
    """The credential id and COSE public key (base64url) of a verified registration."""
    try:
        v = verify_registration_response(
            credential=credential,
            expected_challenge=challenge,
            expected_rp_id=rp.rp_id,
            expected_origin=rp.origin,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise CeremonyRefused(
            "registration_refused", f"the passkey was not registered: {exc}"
        ) from None
    return pk.b64url(v.credential_id), pk.b64url(v.credential_public_key)


def assertion_options(rp: RelyingParty, challenge: bytes, allowed: list[str]) -> str:
    options = generate_authentication_options(
        rp_id=rp.rp_id,
        challenge=challenge,
        allow_credentials=[PublicKeyCredentialDescriptor(id=pk.unb64url(c)) for c in allowed],
        user_verification=UserVerificationRequirement.PREFERRED,
    )
    return options_to_json(options)


def signed_in(passkey: pk.Passkey, credential: dict[str, Any], challenge: bytes) -> None:
    """Refuse a sign-in assertion that does not verify against the registered passkey."""
    try:
        verify_authentication_response(
            credential=credential,
            expected_challenge=challenge,
            expected_rp_id=passkey.rp_id,
            expected_origin=passkey.origin,
            credential_public_key=pk.unb64url(passkey.public_key),
            credential_current_sign_count=0,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise CeremonyRefused("sign_in_refused", f"the passkey did not sign in: {exc}") from None
