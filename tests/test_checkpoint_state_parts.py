"""A checkpoint's state carried over the events written since it was known (issue 44) is the
state read afresh: an event that changes nothing it is read from leaves it whole, any other
has the parts it may change read again, and store.projections.state_parts names every table
each event's projection writes."""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from store import Actor, CommandRejected, Store, projections
from store import commands as c
from store.canonical import canonical_json, digest_of
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoint_state import known_state, task_checkpoint_state
from store.commands.checkpoints import StopRun, WriteCheckpoint
from store.commands.effects import (
    CancelEffect,
    DispatchEffect,
    ObserveEffect,
    PlanEffect,
    RecordResponse,
    ReviseEffect,
)
from store.commands.waits import RecordWait
from store.projections import state_parts
from tests.test_store_rebuild import TID, _state_aware_step

AGENT = Actor(kind="agent", id="agent-1")
PERSON = Actor(kind="person", id="ana")


def carried_and_fresh(s: Store, tid: str) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """The state as the memo carries it to the head, the state read afresh, and whether the
    memo knew the task (a carried state, not a whole read)."""
    with s.transaction() as tx:
        known = s._states.get(tid)
        carried = known is not None and known.head == tx._head(tid)
        got = known_state(tx, tid)
        # Its JSON, made of the members kept and those encoded again, is the state's own.
        assert got.state_json == canonical_json(got.state)
        assert got.digest == digest_of(got.state)
        return got.state, task_checkpoint_state(tx, tid), carried


def _checkpointed(s: Store, tid: str) -> None:
    s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), AGENT)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.data())
def test_the_carried_state_is_the_state_read_afresh(data: hs.DataObject) -> None:
    root = Path(tempfile.mkdtemp(prefix="boris-parts-"))
    try:
        with Store.open(root / "store") as s:
            s.execute(c.CreateTask(task_id=TID, title="T", owner="o", objective="x"), AGENT)
            _checkpointed(s, TID)
            for n in range(data.draw(hs.integers(1, 25))):
                with contextlib.suppress(CommandRejected):
                    s.execute_all(_state_aware_step(data, s, n), AGENT)
                carried, fresh, _ = carried_and_fresh(s, TID)
                assert carried == fresh
                if data.draw(hs.booleans()):
                    try:
                        _checkpointed(s, TID)
                    except CommandRejected:  # a closed record takes no checkpoint
                        continue
                    head = s.head_checkpoint(TID)
                    assert head is not None and head["state"] == fresh
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _ledger_steps(tid: str, ws: Path) -> Iterator[tuple[str, list[c.Command], Actor]]:
    """Effects, approvals, waits, status and notes, each a step the state is compared after."""
    plan = PlanEffect(
        task_id=tid,
        effect_id="e1",
        target=str(ws / "out.md"),
        consequence="write out.md",
        content=c.Content(text="v1"),
        requires_approval=True,
    )
    yield "plan", [plan], AGENT
    yield "note", [c.RecordNote(task_id=tid, text="planned")], AGENT
    yield "ask", [RequestApproval(task_id=tid, effect_id="e1", approval_id="a1", policy="p")], AGENT
    yield (
        "wait",
        [
            RecordWait(
                task_id=tid,
                kind="approval",
                ref="a1",
                wait_id="w1",
                after_seconds=60,
                cancel_if="approval-rejected:a1",
            )
        ],
        AGENT,
    )
    yield "approve", [DecideApproval(task_id=tid, approval_id="a1", decision="approved")], PERSON
    yield "dispatch", [DispatchEffect(task_id=tid, effect_id="e1", executor="x")], AGENT
    yield "respond", [RecordResponse(task_id=tid, effect_id="e1", reported="timeout")], AGENT
    yield "observe", [ObserveEffect(task_id=tid, effect_id="e1")], AGENT
    yield "plan 2", [PlanEffect(**{**plan.model_dump(), "effect_id": "e2"})], AGENT
    yield "revise", [ReviseEffect(task_id=tid, effect_id="e2", reason="r", content=c.Content(text="v2"))], AGENT  # fmt: skip
    yield "ask 2", [RequestApproval(task_id=tid, effect_id="e2", approval_id="a2", policy="p")], AGENT  # fmt: skip
    yield (
        "wait 2",
        [
            RecordWait(
                task_id=tid,
                kind="approval",
                ref="a2",
                wait_id="w2",
                after_seconds=60,
                cancel_if="approval-rejected:a2",
            )
        ],
        AGENT,
    )
    yield "reject", [DecideApproval(task_id=tid, approval_id="a2", decision="rejected", note="no")], PERSON  # fmt: skip
    yield "cancel", [CancelEffect(task_id=tid, effect_id="e2", reason="rejected")], AGENT
    yield "charge", [c.ChargeBudget(task_id=tid, counter="tool_calls", amount=2.0)], AGENT
    yield "pause", [c.SetStatus(task_id=tid, status="paused")], AGENT
    yield "stop", [StopRun(task_id=tid, reason="enough")], PERSON


