"""Narratives and summaries: accounts of a task, never the task's truth.

An agent's narrative (recorded by `commands.narrative.RecordNarrative`) is checked against
the record: where they disagree, the discrepancy is reported and the record wins. A summary
is generated from the record alone, carries its provenance (checkpoint and event seq), and
recording it makes a new artifact version; nothing in the record is overwritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from .. import commands as c
from ..errors import StoreError
from ..model import Actor
from ..reads.actors import ActorRef
from ..reads.read_model import ReadModel
from ..reads.state_models import Criterion, TaskState
from ..rules import ApprovalState, CriterionState
from ..store import Store


class NarrativeClaim(ReadModel):
    """What a narrative says of one criterion (store.events.NarrativeClaim)."""

    criterion_id: str
    status: CriterionState
    text: str = ""


class Discrepancy(ReadModel):
    """Where a narrative's claim and the record disagree: the record wins."""

    criterion_id: str
    claimed: CriterionState = Field(description="what the narrative says the criterion is")
    record: CriterionState | None = Field(
        description="what the record says (null: the record has no such criterion)"
    )
    message: str


class Narrative(ReadModel):
    """An agent's account of its work, kept apart from the record, with where it disagrees
    with the current record (`boris narrative TASK --json`, the task's Narratives pane)."""

    id: str
    seq: int
    at: str
    actor: ActorRef
    digest: str
    text: str = Field(description="the narrative's text (empty when its blob cannot be read)")
    blob_problem: str | None = Field(description="why its text cannot be read, if it cannot")
    claims: list[NarrativeClaim]
    discrepancies: list[Discrepancy]


def narratives(store: Store, task_id: str) -> list[Narrative]:
    """Every narrative of the task with its discrepancies against the current record."""
    criteria = {cr.criterion_id: cr for cr in store.task(task_id).criteria}
    out = []
    for e in store.events(task_id, types=["narrative.recorded"]):
        p = e.payload
        problem: str | None = None
        try:
            text = store.blobs.read(p["digest"], owner=f"narrative {p['narrative_id']}").decode(
                "utf-8", "replace"
            )
        except StoreError as exc:  # a missing blob is named, not fatal to the list
            text, problem = "", str(exc)
        claims = [NarrativeClaim.model_validate(cl) for cl in p["claims"]]
        out.append(
            Narrative(
                id=p["narrative_id"],
                seq=e.seq,
                at=e.at,
                actor=e.actor,
                digest=p["digest"],
                text=text,
                blob_problem=problem,
                claims=claims,
                discrepancies=discrepancies(claims, criteria),
            )
        )
    return out


def discrepancies(
    claims: Sequence[NarrativeClaim], criteria: dict[str, Criterion]
) -> list[Discrepancy]:
    out = []
    for cl in claims:
        cr = criteria.get(cl.criterion_id)
        if cr is None:
            out.append(
                Discrepancy(
                    criterion_id=cl.criterion_id,
                    claimed=cl.status,
                    record=None,
                    message=f"the narrative claims {cl.criterion_id} is {cl.status}; "
                    "the record has no such criterion",
                )
            )
        elif cr.status != cl.status:
            against = (
                f" (checked against {cr.artifact_id} v{cr.artifact_version})"
                if cr.artifact_id
                else ""
            )
            out.append(
                Discrepancy(
                    criterion_id=cl.criterion_id,
                    claimed=cl.status,
                    record=cr.status,
                    message=f"the narrative claims {cl.criterion_id} is {cl.status}; "
                    f"the record says {cr.status}{against}. The record wins.",
                )
            )
    return out


def summary_markdown(store: Store, task_id: str) -> str:
    """A human account generated from the record alone, with its provenance."""
    s = store.task(task_id)
    lines = [f"# {s.title}", ""]
    lines += _provenance(s)
    objective = s.objective
    lines += ["", f"Status: {s.status}. Objective (rev {objective.rev if objective else 0}):"]
    lines += [objective.text if objective else "", "", "## Artifacts (current identities)"]
    for a in s.artifacts:
        cur = a.current
        mark = f" — blob {cur.blob_problem}" if cur and cur.blob_problem else ""
        lines.append(
            f"- {a.artifact_id} v{a.current_version}: {cur.digest if cur else '?'}, "
            f"{cur.size if cur else '?'} bytes{mark}"
        )
    lines += ["", "## Criteria"]
    for cr in s.criteria:
        against = f" against {cr.artifact_id} v{cr.artifact_version}" if cr.artifact_id else ""
        lines.append(f"- {cr.criterion_id}: {cr.status}{against} — {cr.text}")
    lines += ["", "## Unresolved"]
    lines += [
        f"- effect {e.effect_id} ({e.kind} → {e.target}): {e.stage}, {e.outcome or 'no outcome'}"
        for e in s.effects
        if e.unresolved
    ]
    lines += [
        f"- approval {a.approval_id}: {a.state}, expires {a.expires_at}"
        for a in s.approvals
        if a.state == ApprovalState.PENDING
    ]
    lines += [f"- {p.kind} {p.id}: blob {p.problem}" for p in s.problems]
    if len(lines) and lines[-1] == "## Unresolved":
        lines.append("- nothing")
    found = [d for n in narratives(store, task_id) for d in n.discrepancies]
    if found:
        lines += ["", "## Where the agent's narrative disagrees with the record"]
        lines += [f"- {d.message}" for d in found]
    return "\n".join(lines) + "\n"


def _provenance(s: TaskState) -> list[str]:
    """Where the summary comes from: the event seq, the head hash, the head checkpoint."""
    lineage = s.checkpoints
    head = max(
        (x for x in lineage.checkpoints if x.checkpoint_id in lineage.heads),
        key=lambda x: (x.seq, x.at),
        default=None,
    )
    lines = [
        f"Generated from the record of task {s.id} at event seq {s.last_seq} "
        f"(head hash {s.head_hash[:16]}…)"
        + (f", head checkpoint {head.checkpoint_id} ({head.reason})." if head else ".")
    ]
    if len(lineage.heads) > 1:
        lines.append(f"The checkpoint lineage is forked: heads {', '.join(lineage.heads)}.")
    return lines


def record_summary(
    store: Store, task_id: str, actor: Actor | None = None, *, lease_token: int | None = None
) -> dict[str, Any]:
    """Generate the summary and keep it as a new version of the task's `summary` artifact:
    by `actor`, or by default as the store's own write (`system:boris`). An agent's write
    carries its `lease_token`, fenced by the task's lease as every other write is."""
    text = summary_markdown(store, task_id)
    command = c.RecordArtifact(
        task_id=task_id,
        artifact_id="summary",
        name="summary",
        role="other",
        content=c.Content(text=text, media_type="text/markdown"),
        note="generated from the record",
        lease_token=lease_token,
    )
    result: dict[str, Any] = (
        store.execute_as_store(command) if actor is None else store.execute(command, actor)
    )
    return result
