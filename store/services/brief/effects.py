"""The brief's effects and approvals: each effect by the case it is in (settled, a conflict a
person decides, an outcome unknown, observed and not reconciled, or to dispatch), each
approval as history unless it is valid now, a request sent back, and intents pinned to an
older tool definition. An effect whose outcome is not known is never retried blind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ... import rules
from ...model import Scope
from ...rules import effect_unresolved, is_destination
from .models import ApprovalBrief
from .said import Run, Said, cmd, item, observe

if TYPE_CHECKING:
    from ...reads.state_models import Approval, Effect, Reconciliation
    from ...store import Store


def approval_briefs(
    rows: list[Approval], effects: dict[str, Effect], said: Said
) -> list[ApprovalBrief]:
    """Each approval as history, `authorizes_now` only while it is valid at this moment; an
    expired or stale one on an effect not yet sent blocks it (a new request is needed)."""
    approvals = []
    for a in rows:
        approvals.append(
            ApprovalBrief(
                id=a.approval_id,
                effect_id=a.effect_id,
                state=a.state,
                payload_digest=a.payload_digest,
                expires_at=a.expires_at,
                authorizes_now=_valid_now(a, effects),
            )
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


def _valid_now(a: Approval, effects: dict[str, Effect]) -> bool:
    """Authorizes something now: approved, not expired (state says), unused, payload as is."""
    if a.state != "approved":
        return False
    e = effects.get(a.effect_id or "")
    return e is None or e.intent.prepared_digest == a.payload_digest


def sent_back(task_id: str, rows: list[Approval], effects: dict[str, Effect], said: Said) -> None:
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
                item(
                    f"revise effect {eid} as {who} asked (“{a.note or ''}”), then "
                    "request a new approval for the revised object",
                    rules.ActorKind.AGENT,
                    cmd("revise_effect", task_id, effect_id=eid, reason=a.note or ""),
                    ("prepared",),
                    evidence=[
                        {"kind": "approval", "id": a.approval_id, "digest": a.payload_digest}
                    ],
                )
            )


@dataclass(frozen=True)
class _EffectCase:
    """One effect as its part of the brief reads it: the run, the effect's row, the entry
    the brief shows for it (each case adds its meaning), and what the brief says."""

    ctx: Run
    e: Effect
    brief: dict[str, Any]
    said: Said

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
        return cmd("dispatch_effect", self.ctx.task_id, effect_id=self.eid)

    def refuse_dispatch(self, text: str, reason: str) -> None:
        self.said.forbidden.append(
            item(text, rules.ActorKind.AGENT, self.dispatch, ("executor",), reason=reason)
        )


def effect_brief(
    ctx: Run,
    e: Effect,
    scope: Scope,
    approvals: list[ApprovalBrief],
    said: Said,
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
        "observed_now": None if is_destination(target) else observe(scope, target),
    }
    rec = e.reconciliation
    if rec is not None and rec.overrode:
        brief["override"] = {
            "decision": rec.verdict,
            "observation_said": rec.overrode,
            "by": rec.by,
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
    decide = cmd("reconcile_effect", case.ctx.task_id, effect_id=eid, observation_id=obs)
    case.said.actions.append(
        item(
            f"a person decides the conflict of effect {eid} (inspect {target})",
            rules.ActorKind.PERSON,
            decide,
            ("decision", "note"),
            evidence=[case.intent_ref],
        )
    )
    case.said.forbidden.append(
        item(
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
            item(
                f"observe destination {target} of effect {eid} and record what is there",
                rules.ActorKind.AGENT,
                cmd("observe_effect", task_id, effect_id=eid, purpose="reconcile"),
                ("state",),
                evidence=[case.intent_ref],
            )
        )
    else:
        case.said.actions.append(
            item(
                f"reconcile effect {eid}: the store observes {target} and compares",
                rules.ActorKind.AGENT,
                cmd("reconcile_effect", task_id, effect_id=eid),
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


def _effect_to_dispatch(case: _EffectCase, approvals: list[ApprovalBrief]) -> None:
    """Never dispatched, or known not to have happened: dispatch it (a retry under the same
    idempotency key), with an approval valid now where its policy requires one, while the
    run may dispatch."""
    eid, e = case.eid, case.e
    valid = [a for a in approvals if a.effect_id == eid and a.authorizes_now]
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
        dispatch = {**dispatch, "approval_id": valid[0].id}
        evidence.append({"kind": "approval", "id": valid[0].id, "digest": valid[0].payload_digest})
        text += f" with approval {valid[0].id}, valid until {valid[0].expires_at}"
    case.said.actions.append(
        item(text, rules.ActorKind.AGENT, dispatch, ("executor",), evidence=evidence)
    )


def _approval_needed(case: _EffectCase, approvals: list[ApprovalBrief]) -> None:
    """Its policy requires an approval and none is valid now: a pending one is a person's
    to decide; else the agent requests one (not on a run that ended). Never dispatched
    without."""
    eid, e, ctx = case.eid, case.e, case.ctx
    pending = [
        a for a in approvals if a.effect_id == eid and a.state == rules.ApprovalState.PENDING
    ]
    if pending:
        case.said.blockers.append(
            {
                "kind": "approval_pending",
                "effect_id": eid,
                "approval_id": pending[0].id,
                "decided_by": rules.ActorKind.PERSON,
                "message": f"effect {eid} waits for approval {pending[0].id}, decided by a person",
            }
        )
        case.said.actions.append(
            item(
                f"a person decides approval {pending[0].id} for effect {eid}: {e.consequence}",
                rules.ActorKind.PERSON,
                cmd(
                    "decide_approval",
                    ctx.task_id,
                    approval_id=pending[0].id,
                    decision="approved",
                ),
                ("note",),
                evidence=[case.intent_ref],
            )
        )
    elif not ctx.closed and ctx.status not in {"stopped", "failed"}:
        case.said.actions.append(
            item(
                f"request an approval for effect {eid}: {e.consequence}",
                rules.ActorKind.AGENT,
                cmd(
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


def tool_drift(store: Store, task_id: str, effect_briefs: list[dict[str, Any]], said: Said) -> None:
    """Intents planned under an older tool definition than the current configuration's
    (issue 35 part M): each a blocker, its dispatch forbidden (rules.pinned_tool_refusal),
    until a person re-pins it (`migrate_effect_tool`) or it is cancelled and re-planned."""
    from ...reads.manifests import intent_drift

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
            item(
                f"review effect {eid} against the current definition of {d['tool']} and "
                "re-pin it if it means the same under it",
                rules.ActorKind.PERSON,
                cmd("migrate_effect_tool", task_id, effect_id=eid),
                ("reason",),
                evidence=evidence,
            )
        )
        said.actions.append(
            item(
                f"cancel effect {eid} and plan it again under the current definition of "
                f"{d['tool']}",
                rules.ActorKind.AGENT,
                cmd("cancel_effect", task_id, effect_id=eid),
                ("reason",),
                evidence=evidence,
            )
        )
        said.forbidden.append(
            item(
                f"dispatch effect {eid}",
                rules.ActorKind.AGENT,
                cmd("dispatch_effect", task_id, effect_id=eid),
                ("executor",),
                reason=d["drift"],
            )
        )
