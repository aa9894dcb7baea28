"""Folding a task's events again from scratch gives exactly the incremental projections."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from store import Actor, CommandRejected, Store
from store import commands as c

AGENT = Actor(kind="agent", id="agent-1")
TID = "task-prop"

crit_ids = hs.sampled_from(["C1", "C2", "C3"])
art_ids = hs.sampled_from(["a1", "a2"])
phase_ids = hs.sampled_from(["p1", "p2", "p3"])
counters = hs.sampled_from(["model_calls", "tool_calls", "artifact_bytes"])
ev_ids = hs.sampled_from(["e1", "e2", "e3", "e4"])
# A text the record may hold: no NUL (store.limits refuses it). Content, which becomes a
# blob, may hold any character and keeps hs.text.
record_text = hs.text(
    alphabet=hs.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=8
)

step = hs.one_of(
    hs.builds(
        lambda cid, text: c.AddCriterion(task_id=TID, criterion_id=cid, text=text),
        crit_ids,
        record_text,
    ),
    hs.builds(
        lambda aid, text: c.RecordArtifact(
            task_id=TID, artifact_id=aid, name=aid, content=c.Content(text=text)
        ),
        art_ids,
        hs.text(max_size=12),
    ),
    hs.builds(
        lambda eid, cid, text: c.AttachEvidence(
            task_id=TID,
            evidence_id=eid,
            criterion_id=cid,
            kind="review",
            content=c.Content(text=text),
        ),
        ev_ids,
        crit_ids,
        hs.text(max_size=8),
    ),
    hs.builds(
        lambda cid, status, aid, eids, note: c.JudgeCriterion(
            task_id=TID,
            criterion_id=cid,
            status=status,
            artifact_id=aid,
            evidence_ids=eids,
            note=note,
        ),
        crit_ids,
        hs.sampled_from(["satisfied", "failed", "waived", "unverified"]),
        hs.none() | art_ids,
        hs.lists(ev_ids, max_size=2, unique=True),
        hs.sampled_from(["", "because"]),
    ),
    hs.builds(
        lambda k, amt: c.ChargeBudget(task_id=TID, counter=k, amount=amt),
        counters,
        hs.integers(1, 5).map(float),
    ),
    hs.builds(
        lambda k, lim: c.SetBudget(task_id=TID, counter=k, limit=lim),
        counters,
        hs.none() | hs.integers(0, 10).map(float),
    ),
    hs.builds(
        lambda pid, deps: c.AddPhase(
            task_id=TID, phase_id=pid, name=pid, inputs=[{"kind": k, "ref": r} for k, r in deps]
        ),
        phase_ids,
        hs.lists(
            hs.tuples(hs.just("artifact"), art_ids) | hs.tuples(hs.just("phase"), phase_ids),
            max_size=2,
            unique=True,
        ),
    ),
    hs.builds(
        lambda pid, ok: c.CompletePhase(task_id=TID, phase_id=pid, ok=ok), phase_ids, hs.booleans()
    ),
    hs.builds(
        lambda status: c.SetStatus(task_id=TID, status=status),
        hs.sampled_from(["running", "paused", "blocked", "completed"]),
    ),
    hs.builds(
        lambda text: c.AmendObjective(task_id=TID, text=text, reason="r"),
        record_text,
    ),
)


def _state_aware_step(data: hs.DataObject, s: Store, n: int) -> list[c.Command]:
    """One command (or a small batch) whose ids are mostly drawn from what already exists."""
    state = s.task(TID)
    crits = [x["criterion_id"] for x in state["criteria"]] or ["C1"]
    arts = [a["artifact_id"] for a in state["artifacts"]] or ["a1"]
    phases = [p["phase_id"] for p in state["phases"]] or ["p1"]
    kind = data.draw(hs.sampled_from(["random", "satisfy", "complete_phase", "add_phase"]))
    if kind == "satisfy":
        cid = data.draw(hs.sampled_from(crits))
        eid = f"ev{n}"
        return [
            c.AttachEvidence(
                task_id=TID,
                evidence_id=eid,
                criterion_id=cid,
                kind="review",
                content=c.Content(text=f"evidence {n}"),
            ),
            c.JudgeCriterion(
                task_id=TID,
                criterion_id=cid,
                status="satisfied",
                artifact_id=data.draw(hs.sampled_from(arts)),
                evidence_ids=[eid],
            ),
        ]
    if kind == "complete_phase":
        return [
            c.CompletePhase(
                task_id=TID,
                phase_id=data.draw(hs.sampled_from(phases)),
                ok=data.draw(hs.booleans()),
            )
        ]
    if kind == "add_phase":
        deps = data.draw(
            hs.lists(
                hs.tuples(hs.just("artifact"), hs.sampled_from(arts))
                | hs.tuples(hs.just("phase"), hs.sampled_from(phases)),
                max_size=2,
                unique=True,
            )
        )
        return [
            c.AddPhase(
                task_id=TID,
                phase_id=f"p{n}",
                name=f"phase {n}",
                inputs=[{"kind": k, "ref": r} for k, r in deps],
            )
        ]
    return [data.draw(step)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.data())
def test_rebuild_equals_incremental(data: hs.DataObject) -> None:
    root = Path(tempfile.mkdtemp(prefix="boris-prop-"))
    try:
        with Store.open(root / "store") as s:
            s.execute(c.CreateTask(task_id=TID, title="T", owner="o", objective="x"), AGENT)
            n_steps = data.draw(hs.integers(1, 30))
            for n in range(n_steps):
                batch = _state_aware_step(data, s, n)
                before = s.data_version()
                try:
                    s.execute_all(batch, AGENT)
                except CommandRejected:
                    assert s.data_version() == before
            incremental = s.projection_dump(TID)
            state_before = s.task(TID)
            s.rebuild(TID)
            assert s.projection_dump(TID) == incremental
            state_after = s.task(TID)
            for key in (
                "status",
                "criteria",
                "artifacts",
                "budgets",
                "phases",
                "last_seq",
                "head_hash",
                "objective_revisions",
            ):
                assert state_after[key] == state_before[key], key
            assert state_after["last_seq"] == len(s.events(TID))
    finally:
        shutil.rmtree(root, ignore_errors=True)
