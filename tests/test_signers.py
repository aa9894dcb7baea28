"""store.reads.signers: who signed each event, said as store.signing says it (the signature
covering an event is the first at or after it; the key's actor is the keyring's), read from
the signatures around the events asked about, not the task's whole history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from store import commands as c
from store import store as store_module
from store.model import Actor
from store.reads import signers as sg
from store.signing.check import signer_of, task_signatures
from store.signing.keys import SigningKey
from store.signing.trust import add_key, require, revoke_key
from store.store import Store

ALICE = Actor(kind="person", id="alice", name="Alice")
BOT = Actor(kind="agent", id="bot")


def as_(store: Store, key: SigningKey | None, command: Any, actor: Actor) -> Any:
    store.signer = key
    try:
        return store.execute(command, actor)
    finally:
        store.signer = None


def test_each_events_signer_agrees_with_the_signing_check(store: Store, ws: Path) -> None:
    alice, bot = SigningKey.generate(), SigningKey.generate()
    require(store, alice, ALICE)
    add_key(store, alice, bot.public_raw, BOT)
    tid = as_(
        store, bot, c.CreateTask(title="T", owner="o", objective="x", scope_paths=[str(ws)]), BOT
    )
    for n in range(40):
        as_(store, bot, c.AddCriterion(task_id=tid, text=f"c{n}"), BOT)
    as_(store, alice, c.AddCriterion(task_id=tid, text="by alice"), ALICE)
    revoke_key(store, alice, bot.key_id)
    with pytest.MonkeyPatch.context() as mp:  # past the signing: an unsigned tail
        mp.setattr(store_module, "seal", lambda *a: None)
        as_(store, None, c.AddCriterion(task_id=tid, text="forged"), BOT)
    events = store.events(tid)
    with store.read() as conn:
        marks = sg.signers(conn, tid, events)
        few = sg.signers(conn, tid, [events[0], events[-2]])  # far apart: each read alone
        summary = sg.signature_summary(conn, tid)
        whole = task_signatures(conn, tid)
    assert few == {s: marks[s] for s in few}
    for e in events:
        covering = signer_of(whole["signatures"], e["seq"])
        mark = marks[e["seq"]]
        if covering is None:
            assert mark == sg.Signer(state=sg.UNSIGNED)
            continue
        assert (mark.key_id, mark.actor) == (covering["key_id"], covering["actor"])
        assert mark.state == sg.SIGNED
    assert [m.state for m in marks.values()].count(sg.UNSIGNED) == 1
    assert summary.unsigned_after == whole["unsigned_after"] == events[-2]["seq"]
    assert (summary.signed, summary.required) == (whole["signed"], whole["required"])
    assert summary.count == len(whole["signatures"])
    assert summary.last is not None
    assert summary.last.key_id == alice.key_id and summary.last.name == "Alice"


def test_unknown_revoked_and_another_actors_keys_are_named(store: Store, ws: Path) -> None:
    alice, bot = SigningKey.generate(), SigningKey.generate()
    require(store, alice, ALICE)
    add_key(store, alice, bot.public_raw, BOT)
    tid = as_(
        store, bot, c.CreateTask(title="T", owner="o", objective="x", scope_paths=[str(ws)]), BOT
    )
    first = store.events(tid)[-1]
    revoke_key(store, alice, bot.key_id)
    stranger = SigningKey.generate()
    as_(store, alice, c.AddCriterion(task_id=tid, text="y"), ALICE)
    late = store.events(tid)[-1]
    revoked_at = "9999"  # a later event by the bot, after its key's revocation
    with store.read() as conn:
        base = sg.signers(conn, tid, [first, late])
        as_bot = dict(late, actor={"kind": "agent", "id": "bot"})
        other = sg.signers(conn, tid, [as_bot])
        after = sg.signers(conn, tid, [dict(first, at=revoked_at)])
    assert base[first["seq"]].state == sg.SIGNED
    assert base[late["seq"]].state == sg.SIGNED
    assert other[late["seq"]].state == sg.OTHER_ACTOR
    assert after[first["seq"]].state == sg.REVOKED_KEY
    # A key the keyring does not know: the stranger signs the next write past the policy.
    import sqlalchemy as sa

    from store import schema as t
    from store.signing.seal import encode_signature, record_message

    def sign(conn: Any, policy: Any, signer: Any, emitted: Any, now: str) -> None:
        e = emitted[-1]
        msg = record_message(e.task_id, e.seq, e.hash)
        conn.execute(
            sa.insert(t.signatures).values(
                task_id=e.task_id,
                seq=e.seq,
                key_id=stranger.key_id,
                signature=encode_signature(stranger.sign(msg)),
            )
        )

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "seal", sign)
        as_(store, None, c.AddCriterion(task_id=tid, text="z"), ALICE)
    last = store.events(tid)[-1]
    with store.read() as conn:
        mark = sg.signers(conn, tid, [last])[last["seq"]]
        summary = sg.signature_summary(conn, tid)
    assert mark == sg.Signer(state=sg.UNKNOWN_KEY, key_id=stranger.key_id, actor=None, name="")
    assert summary.last is not None
    assert summary.last.known is False and summary.unsigned_after is None


def test_an_unsigned_store_marks_nothing(store: Store, ws: Path) -> None:
    tid = store.execute(
        c.CreateTask(title="T", owner="o", objective="x", scope_paths=[str(ws)]), BOT
    )
    events = store.events(tid)
    with store.read() as conn:
        marks = sg.signers(conn, tid, events)
        summary = sg.signature_summary(conn, tid)
        both = sg.decision_signers(conn, tid)
    assert set(m.state for m in marks.values()) == {sg.STORE_UNSIGNED}
    assert summary.signed is False and summary.unsigned_after is None
    assert both.approvals == {} and both.checkpoints == {}
