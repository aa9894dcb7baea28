"""The resume brief: what the next actor may do, and the evidence for it, from the record alone.

Built from the current head checkpoint, the events after it, and a fresh observation of the
files the task depends on (artifact files and effect targets, hashed now). It never reads a
narrative and never invents a version: a missing thing is a blocker that names it. An
approval is history unless it is valid at this moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import rules
from ..commands.effects import observe_file
from ..errors import ScopeViolation, StoreError
from ..model import Scope
from ..rules import effect_unresolved, is_destination
from ..scope import resolve_path
from ..status import allowed as st_allowed
from ..store import Store


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


def _valid_now(a: dict[str, Any], effects: dict[str, dict[str, Any]]) -> bool:
    """Authorizes something now: approved, not expired (state says), unused, payload as is."""
    if a["state"] != "approved":
        return False
    e = effects.get(a["effect_id"] or "")
    return e is None or e["intent"]["prepared_digest"] == a["payload_digest"]


def _head(checkpoints: dict[str, Any]) -> dict[str, Any] | None:
    rows = [c for c in checkpoints["checkpoints"] if c["checkpoint_id"] in checkpoints["heads"]]
    return max(rows, key=lambda c: (c["seq"], c["at"])) if rows else None


def resume_brief(store: Store, task_id: str) -> dict[str, Any]:
    state = store.task(task_id)
    scope = Scope.model_validate(state["scope"])
    head = _head(state["checkpoints"])
    after = store.event_type_counts(task_id, after_seq=head["seq"] if head else 0)
    effects = {e["effect_id"]: e for e in state["effects"]}
    blockers: list[dict[str, Any]] = []
    actions: list[dict[str, Any]] = []
    forbidden: list[dict[str, Any]] = []

    # Fresh observations of every file the task depends on.
    artifacts: dict[str, dict[str, Any]] = {}
    for a in state["artifacts"]:
        cur = a["current"]
        entry: dict[str, Any] = {
            "artifact_id": a["artifact_id"],
            "name": a["name"],
            "version": a["current_version"],
            "digest": cur["digest"] if cur else None,
            "blob_problem": cur["blob_problem"] if cur else "no version",
        }
        if cur and cur["path"]:
            obs = _observe(scope, cur["path"])
            entry["observed"] = obs
            entry["changed_on_disk"] = obs["readable"] and obs.get("digest") != cur["digest"]
            if not obs["readable"] or not obs.get("exists"):
                blockers.append(
                    {
                        "kind": "artifact_file_missing",
                        "artifact_id": a["artifact_id"],
                        "version": a["current_version"],
                        "path": cur["path"],
                        "message": f"the file of {a['artifact_id']} v{a['current_version']} "
                        f"({cur['path']}) is missing or unreadable: "
                        f"{obs.get('problem', 'missing')}",
                    }
                )
        artifacts[a["artifact_id"]] = entry
    for p in state["problems"]:
        blockers.append(
            {
                "kind": f"{p['kind']}_blob_{p['problem']}",
                "id": p["id"],
                "digest": p["digest"],
                "message": f"{p['kind']} {p['id']}: blob {p['digest']} is {p['problem']}; "
                "it cannot be used as evidence or resumed from",
            }
        )
    degraded = _retired(state.get("retired", []), blockers)

    status_now = str(state["status"])
    closed = status_now in rules.CLOSED
    criteria = []
    for cr in state["criteria"]:
        status = cr["state"]
        reason = ""
        art = artifacts.get(cr["artifact_id"] or "")
        if status == rules.CriterionState.EVIDENCE_MISSING:
            reason = "; ".join(
                f"evidence {e['evidence_id']} (blob {e['digest']}) is {e['blob_problem']}"
                for e in cr["evidence"]
                if e["blob_problem"]
            )
        if status == "satisfied" and art is not None and art.get("changed_on_disk"):
            status = "stale"
            reason = (
                f"the file of {cr['artifact_id']} changed on disk since "
                f"v{cr['artifact_version']} was checked"
            )
        if cr["status"] == "stale":
            reason = (
                f"satisfied against {cr['artifact_id']} v{cr['artifact_version']}; "
                f"the current version is v{art['version'] if art else '?'}"
            )
        criteria.append({"id": cr["criterion_id"], "status": status, "reason": reason})
        evidence = [
            {"kind": "evidence", "id": e["evidence_id"], "digest": e["digest"]}
            for e in cr["evidence"]
            if not e["blob_problem"]
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
        attach = _item(
            f"attach evidence for criterion {cr['criterion_id']}",
            rules.ActorKind.AGENT,
            _cmd("attach_evidence", task_id, criterion_id=cr["criterion_id"], kind="other"),
            ("content",),
        )
        if not rules.criterion_done(status):
            forbidden.append(
                _item(
                    f"waive criterion {cr['criterion_id']} as an agent",
                    rules.ActorKind.AGENT,
                    _cmd(
                        "judge_criterion",
                        task_id,
                        criterion_id=cr["criterion_id"],
                        status="waived",
                        note="not needed",
                    ),
                    reason="a waiver is a person's: ask one",
                )
            )
        if status == rules.CriterionState.EVIDENCE_MISSING:
            blockers.append(
                {
                    "kind": "evidence_missing",
                    "criterion_id": cr["criterion_id"],
                    "evidence": [
                        {
                            "id": e["evidence_id"],
                            "digest": e["digest"],
                            "problem": e["blob_problem"],
                        }
                        for e in cr["evidence"]
                        if e["blob_problem"]
                    ],
                    "message": f"criterion {cr['criterion_id']} was judged satisfied but its "
                    f"evidence is missing: {reason}; it does not count until evidence is "
                    "attached again",
                }
            )
            if not closed:
                actions.append({**attach, "evidence": [x for x in (target,) if x] + evidence})
        elif status == "stale":
            blockers.append(
                {
                    "kind": "stale_criterion",
                    "criterion_id": cr["criterion_id"],
                    "message": f"criterion {cr['criterion_id']} is stale: {reason}",
                }
            )
            text = f"re-check criterion {cr['criterion_id']} against " + (
                f"{target['id']} ({target['digest']})" if target else "the artifact"
            )
            if art is not None and target is not None and evidence and not closed:
                judge = _cmd(
                    "judge_criterion",
                    task_id,
                    criterion_id=cr["criterion_id"],
                    status="satisfied",
                    artifact_id=art["artifact_id"],
                    artifact_version=art["version"],
                    evidence_ids=[x["id"] for x in evidence],
                )
                actions.append(
                    _item(text, rules.ActorKind.AGENT, judge, (), evidence=[target, *evidence])
                )
            elif not closed:
                actions.append(
                    {**attach, "action": text, "evidence": [x for x in (target,) if x] + evidence}
                )
        elif status in {"unverified", "failed"}:
            # Retired evidence is a typed absence, weighed in `_retired`, not missing.
            missing_ev = [
                e["evidence_id"]
                for e in cr["evidence"]
                if e["blob_problem"] and not e.get("retired")
            ]
            if missing_ev:
                blockers.append(
                    {
                        "kind": "missing_evidence",
                        "criterion_id": cr["criterion_id"],
                        "message": f"criterion {cr['criterion_id']}: evidence {', '.join(missing_ev)} is missing",
                    }
                )
            if not closed:
                actions.append(
                    {
                        **attach,
                        "action": f"verify criterion {cr['criterion_id']} ({status}): {cr['text']}",
                        "evidence": [x for x in (target,) if x] + evidence,
                    }
                )

    approvals = []
    for a in state["approvals"]:
        valid = _valid_now(a, effects)
        approvals.append(
            {
                "id": a["approval_id"],
                "effect_id": a["effect_id"],
                "state": a["state"],
                "payload_digest": a["payload_digest"],
                "expires_at": a["expires_at"],
                "authorizes_now": valid,
            }
        )
        if a["state"] in {"expired", "stale"} and a["effect_id"] in effects:
            e = effects[a["effect_id"]]
            if e["stage"] in {"planned", "approved"}:
                blockers.append(
                    {
                        "kind": f"{a['state']}_approval",
                        "approval_id": a["approval_id"],
                        "effect_id": a["effect_id"],
                        "message": f"approval {a['approval_id']} for effect {a['effect_id']} is "
                        f"{a['state']}: it authorizes nothing; request a new one",
                    }
                )

    _sent_back(task_id, state["approvals"], effects, blockers, actions)
    ctx = _Run(task_id, status_now, closed, state["budgets"])
    _run_status(ctx, state, blockers, actions, forbidden)
    effect_briefs = []
    for e in state["effects"]:
        eb = _effect_brief(ctx, e, scope, approvals, blockers, actions, forbidden)
        effect_briefs.append(eb)
    _tool_drift(store, task_id, effect_briefs, blockers, actions, forbidden)
    _completion(ctx, state, actions, forbidden)
    re_evaluate = _due_waits(task_id, state.get("waits", []))
    late = _late(task_id, state.get("late"), blockers, actions)

    lineage = state["checkpoints"]
    if len(lineage["heads"]) > 1:
        blockers.append(_fork(task_id, lineage, head))
        actions.append(_choose_head(task_id, lineage))
    if head is None:
        blockers.append(
            {
                "kind": "no_checkpoint",
                "message": "the task has no checkpoint: the brief rests on the whole event log",
            }
        )
    lease = _lease_brief(state.get("lease"))
    if lease is not None and lease["holder_kind"] == "person" and lease["standing"] == "alive":
        # Taken over: the next actor is the person, until they hand the task back.
        blockers.append(
            {
                "kind": "taken_over",
                "holder": lease["holder"],
                "message": f"{lease['holder']} took the task over at {lease['since']}"
                + (f" ({lease['reason']})" if lease["reason"] else "")
                + "; an agent resumes only after they release the lease",
            }
        )
    obj = state["objective"]
    return {
        "task_id": task_id,
        "title": state["title"],
        "status": state["status"],
        # Who holds the task now (store.reads.leases), None when nobody ever leased it.
        "lease": lease,
        "objective": {"rev": obj["rev"], "text": obj["text"]} if obj else None,
        "checkpoint": (
            {
                "id": head["checkpoint_id"],
                "reason": head["reason"],
                "seq": head["seq"],
                "chain_hash": head["chain_hash"],
                "note": head["note"],
            }
            if head
            else None
        ),
        "events_after_checkpoint": {
            "count": sum(after.values()),
            "types": after,
            "last_seq": state["last_seq"],
            "head_hash": state["head_hash"],
        },
        "artifacts": list(artifacts.values()),
        "criteria": criteria,
        "effects": effect_briefs,
        "approvals": approvals,
        "next_actions": actions,
        "blockers": blockers,
        "forbidden": forbidden,
        # Scheduled waits (store.reads.waits) and, apart from the next actions, the due ones:
        # each is to be considered again under current policy and the world as it is now.
        "waits": [_wait_brief(w) for w in state.get("waits", []) if w["state"] == "open"],
        "re_evaluate": re_evaluate,
        # Retired optional content (a note, diagnostics): resume goes on without it.
        "degraded": degraded,
        # What changed after completion, not answered yet (store.reads.late); None: nothing.
        "late_changes": late,
        "observed_at": state["now"],
    }


def _late(
    task_id: str,
    late: dict[str, Any] | None,
    blockers: list[dict[str, Any]],
    actions: list[dict[str, Any]],
) -> dict[str, Any] | None:
    """A completed task changed after completion (issue 35 part L): said as a blocker (the
    record no longer says only what was known at completion) and a person's next action.
    It never reopens the task: nobody resumes a completed one; a person decides."""
    if not late or not late["count"]:
        return None
    blockers.append(
        {
            "kind": "changed_after_completion",
            "count": late["count"],
            "since_seq": late["since_seq"],
            "message": f"{late['words']} (#{late['since_seq']}..#{late['last_seq']}): "
            + "; ".join(f["what"] for f in late["facts"])
            + "; the task stays completed until a person acknowledges them or opens a "
            "follow-up task",
        }
    )
    for ctype, text in (
        ("acknowledge_late_changes", "acknowledge what changed after completion"),
        ("open_followup", "open a follow-up task for what changed after completion"),
    ):
        extra = {"title": ""} if ctype == "open_followup" else {}
        actions.append(
            _item(
                text,
                rules.ActorKind.PERSON,
                _cmd(ctype, task_id, through_seq=late["last_seq"], **extra),
                ("title",) if extra else (),
                evidence=[],
            )
        )
    return {
        "count": late["count"],
        "since_seq": late["since_seq"],
        "since_at": late["since_at"],
        "last_seq": late["last_seq"],
        "facts": late["facts"],
    }


def _tool_drift(
    store: Store,
    task_id: str,
    effect_briefs: list[dict[str, Any]],
    blockers: list[dict[str, Any]],
    actions: list[dict[str, Any]],
    forbidden: list[dict[str, Any]],
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
        blockers.append(
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
        actions[:] = [
            a
            for a in actions
            if not (
                a["command"].get("type") == "dispatch_effect"
                and a["command"].get("effect_id") == eid
            )
        ]
        # Re-pinning it is a person's judgement (rules.AUTHORITY); the agent may re-plan it.
        evidence = [{"kind": "tool_definition", "id": d["tool"], "digest": d["tool_digest"]}]
        actions.append(
            _item(
                f"review effect {eid} against the current definition of {d['tool']} and "
                "re-pin it if it means the same under it",
                rules.ActorKind.PERSON,
                _cmd("migrate_effect_tool", task_id, effect_id=eid),
                ("reason",),
                evidence=evidence,
            )
        )
        actions.append(
            _item(
                f"cancel effect {eid} and plan it again under the current definition of "
                f"{d['tool']}",
                rules.ActorKind.AGENT,
                _cmd("cancel_effect", task_id, effect_id=eid),
                ("reason",),
                evidence=evidence,
            )
        )
        forbidden.append(
            _item(
                f"dispatch effect {eid}",
                rules.ActorKind.AGENT,
                _cmd("dispatch_effect", task_id, effect_id=eid),
                ("executor",),
                reason=d["drift"],
            )
        )


def _retired(retired: list[dict[str, Any]], blockers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Retired content (store.reads.retention), a typed absence: what something still rests
    on blocks (the brief never infers it from a summary), optional content only degrades.
    Returns the degraded ones; the blocking ones join `blockers`."""
    degraded = []
    for r in retired:
        entry = {
            "kind": "retired_required" if r["weight"] == "blocking" else "retired_optional",
            "item_kind": r["kind"],
            "id": r["id"],
            "digest": r["digest"],
            "size": r["size"],
            "media_type": r["media_type"],
            "retired_at": r["retired_at"],
            "required_by": r["required_by"],
        }
        said = f"{r['kind'].replace('_', ' ')} {r['id']} was {r['words']}"
        if r["weight"] == "blocking":
            entry["message"] = (
                f"{said}, and {'; '.join(r['required_by'])}: it is not there to resume from; "
                "retrieve it again under current policy, or a person decides without it"
            )
            blockers.append(entry)
        else:
            entry["message"] = f"{said}; nothing rests on it, so resuming goes on without it"
            degraded.append(entry)
    return degraded


