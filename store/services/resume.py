"""The resume brief: what the next actor may do, and the evidence for it, from the record alone.

Built from the current head checkpoint, the events after it, and a fresh observation of the
files the task depends on (artifact files and effect targets, hashed now). It never reads a
narrative and never invents a version: a missing thing is a blocker that names it. An
approval is history unless it is valid at this moment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import rules
from ..model import Scope
from ..store import Store
from .brief.criteria import (
    blob_problems,
    completion,
    criterion_brief,
    observed_artifacts,
    retired_content,
)
from .brief.effects import approval_briefs, effect_brief, sent_back, tool_drift
from .brief.models import (
    BriefAction,
    CheckpointBrief,
    EffectBrief,
    EventsAfter,
    EvidenceRef,
    LeaseBrief,
    ObjectiveBrief,
    ResumeBrief,
)
from .brief.said import Run, Said
from .brief.standing import (
    due_waits,
    head_checkpoint,
    late_changes,
    lease_brief,
    lease_words,
    lineage_brief,
    run_status,
    taken_over,
    wait_brief,
)

if TYPE_CHECKING:
    from ..reads.checkpoints import Checkpoint
    from ..reads.state_models import TaskState


def resume_brief(store: Store, task_id: str) -> ResumeBrief:
    """The brief, part by part: the files the task depends on observed now, the content that
    cannot be read or was retired, each criterion, approval and effect, the run's status,
    tool drift, completion, due waits, late changes, the lineage and who holds the task.
    The parts are asked in this order, which is the order their blockers and actions read."""
    state = store.task(task_id)
    scope = Scope.model_validate(state.scope)
    head = head_checkpoint(state.checkpoints)
    after = store.event_type_counts(task_id, after_seq=head.seq if head else 0)
    effects = {e.effect_id: e for e in state.effects}
    status_now = str(state.status)
    ctx = Run(task_id, status_now, status_now in rules.CLOSED, state.budgets)
    said = Said()
    artifacts = observed_artifacts(state.artifacts, scope, said)
    blob_problems(state.problems, said)
    degraded = retired_content(state.retired, said)
    version_seqs = {
        a.artifact_id: [(v.version, v.seq) for v in a.versions] for a in state.artifacts
    }
    criteria = [criterion_brief(ctx, cr, artifacts, said, version_seqs) for cr in state.criteria]
    approvals = approval_briefs(state.approvals, effects, said)
    sent_back(task_id, state.approvals, effects, said)
    run_status(ctx, said)
    effect_briefs = [effect_brief(ctx, e, scope, approvals, said) for e in state.effects]
    tool_drift(store, task_id, effect_briefs, said)
    completion(ctx, state, said)
    re_evaluate = due_waits(task_id, state.waits)
    late = late_changes(task_id, state.late, said)
    lineage_brief(task_id, state.checkpoints, head, said)
    lease = lease_brief(state.lease)
    taken_over(lease, said)
    return ResumeBrief(
        **_standing(task_id, state, lease, head, after),
        artifacts=list(artifacts.values()),
        criteria=criteria,
        # Each effect's entry is complete once tool drift is weighed: validated only then.
        effects=[EffectBrief.model_validate(e) for e in effect_briefs],
        approvals=approvals,
        next_actions=_actions(said.actions),
        blockers=said.blockers,
        forbidden=_actions(said.forbidden),
        waits=[wait_brief(w) for w in state.waits if w.state == rules.WaitState.OPEN],
        re_evaluate=_actions(re_evaluate),
        degraded=degraded,
        late_changes=late,
        observed_at=state.now,
    )


def _actions(items: list[dict[str, Any]]) -> list[BriefAction]:
    """What the parts said (built as JSON, each with the fields its case names), typed."""
    return [BriefAction.model_validate(x) for x in items]


def _standing(
    task_id: str,
    state: TaskState,
    lease: LeaseBrief | None,
    head: Checkpoint | None,
    after: dict[str, int],
) -> dict[str, Any]:
    """Where the task stands: its title and status, who holds it, its objective, the
    checkpoint the brief starts from and the events written after it."""
    obj = state.objective
    return {
        "task_id": task_id,
        "title": state.title,
        "status": state.status,
        "lease": lease,
        "objective": ObjectiveBrief(rev=obj.rev, text=obj.text) if obj else None,
        "checkpoint": (
            CheckpointBrief(
                id=head.checkpoint_id,
                reason=head.reason,
                seq=head.seq,
                chain_hash=head.chain_hash,
                note=head.note,
            )
            if head
            else None
        ),
        "events_after_checkpoint": EventsAfter(
            count=sum(after.values()),
            types=after,
            last_seq=state.last_seq,
            head_hash=state.head_hash,
        ),
    }


def brief_markdown(b: ResumeBrief) -> str:
    """The brief in words: where the task stands, then what it says and the record's parts."""
    lines = [f"# Resume brief: {b.title} ({b.task_id})", ""]
    lines.append(f"Status: **{b.status}** — observed at {b.observed_at}")
    lines.append(lease_words(b.lease))
    if b.objective:
        lines.append(f"Objective (rev {b.objective.rev}): {b.objective.text}")
    ck = b.checkpoint
    after = b.events_after_checkpoint
    if ck:
        lines.append(
            f"From checkpoint {ck.id} ({ck.reason}, seq {ck.seq}), "
            f"then {after.count} later event(s) up to seq {after.last_seq}."
        )
    lines += _said(b)
    if b.late_changes:
        lc = b.late_changes
        lines += ["", f"## Changed after completion ({lc.count} since {lc.since_at})"]
        lines += [f"- #{f.seq} {f.what} (by {f.by})" for f in lc.facts]
    if b.degraded:
        # Retired optional content (brief.criteria.retired_content): said, never blocking.
        lines += ["", "## Degraded (retired optional content)"]
        lines += [f"- {x.message}" for x in b.degraded]
    lines += ["", "## Effects"]
    lines += [f"- {e.id} {e.kind} → {e.target}: {e.meaning}" for e in b.effects] or ["- none"]
    lines += ["", "## Waits (database clock)"]
    lines += [
        f"- {w.id} waiting for {w.waiting_for}: "
        + ("due since " if w.due else "consider at ")
        + w.not_before
        + (f"; {w.condition}" if w.condition else "")
        for w in b.waits
    ] or ["- none"]
    lines += ["", "## Approvals (history; only `authorizes now` counts)"]
    lines += [
        f"- {a.id} {a.state}" + (" — authorizes now" if a.authorizes_now else "")
        for a in b.approvals
    ] or ["- none"]
    return "\n".join(lines) + "\n"


def _said(b: ResumeBrief) -> list[str]:
    """What the brief says: next actions, blockers, forbidden actions and due waits."""
    sections: list[tuple[str, list[str]]] = [
        ("Next actions", [_who(x) + x.action + _refs(x.evidence) for x in b.next_actions]),
        ("Blockers", [str(x["message"]) for x in b.blockers]),
        ("Forbidden", [f"{x.action}: {x.reason}" for x in b.forbidden]),
        # Due waits: to consider again, never an instruction (store.services.resume).
        ("Re-evaluate (due waits)", [x.action for x in b.re_evaluate]),
    ]
    lines: list[str] = []
    for title, said in sections:
        lines += ["", f"## {title}"]
        lines += [f"- {x}" for x in said] or ["- none"]
    return lines


def _who(item: BriefAction) -> str:
    return "" if item.actor == rules.ActorKind.AGENT else f"({item.actor}) "


def _refs(evidence: list[EvidenceRef] | None) -> str:
    if not evidence:
        return ""
    return " (evidence: " + ", ".join(f"{x.kind} {x.id} {x.digest}" for x in evidence) + ")"