def test_the_carried_state_follows_the_ledger(s: Store, ws: Path) -> None:
    """On both engines, through effects, approvals and waits: after every step the carried
    state is the fresh one, and a note carries it whole."""
    tid = s.execute(
        c.CreateTask(title="t", owner="ana", objective="ship it", scope_paths=[str(ws)]), AGENT
    )
    _checkpointed(s, tid)
    for name, batch, actor in _ledger_steps(tid, ws):
        s.execute_all(batch, actor)
        carried, fresh, knew = carried_and_fresh(s, tid)
        assert knew, name  # carried over the step's events, not read whole
        assert carried == fresh, name
        if name in {"note", "respond", "ask 2"}:
            _checkpointed(s, tid)
            head = s.head_checkpoint(tid)
            assert head is not None and head["state"] == fresh, name


def test_a_note_carries_the_state_whole(s: Store, ws: Path) -> None:
    tid = s.execute(c.CreateTask(title="t", owner="ana", objective="o"), AGENT)
    _checkpointed(s, tid)
    s.execute(c.RecordNote(task_id=tid, text="a step"), AGENT)
    known = s._states.get(tid)
    assert known is not None and not known.stale
    with s.transaction() as tx:
        assert known.holds(tx._head(tid), tx.now)


def test_parts_read_again_unchanged_keep_the_states_json(s: Store, ws: Path) -> None:
    """On both engines: an effect revised before any approval may change its effects and
    waits, and here changes neither: the next checkpoint reads them again, finds them as
    they were, and writes the state's JSON and digest as they were (not made again)."""
    tid = s.execute(
        c.CreateTask(title="t", owner="ana", objective="ship it", scope_paths=[str(ws)]), AGENT
    )
    s.execute(
        PlanEffect(task_id=tid, effect_id="e1", target=str(ws / "out.md"),
                   consequence="write out.md", content=c.Content(text="v1")),
        AGENT,
    )  # fmt: skip
    _checkpointed(s, tid)
    before = s._states.get(tid)
    assert before is not None
    s.execute(ReviseEffect(task_id=tid, effect_id="e1", reason="r", content=c.Content(text="v2")), AGENT)  # fmt: skip
    with s.transaction() as tx:
        got = known_state(tx, tid)
        assert got.head == tx._head(tid) and got.head != before.head
        assert got.state_json is before.state_json and got.digest == before.digest
        assert got.state == task_checkpoint_state(tx, tid)
    _checkpointed(s, tid)
    head = s.head_checkpoint(tid)
    assert head is not None and head["state_digest"] == before.digest


def test_a_charge_and_a_new_version_are_carried_from_the_event(s: Store, ws: Path) -> None:
    """On both engines: a budget's charge and an artifact's new version change the parts they
    write from the event's own values (nothing read again but the phases, which a new
    version may invalidate); a version that makes a satisfied criterion stale has the
    criteria read again. The carried state is the fresh one each time."""
    tid = s.execute(
        c.CreateTask(title="t", owner="ana", objective="o", scope_paths=[str(ws)]), AGENT
    )
    s.execute_all(
        [
            c.SetBudget(task_id=tid, counter="model_calls", limit=50),
            c.AddCriterion(task_id=tid, criterion_id="C1", text="right"),
            c.RecordArtifact(task_id=tid, name="draft.md", content=c.Content(text="v1")),
        ],
        AGENT,
    )
    _checkpointed(s, tid)
    steps: list[tuple[list[c.Command], frozenset[str]]] = [
        ([c.ChargeBudget(task_id=tid, counter="model_calls", amount=2.5)], frozenset()),
        (
            [c.RecordArtifact(task_id=tid, name="draft.md", content=c.Content(text="v2"))],
            frozenset({"pending_phases"}),
        ),
        (
            [c.RecordArtifact(task_id=tid, name="notes.md", content=c.Content(text="n1"))],
            frozenset({"pending_phases"}),
        ),
    ]
    for batch, read_again in steps:
        s.execute_all(batch, AGENT)
        known = s._states.get(tid)
        assert known is not None and known.stale - {"pending_work"} == read_again, batch
        carried, fresh, knew = carried_and_fresh(s, tid)
        assert knew and carried == fresh, batch
    # A satisfied criterion goes stale with the next version: the criteria are read again.
    (draft,) = [a for a in s.task(tid).artifacts if a.name == "draft.md"]
    s.execute_all(
        [
            c.AttachEvidence(
                task_id=tid, evidence_id="ev1", criterion_id="C1", kind="review",
                content=c.Content(text="checked"),
            ),
            c.JudgeCriterion(
                task_id=tid, criterion_id="C1", status="satisfied",
                artifact_id=draft.artifact_id, evidence_ids=["ev1"],
            ),
        ],
        AGENT,
    )  # fmt: skip
    _checkpointed(s, tid)
    s.execute(c.RecordArtifact(task_id=tid, name="draft.md", content=c.Content(text="v3")), AGENT)
    known = s._states.get(tid)
    assert known is not None and "criteria" in known.stale
    carried, fresh, _ = carried_and_fresh(s, tid)
    assert carried == fresh
    assert [x["status"] for x in fresh["criteria"]] == ["stale"]