def _lease_brief(lease: dict[str, Any] | None) -> dict[str, Any] | None:
    """Who holds the task: a lease controls who works now, never what happened remotely."""
    if lease is None:
        return None
    holder = lease["holder"]
    return {
        "holder": f"{holder['kind']}:{holder['id']}",
        "holder_kind": holder["kind"],
        "session_id": lease["session_id"],
        "token": lease["token"],
        "since": lease["since"],
        "last_heartbeat_at": lease["last_heartbeat_at"],
        "expires_at": lease["expires_at"],
        "standing": lease["standing"],
        "reason": lease["reason"],
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


def _wait_brief(w: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": w["wait_id"],
        "kind": w["kind"],
        "ref": w["ref"],
        "waiting_for": w["waiting_for"],
        "not_before": w["not_before"],
        "clock": w["clock"],
        "due": w["due"],
        "reservation": w["reservation"],
        "condition": (w["condition"] or {}).get("words") or None,
    }


def _due_waits(task_id: str, waits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each open wait whose time has come on the database's clock, as something to
    re-evaluate: being due says only that it is time to look again. Whatever it leads to is
    decided then, by current policy, budgets and approvals, through the command layer (a
    retry is a new dispatch, refused or allowed as any other); so the brief names no action
    to carry out here, only the wait to settle or schedule again."""
    out = []
    for w in waits:
        if not w["due"]:
            continue
        cond = (w["condition"] or {}).get("words")
        out.append(
            _item(
                f"re-evaluate wait {w['wait_id']} ({w['waiting_for']}), due since "
                f"{w['not_before']}: check current policy and the world again, then settle "
                "the wait or schedule it again" + (f"; {cond}" if cond else ""),
                rules.ActorKind.AGENT,
                _cmd("settle_wait", task_id, wait_id=w["wait_id"]),
                ("result", "not_before", "after_seconds", "note"),
                evidence=[],
                wait_id=w["wait_id"],
                reservation=w["reservation"],
            )
        )
    return out


def _fork(task_id: str, lineage: dict[str, Any], head: dict[str, Any] | None) -> dict[str, Any]:
    """The fork as a blocker. Which head the work continues from is a person's choice: the
    brief names the heads and, when a stop left them unchosen, says so; it picks none."""
    heads = lineage["heads"]
    left_open: tuple[str, ...] = ()
    if head is not None and head["reason"] == "stopped":
        left_open = rules.fork_left_open(
            ((c["checkpoint_id"], c["supersedes"], c["merged"]) for c in lineage["checkpoints"]),
            head["checkpoint_id"],
        )
    said = (
        f"stopped checkpoint {head['checkpoint_id']} chose none of heads {', '.join(left_open)}; "
        if head is not None and left_open
        else ""
    )
    return {
        "kind": "fork",
        "heads": heads,
        "left_open_by": head["checkpoint_id"] if head is not None and left_open else None,
        "unchosen": list(left_open),
        "message": f"the checkpoint lineage has forked (heads {', '.join(heads)}): {said}"
        "a person must choose the head to continue from, and whether to merge the others, "
        "before anyone resumes; no branch is picked silently",
    }


def _choose_head(task_id: str, lineage: dict[str, Any]) -> dict[str, Any]:
    heads = lineage["heads"]
    return _item(
        f"choose the head to continue from (one of {', '.join(heads)}): write a checkpoint "
        "that supersedes it, merging another head only if you mean to",
        rules.ActorKind.PERSON,
        _cmd("write_checkpoint", task_id, reason="handoff"),
        ("supersedes", "merge", "note"),
        # Each head by the event boundary it was taken at.
        evidence=[
            {"kind": "checkpoint", "id": c["checkpoint_id"], "digest": c["chain_hash"]}
            for c in lineage["checkpoints"]
            if c["checkpoint_id"] in heads
        ],
    )


@dataclass(frozen=True)
class _Run:
    """What every part of the brief asks of the run: its status and its budgets."""

    task_id: str
    status: str
    closed: bool
    budgets: list[dict[str, Any]]

    @property
    def exhausted(self) -> list[str]:
        return rules.exhausted_counters(self.budgets)

    @property
    def may_dispatch(self) -> bool:
        return rules.can_dispatch(self.status)


def _run_status(
    ctx: _Run,
    state: dict[str, Any],
    blockers: list[dict[str, Any]],
    actions: list[dict[str, Any]],
    forbidden: list[dict[str, Any]],
) -> None:
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
        blockers.append(
            {
                "kind": str(status),
                "counters": ctx.exhausted,
                "message": f"{why}: nothing is dispatched until a person raises the limit or "
                "resumes the run",
            }
        )
        forbidden.append(
            _item(
                "resume the run as an agent",
                rules.ActorKind.AGENT,
                resume,
                reason="reopening a run stopped by policy is a person's",
            )
        )
        for counter in ctx.exhausted if status == rules.RunStatus.BUDGET_EXHAUSTED else []:
            forbidden.append(
                _item(
                    f"spend more {counter}",
                    rules.ActorKind.AGENT,
                    _cmd("charge_budget", ctx.task_id, counter=counter, amount=1),
                    reason=f"the {counter} budget is exhausted",
                )
            )
    else:
        who = rules.ActorKind.AGENT
        blockers.append(
            {
                "kind": "run_not_dispatching",
                "message": f"the run is {status}: nothing may be dispatched until it runs again",
            }
        )
    actions.append(_item(f"resume the run (it is {status})", who, resume, evidence=[]))


def _completion(
    ctx: _Run,
    state: dict[str, Any],
    actions: list[dict[str, Any]],
    forbidden: list[dict[str, Any]],
) -> None:
    if ctx.closed:
        return
    # As the command layer judges it (commands.core.criterion_views): a retired item never
    # counts, and a blob counts while it reads, whichever item names it.
    views = [
        rules.CriterionView(
            c["criterion_id"],
            c["status"],
            tuple((e["evidence_id"], e["digest"]) for e in c["evidence"]),
            frozenset(e["evidence_id"] for e in c["evidence"] if e["retired"]),
        )
        for c in state["criteria"]
    ]
    bad = {
        e["digest"]
        for c in state["criteria"]
        for e in c["evidence"]
        if e["blob_problem"] and not e["retired"]
    }
    blockers = rules.completion_blockers(
        views,
        [(e["effect_id"], e["stage"], e["outcome"]) for e in state["effects"]],
        lambda d: d not in bad,
    )
    complete = _cmd("set_status", ctx.task_id, status=rules.RunStatus.COMPLETED, reason="done")
    if not blockers and st_allowed(ctx.status, rules.RunStatus.COMPLETED):
        actions.append(_item("complete the task", rules.ActorKind.AGENT, complete, evidence=[]))
    elif blockers:
        forbidden.append(
            _item("complete the task", rules.ActorKind.AGENT, complete, reason="; ".join(blockers))
        )


def _effect_brief(
    ctx: _Run,
    e: dict[str, Any],
    scope: Scope,
    approvals: list[dict[str, Any]],
    blockers: list[dict[str, Any]],
    actions: list[dict[str, Any]],
    forbidden: list[dict[str, Any]],
) -> dict[str, Any]:
    eid, target = e["effect_id"], e["target"]
    task_id = ctx.task_id
    observed = None if is_destination(target) else _observe(scope, target)
    atts = e["attempts"]
    intent_ref = {"kind": "intent", "id": eid, "digest": e["intent"]["prepared_digest"]}
    brief: dict[str, Any] = {
        "id": eid,
        "kind": e["kind"],
        "target": target,
        "stage": e["stage"],
        "outcome": e["outcome"],
        "attempts": len(atts),
        "dispatched": bool(atts),
        "observed_now": observed,
    }
    rec = e["reconciliation"] or {}
    if rec.get("overrode"):
        brief["override"] = {
            "decision": rec["verdict"],
            "observation_said": rec["overrode"],
            "by": rec.get("by"),
            "reason": rec.get("note", ""),
        }
    dispatch = _cmd("dispatch_effect", task_id, effect_id=eid)

    def refuse_dispatch(text: str, reason: str) -> None:
        forbidden.append(_item(text, rules.ActorKind.AGENT, dispatch, ("executor",), reason=reason))

    if not effect_unresolved(e["stage"], e["outcome"]):
        brief["meaning"] = (
            "cancelled: nothing was sent" if e["stage"] == "cancelled" else "done and reconciled"
        )
        if e["stage"] != "cancelled":
            refuse_dispatch(
                f"dispatch effect {eid} again", "it already happened (reconciled present)"
            )
        return brief
    if rules.conflict_undecided(e["stage"], e["outcome"], rec.get("verdict")):
        brief["meaning"] = (
            f"dispatched ({len(atts)} attempt(s)); reconciling found a conflict: "
            "a person must decide it"
        )
        obs = e["observations"][-1]["observation_id"] if e["observations"] else None
        blockers.append(
            {
                "kind": "conflict_undecided",
                "effect_id": eid,
                "target": target,
                "inspect": target,
                "decided_by": rules.ActorKind.PERSON,
                "message": f"effect {eid}: reconciling found a conflict "
                f"({'; '.join(rec.get('reasons', []))}); a person must decide it "
                "(present, absent or conflict) after inspecting " + target,
            }
        )
        decide = _cmd("reconcile_effect", task_id, effect_id=eid, observation_id=obs)
        actions.append(
            _item(
                f"a person decides the conflict of effect {eid} (inspect {target})",
                rules.ActorKind.PERSON,
                decide,
                ("decision", "note"),
                evidence=[intent_ref],
            )
        )
        forbidden.append(
            _item(
                f"decide the conflict of effect {eid} as an agent",
                rules.ActorKind.AGENT,
                decide,
                ("decision", "note"),
                reason="a hand decision is a person's",
            )
        )
        refuse_dispatch(f"dispatch effect {eid} again", "its conflict is not decided")
        return brief
    if e["outcome"] in {"unknown", "partial"}:
        brief["meaning"] = (
            f"already dispatched ({len(atts)} attempt(s)); the last outcome is {e['outcome']}: "
            "inspect the destination before anything else"
        )
        blockers.append(
            {
                "kind": "effect_to_reconcile",
                "effect_id": eid,
                "target": target,
                "inspect": target,
                "message": f"reconcile effect {eid}: inspect {target} and compare it with the intended "
                f"{e['intent']['intended'].get('digest')}",
            }
        )
        if is_destination(target):
            actions.append(
                _item(
                    f"observe destination {target} of effect {eid} and record what is there",
                    rules.ActorKind.AGENT,
                    _cmd("observe_effect", task_id, effect_id=eid, purpose="reconcile"),
                    ("state",),
                    evidence=[intent_ref],
                )
            )
        else:
            actions.append(
                _item(
                    f"reconcile effect {eid}: the store observes {target} and compares",
                    rules.ActorKind.AGENT,
                    _cmd("reconcile_effect", task_id, effect_id=eid),
                    evidence=[intent_ref],
                )
            )
        refuse_dispatch(
            f"dispatch effect {eid} again",
            f"the last attempt's outcome is {e['outcome']}; inspect {target} first",
        )
        return brief
    if e["stage"] == "observed" and e["outcome"] not in {"failed", "absent"}:
        brief["meaning"] = "dispatched and observed, not reconciled"
        blockers.append(
            {
                "kind": "effect_to_reconcile",
                "effect_id": eid,
                "target": target,
                "inspect": target,
                "message": f"effect {eid} waits for a reconciliation"
                + (f" ({rec.get('verdict')}: {'; '.join(rec.get('reasons', []))})" if rec else ""),
            }
        )
        refuse_dispatch(f"dispatch effect {eid} again", "it is not reconciled")
        return brief
    valid = [a for a in approvals if a["effect_id"] == eid and a["authorizes_now"]]
    if atts:
        brief["meaning"] = f"dispatched before and known not to have happened ({e['outcome']})"
        text = (
            f"retry effect {eid} as attempt {len(atts) + 1} under idempotency key "
            f"{e['idempotency_key']}, or cancel it"
        )
        evidence = [intent_ref]
        if e["observations"]:
            o = e["observations"][-1]
            evidence.append(
                {"kind": "observation", "id": o["observation_id"], "digest": o["digest"]}
            )
    else:
        # Only planned: nothing has left the building.
        brief["meaning"] = "only planned: never dispatched, nothing was sent"
        text = f"dispatch effect {eid} ({e['consequence']})"
        evidence = [intent_ref]
    if e["requires_approval"] and not valid:
        pending = [a for a in approvals if a["effect_id"] == eid and a["state"] == "pending"]
        if pending:
            blockers.append(
                {
                    "kind": "approval_pending",
                    "effect_id": eid,
                    "approval_id": pending[0]["id"],
                    "decided_by": rules.ActorKind.PERSON,
                    "message": f"effect {eid} waits for approval {pending[0]['id']}, "
                    "decided by a person",
                }
            )
            actions.append(
                _item(
                    f"a person decides approval {pending[0]['id']} for effect {eid}: "
                    f"{e['consequence']}",
                    rules.ActorKind.PERSON,
                    _cmd(
                        "decide_approval",
                        task_id,
                        approval_id=pending[0]["id"],
                        decision="approved",
                    ),
                    ("note",),
                    evidence=[intent_ref],
                )
            )
        elif not ctx.closed and ctx.status not in {"stopped", "failed"}:
            actions.append(
                _item(
                    f"request an approval for effect {eid}: {e['consequence']}",
                    rules.ActorKind.AGENT,
                    _cmd(
                        "request_approval",
                        task_id,
                        effect_id=eid,
                        policy=e.get("policy") or "review",
                    ),
                    evidence=[intent_ref],
                )
            )
        refuse_dispatch(
            f"dispatch effect {eid} without a valid approval",
            "its policy requires one and none is valid now",
        )
        return brief
    if not ctx.may_dispatch:
        refuse_dispatch(f"dispatch effect {eid}", f"the run is {ctx.status}")
        return brief
    if valid:
        dispatch = {**dispatch, "approval_id": valid[0]["id"]}
        evidence.append(
            {"kind": "approval", "id": valid[0]["id"], "digest": valid[0]["payload_digest"]}
        )
        text += f" with approval {valid[0]['id']}, valid until {valid[0]['expires_at']}"
    actions.append(_item(text, rules.ActorKind.AGENT, dispatch, ("executor",), evidence=evidence))
    return brief


def _sent_back(
    task_id: str,
    rows: list[dict[str, Any]],
    effects: dict[str, dict[str, Any]],
    blockers: list[dict[str, Any]],
    actions: list[dict[str, Any]],
) -> None:
    """A request a person sent back, not yet asked again: what they asked for, in their
    words, and the next step (revise the object, then ask under the new digest)."""
    for i, a in enumerate(rows):
        if a["state"] != rules.ApprovalState.SENT_BACK:
            continue
        eid = a["effect_id"]
        # Asked again already (a later request for the same effect): that one is the news.
        if eid is not None and any(later["effect_id"] == eid for later in rows[i + 1 :]):
            continue
        if eid is not None and effects.get(eid, {}).get("stage") not in {"planned", "approved"}:
            continue
        who = (a.get("decided_by") or {}).get("id", "a person")
        what = f"effect {eid}" if eid is not None else "the payload"
        blockers.append(
            {
                "kind": "changes_requested",
                "approval_id": a["approval_id"],
                "effect_id": eid,
                "note": a.get("note") or "",
                "message": f"approval {a['approval_id']} was sent back by {who} with changes "
                f"requested: “{a.get('note') or ''}”; revise {what}, then request a new approval",
            }
        )
        if eid is not None:
            actions.append(
                _item(
                    f"revise effect {eid} as {who} asked (“{a.get('note') or ''}”), then "
                    "request a new approval for the revised object",
                    rules.ActorKind.AGENT,
                    _cmd("revise_effect", task_id, effect_id=eid, reason=a.get("note") or ""),
                    ("prepared",),
                    evidence=[
                        {"kind": "approval", "id": a["approval_id"], "digest": a["payload_digest"]}
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
