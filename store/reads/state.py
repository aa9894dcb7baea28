"""A task's whole current state, as `boris show --json` prints it and the desktop shows it."""

from __future__ import annotations

import os
import threading
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from ..blob_db import ServerBlobStore
from ..blobs import BlobStore
from . import queries, retention
from .late import late_changes  # issue 35 part L
from .leases import lease_of
from .waits import task_waits


def approval_state(row: dict[str, Any], now: str) -> str:
    """The stored state, with `expired` judged now by the database's clock."""
    return str(rules.approval_state(str(row["state"]), row["expires_at"], now))


# Blobs found to hash to their digest, keyed by what `stat` says of the file: a blob replaced
# or rewritten gets a new signature and is hashed again; an unchanged one costs one stat.
_VERIFIED: dict[tuple[str, int, int, int, int], bool] = {}
_VERIFIED_LOCK = threading.Lock()


def blob_problem(blobs: BlobStore, digest: str) -> str | None:
    """None when the blob is present, readable and hashes to its digest; else what is wrong."""
    if isinstance(blobs, ServerBlobStore):
        return blobs.remembered_problem(digest)
    path = blobs.path_of(digest)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    key = (digest, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    with _VERIFIED_LOCK:
        if key in _VERIFIED:
            return None
    if not os.access(path, os.R_OK):
        return "unreadable"
    problem = blobs.problem(digest, verify=True)
    if problem is None:
        with _VERIFIED_LOCK:
            if len(_VERIFIED) > 100_000:
                _VERIFIED.clear()
            _VERIFIED[key] = True
    return problem


_blob_problem = blob_problem


def effects(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    effs = queries._rows(conn, t.effects, task_id, t.effects.c.position)
    atts = queries._rows(conn, t.attempts, task_id, t.attempts.c.effect_id, t.attempts.c.attempt_no)
    obs = queries._rows(conn, t.observations, task_id, t.observations.c.seq)
    for e in effs:
        # `id` is the stable name every read uses; `effect_id` stays for existing readers.
        e["id"] = e["effect_id"]
        e["attempts"] = [a for a in atts if a["effect_id"] == e["effect_id"]]
        e["observations"] = [o for o in obs if o["effect_id"] == e["effect_id"]]
        e["unresolved"] = rules.effect_unresolved(e["stage"], e["outcome"])
        rec = e["reconciliation"] or {}
        e["conflict_undecided"] = rules.conflict_undecided(
            e["stage"], e["outcome"], rec.get("verdict")
        )
    return effs


def approvals(conn: Connection, task_id: str | None, now: str) -> list[dict[str, Any]]:
    q = sa.select(t.approvals).order_by(t.approvals.c.requested_at)
    if task_id is not None:
        q = q.where(t.approvals.c.task_id == task_id)
    out = []
    for r in conn.execute(q):
        d = dict(r._mapping)
        d["id"] = d["approval_id"]
        d["state"] = approval_state(d, now)
        out.append(d)
    return out


def checkpoints(conn: Connection, task_id: str) -> dict[str, Any]:
    from .checkpoints import checkpoint_rows

    rows = checkpoint_rows(conn, task_id)
    for r in rows:
        r["id"] = r["checkpoint_id"]
    heads = [r["checkpoint_id"] for r in rows if not r["superseded"]]
    return {
        "checkpoints": rows,
        "heads": heads,
        "forks": [heads] if len(heads) > 1 else [],
    }


def task_state(conn: Connection, blobs: BlobStore, task_id: str, now: str) -> dict[str, Any]:
    task = queries.task_row(conn, task_id)
    arts = queries.artifacts(conn, task_id)
    crits = queries._rows(conn, t.criteria, task_id, t.criteria.c.position)
    evid = queries._rows(conn, t.evidence, task_id, t.evidence.c.at)
    problems: list[dict[str, Any]] = []
    # Retired content is a typed absence (store.reads.retention), never a missing blob.
    # Each with its tombstone and weight: blocking or degraded, and what rests on it.
    retired_list = retention.retired_problems(conn, task_id)
    retired = {(r["kind"], r["id"]): r for r in retired_list}
    for a in arts:
        for v in a["versions"]:
            stone = retired.get(
                ("artifact_version", retention.artifact_item(a["artifact_id"], v["version"]))
            )
            v["retired"] = stone
            p = "retired" if stone else _blob_problem(blobs, v["digest"])
            v["blob_problem"] = p
            if p and not stone:
                problems.append(
                    {
                        "kind": "artifact_version",
                        "id": f"{a['artifact_id']} v{v['version']}",
                        "digest": v["digest"],
                        "problem": p,
                        "owner": {"artifact_id": a["artifact_id"], "version": v["version"]},
                    }
                )
    for e in evid:
        stone = retired.get(("evidence", e["evidence_id"]))
        e["retired"] = stone
        p = "retired" if stone else _blob_problem(blobs, e["digest"])
        e["blob_problem"] = p
        if p and not stone:
            problems.append(
                {
                    "kind": "evidence",
                    "id": e["evidence_id"],
                    "digest": e["digest"],
                    "problem": p,
                    "owner": {"criterion_id": e["criterion_id"], "evidence_id": e["evidence_id"]},
                }
            )
    by_crit: dict[str, list[dict[str, Any]]] = {}
    for e in evid:
        by_crit.setdefault(e["criterion_id"], []).append(e)
    for c in crits:
        c["evidence"] = by_crit.get(c["criterion_id"], [])
        # What the criterion counts as now: satisfied only while each item of its evidence
        # can be read and none was retired (its blob_problem says which), item by item.
        c["state"] = str(
            rules.criterion_state(c["status"], c["evidence"], lambda e: not e["blob_problem"])
        )
        c["evidence_missing"] = [e["evidence_id"] for e in c["evidence"] if e["blob_problem"]]
    revisions = queries.objective(conn, task_id)
    budgets = queries._rows(conn, t.budgets, task_id, t.budgets.c.counter)
    for b in budgets:
        b["exhausted"] = rules.budget_exhausted(b["used"], b["limit_value"])
    state = {
        "id": task["task_id"],
        "title": task["title"],
        "owner": task["owner"],
        "status": task["status"],
        "status_reason": task["status_reason"],
        "scope": task["scope"],
        "created_at": task["created_at"],
        "updated_at": task["updated_at"],
        "last_seq": task["last_seq"],
        "head_hash": task["head_hash"],
        "objective": revisions[-1] if revisions else None,
        "objective_revisions": revisions,
        "criteria": crits,
        "artifacts": arts,
        "phases": list(queries.derive_phases(conn, task_id).values()),
        "budgets": budgets,
        "effects": effects(conn, task_id),
        "approvals": approvals(conn, task_id, now),
        "checkpoints": checkpoints(conn, task_id),
        # Who works on the task now (store.reads.leases): None when it was never leased.
        "lease": lease_of(conn, task_id, now),
        # Scheduled waits, judged at `now` (store.reads.waits).
        "waits": task_waits(conn, task_id, now),
        "problems": problems,
        # Retired items, each blocking or degraded (store.reads.retention.retired_problems).
        "retired": retired_list,
        # What changed after completion, not yet answered by a person (store.reads.late).
        "late": late_changes(conn, task_id),
        "now": now,
    }
    state["pending_work"] = pending_of(state)
    return state


#: Approval states that still count as open work: decided but unused, or waiting.
_OPEN_APPROVALS = frozenset(
    {rules.ApprovalState.PENDING, rules.ApprovalState.APPROVED, rules.ApprovalState.EXPIRED}
)


def pending_of(task: dict[str, Any]) -> list[str]:
    """The task's pending work (`rules.pending_work`) over the state this read assembled:
    what a final checkpoint may not leave behind, said once for the window and the brief."""
    return rules.pending_work(
        {
            "criteria": [
                {"id": c["criterion_id"], "status": c.get("state") or c["status"]}
                for c in task["criteria"]
            ],
            "unresolved_effects": [
                {
                    "id": e["effect_id"],
                    "stage": e["stage"],
                    "outcome": e["outcome"],
                    "safe_recovery": rules.recovery(
                        e["stage"], e["outcome"], bool(e.get("requires_approval"))
                    ),
                }
                for e in task["effects"]
                if rules.effect_unresolved(e["stage"], e["outcome"])
            ],
            "open_approvals": [
                {"id": a["approval_id"], "state": a["state"]}
                for a in task["approvals"]
                if a["state"] in _OPEN_APPROVALS
            ],
            "pending_phases": [
                {"id": p["phase_id"], "status": p["readiness"]}
                for p in task.get("phases", [])
                if p.get("readiness") != rules.PhaseReadiness.DONE
            ],
            "open_waits": [
                {"id": w["wait_id"], "kind": w["kind"]}
                for w in task.get("waits", [])
                if w["state"] == rules.WaitState.OPEN
            ],
        }
    )