# --- what each projection writes ---------------------------------------------------------------

_WRITE = re.compile(r"^\s*(INSERT(?: OR \w+)? INTO|UPDATE|DELETE FROM)\s+\"?(\w+)\"?", re.I)


def _tables(sql: str) -> set[str]:
    m = _WRITE.match(sql)
    if m is None:
        return set()
    table = m.group(2)
    if table == "tasks" and m.group(1).upper() == "UPDATE":
        sets = sql.split(" SET ", 1)[1].split(" WHERE ", 1)[0]
        return {"tasks.status" if re.search(r"\bstatus\s*=", sets) else "tasks"}
    return {table}


def test_every_projection_writes_only_what_it_declares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statements each event's projection runs (SQLite's trace), against `WRITES`; the
    events of the scenarios above and of the rebuild test's steps."""
    seen: dict[str, set[str]] = {}
    current: list[str] = []
    apply = projections.apply

    def traced_apply(conn: Any, event: Any, heads_stored: Any = None) -> Any:
        current.append(event.type)
        try:
            return apply(conn, event, heads_stored)
        finally:
            current.pop()

    monkeypatch.setattr(projections, "apply", traced_apply)
    ws = tmp_path / "ws"
    ws.mkdir()
    with Store.open(tmp_path / "store") as s:
        with s.transaction() as tx:
            raw = tx.conn.connection.driver_connection
        assert isinstance(raw, sqlite3.Connection)

        def trace(sql: str) -> None:
            if current:
                seen.setdefault(current[-1], set()).update(_tables(sql))

        raw.set_trace_callback(trace)
        tid = s.execute(
            c.CreateTask(title="t", owner="ana", objective="o", scope_paths=[str(ws)]), AGENT
        )
        _checkpointed(s, tid)
        for _, batch, actor in _ledger_steps(tid, ws):
            s.execute_all(batch, actor)
        s.execute(c.CreateTask(task_id=TID, title="T", owner="o", objective="x"), AGENT)
        s.execute_all(
            [
                c.AddCriterion(task_id=TID, criterion_id="C1", text="c"),
                c.ChangeCriterion(task_id=TID, criterion_id="C1", text="d", reason="r"),
                c.RecordArtifact(task_id=TID, artifact_id="a1", name="a1", content=c.Content(text="1")),
                c.AddPhase(task_id=TID, phase_id="p1", name="p", inputs=[{"kind": "artifact", "ref": "a1"}]),
                c.CompletePhase(task_id=TID, phase_id="p1", ok=True),
                c.AttachEvidence(task_id=TID, evidence_id="ev", criterion_id="C1", kind="review", content=c.Content(text="e")),
                c.JudgeCriterion(task_id=TID, criterion_id="C1", status="satisfied", artifact_id="a1", evidence_ids=["ev"]),
                c.RecordArtifact(task_id=TID, artifact_id="a1", name="a1", content=c.Content(text="2")),
                c.SetBudget(task_id=TID, counter="model_calls", limit=5.0),
                c.ReserveBudget(task_id=TID, counter="model_calls", amount=1.0),
                c.ReleaseBudget(task_id=TID, counter="model_calls", amount=1.0),
                c.AmendObjective(task_id=TID, text="y", reason="r"),
            ],
            AGENT,
        )  # fmt: skip
        raw.set_trace_callback(None)
    assert len(seen) >= 25, sorted(seen)
    for type_name, tables in seen.items():
        if type_name == "task.created":
            continue
        # Every event moves the task's head: its row, but not its status.
        declared = {*state_parts.WRITES.get(type_name, ()), "tasks"}
        assert tables <= declared, (type_name, tables - declared)
        read = {t for t in tables if t in state_parts.READ_FROM}
        parts = frozenset().union(*(state_parts.READ_FROM[t] for t in read))
        assert parts <= state_parts.stale_parts(type_name), type_name


def test_an_undeclared_projection_marks_every_part(monkeypatch: pytest.MonkeyPatch) -> None:
    from store.projections import core

    monkeypatch.setitem(core._APPLY, "made.up", lambda conn, event: None)
    state_parts.stale_parts.cache_clear()
    try:
        assert state_parts.stale_parts("made.up") == state_parts.ALL
        assert state_parts.stale_parts("note.recorded") == frozenset()
        assert state_parts.stale_parts("checkpoint.written") == frozenset()
    finally:
        state_parts.stale_parts.cache_clear()
