"""Standing rules as the record holds them: each rule's grant and revocation read from the log
of the task it was granted on, its grant's signature checked against the keys the store
trusts, and the read model `boris rules list --json` prints and the window's Rules panel shows.

Where a rule is: the store's settings keep an index (`rule:ID` -> its task and seq), written
by the person's grant in the same transaction. The index only says where to look: what a rule
says, who granted it, whether it was revoked and whether a person's key signed it are read
from the events each time (an index an agent edited points at no grant, or at one that does
not verify, and decides nothing).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from pydantic import Field
from sqlalchemy.engine import Connection

from .. import schema as t
from ..rules import ActorKind
from ..rules.standing_rules import RuleScope, RuleStanding, RuleTerms, RuleVerdict, standing
from ..signing import keyring
from ..signing.keys import check_signature
from ..signing.seal import record_message
from .actors import ActorRef
from .read_model import ReadModel

#: The settings key of a rule's place in the log (store_meta keys are at most 64 characters).
INDEX_PREFIX = "rule:"
#: A policy a person reserved: no standing rule decides its calls.
RESERVED_PREFIX = "rule-free:"


@dataclass(frozen=True)
class GrantOnRecord:
    """A rule's grant as its log holds it, with what its signature proves (or why not)."""

    terms: RuleTerms
    granted_by: dict[str, Any]
    note: str
    answered: str | None
    origin: str
    version: int
    revoke_reason: str
    #: None when a trusted person's key signed the grant (or the store signs nothing).
    unsigned: str | None


def index_key(rule_id: str) -> str:
    return INDEX_PREFIX + rule_id


