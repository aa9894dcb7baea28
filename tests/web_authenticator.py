"""A software WebAuthn authenticator for the decision page's tests (P-256, ES256, "none"
attestation): it makes registrations and assertions byte for byte as the WebAuthn spec lays
them out, so the page's server and the store verify them with the `webauthn` library as they
verify a phone's. The real-browser test uses Chrome's own virtual authenticator instead."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class SoftAuthenticator:
    origin: str
    rp_id: str = "localhost"
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    credential_id: bytes = field(default_factory=lambda: os.urandom(32))
    count: int = 0

    def _cose(self) -> bytes:
        n = self.key.public_key().public_numbers()
        return cbor2.dumps(
            {1: 2, 3: -7, -1: 1, -2: n.x.to_bytes(32, "big"), -3: n.y.to_bytes(32, "big")}
        )

    def create_public_key(self) -> str:
        """This authenticator's COSE public key, base64url (as a registration records it)."""
        return b64url(self._cose())

    def _client_data(self, kind: str, challenge: str) -> bytes:
        return json.dumps(
            {"type": kind, "challenge": challenge, "origin": self.origin, "crossOrigin": False}
        ).encode()

    def create(self, options: dict[str, Any]) -> dict[str, Any]:
        """`navigator.credentials.create`'s answer, as `PublicKeyCredential.toJSON()`."""
        assert options["rp"]["id"] == self.rp_id
        auth = (
            hashlib.sha256(self.rp_id.encode()).digest()
            + bytes([0x45])
            + self.count.to_bytes(4, "big")
            + bytes(16)
            + len(self.credential_id).to_bytes(2, "big")
            + self.credential_id
            + self._cose()
        )
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth})
        cid = b64url(self.credential_id)
        return {
            "id": cid,
            "rawId": cid,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(
                    self._client_data("webauthn.create", options["challenge"])
                ),
                "attestationObject": b64url(attestation),
                "transports": ["internal"],
            },
            "clientExtensionResults": {},
        }

    def get(self, options: dict[str, Any]) -> dict[str, Any]:
        """`navigator.credentials.get`'s answer, as `PublicKeyCredential.toJSON()`."""
        self.count += 1
        auth = (
            hashlib.sha256(self.rp_id.encode()).digest()
            + bytes([0x05])
            + self.count.to_bytes(4, "big")
        )
        client = self._client_data("webauthn.get", options["challenge"])
        signature = self.key.sign(auth + hashlib.sha256(client).digest(), ec.ECDSA(hashes.SHA256()))
        cid = b64url(self.credential_id)
        return {
            "id": cid,
            "rawId": cid,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client),
                "authenticatorData": b64url(auth),
                "signature": b64url(signature),
                "userHandle": None,
            },
            "clientExtensionResults": {},
        }
