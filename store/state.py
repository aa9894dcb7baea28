"""A task's whole current state, as `boris show --json` prints it and the desktop shows it."""

from __future__ import annotations

import os
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import queries
from . import schema as t
from .blobs import BlobStore


def approval_state(row: dict[str, Any], now: str) -> str:
    """The stored state, with `expired` judged now by the database's clock."""
    state = str(row["state"])
    if state in {"pending", "approved"} and row["expires_at"] <= now:
        return "expired"
    return state


def _blob_problem(blobs: BlobStore, digest: str) -> str | None:
    problem = blobs.problem(digest, verify=False)
    if problem is None and not os.access(blobs.path_of(digest), os.R_OK):
        return "unreadable"
    return problem


def effects(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    effs = queries._rows(conn, t.effects, task_id, t.effects.c.position)
    atts = queries._rows(conn, t.attempts, task_id, t.attempts.c.effect_id, t.attempts.c.attempt_no)
    obs = queries._rows(conn, t.observations, task_id, t.observations.c.seq)
    for e in effs:
        # `id` is the stable name every read uses; `effect_id` stays for existing readers.
        e["id"] = e["effect_id"]
        e["attempts"] = [a for a in atts if a["effect_id"] == e["effect_id"]]
        e["observations"] = [o for o in obs if o["effect_id"] == e["effect_id"]]
        from .commands import effect_unresolved

        e["unresolved"] = effect_unresolved(e["stage"], e["outcome"])
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
    from .checkpoint_reads import checkpoint_rows

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
    for a in arts:
        for v in a["versions"]:
            p = _blob_problem(blobs, v["digest"])
            v["blob_problem"] = p
            if p:
                problems.append(
                    {
                        "kind": "artifact_version",
                        "id": f"{a['artifact_id']} v{v['version']}",
                        "digest": v["digest"],
                        "problem": p,
                    }
                )
    for e in evid:
        p = _blob_problem(blobs, e["digest"])
        e["blob_problem"] = p
        if p:
            problems.append(
                {"kind": "evidence", "id": e["evidence_id"], "digest": e["digest"], "problem": p}
            )
    by_crit: dict[str, list[dict[str, Any]]] = {}
    for e in evid:
        by_crit.setdefault(e["criterion_id"], []).append(e)
    for c in crits:
        c["evidence"] = by_crit.get(c["criterion_id"], [])
    revisions = queries.objective(conn, task_id)
    budgets = queries._rows(conn, t.budgets, task_id, t.budgets.c.counter)
    for b in budgets:
        b["exhausted"] = b["limit_value"] is not None and b["used"] >= b["limit_value"]
    return {
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
        "problems": problems,
        "now": now,
    }
