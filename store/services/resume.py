"""The resume brief: what the next actor may do, and the evidence for it, from the record alone.

Built from the current head checkpoint, the events after it, and a fresh observation of the
files the task depends on (artifact files and effect targets, hashed now). It never reads a
narrative and never invents a version: a missing thing is a blocker that names it. An
approval is history unless it is valid at this moment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import rules
from ..commands.effects import observe_file
from ..errors import ScopeViolation, StoreError
from ..model import Scope
from ..rules import effect_unresolved, is_destination
from ..scope import resolve_path
from ..status import allowed as st_allowed
from ..store import Store

if TYPE_CHECKING:
    from ..reads.checkpoints import Checkpoint, Checkpoints
    from ..reads.inbox import Lease
    from ..reads.late import LateChanges
    from ..reads.retention import RetiredItem
    from ..reads.state_models import (
        Approval,
        Artifact,
        Budget,
        Criterion,
        Effect,
        Problem,
        Reconciliation,
        TaskState,
    )
    from ..reads.waits import Wait


def _cmd(ctype: str, task_id: str, **payload: Any) -> dict[str, Any]:
    """A command the brief names: its type and payload, as `boris ingest` takes it."""
    return {"type": ctype, "task_id": task_id, **payload}


def _item(
    text: str,
    actor: str,
    command: dict[str, Any],
    needs: tuple[str, ...] = (),
    **extra: Any,
) -> dict[str, Any]:
    """A next action or a forbidden one: what it is in words, who (actor kind), and the
    command the command layer takes for it; `needs` names the fields the actor supplies
    (the content it checked, the executor it hands the object to, a reviewer's decision)."""
    return {"action": text, "actor": str(actor), "command": command, "needs": list(needs), **extra}


def _observe(scope: Scope, path: str) -> dict[str, Any]:
    try:
        real = resolve_path(scope, path)
    except ScopeViolation as exc:
        return {"path": path, "readable": False, "problem": str(exc)}
    try:
        state, mtime = observe_file(str(real))
    except StoreError as exc:
        return {"path": str(real), "readable": False, "problem": str(exc)}
    return {"path": str(real), "readable": True, **state.model_dump(), "mtime_ns": mtime}


def _valid_now(a: Approval, effects: dict[str, Effect]) -> bool:
    """Authorizes something now: approved, not expired (state says), unused, payload as is."""
    if a.state != "approved":
        return False
    e = effects.get(a.effect_id or "")
    return e is None or e.intent.prepared_digest == a.payload_digest


def _head(checkpoints: Checkpoints) -> Checkpoint | None:
    rows = [c for c in checkpoints.checkpoints if c.checkpoint_id in checkpoints.heads]
    return max(rows, key=lambda c: (c.seq, c.at)) if rows else None


@dataclass
class _Said:
    """What the brief says beside the record's facts, each list in the order the parts find
    it: what blocks the next actor, what may be done next (and by whom), what must not."""

    blockers: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    forbidden: list[dict[str, Any]] = field(default_factory=list)


def resume_brief(store: Store, task_id: str) -> dict[str, Any]:
    """The brief, part by part: the files the task depends on observed now, the content that
    cannot be read or was retired, each criterion, approval and effect, the run's status,
    tool drift, completion, due waits, late changes, the lineage and who holds the task.
    The parts are asked in this order, which is the order their blockers and actions read."""
    state = store.task(task_id)
    scope = Scope.model_validate(state.scope)
    head = _head(state.checkpoints)
    after = store.event_type_counts(task_id, after_seq=head.seq if head else 0)
    effects = {e.effect_id: e for e in state.effects}
    status_now = str(state.status)
    ctx = _Run(task_id, status_now, status_now in rules.CLOSED, state.budgets)
    said = _Said()
    artifacts = _artifacts(state.artifacts, scope, said)
    _blob_problems(state.problems, said)
    degraded = _retired(state.retired, said)
    criteria = [_criterion(ctx, cr, artifacts, said) for cr in state.criteria]
    approvals = _approvals(state.approvals, effects, said)
    _sent_back(task_id, state.approvals, effects, said)
    _run_status(ctx, said)
    effect_briefs = [_effect_brief(ctx, e, scope, approvals, said) for e in state.effects]
    _tool_drift(store, task_id, effect_briefs, said)
    _completion(ctx, state, said)
    re_evaluate = _due_waits(task_id, state.waits)
    late = _late(task_id, state.late, said)
    _lineage(task_id, state.checkpoints, head, said)
    lease = _lease_brief(state.lease)
    _taken_over(lease, said)
    return {
        **_standing(task_id, state, lease, head, after),
        "artifacts": list(artifacts.values()),
        "criteria": criteria,
        "effects": effect_briefs,
        "approvals": approvals,
        "next_actions": said.actions,
        "blockers": said.blockers,
        "forbidden": said.forbidden,
        # Scheduled waits (store.reads.waits) and, apart from the next actions, the due ones:
        # each is to be considered again under current policy and the world as it is now.
        "waits": [_wait_brief(w) for w in state.waits if w.state == "open"],
        "re_evaluate": re_evaluate,
        # Retired optional content (a note, diagnostics): resume goes on without it.
        "degraded": degraded,
        # What changed after completion, not answered yet (store.reads.late); None: nothing.
        "late_changes": late,
        "observed_at": state.now,
    }


def _standing(
    task_id: str,
    state: TaskState,
    lease: dict[str, Any] | None,
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
        # Who holds the task now (store.reads.leases), None when nobody ever leased it.
        "lease": lease,
        "objective": {"rev": obj.rev, "text": obj.text} if obj else None,
        "checkpoint": (
            {
                "id": head.checkpoint_id,
                "reason": head.reason,
                "seq": head.seq,
                "chain_hash": head.chain_hash,
                "note": head.note,
            }
            if head
            else None
        ),
        "events_after_checkpoint": {
            "count": sum(after.values()),
            "types": after,
            "last_seq": state.last_seq,
            "head_hash": state.head_hash,
        },
    }


def _artifacts(rows: list[Artifact], scope: Scope, said: _Said) -> dict[str, dict[str, Any]]:
    """Each artifact's current version, its file observed now (hashed fresh): a file that is
    missing or unreadable blocks, one changed on disk makes what was checked against it stale."""
    artifacts: dict[str, dict[str, Any]] = {}
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
            obs = _observe(scope, cur.path)
            entry["observed"] = obs
            entry["changed_on_disk"] = obs["readable"] and obs.get("digest") != cur.digest
            if not obs["readable"] or not obs.get("exists"):
                said.blockers.append(
                    {
                        "kind": "artifact_file_missing",
                        "artifact_id": a.artifact_id,
                        "version": a.current_version,
                        "path": cur.path,
                        "message": f"the file of {a.artifact_id} v{a.current_version} "
                        f"({cur.path}) is missing or unreadable: "
                        f"{obs.get('problem', 'missing')}",
                    }
                )
        artifacts[a.artifact_id] = entry
    return artifacts


def _blob_problems(problems: list[Problem], said: _Said) -> None:
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


# --- criteria ------------------------------------------------------------------------------


def _criterion(
    ctx: _Run, cr: Criterion, artifacts: dict[str, dict[str, Any]], said: _Said
) -> dict[str, Any]:
    """A criterion as it counts now, and what it leaves to do: evidence to attach again, a
    stale judgement to re-check, an unverified or failed one to verify. Waiving it is never
    an agent's."""
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
            "id": f"{art['artifact_id']} v{art['version']}",
            "digest": art["digest"],
        }
        if art
        else None
    )
    if not rules.criterion_done(status):
        said.forbidden.append(_waiver_forbidden(ctx.task_id, cr.criterion_id))
    if status == rules.CriterionState.EVIDENCE_MISSING:
        _evidence_missing(ctx, cr, reason, target, evidence, said)
    elif status == "stale":
        _stale_criterion(ctx, cr, reason, art, target, evidence, said)
    elif status in {"unverified", "failed"}:
        _criterion_to_verify(ctx, cr, status, target, evidence, said)
    return {"id": cr.criterion_id, "status": status, "reason": reason}


