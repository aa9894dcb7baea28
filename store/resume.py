"""The resume brief: what the next actor may do, and the evidence for it, from the record alone.

Built from the current head checkpoint, the events after it, and a fresh observation of the
files the task depends on (artifact files and effect targets, hashed now). It never reads a
narrative and never invents a version: a missing thing is a blocker that names it. An
approval is history unless it is valid at this moment.
"""

from __future__ import annotations

from typing import Any

from .commands import effect_unresolved
from .errors import ScopeViolation, StoreError
from .ledger import observe_file
from .model import Scope
from .scope import is_destination, resolve_path
from .store import Store


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

    criteria = []
    for cr in state["criteria"]:
        status = cr["status"]
        reason = ""
        art = artifacts.get(cr["artifact_id"] or "")
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
        if status == "stale":
            blockers.append(
                {
                    "kind": "stale_criterion",
                    "criterion_id": cr["criterion_id"],
                    "message": f"criterion {cr['criterion_id']} is stale: {reason}",
                }
            )
            actions.append(
                {
                    "action": f"re-check criterion {cr['criterion_id']} against "
                    + (f"{target['id']} ({target['digest']})" if target else "the artifact"),
                    "evidence": [x for x in (target,) if x] + evidence,
                }
            )
        elif status in {"unverified", "failed"}:
            missing_ev = [e["evidence_id"] for e in cr["evidence"] if e["blob_problem"]]
            if missing_ev:
                blockers.append(
                    {
                        "kind": "missing_evidence",
                        "criterion_id": cr["criterion_id"],
                        "message": f"criterion {cr['criterion_id']}: evidence {', '.join(missing_ev)} is missing",
                    }
                )
            actions.append(
                {
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

    effect_briefs = []
    for e in state["effects"]:
        eb = _effect_brief(e, scope, approvals, blockers, actions, forbidden)
        effect_briefs.append(eb)

    lineage = state["checkpoints"]
    if len(lineage["heads"]) > 1:
        blockers.append(
            {
                "kind": "fork",
                "heads": lineage["heads"],
                "message": f"the checkpoint lineage has forked (heads {', '.join(lineage['heads'])}): "
                "merge before continuing; neither branch is picked silently",
            }
        )
    if head is None:
        blockers.append(
            {
                "kind": "no_checkpoint",
                "message": "the task has no checkpoint: the brief rests on the whole event log",
            }
        )
    obj = state["objective"]
    return {
        "task_id": task_id,
        "title": state["title"],
        "status": state["status"],
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
        "observed_at": state["now"],
    }


def _effect_brief(
    e: dict[str, Any],
    scope: Scope,
    approvals: list[dict[str, Any]],
    blockers: list[dict[str, Any]],
    actions: list[dict[str, Any]],
    forbidden: list[dict[str, Any]],
) -> dict[str, Any]:
    eid, target = e["effect_id"], e["target"]
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
    if not effect_unresolved(e["stage"], e["outcome"]):
        brief["meaning"] = (
            "cancelled: nothing was sent" if e["stage"] == "cancelled" else "done and reconciled"
        )
        if e["stage"] != "cancelled":
            forbidden.append(
                {
                    "action": f"dispatch effect {eid} again",
                    "reason": "it already happened (reconciled present)",
                }
            )
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
        forbidden.append(
            {
                "action": f"dispatch effect {eid} again",
                "reason": f"the last attempt's outcome is {e['outcome']}; inspect {target} first",
            }
        )
        return brief
    if e["stage"] == "observed":
        brief["meaning"] = "dispatched and observed, not reconciled"
        rec = e["reconciliation"] or {}
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
        forbidden.append(
            {"action": f"dispatch effect {eid} again", "reason": "it is not reconciled"}
        )
        return brief
    if atts:
        why = e["outcome"]
        brief["meaning"] = f"dispatched before and known not to have happened ({why})"
        evidence = [intent_ref]
        if e["observations"]:
            o = e["observations"][-1]
            evidence.append(
                {"kind": "observation", "id": o["observation_id"], "digest": o["digest"]}
            )
        actions.append(
            {
                "action": f"retry effect {eid} as attempt {len(atts) + 1} under idempotency key "
                f"{e['idempotency_key']}, or cancel it",
                "evidence": evidence,
            }
        )
        return brief
    # Only planned: nothing has left the building.
    brief["meaning"] = "only planned: never dispatched, nothing was sent"
    valid = [a for a in approvals if a["effect_id"] == eid and a["authorizes_now"]]
    if e["requires_approval"] and not valid:
        pending = [a for a in approvals if a["effect_id"] == eid and a["state"] == "pending"]
        if pending:
            blockers.append(
                {
                    "kind": "approval_pending",
                    "effect_id": eid,
                    "approval_id": pending[0]["id"],
                    "message": f"effect {eid} waits for approval {pending[0]['id']}",
                }
            )
        else:
            actions.append(
                {
                    "action": f"request an approval for effect {eid}: {e['consequence']}",
                    "evidence": [intent_ref],
                }
            )
        forbidden.append(
            {
                "action": f"dispatch effect {eid} without a valid approval",
                "reason": "its policy requires one and none is valid now",
            }
        )
        return brief
    evidence = [intent_ref] + [
        {"kind": "approval", "id": a["id"], "digest": a["payload_digest"]} for a in valid[:1]
    ]
    actions.append(
        {
            "action": f"dispatch effect {eid} ({e['consequence']})"
            + (
                f" with approval {valid[0]['id']}, valid until {valid[0]['expires_at']}"
                if valid
                else ""
            ),
            "evidence": evidence,
        }
    )
    return brief


def brief_markdown(b: dict[str, Any]) -> str:
    lines = [f"# Resume brief: {b['title']} ({b['task_id']})", ""]
    lines.append(f"Status: **{b['status']}** — observed at {b['observed_at']}")
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
        ("Next actions", "next_actions", lambda x: x["action"] + _refs(x["evidence"])),
        ("Blockers", "blockers", lambda x: x["message"]),
        ("Forbidden", "forbidden", lambda x: f"{x['action']}: {x['reason']}"),
    ):
        lines += ["", f"## {title}"]
        lines += [f"- {fmt(x)}" for x in b[key]] or ["- none"]
    lines += ["", "## Effects"]
    lines += [f"- {e['id']} {e['kind']} → {e['target']}: {e['meaning']}" for e in b["effects"]] or [
        "- none"
    ]
    lines += ["", "## Approvals (history; only `authorizes now` counts)"]
    lines += [
        f"- {a['id']} {a['state']}" + (" — authorizes now" if a["authorizes_now"] else "")
        for a in b["approvals"]
    ] or ["- none"]
    return "\n".join(lines) + "\n"


def _refs(evidence: list[dict[str, Any]]) -> str:
    if not evidence:
        return ""
    return (
        " (evidence: " + ", ".join(f"{x['kind']} {x['id']} {x['digest']}" for x in evidence) + ")"
    )
