"""The fast checkpoint write path keeps its promises: the event it composes is the canonical
one, and a reused state is never a stale one."""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

import pytest

from store import Actor, Store
from store import commands as c
from store import events as ev
from store.canonical import canonical_json, digest_of
from store.commands.approvals import RequestApproval
from store.commands.checkpoint_state import task_checkpoint_state
from store.commands.checkpoints import WriteCheckpoint, payload_json
from store.commands.effects import PlanEffect

AGENT = Actor(kind="agent", id="writer-7")


def new_task(s: Store, ws: Path) -> str:
    tid: str = s.execute(
        c.CreateTask(title="t", owner="ana", objective="ship it", scope_paths=[str(ws)]), AGENT
    )
    s.execute(c.AddCriterion(task_id=tid, text="it ships"), AGENT)
    return tid


def checkpoint(s: Store, tid: str) -> dict[str, object]:
    cid = s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), AGENT)
    head = s.head_checkpoint(tid)
    assert head is not None and head["checkpoint_id"] == cid
    return head


def fresh_state(s: Store, tid: str) -> dict[str, object]:
    """The state as the projections say it now, bypassing every memo."""
    with s.transaction() as tx:
        return task_checkpoint_state(tx, tid)


# --- the composed event ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "note",
    [
        "",
        "plain",
        'quotes " and \\ backslashes',
        'a fake member ,"state_digest":"x"',
        '{"state":0}',
        "ünï ✓ \n\t",
    ],
)
def test_the_composed_payload_is_the_canonical_encoding(note: str) -> None:
    state = {"z": [1, 2.5, None, True], "a": {"ü": "✓", "b": []}, "status": "running"}
    payload = ev.CheckpointWritten(
        checkpoint_id="ck-1",
        reason="handoff",
        supersedes=("ck-0", 'ck-"state":0'),  # an id is any text, like a note
        merged=("ck-x", "ck-y"),
        boundary_seq=7,
        boundary_hash="ab" * 32,
        state=state,
        state_digest=digest_of(state),
        note=note,
    )
    assert payload_json(payload, canonical_json(state)) == canonical_json(
        payload.model_dump(mode="json")
    )


def test_stored_checkpoint_events_verify_and_decode(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    for _ in range(3):
        head = checkpoint(s, tid)
        assert head["state_digest"] == digest_of(head["state"])
    from store.services.verify import verify

    assert verify(s, tid).ok


# --- the state memo -------------------------------------------------------------------------


def test_a_reused_state_is_the_state_the_projections_hold(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    first = checkpoint(s, tid)
    second = checkpoint(s, tid)  # nothing between: the state is reused
    assert second["state"] == first["state"] == fresh_state(s, tid)
    # Any other event moves the head: the next checkpoint reads the projections again.
    s.execute(c.AddCriterion(task_id=tid, text="it is reviewed"), AGENT)
    third = checkpoint(s, tid)
    assert len(third["state"]["criteria"]) == 2  # type: ignore[index]
    assert third["state"] == fresh_state(s, tid)


def _add_criterion(store_dir: str, url: str | None, tid: str) -> None:
    with Store.open(store_dir, url=url, create=False) as other:
        other.execute(c.AddCriterion(task_id=tid, text="added elsewhere"), AGENT)


def test_another_process_s_event_is_never_missed(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    checkpoint(s, tid)
    url = None if s.location.sqlite_file else s.location.url
    p = mp.get_context("spawn").Process(
        target=_add_criterion, args=(str(s.location.directory), url, tid)
    )
    p.start()
    p.join(60)
    assert p.exitcode == 0
    head = checkpoint(s, tid)
    texts = {cr["id"] for cr in head["state"]["criteria"]}  # type: ignore[index]
    assert len(texts) == 2
    assert head["state"] == fresh_state(s, tid)


def test_an_approval_expiring_ends_the_reuse(s: Store, ws: Path) -> None:
    # The first checkpoint must be written while the approval is pending: a machine too
    # slow for the approval's life (a loaded CI machine missed 2 s) tries again on a new
    # task, with a life four times as long, rather than fail.
    life = 0.5
    while True:
        tid, aid = _task_asking_approval(s, ws, life)
        before = checkpoint(s, tid)
        states = [a["state"] for a in before["state"]["open_approvals"]]  # type: ignore[index]
        if states == ["pending"] or life > 60:
            break
        life *= 4
    assert states == ["pending"]
    deadline = time.monotonic() + 60  # bounds a hang only: the store says when it expired
    while _approval_state(s, tid, aid) != "expired":
        assert time.monotonic() < deadline, "the approval never expired"
        time.sleep(0.05)
    after = checkpoint(s, tid)  # no event between, but the clock passed the expiry
    assert [a["state"] for a in after["state"]["open_approvals"]] == ["expired"]  # type: ignore[index]


def _approval_state(s: Store, tid: str, aid: str) -> str:
    return str(next(a for a in s.task(tid)["approvals"] if a["approval_id"] == aid)["state"])


def _task_asking_approval(s: Store, ws: Path, life: float) -> tuple[str, str]:
    tid = new_task(s, ws)
    eid = s.execute(
        PlanEffect(
            task_id=tid,
            target="out.md",
            consequence="write out.md",
            content=c.Content(text="v1"),
            requires_approval=True,
        ),
        AGENT,
    )
    aid = s.execute(
        RequestApproval(task_id=tid, effect_id=eid, policy="p", expires_in_seconds=life), AGENT
    )
    return tid, str(aid)


def test_a_rolled_back_checkpoint_teaches_nothing(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    checkpoint(s, tid)
    with pytest.raises(RuntimeError), s.transaction() as tx:
        c.execute(tx, WriteCheckpoint(task_id=tid, reason="milestone"), AGENT)
        raise RuntimeError("the caller gave up")
    assert s._states.get(tid) is not None
    known = s._states.get(tid)
    head = checkpoint(s, tid)
    assert known is not None and head["seq"] == known.head[0]  # continued from the real head
