"""Canonical JSON and digests: the form that hashes and approvals bind to."""

from __future__ import annotations

import hashlib
import json
from typing import Any

# One encoder for the process: json.dumps with any option builds a new encoder per call,
# which costs as much as encoding a small payload (and every event is small).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant white space, UTF-8 kept as is (sqlite-utils' form)."""
    return _CANONICAL.encode(value)


def canonical_object(members: dict[str, str]) -> str:
    """The canonical JSON of an object whose member values are canonical JSON texts already:
    so a large member encoded once (a checkpoint's state) is not encoded again inside it."""
    dumps = _CANONICAL.encode
    return "{" + ",".join(f"{dumps(k)}:{members[k]}" for k in sorted(members)) + "}"


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


def chain_hash_of_parts(
    prev_hash: str,
    *,
    actor_json: str,
    at: str,
    fmt: int,
    payload_json: str,
    seq: int,
    task_id: str,
    type_name: str,
) -> str:
    """`chain_hash` of an event body given as its already-canonical parts.

    The append path has the payload's canonical JSON anyway (it is what is stored), so the
    body's canonical form is assembled around it, keys in sorted order, instead of
    serializing the payload a second time. A test checks it equals `chain_hash`.
    """
    dumps = _CANONICAL.encode
    body = (
        f'{{"actor":{actor_json},"at":{dumps(at)},"format":{fmt},'
        f'"payload":{payload_json},"seq":{seq},'
        f'"task_id":{dumps(task_id)},'
        f'"type":{dumps(type_name)}}}'
    )
    h = hashlib.sha256()
    h.update(prev_hash.encode("ascii"))
    h.update(b"\n")
    h.update(body.encode("utf-8"))
    return h.hexdigest()


GENESIS_HASH = "0" * 64
