"""Who signed what, for showing: each event's signer, a task's signing summary, the events
that carry a person's decisions.

The words are `store.signing`'s: the signature covering an event is the first at or after it
(`check.signer_of`; a test holds the two equal), the key's actor is the one the store's keyring binds it to, and events
after a task's last signature on a signed store are its unsigned tail. Reading a page of
events costs the signatures around that page, not the task's whole history. The signatures
themselves are verified by `boris verify` (store.signing.check), not here.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import schema as t
from ..rules import ActorKind
from ..signing import keyring
from .read_model import ReadModel


#: How an event stands: signed by a key bound to its actor; by a key the keyring does not
#: know; by a key revoked before the event; by a key bound to another actor; after the last
#: signature of a signed store; or in a store that does not sign (no alarm).
class SignatureState(StrEnum):
    SIGNED = "signed"
    UNKNOWN_KEY = "unknown_key"
    REVOKED_KEY = "revoked_key"
    OTHER_ACTOR = "other_actor"
    UNSIGNED = "unsigned"
    STORE_UNSIGNED = "store_unsigned"


SIGNED, UNKNOWN_KEY, REVOKED_KEY, OTHER_ACTOR, UNSIGNED, STORE_UNSIGNED = tuple(SignatureState)
ALARMS = frozenset({UNKNOWN_KEY, REVOKED_KEY, OTHER_ACTOR, UNSIGNED})


class Signer(ReadModel):
    """How one event is signed: its `state`, and where a signature covers it the `key_id`,
    the `actor` (kind:id) the keyring binds the key to and that actor's `name` (None for
    an unsigned event or a store that does not sign)."""

    state: SignatureState
    key_id: str | None = None
    actor: str | None = None
    name: str | None = None


class LastSignature(ReadModel):
    """A task's last signature: its key, the actor the keyring binds it to (None: a key the
    keyring does not know, `known` false), whether and when the key was revoked, its seq."""

    key_id: str
    actor: str | None
    name: str
    known: bool
    revoked_at: str | None
    seq: int


class SignatureSummary(ReadModel):
    """A task's signing in a line (`signature_summary`): whether the store signs and requires
    signatures, how many writes are signed, the last signature, the seq after which events
    are unsigned (None: none are), and how many keyring entries do not hold."""

    signed: bool
    required: bool
    count: int
    last: LastSignature | None
    unsigned_after: int | None
    keyring_problems: int


class DecisionSigners(ReadModel):
    """A task's signing `summary`, and who signed each approval's decision (`approvals`:
    approval id -> signer) and each checkpoint (`checkpoints`: checkpoint id -> signer)."""

    summary: SignatureSummary
    approvals: dict[str, Signer]
    checkpoints: dict[str, Signer]


#: An event as `signers` reads it: its `seq`, `at` and `actor` (kind, id), as attributes (an
#: event row, store.reads.queries) or keys (a mapping, as `decision_events` gives them).
SignedEvent = Any


def _event_fields(e: SignedEvent) -> tuple[int, str, str, str]:
    """(seq, at, actor kind, actor id) of an event row, a read model or a plain mapping."""
    if isinstance(e, Mapping):
        actor = e["actor"]
        return int(e["seq"]), str(e["at"]), str(actor["kind"]), str(actor["id"])
    return int(e.seq), str(e.at), str(e.actor.kind), str(e.actor.id)


def _signed(conn: Connection, ring: keyring.Keyring, task_id: str) -> tuple[bool, bool]:
    """(signed, required), as `check.task_signatures` says them."""
    required = keyring.required(conn)
    if required or not ring.empty:
        return True, required
    any_sig = conn.execute(
        sa.select(t.signatures.c.seq).where(t.signatures.c.task_id == task_id).limit(1)
    ).first()
    return any_sig is not None, required


def _last(ring: keyring.Keyring, key_id: str, seq: int) -> LastSignature:
    b = ring.get(key_id)
    return LastSignature(
        key_id=key_id,
        actor=b.actor if b else None,
        name=b.actor_name if b else "",
        known=b is not None,
        revoked_at=b.revoked_at if b else None,
        seq=seq,
    )


def signature_summary(
    conn: Connection, task_id: str, ring: keyring.Keyring | None = None
) -> SignatureSummary:
    """`signed`, `required`, `count` of signed writes, the `last` signature (key and the
    actor it is bound to) and `unsigned_after` (the seq after which events are unsigned, or
    None): `check.task_signatures`' answer without reading every signature. `ring`: the
    store's keyring, when the caller has it loaded."""
    ring = keyring.load(conn) if ring is None else ring
    signed, required = _signed(conn, ring, task_id)
    sig = t.signatures.c
    count = conn.execute(
        sa.select(sa.func.count()).select_from(t.signatures).where(sig.task_id == task_id)
    ).scalar_one()
    last_row = conn.execute(
        sa.select(sig.seq, sig.key_id)
        .where(sig.task_id == task_id)
        .order_by(sig.seq.desc())
        .limit(1)
    ).first()
    last_event = conn.execute(
        sa.select(sa.func.max(t.events.c.seq)).where(t.events.c.task_id == task_id)
    ).scalar()
    last_signed = int(last_row[0]) if last_row else 0
    return SignatureSummary(
        signed=signed,
        required=required,
        count=int(count),
        last=_last(ring, str(last_row[1]), last_signed) if last_row else None,
        unsigned_after=last_signed if signed and (last_event or 0) > last_signed else None,
        keyring_problems=len(ring.problems),
    )


