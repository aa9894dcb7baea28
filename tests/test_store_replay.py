"""Rebuild from the log gives exactly the incremental projections; blobs are verified."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import Actor, BlobProblem, CommandRejected, Store
from store import commands as c

AGENT = Actor(kind="agent", id="a")
TID = "t"

step = st.one_of(
    st.builds(lambda s: c.AddCriterion(task_id=TID, text=s), st.text(min_size=1, max_size=5)),
    st.builds(
        lambda a, s: c.RecordArtifact(
            task_id=TID, artifact_id=a, name=a, content=c.Content(text=s)
        ),
        st.sampled_from(["g", "h"]),
        st.text(max_size=5),
    ),
    st.builds(
        lambda n: c.AttachEvidence(
            task_id=TID,
            criterion_id=f"C{n}",
            evidence_id=f"e{n}",
            kind="review",
            content=c.Content(text="ok"),
        ),
        st.integers(1, 3),
    ),
    st.builds(
        lambda n, a: c.JudgeCriterion(
            task_id=TID,
            criterion_id=f"C{n}",
            status="satisfied",
            artifact_id=a,
            evidence_ids=[f"e{n}"],
        ),
        st.integers(1, 3),
        st.sampled_from(["g", "h"]),
    ),
    st.builds(lambda x: c.SetBudget(task_id=TID, counter="tool_calls", limit=x), st.integers(0, 5)),
    st.builds(
        lambda x: c.ChargeBudget(task_id=TID, counter="tool_calls", amount=x), st.integers(1, 3)
    ),
    st.builds(
        lambda p, a: c.AddPhase(
            task_id=TID, phase_id=p, name=p, inputs=[{"kind": "artifact", "ref": a}]
        ),
        st.sampled_from(["p1", "p2"]),
        st.sampled_from(["g", "h"]),
    ),
    st.builds(lambda p: c.CompletePhase(task_id=TID, phase_id=p), st.sampled_from(["p1", "p2"])),
    st.builds(
        lambda s: c.SetStatus(task_id=TID, status=s),
        st.sampled_from(["paused", "running", "completed"]),
    ),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=15))
def test_rebuild_equals_incremental(steps: list[c.Command]) -> None:
    with tempfile.TemporaryDirectory() as d, Store.open(Path(d)) as store:
        store.execute(c.CreateTask(task_id=TID, title="t", owner="o", objective="x"), AGENT)
        for s in steps:
            with contextlib.suppress(CommandRejected):
                store.execute(s, AGENT)
        before = store.projection_dump(TID)
        store.rebuild(TID)
        assert store.projection_dump(TID) == before


def test_corrupt_blob_is_never_returned(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        digest, _ = store.blobs.put_bytes(b"evidence")
        assert store.blobs.read(digest) == b"evidence"
        store.blobs.path_of(digest).write_bytes(b"tampered")
        with pytest.raises(BlobProblem, match="corrupt") as err:
            store.blobs.read(digest, owner="task t")
        assert digest in str(err.value)
