"""The brief's criteria: the files the task depends on, observed now; content that cannot be
read or was retired; each criterion by the case it is in; and whether the task may be
completed. A criterion counts as the rules say (`rules.criterion_state`, retired evidence
never counting), so the brief and the completion command cannot disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import rules
from ...model import Scope
from ...status import allowed as st_allowed
from .models import ArtifactBrief, CriterionBrief, RetiredContent
from .said import Run, Said, cmd, item, observe

if TYPE_CHECKING:
    from ...reads.retention import RetiredItem
    from ...reads.state_models import Artifact, Criterion, Problem, TaskState


def observed_artifacts(rows: list[Artifact], scope: Scope, said: Said) -> dict[str, ArtifactBrief]:
    """Each artifact's current version, its file observed now (hashed fresh): a file that is
    missing or unreadable blocks, one changed on disk makes what was checked against it stale."""
    artifacts: dict[str, ArtifactBrief] = {}
    for a in rows:
        cur = a.current
        entry: dict[str, Any] = {
            "artifact_id": a.artifact_id,
            "name": a.name,
            "version": a.current_version,
            "digest": cur.digest if cur else None,
            "blob_problem": cur.blob_problem if cur else "no version",
        }
        if cur and cur.path:
            obs = observe(scope, cur.path)
            entry["observed"] = obs
            entry["changed_on_disk"] = obs.readable and obs.digest != cur.digest
            if not obs.readable or not obs.exists:
                said.blockers.append(
                    {
                        "kind": "artifact_file_missing",
                        "artifact_id": a.artifact_id,
                        "version": a.current_version,
                        "path": cur.path,
                        "message": f"the file of {a.artifact_id} v{a.current_version} "
                        f"({cur.path}) is missing or unreadable: "
                        f"{obs.problem if obs.problem is not None else 'missing'}",
                    }
                )
        # Only the fields that apply (a file it has, observed): the JSON leaves out the rest.
        artifacts[a.artifact_id] = ArtifactBrief.model_validate(entry)
    return artifacts


def blob_problems(problems: list[Problem], said: Said) -> None:
    """Content the record names that cannot be read now: never evidence, never resumed from."""
    for p in problems:
        said.blockers.append(
            {
                "kind": f"{p.kind}_blob_{p.problem}",
                "id": p.id,
                "digest": p.digest,
                "message": f"{p.kind} {p.id}: blob {p.digest} is {p.problem}; "
                "it cannot be used as evidence or resumed from",
            }
        )


def retired_content(retired: list[RetiredItem], said: Said) -> list[RetiredContent]:
    """Retired content (store.reads.retention), a typed absence: what something still rests
    on blocks (the brief never infers it from a summary), optional content only degrades.
    Returns the degraded ones; the blocking ones join the blockers."""
    degraded: list[RetiredContent] = []
    for r in retired:
        entry = {
            "kind": "retired_required" if r.weight == "blocking" else "retired_optional",
            "item_kind": r.kind,
            "id": r.id,
            "digest": r.digest,
            "size": r.size,
            "media_type": r.media_type,
            "retired_at": r.retired_at,
            "required_by": r.required_by,
        }
        what = f"{r.kind.replace('_', ' ')} {r.id} was {r.words}"
        if r.weight == "blocking":
            entry["message"] = (
                f"{what}, and {'; '.join(r.required_by)}: it is not there to resume from; "
                "retrieve it again under current policy, or a person decides without it"
            )
            said.blockers.append(entry)
        else:
            entry["message"] = f"{what}; nothing rests on it, so resuming goes on without it"
            degraded.append(RetiredContent.model_validate(entry))
    return degraded


def criterion_brief(
    ctx: Run,
    cr: Criterion,
    artifacts: dict[str, ArtifactBrief],
    said: Said,
    version_seqs: dict[str, list[tuple[int, int]]] | None = None,
) -> CriterionBrief:
    """A criterion as it counts now, and what it leaves to do: evidence to attach again, a
    stale judgement to re-check, an unverified or failed one to verify. Waiving it is never
    an agent's. `version_seqs`: per artifact, (version, the seq it was recorded at), to date
    the evidence (a re-check cites only evidence made on the current version, as the judge
    command asks unless someone says why older evidence still holds)."""
    art = artifacts.get(cr.artifact_id or "")
    status, reason = _criterion_now(cr, art)
    evidence = [
        {"kind": "evidence", "id": e.evidence_id, "digest": e.digest}
        for e in cr.evidence
        if not e.blob_problem
    ]
    target = (
        {
            "kind": "artifact_version",
            "id": f"{art.artifact_id} v{art.version}",
            "digest": art.digest,
        }
        if art
        else None
    )
    if not rules.criterion_done(status):
        said.forbidden.append(_waiver_forbidden(ctx.task_id, cr.criterion_id))
    if status == rules.CriterionState.EVIDENCE_MISSING:
        _evidence_missing(ctx, cr, reason, target, evidence, said)
    elif status == "stale":
        current = _current_evidence(cr, art, version_seqs or {})
        _stale_criterion(ctx, cr, reason, art, target, evidence, current, said)
    elif status in {"unverified", "failed"}:
        _criterion_to_verify(ctx, cr, status, target, evidence, said)
    return CriterionBrief(id=cr.criterion_id, status=rules.CriterionState(status), reason=reason)


def _criterion_now(cr: Criterion, art: ArtifactBrief | None) -> tuple[str, str]:
    """What the criterion counts as now, and why: its evidence missing, or stale because
    the file it was checked against changed on disk or a newer version was recorded."""
    status: str = cr.state
    reason = ""
    if status == rules.CriterionState.EVIDENCE_MISSING:
        reason = "; ".join(
            f"evidence {e.evidence_id} (blob {e.digest}) is {e.blob_problem}"
            for e in cr.evidence
            if e.blob_problem
        )
    if status == "satisfied" and art is not None and art.changed_on_disk:
        status = "stale"
        reason = (
            f"the file of {cr.artifact_id} changed on disk since v{cr.artifact_version} was checked"
        )
    if cr.status == "stale":
        reason = (
            f"satisfied against {cr.artifact_id} v{cr.artifact_version}; "
            f"the current version is v{art.version if art else '?'}"
        )
    return status, reason


def _attach(task_id: str, criterion_id: str) -> dict[str, Any]:
    return item(
        f"attach evidence for criterion {criterion_id}",
        rules.ActorKind.AGENT,
        cmd("attach_evidence", task_id, criterion_id=criterion_id, kind="other"),
        ("content",),
    )


def _waiver_forbidden(task_id: str, criterion_id: str) -> dict[str, Any]:
    return item(
        f"waive criterion {criterion_id} as an agent",
        rules.ActorKind.AGENT,
        cmd(
            "judge_criterion",
            task_id,
            criterion_id=criterion_id,
            status="waived",
            note="not needed",
        ),
        reason="a waiver is a person's: ask one",
    )


def _evidence_missing(
    ctx: Run,
    cr: Criterion,
    reason: str,
    target: dict[str, Any] | None,
    evidence: list[dict[str, Any]],
    said: Said,
) -> None:
    """Judged satisfied on evidence that cannot be read now: it does not count until
    evidence is attached again."""
    said.blockers.append(
        {
            "kind": "evidence_missing",
            "criterion_id": cr.criterion_id,
            "evidence": [
                {
                    "id": e.evidence_id,
                    "digest": e.digest,
                    "problem": e.blob_problem,
                }
                for e in cr.evidence
                if e.blob_problem
            ],
            "message": f"criterion {cr.criterion_id} was judged satisfied but its "
            f"evidence is missing: {reason}; it does not count until evidence is "
            "attached again",
        }
    )
    if not ctx.closed:
        attach = _attach(ctx.task_id, cr.criterion_id)
        said.actions.append({**attach, "evidence": [x for x in (target,) if x] + evidence})


def _current_evidence(
    cr: Criterion, art: ArtifactBrief | None, version_seqs: dict[str, list[tuple[int, int]]]
) -> set[str]:
    """The criterion's evidence that speaks for the artifact's current version: not known
    to be made on an older one (`rules.evidence_made_on`, as the judge command dates it)."""
    if art is None or art.version is None:
        return {e.evidence_id for e in cr.evidence}
    from ...reads.judging import made_on

    return {
        e.evidence_id
        for e in cr.evidence
        if rules.evidence_is_current(made_on(art.artifact_id, e, cr, version_seqs), art.version)
    }


def _stale_criterion(
    ctx: Run,
    cr: Criterion,
    reason: str,
    art: ArtifactBrief | None,
    target: dict[str, Any] | None,
    evidence: list[dict[str, Any]],
    current: set[str],
    said: Said,
) -> None:
    """A judgement the artifact moved on from: re-checked against the current version with
    the evidence made on it, or evidence made on it attached first (the evidence there is
    was made on an older version)."""
    said.blockers.append(
        {
            "kind": "stale_criterion",
            "criterion_id": cr.criterion_id,
            "message": f"criterion {cr.criterion_id} is stale: {reason}",
        }
    )
    text = f"re-check criterion {cr.criterion_id} against " + (
        f"{target['id']} ({target['digest']})" if target else "the artifact"
    )
    cited = [x for x in evidence if x["id"] in current]
    if art is not None and target is not None and cited and not ctx.closed:
        judge = cmd(
            "judge_criterion",
            ctx.task_id,
            criterion_id=cr.criterion_id,
            status="satisfied",
            artifact_id=art.artifact_id,
            artifact_version=art.version,
            evidence_ids=[x["id"] for x in cited],
        )
        said.actions.append(item(text, rules.ActorKind.AGENT, judge, (), evidence=[target, *cited]))
    elif not ctx.closed:
        attach = _attach(ctx.task_id, cr.criterion_id)
        said.actions.append(
            {**attach, "action": text, "evidence": [x for x in (target,) if x] + evidence}
        )


def _criterion_to_verify(
    ctx: Run,
    cr: Criterion,
    status: str,
    target: dict[str, Any] | None,
    evidence: list[dict[str, Any]],
    said: Said,
) -> None:
    """Unverified or failed: evidence to attach, naming any that went missing."""
    # Retired evidence is a typed absence, weighed in `retired_content`, not missing.
    missing_ev = [e.evidence_id for e in cr.evidence if e.blob_problem and not e.retired]
    if missing_ev:
        said.blockers.append(
            {
                "kind": "missing_evidence",
                "criterion_id": cr.criterion_id,
                "message": f"criterion {cr.criterion_id}: evidence {', '.join(missing_ev)} is missing",
            }
        )
    if not ctx.closed:
        said.actions.append(
            {
                **_attach(ctx.task_id, cr.criterion_id),
                "action": f"verify criterion {cr.criterion_id} ({status}): {cr.text}",
                "evidence": [x for x in (target,) if x] + evidence,
            }
        )


def completion(ctx: Run, state: TaskState, said: Said) -> None:
    """Completing the task: the agent's next action when nothing blocks it, else forbidden
    with the blockers as the rules name them."""
    if ctx.closed:
        return
    # As the command layer judges it (commands.core.criterion_views): a retired item never
    # counts, and a blob counts while it reads, whichever item names it.
    views = [
        rules.CriterionView(
            c.criterion_id,
            c.status,
            tuple((e.evidence_id, e.digest) for e in c.evidence),
            frozenset(e.evidence_id for e in c.evidence if e.retired),
        )
        for c in state.criteria
    ]
    bad = {e.digest for c in state.criteria for e in c.evidence if e.blob_problem and not e.retired}
    blockers = rules.completion_blockers(
        views,
        [(e.effect_id, e.stage, e.outcome) for e in state.effects],
        lambda d: d not in bad,
    )
    complete = cmd("set_status", ctx.task_id, status=rules.RunStatus.COMPLETED, reason="done")
    if not blockers and st_allowed(ctx.status, rules.RunStatus.COMPLETED):
        said.actions.append(item("complete the task", rules.ActorKind.AGENT, complete, evidence=[]))
    elif blockers:
        said.forbidden.append(
            item("complete the task", rules.ActorKind.AGENT, complete, reason="; ".join(blockers))
        )
