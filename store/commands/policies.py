"""Approval policies: how many distinct people a policy needs, set by a person.

The number lives in the store's settings (`store_meta`), not in any request: an agent names
the policy it asks under and may ask for more people, never fewer (rules.approvers_needed).
On a team store an agents' role only reads `store_meta` (store.team), so only the store's
owner or a reviewers' login sets a policy; the command layer lets only a person run
`set_approval_policy` (rules.AUTHORITY). A request records the number it needed when it was
asked (`approval.requested`), so a rebuild from the log gives the same rows.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import schema as t

#: store_meta keys are at most 64 characters and a policy is free text: its digest names it.
_PREFIX = "quorum:"


def _key(policy: str) -> str:
    return _PREFIX + hashlib.sha256(policy.encode("utf-8")).hexdigest()[:56]


def approvers_of(conn: Connection, policy: str) -> int | None:
    """The number of people the policy needs, where a person set one (else None)."""
    value = conn.execute(
        sa.select(t.store_meta.c.value).where(t.store_meta.c.key == _key(policy))
    ).scalar()
    return None if value is None else int(json.loads(value)["approvers"])


def set_approvers(
    conn: Connection, policy: str, approvers: int, actor: dict[str, Any], now: str
) -> None:
    """Record the policy's number (delete and insert: what a reviewers' role may do)."""
    key = _key(policy)
    value = {"policy": policy, "approvers": approvers, "set_by": actor, "set_at": now}
    conn.execute(sa.delete(t.store_meta).where(t.store_meta.c.key == key))
    conn.execute(sa.insert(t.store_meta).values(key=key, value=json.dumps(value, sort_keys=True)))


def all_policies(conn: Connection) -> list[dict[str, Any]]:
    """Every policy a person set, by name: policy, approvers, set_by, set_at."""
    rows = conn.execute(
        sa.select(t.store_meta.c.value).where(t.store_meta.c.key.startswith(_PREFIX))
    )
    return sorted((json.loads(v) for (v,) in rows), key=lambda p: str(p["policy"]))
