"""Passkeys in the command layer: registering and revoking one (entries signed by the
person's desktop key, store.reads.passkeys), and the check a decision made with one passes
before it is recorded (`check_assertion`, called by DecideApproval's handler).

Every refusal is a `PasskeyRefused` with its own `code`, raised before anything is written:
the transaction rolls back and the approval stays as it was.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from ..errors import CommandRejected
from ..model import Actor
from ..reads import passkeys as pk
from ..rules.times import expiry_words
from ..signing import keyring
from ..signing.keys import SigningKey


class PasskeyRefused(CommandRejected):
    """A passkey or a decision made with one that the store refuses; nothing was written.
    `code`: stale_digest, approval_expired, approval_not_pending, assertion_replayed,
    assertion_mismatch (made for another decision, or its signature fails), passkey_unknown,
    passkey_revoked, passkey_another_actor, passkey_unsigned_store, passkey_signer."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, rule=code)
        self.code = code


def _entry(signer: SigningKey, body: dict[str, Any]) -> str:
    signature = base64.b64encode(signer.sign(pk.entry_message(body))).decode("ascii")
    return json.dumps({"body": body, "signer_key_id": signer.key_id, "signature": signature})


def _check_signer(
    conn: Connection, signer: SigningKey | None, actor: Actor, now: str
) -> SigningKey:
    ring = keyring.load(conn)
    if ring.empty:
        raise PasskeyRefused(
            "passkey_unsigned_store",
            "passkeys need a signed store (its keyring proves who registered each): "
            "boris keys trust --require",
        )
    binding = ring.trusted_person(signer.key_id, now) if signer is not None else None
    if signer is None or binding is None or not binding.names(str(actor.kind), actor.id):
        raise PasskeyRefused(
            "passkey_signer",
            f"a passkey of {actor.kind}:{actor.id} is registered by their own desktop key, "
            "trusted in this store's keyring; this process signs with none",
        )
    return signer


def add_passkey(
    conn: Connection,
    signer: SigningKey | None,
    actor: Actor,
    *,
    credential_id: str,
    public_key: str,
    rp_id: str,
    origin: str,
    now: str,
) -> pk.Passkey:
    """Register a passkey (a verified WebAuthn registration) for `actor`, a person, signed
    by their desktop key."""
    if actor.kind != "person":
        raise PasskeyRefused("passkey_another_actor", "a passkey decides for a person only")
    key = _check_signer(conn, signer, actor, now)
    if pk.registry(conn).get(credential_id) is not None:
        raise PasskeyRefused("passkey_known", f"passkey {credential_id} is already registered")
    body = {
        "credential_id": credential_id,
        "public_key": public_key,
        "actor": {"kind": str(actor.kind), "id": actor.id, "name": actor.name},
        "rp_id": rp_id,
        "origin": origin,
        "at": now,
    }
    conn.execute(
        sa.insert(t.store_meta).values(
            key=pk.meta_key(pk.ADDED, credential_id), value=_entry(key, body)
        )
    )
    found = pk.registry(conn).get(credential_id)
    assert found is not None  # just written, signed by a trusted key
    return found


def revoke_passkey(
    conn: Connection, signer: SigningKey | None, actor: Actor, credential_id: str, now: str
) -> pk.Passkey:
    """Revoke one of `actor`'s passkeys from `now` on: it decides nothing after that."""
    found = pk.registry(conn).get(credential_id)
    if found is None:
        raise PasskeyRefused("passkey_unknown", f"no passkey {credential_id} is registered")
    if (found.actor_kind, found.actor_id) != (str(actor.kind), actor.id):
        raise PasskeyRefused(
            "passkey_another_actor", f"passkey {credential_id} is {found.actor}'s, not yours"
        )
    if found.revoked_at is not None:
        raise PasskeyRefused("passkey_revoked", f"passkey {credential_id} is already revoked")
    key = _check_signer(conn, signer, actor, now)
    body = {
        "credential_id": credential_id,
        "actor": {"kind": str(actor.kind), "id": actor.id, "name": actor.name},
        "at": now,
    }
    conn.execute(
        sa.insert(t.store_meta).values(
            key=pk.meta_key(pk.REVOKED, credential_id), value=_entry(key, body)
        )
    )
    return pk.Passkey(**{**found.__dict__, "revoked_at": now})


def check_assertion(
    conn: Connection,
    assertion: pk.PasskeyAssertion,
    *,
    task_id: str,
    approval: Any,
    verdict: str,
    note: str,
    actor: Actor,
    now: str,
) -> None:
    """Refuse a decision whose passkey assertion does not prove exactly it, now; else spend
    its nonce (in the decision's transaction: a replay finds it spent)."""
    found = pk.registry(conn).get(assertion.credential_id)
    if found is None:
        raise PasskeyRefused("passkey_unknown", "this passkey is not registered in this store")
    if not found.active(now):
        raise PasskeyRefused("passkey_revoked", f"this passkey was revoked at {found.revoked_at}")
    if (found.actor_kind, found.actor_id) != (str(actor.kind), actor.id):
        raise PasskeyRefused(
            "passkey_another_actor",
            f"this passkey is {found.actor}'s, not {actor.kind}:{actor.id}'s",
        )
    if pk.nonce_used(conn, assertion.nonce):
        raise PasskeyRefused(
            "assertion_replayed", "this assertion was used already: each decision is signed anew"
        )
    state = rules.approval_state(str(approval.state), approval.expires_at, now)
    # The messages are read on a phone: what happened, in words, and what to do.
    if state == rules.ApprovalState.EXPIRED:
        raise PasskeyRefused(
            "approval_expired",
            f"approval {approval.approval_id} {expiry_words(str(approval.expires_at), now)}: "
            "nothing was decided",
        )
    if assertion.digest != approval.payload_digest:
        raise PasskeyRefused(
            "stale_digest",
            f"approval {approval.approval_id}'s request changed since you read it (you saw "
            f"{assertion.digest[:19]}…, it binds {str(approval.payload_digest)[:19]}… now): "
            "nothing was decided; read it again",
        )
    if state == rules.ApprovalState.STALE:
        raise PasskeyRefused(
            "stale_digest",
            f"approval {approval.approval_id} went stale since you read it (what it would "
            "let happen was revised): nothing was decided; the revision needs a request of its own",
        )
    if state != rules.ApprovalState.PENDING:
        raise PasskeyRefused(
            "approval_not_pending",
            f"approval {approval.approval_id} is {state.label}: nothing to decide",
        )
    challenge = pk.decision_challenge(
        pk.store_identity(conn),
        task_id,
        str(approval.approval_id),
        str(approval.payload_digest),
        verdict,
        note,
        assertion.nonce,
    )
    problem = pk.webauthn_problem(found, assertion, challenge)
    if problem is not None:
        raise PasskeyRefused(
            "assertion_mismatch",
            f"the passkey's assertion does not prove this decision ({problem})",
        )
    conn.execute(sa.insert(t.store_meta).values(key=pk.nonce_key(assertion.nonce), value=now))