def _covering(conn: Connection, task_id: str, seqs: set[int]) -> list[tuple[int, str]]:
    """The signatures that cover `seqs` (and maybe a few more): a page of neighbouring events
    reads the signatures from its first to the one covering its last; a few events spread
    over a long history (decisions, checkpoints) read each one's own."""
    sig = t.signatures.c
    lo, hi = min(seqs), max(seqs)
    if hi - lo > 4 * len(seqs) + 64:
        out = []
        for seq in sorted(seqs):
            row = conn.execute(
                sa.select(sig.seq, sig.key_id)
                .where(sig.task_id == task_id, sig.seq >= seq)
                .order_by(sig.seq)
                .limit(1)
            ).first()
            if row is not None:
                out.append((int(row[0]), str(row[1])))
        return out
    cover = conn.execute(
        sa.select(sa.func.min(sig.seq)).where(sig.task_id == task_id, sig.seq >= hi)
    ).scalar()
    q = sa.select(sig.seq, sig.key_id).where(sig.task_id == task_id, sig.seq >= lo)
    if cover is not None:
        q = q.where(sig.seq <= cover)
    return [(int(seq), str(key_id)) for seq, key_id in conn.execute(q)]


_STORE_UNSIGNED = Signer(state=STORE_UNSIGNED)
_UNSIGNED = Signer(state=UNSIGNED)


def signers(
    conn: Connection,
    task_id: str,
    events: Iterable[SignedEvent],
    ring: keyring.Keyring | None = None,
) -> dict[int, Signer]:
    """Per event (`seq`, `at`, `actor` {kind, id}: an event row or a mapping) how it is
    signed: `state` (one of the words above), and for a signed one the `key_id`, the
    `actor` its key is bound to and that actor's `name`."""
    evs = [_event_fields(e) for e in events]
    if not evs:
        return {}
    ring = keyring.load(conn) if ring is None else ring
    signed, _ = _signed(conn, ring, task_id)
    if not signed:
        return {seq: _STORE_UNSIGNED for seq, *_ in evs}
    sigs = dict(_covering(conn, task_id, {seq for seq, *_ in evs}))
    # `check.signer_of` (the first signature at or after the event) by bisection: asked of
    # each of a page's events, its scan of every signature made a page cost 15 ms.
    order = sorted(sigs)
    out: dict[int, Signer] = {}
    for seq, at, actor_kind, actor_id in evs:
        i = bisect.bisect_left(order, seq)
        if i >= len(order):
            out[seq] = _UNSIGNED
            continue
        key_id = sigs[order[i]]
        # The binding's own rules, as `check.check_task` asks them.
        b = ring.get(key_id)
        if b is None:
            state = UNKNOWN_KEY
        elif b.revoked_by(at):
            state = REVOKED_KEY
        elif actor_kind != ActorKind.SYSTEM and not b.names(actor_kind, actor_id):
            state = OTHER_ACTOR
        else:
            state = SIGNED
        out[seq] = Signer(
            state=state,
            key_id=key_id,
            actor=b.actor if b else None,
            name=b.actor_name if b else "",
        )
    return out


def decision_events(conn: Connection, task_id: str) -> dict[str, dict[str, Any]]:
    """The event that decided each approval (approval id -> `seq`, `at`, `actor`)."""
    ev = t.events.c
    rows = conn.execute(
        sa.select(ev.seq, ev.at, ev.payload, ev.actor_kind, ev.actor_id).where(
            ev.task_id == task_id, ev.type == "approval.decided"
        )
    )
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        approval_id = json.loads(r.payload).get("approval_id")
        if approval_id:
            out[str(approval_id)] = {
                "seq": int(r.seq),
                "at": r.at,
                "actor": {"kind": r.actor_kind, "id": r.actor_id},
            }
    return out


def checkpoint_events(conn: Connection, task_id: str) -> dict[str, dict[str, Any]]:
    """The event that wrote each checkpoint (checkpoint id -> `seq`, `at`, `actor`)."""
    ck, ev = t.checkpoints.c, t.events.c
    rows = conn.execute(
        sa.select(ck.checkpoint_id, ev.seq, ev.at, ev.actor_kind, ev.actor_id)
        .select_from(
            t.checkpoints.join(t.events, sa.and_(ev.task_id == ck.task_id, ev.seq == ck.event_seq))
        )
        .where(ck.task_id == task_id)
    )
    return {
        str(r.checkpoint_id): {
            "seq": int(r.seq),
            "at": r.at,
            "actor": {"kind": r.actor_kind, "id": r.actor_id},
        }
        for r in rows
    }


def decision_signers(conn: Connection, task_id: str) -> DecisionSigners:
    """The task's signing `summary`, and who signed each approval's decision (`approvals`:
    approval id -> signer) and each checkpoint (`checkpoints`: checkpoint id -> signer),
    the signer as `signers` gives it."""
    decided = decision_events(conn, task_id)
    written = checkpoint_events(conn, task_id)
    ring = keyring.load(conn)
    marks = signers(conn, task_id, [*decided.values(), *written.values()], ring)
    return DecisionSigners(
        summary=signature_summary(conn, task_id, ring),
        approvals={aid: marks[e["seq"]] for aid, e in decided.items()},
        checkpoints={cid: marks[e["seq"]] for cid, e in written.items()},
    )
