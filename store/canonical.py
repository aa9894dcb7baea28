"""Canonical JSON and digests: the form that hashes and approvals bind to."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant white space, UTF-8 kept as is (sqlite-utils' form)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_of(value: Any) -> str:
    """The digest of a JSON-able value's canonical form, prefixed with its algorithm."""
    return "sha256:" + sha256_hex(canonical_json(value).encode("utf-8"))


def chain_hash(prev_hash: str, event_body: dict[str, Any]) -> str:
    """Each event's hash covers the previous hash and the event's canonical JSON."""
    h = hashlib.sha256()
    h.update(prev_hash.encode("ascii"))
    h.update(b"\n")
    h.update(canonical_json(event_body).encode("utf-8"))
    return h.hexdigest()


GENESIS_HASH = "0" * 64