def _lock_key(rule_id: str) -> int:
    """The rule's advisory lock key: 64 bits of a digest of its id (a collision only makes
    two rules take turns)."""
    import hashlib

    digest = hashlib.sha256(b"boris-rule:" + rule_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def where_is(conn: Connection, rule_id: str, lock: str | None = None) -> tuple[str, int] | None:
    """The rule's place in the log. `lock` on a server: "share" (a request decided by it)
    or "update" (its revocation), so that the two take turns (SQLite's writer is one)."""
    q = sa.select(t.store_meta.c.value).where(t.store_meta.c.key == index_key(rule_id))
    if lock is not None and conn.dialect.name == "postgresql":
        # A lock of the transaction's, keyed by the rule: not the row's own (FOR SHARE / FOR
        # UPDATE), which a team store's logins may not take on the store's settings (they
        # need UPDATE on store_meta, which no writer is granted).
        shared = "_shared" if lock == "share" else ""
        conn.execute(
            sa.text(f"SELECT pg_advisory_xact_lock{shared}(:key)"), {"key": _lock_key(rule_id)}
        )
    value = conn.execute(q).scalar()
    if value is None:
        return None
    place = json.loads(value)
    return str(place["task_id"]), int(place["seq"])


def indexed(conn: Connection) -> list[tuple[str, str, int]]:
    """Every rule the index names: (rule id, task, seq)."""
    rows = conn.execute(
        sa.select(t.store_meta.c.key, t.store_meta.c.value).where(
            t.store_meta.c.key.startswith(INDEX_PREFIX)
        )
    )
    out = []
    for key, value in rows:
        place = json.loads(value)
        out.append((str(key)[len(INDEX_PREFIX) :], str(place["task_id"]), int(place["seq"])))
    return out


def _reserved_key(policy: str) -> str:
    import hashlib

    return RESERVED_PREFIX + hashlib.sha256(policy.encode("utf-8")).hexdigest()[:52]


def policy_reserved(conn: Connection, policy: str) -> bool:
    """Whether a person reserved this policy's calls for a person every time."""
    return (
        conn.execute(
            sa.select(t.store_meta.c.value).where(t.store_meta.c.key == _reserved_key(policy))
        ).scalar()
        is not None
    )


def reserved_since(conn: Connection, policy: str) -> str | None:
    """When a person reserved this policy's calls (database clock); None when it is not."""
    value = conn.execute(
        sa.select(t.store_meta.c.value).where(t.store_meta.c.key == _reserved_key(policy))
    ).scalar()
    return None if value is None else str(json.loads(value).get("set_at") or "")


def set_reserved(
    conn: Connection, policy: str, reserved: bool, by: dict[str, Any], now: str
) -> None:
    key = _reserved_key(policy)
    conn.execute(sa.delete(t.store_meta).where(t.store_meta.c.key == key))
    if reserved:
        value = {"policy": policy, "set_by": by, "set_at": now}
        conn.execute(
            sa.insert(t.store_meta).values(key=key, value=json.dumps(value, sort_keys=True))
        )


def _event(conn: Connection, task_id: str, seq: int) -> Any:
    e = t.events
    return conn.execute(
        sa.select(
            e.c.type, e.c.payload, e.c.actor_kind, e.c.actor_id, e.c.actor_name, e.c.at
        ).where(e.c.task_id == task_id, e.c.seq == seq)
    ).first()


def signature_refusal(conn: Connection, task_id: str, seq: int, person: str, at: str) -> str | None:
    """Why the grant at (task, seq) is not proved a trusted person's by a signature; None when
    it is, or when the store signs nothing (then a person's event is as good as any)."""
    ring = keyring.load(conn)
    if ring.empty and not keyring.required(conn):
        return None
    sg = t.signatures
    sig = conn.execute(
        sa.select(sg.c.seq, sg.c.key_id, sg.c.signature)
        .where(sg.c.task_id == task_id, sg.c.seq >= seq)
        .order_by(sg.c.seq)
        .limit(1)
    ).first()
    if sig is None:
        return f"its grant (task {task_id} seq {seq}) is not signed"
    b = ring.trusted_person(str(sig.key_id), at)
    if b is None or not b.names("person", person):
        return (
            f"its grant (task {task_id} seq {seq}) is signed by key {sig.key_id}, which is "
            f"not person:{person}'s trusted key"
        )
    signed_hash = conn.execute(
        sa.select(t.events.c.hash).where(t.events.c.task_id == task_id, t.events.c.seq == sig.seq)
    ).scalar()
    try:
        raw = base64.b64decode(str(sig.signature), validate=True)
    except ValueError:
        raw = b""
    if signed_hash is None or not check_signature(
        b.public_raw, raw, record_message(task_id, int(sig.seq), str(signed_hash))
    ):
        return f"the signature over its grant (task {task_id} seq {seq}) does not verify"
    return None


def grant_on_record(
    conn: Connection, rule_id: str, task_id: str, seq: int, *, prove: bool = True
) -> GrantOnRecord | str:
    """The rule granted at (task, seq), with its revocation read from that task's log; or,
    as a string, why there is no such person's grant there. `prove`: check its signature
    (`unsigned` says why it does not prove it); else `unsigned` is "not checked"."""
    row = _event(conn, task_id, seq)
    if row is None or row.type != "rule.granted":
        return f"task {task_id} has no rule grant at seq {seq}"
    p = json.loads(row.payload)
    if p.get("rule_id") != rule_id:
        return f"task {task_id} seq {seq} grants rule {p.get('rule_id')}, not {rule_id}"
    if row.actor_kind != "person":
        return f"rule {rule_id} was granted by {row.actor_kind}:{row.actor_id}, not a person"
    revoked_at = revoked_by = None
    reason = ""
    version = 1
    e = t.events
    for r in conn.execute(
        sa.select(e.c.payload, e.c.actor_kind, e.c.actor_id, e.c.at)
        .where(e.c.task_id == task_id, e.c.type == "rule.revoked", e.c.seq > seq)
        .order_by(e.c.seq)
    ):
        q = json.loads(r.payload)
        if q.get("rule_id") != rule_id or r.actor_kind != "person":
            continue
        version += 1
        if revoked_at is None:
            revoked_at, revoked_by, reason = str(r.at), str(r.actor_id), str(q.get("reason", ""))
    terms = RuleTerms(
        rule_id=rule_id,
        task_id=task_id,
        seq=seq,
        granted_by=str(row.actor_id),
        granted_at=str(row.at),
        verdict=str(p["verdict"]),
        scope=str(p["scope"]),
        agent=p.get("agent"),
        session_id=p.get("session_id"),
        tool=str(p["tool"]),
        target=str(p["target"]),
        payload=p.get("payload"),
        expires_at=str(p["expires_at"]),
        revoked_at=revoked_at,
        revoked_by=revoked_by,
    )
    return GrantOnRecord(
        terms=terms,
        granted_by={"kind": "person", "id": str(row.actor_id), "name": str(row.actor_name)},
        note=str(p.get("note", "")),
        answered=p.get("answered"),
        origin=str(p.get("origin", "")),
        version=version,
        revoke_reason=reason,
        unsigned=signature_refusal(conn, task_id, seq, str(row.actor_id), str(row.at))
        if prove
        else "not checked",
    )


def rules_on_record(conn: Connection) -> Iterable[GrantOnRecord]:
    """Every indexed rule whose grant is a person's event on record (signed or not)."""
    for rule_id, task_id, seq in indexed(conn):
        found = grant_on_record(conn, rule_id, task_id, seq)
        if isinstance(found, GrantOnRecord):
            yield found


# --- the read model --------------------------------------------------------------------------


class StandingRule(ReadModel):
    """One standing rule: a row of `boris rules list --json` and of the window's Rules panel."""

    id: str = Field(description="the rule's id")
    task_id: str = Field(description="the task it was granted on (its events are there)")
    seq: int = Field(description="its grant's event in that task's log")
    verdict: RuleVerdict = Field(description="what it decides the calls it covers")
    scope: RuleScope
    agent: str | None = Field(description="agent scope: the agent (kind:id) whose calls")
    session_id: str | None = Field(description="session scope: the session whose calls")
    tool: str = Field(description="a glob over the tool's name")
    target: str = Field(description="a glob over the call's target")
    payload: dict[str, Any] | None = Field(
        description="fields the call's payload must match (a string is a glob)"
    )
    granted_by: ActorRef
    granted_at: str
    expires_at: str
    standing: RuleStanding = Field(description="active, expired or revoked, judged now")
    revoked_at: str | None
    revoked_by: str | None
    revoke_reason: str
    note: str
    answered: str | None = Field(description="the approval it was given from, where one")
    origin: str = Field(description="the framework answer it came from, else empty")
    version: int = Field(description="1 as granted, 2 once revoked: what a revocation is based on")
    proved: bool = Field(
        description="whether the record proves it a person's: signed by their trusted key (a "
        "store that signs nothing: their event)"
    )
    why_unproved: str | None = Field(description="why not, where it is not")
    decided: int = Field(description="how many calls it decided")
    covers: str = Field(description="what it covers, in words")


class StandingRules(ReadModel):
    """`boris rules list --json`: the rules, newest first, judged at `now`."""

    now: str
    rules: list[StandingRule]


def _decided_counts(conn: Connection) -> dict[str, int]:
    counts: dict[str, int] = {}
    for (payload,) in conn.execute(
        sa.select(t.events.c.payload).where(t.events.c.type == "approval.ruled")
    ):
        rid = str(json.loads(payload).get("rule_id"))
        counts[rid] = counts.get(rid, 0) + 1
    return counts


def standing_rules(
    conn: Connection, now: str, *, active_only: bool = False, task_id: str | None = None
) -> StandingRules:
    from ..rules.standing_rules import scope_words

    counts = _decided_counts(conn)
    out: list[StandingRule] = []
    for g in rules_on_record(conn):
        r = g.terms
        state = standing(r, now)
        if active_only and state != RuleStanding.ACTIVE:
            continue
        if task_id is not None and r.task_id != task_id:
            continue
        out.append(
            StandingRule(
                id=r.rule_id,
                task_id=r.task_id,
                seq=r.seq,
                verdict=RuleVerdict(r.verdict),
                scope=RuleScope(r.scope),
                agent=r.agent,
                session_id=r.session_id,
                tool=r.tool,
                target=r.target,
                payload=dict(r.payload) if r.payload is not None else None,
                granted_by=ActorRef(
                    ActorKind.PERSON, r.granted_by, str(g.granted_by.get("name") or "")
                ),
                granted_at=r.granted_at,
                expires_at=r.expires_at,
                standing=state,
                revoked_at=r.revoked_at,
                revoked_by=r.revoked_by,
                revoke_reason=g.revoke_reason,
                note=g.note,
                answered=g.answered,
                origin=g.origin,
                version=g.version,
                proved=g.unsigned is None,
                why_unproved=g.unsigned,
                decided=counts.get(r.rule_id, 0),
                covers=scope_words(r),
            )
        )
    out.sort(key=lambda x: (x.granted_at, x.id), reverse=True)
    return StandingRules(now=now, rules=out)