def _criterion_now(cr: Criterion, art: dict[str, Any] | None) -> tuple[str, str]:
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
    if status == "satisfied" and art is not None and art.get("changed_on_disk"):
        status = "stale"
        reason = (
            f"the file of {cr.artifact_id} changed on disk since v{cr.artifact_version} was checked"
        )
    if cr.status == "stale":
        reason = (
            f"satisfied against {cr.artifact_id} v{cr.artifact_version}; "
            f"the current version is v{art['version'] if art else '?'}"
        )
    return status, reason


def _attach(task_id: str, criterion_id: str) -> dict[str, Any]:
    return _item(
        f"attach evidence for criterion {criterion_id}",
        rules.ActorKind.AGENT,
        _cmd("attach_evidence", task_id, criterion_id=criterion_id, kind="other"),
        ("content",),
    )


def _waiver_forbidden(task_id: str, criterion_id: str) -> dict[str, Any]:
    return _item(
        f"waive criterion {criterion_id} as an agent",
        rules.ActorKind.AGENT,
        _cmd(
            "judge_criterion",
            task_id,
            criterion_id=criterion_id,
            status="waived",
            note="not needed",
        ),
        reason="a waiver is a person's: ask one",
    )


def _evidence_missing(
    ctx: _Run,
    cr: Criterion,
    reason: str,
    target: dict[str, Any] | None,
    evidence: list[dict[str, Any]],
    said: _Said,
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


def _stale_criterion(
    ctx: _Run,
    cr: Criterion,
    reason: str,
    art: dict[str, Any] | None,
    target: dict[str, Any] | None,
    evidence: list[dict[str, Any]],
    said: _Said,
) -> None:
    """A judgement the artifact moved on from: re-checked against the current version (with
    the evidence there is), or evidence attached for it first."""
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
    if art is not None and target is not None and evidence and not ctx.closed:
        judge = _cmd(
            "judge_criterion",
            ctx.task_id,
            criterion_id=cr.criterion_id,
            status="satisfied",
            artifact_id=art["artifact_id"],
            artifact_version=art["version"],
            evidence_ids=[x["id"] for x in evidence],
        )
        said.actions.append(
            _item(text, rules.ActorKind.AGENT, judge, (), evidence=[target, *evidence])
        )
    elif not ctx.closed:
        attach = _attach(ctx.task_id, cr.criterion_id)
        said.actions.append(
            {**attach, "action": text, "evidence": [x for x in (target,) if x] + evidence}
        )


def _criterion_to_verify(
    ctx: _Run,
    cr: Criterion,
    status: str,
    target: dict[str, Any] | None,
    evidence: list[dict[str, Any]],
    said: _Said,
) -> None:
    """Unverified or failed: evidence to attach, naming any that went missing."""
    # Retired evidence is a typed absence, weighed in `_retired`, not missing.
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


# --- approvals, the lineage, the lease ------------------------------------------------------


def _approvals(
    rows: list[Approval], effects: dict[str, Effect], said: _Said
) -> list[dict[str, Any]]:
    """Each approval as history, `authorizes_now` only while it is valid at this moment; an
    expired or stale one on an effect not yet sent blocks it (a new request is needed)."""
    approvals = []
    for a in rows:
        approvals.append(
            {
                "id": a.approval_id,
                "effect_id": a.effect_id,
                "state": a.state,
                "payload_digest": a.payload_digest,
                "expires_at": a.expires_at,
                "authorizes_now": _valid_now(a, effects),
            }
        )
        if a.state in {"expired", "stale"} and a.effect_id in effects:
            e = effects[a.effect_id]
            if e.stage in {"planned", "approved"}:
                said.blockers.append(
                    {
                        "kind": f"{a.state}_approval",
                        "approval_id": a.approval_id,
                        "effect_id": a.effect_id,
                        "message": f"approval {a.approval_id} for effect {a.effect_id} is "
                        f"{a.state}: it authorizes nothing; request a new one",
                    }
                )
    return approvals


def _lineage(task_id: str, lineage: Checkpoints, head: Checkpoint | None, said: _Said) -> None:
    """A forked lineage is a person's choice to make; a task with no checkpoint says the
    brief rests on the whole log."""
    if len(lineage.heads) > 1:
        said.blockers.append(_fork(task_id, lineage, head))
        said.actions.append(_choose_head(task_id, lineage))
    if head is None:
        said.blockers.append(
            {
                "kind": "no_checkpoint",
                "message": "the task has no checkpoint: the brief rests on the whole event log",
            }
        )


def _taken_over(lease: dict[str, Any] | None, said: _Said) -> None:
    """Taken over: the next actor is the person, until they hand the task back."""
    if lease is not None and lease["holder_kind"] == "person" and lease["standing"] == "alive":
        said.blockers.append(
            {
                "kind": "taken_over",
                "holder": lease["holder"],
                "message": f"{lease['holder']} took the task over at {lease['since']}"
                + (f" ({lease['reason']})" if lease["reason"] else "")
                + "; an agent resumes only after they release the lease",
            }
        )


def _late(task_id: str, late: LateChanges, said: _Said) -> dict[str, Any] | None:
    """A completed task changed after completion (issue 35 part L): said as a blocker (the
    record no longer says only what was known at completion) and a person's next action.
    It never reopens the task: nobody resumes a completed one; a person decides."""
    if not late.count:
        return None
    said.blockers.append(
        {
            "kind": "changed_after_completion",
            "count": late.count,
            "since_seq": late.since_seq,
            "message": f"{late.words} (#{late.since_seq}..#{late.last_seq}): "
            + "; ".join(f.what for f in late.facts)
            + "; the task stays completed until a person acknowledges them or opens a "
            "follow-up task",
        }
    )
    for ctype, text in (
        ("acknowledge_late_changes", "acknowledge what changed after completion"),
        ("open_followup", "open a follow-up task for what changed after completion"),
    ):
        extra = {"title": ""} if ctype == "open_followup" else {}
        said.actions.append(
            _item(
                text,
                rules.ActorKind.PERSON,
                _cmd(ctype, task_id, through_seq=late.last_seq, **extra),
                ("title",) if extra else (),
                evidence=[],
            )
        )
    return {
        "count": late.count,
        "since_seq": late.since_seq,
        "since_at": late.since_at,
        "last_seq": late.last_seq,
        "facts": [f.to_json() for f in late.facts],
    }


def _tool_drift(
    store: Store, task_id: str, effect_briefs: list[dict[str, Any]], said: _Said
) -> None:
    """Intents planned under an older tool definition than the current configuration's
    (issue 35 part M): each a blocker, its dispatch forbidden (rules.pinned_tool_refusal),
    until a person re-pins it (`migrate_effect_tool`) or it is cancelled and re-planned."""
    from ..reads.manifests import intent_drift

    with store.read() as conn:
        drifted = intent_drift(conn, task_id)
    by_id = {b["id"]: b for b in effect_briefs}
    for d in drifted:
        eid = d["effect_id"]
        message = f"effect {eid}: {d['drift']}"
        if eid in by_id:
            by_id[eid]["tool_drift"] = d
        said.blockers.append(
            {
                "kind": "tool_definition_changed",
                "effect_id": eid,
                "tool": d["tool"],
                "pinned_digest": d["tool_digest"],
                "current_digest": d["current_digest"],
                "message": message,
            }
        )
        # Its dispatch is no next action while it is pinned to an older definition.
        said.actions[:] = [
            a
            for a in said.actions
            if not (
                a["command"].get("type") == "dispatch_effect"
                and a["command"].get("effect_id") == eid
            )
        ]
        # Re-pinning it is a person's judgement (rules.AUTHORITY); the agent may re-plan it.
        evidence = [{"kind": "tool_definition", "id": d["tool"], "digest": d["tool_digest"]}]
        said.actions.append(
            _item(
                f"review effect {eid} against the current definition of {d['tool']} and "
                "re-pin it if it means the same under it",
                rules.ActorKind.PERSON,
                _cmd("migrate_effect_tool", task_id, effect_id=eid),
                ("reason",),
                evidence=evidence,
            )
        )
        said.actions.append(
            _item(
                f"cancel effect {eid} and plan it again under the current definition of "
                f"{d['tool']}",
                rules.ActorKind.AGENT,
                _cmd("cancel_effect", task_id, effect_id=eid),
                ("reason",),
                evidence=evidence,
            )
        )
        said.forbidden.append(
            _item(
                f"dispatch effect {eid}",
                rules.ActorKind.AGENT,
                _cmd("dispatch_effect", task_id, effect_id=eid),
                ("executor",),
                reason=d["drift"],
            )
        )


def _retired(retired: list[RetiredItem], said: _Said) -> list[dict[str, Any]]:
    """Retired content (store.reads.retention), a typed absence: what something still rests
    on blocks (the brief never infers it from a summary), optional content only degrades.
    Returns the degraded ones; the blocking ones join the blockers."""
    degraded = []
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
            degraded.append(entry)
    return degraded


def _lease_brief(lease: Lease | None) -> dict[str, Any] | None:
    """Who holds the task: a lease controls who works now, never what happened remotely."""
    if lease is None:
        return None
    holder = lease.holder
    return {
        "holder": f"{holder.kind}:{holder.id}",
        "holder_kind": holder.kind,
        "session_id": lease.session_id,
        "token": lease.token,
        "since": lease.since,
        "last_heartbeat_at": lease.last_heartbeat_at,
        "expires_at": lease.expires_at,
        "standing": lease.standing,
        "reason": lease.reason,
    }


def _lease_words(lease: dict[str, Any] | None) -> str:
    if lease is None:
        return "Held by: nobody (never leased)"
    if lease["standing"] == "ended":
        return f"Held by: nobody (the lease of {lease['holder']} ended)"
    heard = f", last heard {lease['last_heartbeat_at']}" if lease["holder_kind"] != "person" else ""
    return (
        f"Held by: {lease['holder']} (token {lease['token']}, since {lease['since']}"
        f"{heard}; {lease['standing']})"
    )


def _wait_brief(w: Wait) -> dict[str, Any]:
    return {
        "id": w.wait_id,
        "kind": w.kind,
        "ref": w.ref,
        "waiting_for": w.waiting_for,
        "not_before": w.not_before,
        "clock": w.clock,
        "due": w.due,
        "reservation": w.reservation.to_json() if w.reservation else None,
        "condition": (w.condition.words if w.condition else None) or None,
    }


def _due_waits(task_id: str, waits: list[Wait]) -> list[dict[str, Any]]:
    """Each open wait whose time has come on the database's clock, as something to
    re-evaluate: being due says only that it is time to look again. Whatever it leads to is
    decided then, by current policy, budgets and approvals, through the command layer (a
    retry is a new dispatch, refused or allowed as any other); so the brief names no action
    to carry out here, only the wait to settle or schedule again."""
    out = []
    for w in waits:
        if not w.due:
            continue
        cond = w.condition.words if w.condition else None
        out.append(
            _item(
                f"re-evaluate wait {w.wait_id} ({w.waiting_for}), due since "
                f"{w.not_before}: check current policy and the world again, then settle "
                "the wait or schedule it again" + (f"; {cond}" if cond else ""),
                rules.ActorKind.AGENT,
                _cmd("settle_wait", task_id, wait_id=w.wait_id),
                ("result", "not_before", "after_seconds", "note"),
                evidence=[],
                wait_id=w.wait_id,
                reservation=w.reservation,
            )
        )
    return out


def _fork(task_id: str, lineage: Checkpoints, head: Checkpoint | None) -> dict[str, Any]:
    """The fork as a blocker. Which head the work continues from is a person's choice: the
    brief names the heads and, when a stop left them unchosen, says so; it picks none."""
    heads = lineage.heads
    left_open: tuple[str, ...] = ()
    if head is not None and head.reason == "stopped":
        left_open = rules.fork_left_open(
            ((c.checkpoint_id, c.supersedes, c.merged) for c in lineage.checkpoints),
            head.checkpoint_id,
        )
    unchosen = (
        f"stopped checkpoint {head.checkpoint_id} chose none of heads {', '.join(left_open)}; "
        if head is not None and left_open
        else ""
    )
    return {
        "kind": "fork",
        "heads": heads,
        "left_open_by": head.checkpoint_id if head is not None and left_open else None,
        "unchosen": list(left_open),
        "message": f"the checkpoint lineage has forked (heads {', '.join(heads)}): {unchosen}"
        "a person must choose the head to continue from, and whether to merge the others, "
        "before anyone resumes; no branch is picked silently",
    }


def _choose_head(task_id: str, lineage: Checkpoints) -> dict[str, Any]:
    heads = lineage.heads
    return _item(
        f"choose the head to continue from (one of {', '.join(heads)}): write a checkpoint "
        "that supersedes it, merging another head only if you mean to",
        rules.ActorKind.PERSON,
        _cmd("write_checkpoint", task_id, reason="handoff"),
        ("supersedes", "merge", "note"),
        # Each head by the event boundary it was taken at.
        evidence=[
            {"kind": "checkpoint", "id": c.checkpoint_id, "digest": c.chain_hash}
            for c in lineage.checkpoints
            if c.checkpoint_id in heads
        ],
    )


@dataclass(frozen=True)
class _Run:
    """What every part of the brief asks of the run: its status and its budgets."""

    task_id: str
    status: str
    closed: bool
    budgets: list[Budget]

    @property
    def exhausted(self) -> list[str]:
        return rules.exhausted_counters(b.to_json() for b in self.budgets)

    @property
    def may_dispatch(self) -> bool:
        return rules.can_dispatch(self.status)


def _run_status(ctx: _Run, said: _Said) -> None:
    """A run that may not dispatch says why, and who moves it on."""
    status = ctx.status
    if ctx.closed or ctx.may_dispatch:
        return
    resume = _cmd("set_status", ctx.task_id, status=rules.RunStatus.RUNNING, reason="resumed")
    if status in rules.STOPPED_BY_POLICY:
        who = rules.ActorKind.PERSON
        why = (
            f"the {', '.join(ctx.exhausted) or 'a'} budget is exhausted"
            if status == rules.RunStatus.BUDGET_EXHAUSTED
            else "the run was stopped"
        )
        said.blockers.append(
            {
                "kind": str(status),
                "counters": ctx.exhausted,
                "message": f"{why}: nothing is dispatched until a person raises the limit or "
                "resumes the run",
            }
        )
        said.forbidden.append(
            _item(
                "resume the run as an agent",
                rules.ActorKind.AGENT,
                resume,
                reason="reopening a run stopped by policy is a person's",
            )
        )
        for counter in ctx.exhausted if status == rules.RunStatus.BUDGET_EXHAUSTED else []:
            said.forbidden.append(
                _item(
                    f"spend more {counter}",
                    rules.ActorKind.AGENT,
                    _cmd("charge_budget", ctx.task_id, counter=counter, amount=1),
                    reason=f"the {counter} budget is exhausted",
                )
            )
    else:
        who = rules.ActorKind.AGENT
        said.blockers.append(
            {
                "kind": "run_not_dispatching",
                "message": f"the run is {status}: nothing may be dispatched until it runs again",
            }
        )
    said.actions.append(_item(f"resume the run (it is {status})", who, resume, evidence=[]))


def _completion(ctx: _Run, state: TaskState, said: _Said) -> None:
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
    complete = _cmd("set_status", ctx.task_id, status=rules.RunStatus.COMPLETED, reason="done")
    if not blockers and st_allowed(ctx.status, rules.RunStatus.COMPLETED):
        said.actions.append(
            _item("complete the task", rules.ActorKind.AGENT, complete, evidence=[])
        )
    elif blockers:
        said.forbidden.append(
            _item("complete the task", rules.ActorKind.AGENT, complete, reason="; ".join(blockers))
        )


# --- effects -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _EffectCase:
    """One effect as its part of the brief reads it: the run, the effect's row, the entry
    the brief shows for it (each case adds its meaning), and what the brief says."""

    ctx: _Run
    e: Effect
    brief: dict[str, Any]
    said: _Said

    @property
    def eid(self) -> str:
        return str(self.e.effect_id)

    @property
    def target(self) -> str:
        return str(self.e.target)

    @property
    def rec(self) -> Reconciliation | None:
        return self.e.reconciliation

    @property
    def attempts(self) -> int:
        return len(self.e.attempts)

    @property
    def intent_ref(self) -> dict[str, Any]:
        return {"kind": "intent", "id": self.eid, "digest": self.e.intent.prepared_digest}

    @property
    def dispatch(self) -> dict[str, Any]:
        return _cmd("dispatch_effect", self.ctx.task_id, effect_id=self.eid)

    def refuse_dispatch(self, text: str, reason: str) -> None:
        self.said.forbidden.append(
            _item(text, rules.ActorKind.AGENT, self.dispatch, ("executor",), reason=reason)
        )


def _effect_brief(
    ctx: _Run,
    e: Effect,
    scope: Scope,
    approvals: list[dict[str, Any]],
    said: _Said,
) -> dict[str, Any]:
    """The effect's entry, and what it leaves to do by the case it is in: settled, a conflict
    a person decides, an outcome unknown (inspect the destination first), observed and not
    reconciled, or never dispatched / known not to have happened (dispatch it, with a valid
    approval where its policy needs one)."""
    case = _EffectCase(ctx, e, _effect_entry(e, scope), said)
    if not effect_unresolved(e.stage, e.outcome):
        _effect_settled(case)
    elif rules.conflict_undecided(e.stage, e.outcome, case.rec.verdict if case.rec else None):
        _effect_conflict(case)
    elif e.outcome in {"unknown", "partial"}:
        _effect_uncertain(case)
    elif e.stage == "observed" and e.outcome not in {"failed", "absent"}:
        _effect_unreconciled(case)
    else:
        _effect_to_dispatch(case, approvals)
    return case.brief


def _effect_entry(e: Effect, scope: Scope) -> dict[str, Any]:
    """What the brief shows of an effect: its stage and outcome, its attempts, its target
    observed now (a file, hashed fresh; a destination is not read), and an override's
    decision beside what the observation said."""
    target = e.target
    atts = e.attempts
    brief: dict[str, Any] = {
        "id": e.effect_id,
        "kind": e.kind,
        "target": target,
        "stage": e.stage,
        "outcome": e.outcome,
        "attempts": len(atts),
        "dispatched": bool(atts),
        "observed_now": None if is_destination(target) else _observe(scope, target),
    }
    rec = e.reconciliation
    if rec is not None and rec.overrode:
        brief["override"] = {
            "decision": rec.verdict,
            "observation_said": rec.overrode,
            "by": rec.by.to_json(),
            "reason": rec.note,
        }
    return brief


def _effect_settled(case: _EffectCase) -> None:
    """Cancelled (nothing was sent) or done and reconciled: never dispatched again."""
    cancelled = case.e.stage == "cancelled"
    case.brief["meaning"] = "cancelled: nothing was sent" if cancelled else "done and reconciled"
    if not cancelled:
        case.refuse_dispatch(
            f"dispatch effect {case.eid} again", "it already happened (reconciled present)"
        )


def _effect_conflict(case: _EffectCase) -> None:
    """Reconciling found a conflict: a person inspects the target and decides it."""
    eid, target, rec, e = case.eid, case.target, case.rec, case.e
    case.brief["meaning"] = (
        f"dispatched ({case.attempts} attempt(s)); reconciling found a conflict: "
        "a person must decide it"
    )
    obs = e.observations[-1].observation_id if e.observations else None
    case.said.blockers.append(
        {
            "kind": "conflict_undecided",
            "effect_id": eid,
            "target": target,
            "inspect": target,
            "decided_by": rules.ActorKind.PERSON,
            "message": f"effect {eid}: reconciling found a conflict "
            f"({'; '.join(rec.reasons if rec else [])}); a person must decide it "
            "(present, absent or conflict) after inspecting " + target,
        }
    )
    decide = _cmd("reconcile_effect", case.ctx.task_id, effect_id=eid, observation_id=obs)
    case.said.actions.append(
        _item(
            f"a person decides the conflict of effect {eid} (inspect {target})",
            rules.ActorKind.PERSON,
            decide,
            ("decision", "note"),
            evidence=[case.intent_ref],
        )
    )
    case.said.forbidden.append(
        _item(
            f"decide the conflict of effect {eid} as an agent",
            rules.ActorKind.AGENT,
            decide,
            ("decision", "note"),
            reason="a hand decision is a person's",
        )
    )
    case.refuse_dispatch(f"dispatch effect {eid} again", "its conflict is not decided")


def _effect_uncertain(case: _EffectCase) -> None:
    """Dispatched, and what happened is not known: inspect the destination (a destination
    is observed by the agent, a file by the store) and reconcile; no blind retry."""
    eid, target, e = case.eid, case.target, case.e
    task_id = case.ctx.task_id
    case.brief["meaning"] = (
        f"already dispatched ({case.attempts} attempt(s)); the last outcome is {e.outcome}: "
        "inspect the destination before anything else"
    )
    case.said.blockers.append(
        {
            "kind": "effect_to_reconcile",
            "effect_id": eid,
            "target": target,
            "inspect": target,
            "message": f"reconcile effect {eid}: inspect {target} and compare it with the intended "
            f"{e.intent.intended.digest}",
        }
    )
    if is_destination(target):
        case.said.actions.append(
            _item(
                f"observe destination {target} of effect {eid} and record what is there",
                rules.ActorKind.AGENT,
                _cmd("observe_effect", task_id, effect_id=eid, purpose="reconcile"),
                ("state",),
                evidence=[case.intent_ref],
            )
        )
    else:
        case.said.actions.append(
            _item(
                f"reconcile effect {eid}: the store observes {target} and compares",
                rules.ActorKind.AGENT,
                _cmd("reconcile_effect", task_id, effect_id=eid),
                evidence=[case.intent_ref],
            )
        )
    case.refuse_dispatch(
        f"dispatch effect {eid} again",
        f"the last attempt's outcome is {e.outcome}; inspect {target} first",
    )


def _effect_unreconciled(case: _EffectCase) -> None:
    """Observed, not reconciled: it waits for a reconciliation before anything else."""
    eid, target, rec = case.eid, case.target, case.rec
    case.brief["meaning"] = "dispatched and observed, not reconciled"
    case.said.blockers.append(
        {
            "kind": "effect_to_reconcile",
            "effect_id": eid,
            "target": target,
            "inspect": target,
            "message": f"effect {eid} waits for a reconciliation"
            + (f" ({rec.verdict}: {'; '.join(rec.reasons)})" if rec else ""),
        }
    )
    case.refuse_dispatch(f"dispatch effect {eid} again", "it is not reconciled")


def _effect_to_dispatch(case: _EffectCase, approvals: list[dict[str, Any]]) -> None:
    """Never dispatched, or known not to have happened: dispatch it (a retry under the same
    idempotency key), with an approval valid now where its policy requires one, while the
    run may dispatch."""
    eid, e = case.eid, case.e
    valid = [a for a in approvals if a["effect_id"] == eid and a["authorizes_now"]]
    evidence = [case.intent_ref]
    if case.attempts:
        case.brief["meaning"] = f"dispatched before and known not to have happened ({e.outcome})"
        text = (
            f"retry effect {eid} as attempt {case.attempts + 1} under idempotency key "
            f"{e.idempotency_key}, or cancel it"
        )
        if e.observations:
            o = e.observations[-1]
            evidence.append({"kind": "observation", "id": o.observation_id, "digest": o.digest})
    else:
        # Only planned: nothing has left the building.
        case.brief["meaning"] = "only planned: never dispatched, nothing was sent"
        text = f"dispatch effect {eid} ({e.consequence})"
    if e.requires_approval and not valid:
        _approval_needed(case, approvals)
        return
    if not case.ctx.may_dispatch:
        case.refuse_dispatch(f"dispatch effect {eid}", f"the run is {case.ctx.status}")
        return
    dispatch = case.dispatch
    if valid:
        dispatch = {**dispatch, "approval_id": valid[0]["id"]}
        evidence.append(
            {"kind": "approval", "id": valid[0]["id"], "digest": valid[0]["payload_digest"]}
        )
        text += f" with approval {valid[0]['id']}, valid until {valid[0]['expires_at']}"
    case.said.actions.append(
        _item(text, rules.ActorKind.AGENT, dispatch, ("executor",), evidence=evidence)
    )


def _approval_needed(case: _EffectCase, approvals: list[dict[str, Any]]) -> None:
    """Its policy requires an approval and none is valid now: a pending one is a person's
    to decide; else the agent requests one (not on a run that ended). Never dispatched
    without."""
    eid, e, ctx = case.eid, case.e, case.ctx
    pending = [a for a in approvals if a["effect_id"] == eid and a["state"] == "pending"]
    if pending:
        case.said.blockers.append(
            {
                "kind": "approval_pending",
                "effect_id": eid,
                "approval_id": pending[0]["id"],
                "decided_by": rules.ActorKind.PERSON,
                "message": f"effect {eid} waits for approval {pending[0]['id']}, "
                "decided by a person",
            }
        )
        case.said.actions.append(
            _item(
                f"a person decides approval {pending[0]['id']} for effect {eid}: {e.consequence}",
                rules.ActorKind.PERSON,
                _cmd(
                    "decide_approval",
                    ctx.task_id,
                    approval_id=pending[0]["id"],
                    decision="approved",
                ),
                ("note",),
                evidence=[case.intent_ref],
            )
        )
    elif not ctx.closed and ctx.status not in {"stopped", "failed"}:
        case.said.actions.append(
            _item(
                f"request an approval for effect {eid}: {e.consequence}",
                rules.ActorKind.AGENT,
                _cmd(
                    "request_approval",
                    ctx.task_id,
                    effect_id=eid,
                    # The effect's row names no policy of its own: the request asks for review.
                    policy="review",
                ),
                evidence=[case.intent_ref],
            )
        )
    case.refuse_dispatch(
        f"dispatch effect {eid} without a valid approval",
        "its policy requires one and none is valid now",
    )


def _sent_back(task_id: str, rows: list[Approval], effects: dict[str, Effect], said: _Said) -> None:
    """A request a person sent back, not yet asked again: what they asked for, in their
    words, and the next step (revise the object, then ask under the new digest)."""
    for i, a in enumerate(rows):
        if a.state != rules.ApprovalState.SENT_BACK:
            continue
        eid = a.effect_id
        # Asked again already (a later request for the same effect): that one is the news.
        if eid is not None and any(later.effect_id == eid for later in rows[i + 1 :]):
            continue
        sent = effects.get(eid) if eid is not None else None
        if eid is not None and (sent.stage if sent else None) not in {"planned", "approved"}:
            continue
        who = a.decided_by.id if a.decided_by else "a person"
        what = f"effect {eid}" if eid is not None else "the payload"
        said.blockers.append(
            {
                "kind": "changes_requested",
                "approval_id": a.approval_id,
                "effect_id": eid,
                "note": a.note or "",
                "message": f"approval {a.approval_id} was sent back by {who} with changes "
                f"requested: “{a.note or ''}”; revise {what}, then request a new approval",
            }
        )
        if eid is not None:
            said.actions.append(
                _item(
                    f"revise effect {eid} as {who} asked (“{a.note or ''}”), then "
                    "request a new approval for the revised object",
                    rules.ActorKind.AGENT,
                    _cmd("revise_effect", task_id, effect_id=eid, reason=a.note or ""),
                    ("prepared",),
                    evidence=[
                        {"kind": "approval", "id": a.approval_id, "digest": a.payload_digest}
                    ],
                )
            )


def brief_markdown(b: dict[str, Any]) -> str:
    lines = [f"# Resume brief: {b['title']} ({b['task_id']})", ""]
    lines.append(f"Status: **{b['status']}** — observed at {b['observed_at']}")
    lines.append(_lease_words(b.get("lease")))
    if b["objective"]:
        lines.append(f"Objective (rev {b['objective']['rev']}): {b['objective']['text']}")
    ck = b["checkpoint"]
    after = b["events_after_checkpoint"]
    if ck:
        lines.append(
            f"From checkpoint {ck['id']} ({ck['reason']}, seq {ck['seq']}), "
            f"then {after['count']} later event(s) up to seq {after['last_seq']}."
        )
    for title, key, fmt in (
        ("Next actions", "next_actions", lambda x: _who(x) + x["action"] + _refs(x["evidence"])),
        ("Blockers", "blockers", lambda x: x["message"]),
        ("Forbidden", "forbidden", lambda x: f"{x['action']}: {x['reason']}"),
        # Due waits: to consider again, never an instruction (store.services.resume).
        ("Re-evaluate (due waits)", "re_evaluate", lambda x: x["action"]),
    ):
        lines += ["", f"## {title}"]
        lines += [f"- {fmt(x)}" for x in b[key]] or ["- none"]
    if b.get("late_changes"):
        lc = b["late_changes"]
        lines += ["", f"## Changed after completion ({lc['count']} since {lc['since_at']})"]
        lines += [f"- #{f['seq']} {f['what']} (by {f['by']})" for f in lc["facts"]]
    if b.get("degraded"):
        # Retired optional content (store.services.resume._retired): said, never blocking.
        lines += ["", "## Degraded (retired optional content)"]
        lines += [f"- {x['message']}" for x in b["degraded"]]
    lines += ["", "## Effects"]
    lines += [f"- {e['id']} {e['kind']} → {e['target']}: {e['meaning']}" for e in b["effects"]] or [
        "- none"
    ]
    lines += ["", "## Waits (database clock)"]
    lines += [
        f"- {w['id']} waiting for {w['waiting_for']}: "
        + ("due since " if w["due"] else "consider at ")
        + w["not_before"]
        + (f"; {w['condition']}" if w["condition"] else "")
        for w in b.get("waits", [])
    ] or ["- none"]
    lines += ["", "## Approvals (history; only `authorizes now` counts)"]
    lines += [
        f"- {a['id']} {a['state']}" + (" — authorizes now" if a["authorizes_now"] else "")
        for a in b["approvals"]
    ] or ["- none"]
    return "\n".join(lines) + "\n"


def _who(item: dict[str, Any]) -> str:
    return "" if item.get("actor", "agent") == "agent" else f"({item['actor']}) "


def _refs(evidence: list[dict[str, Any]]) -> str:
    if not evidence:
        return ""
    return (
        " (evidence: " + ", ".join(f"{x['kind']} {x['id']} {x['digest']}" for x in evidence) + ")"
    )
