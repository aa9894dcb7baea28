"""A task's whole current state, as `boris show --json` prints it and the desktop shows it."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from ..blob_db import ServerBlobStore
from ..blobs import BlobStore
from . import queries, retention
from .checkpoints import checkpoints
from .late import late_changes  # issue 35 part L
from .leases import lease_of
from .retention import RetiredItem, Tombstone
from .state_models import (
    Approval,
    Artifact,
    ArtifactVersionOwner,
    Budget,
    Criterion,
    Effect,
    Evidence,
    EvidenceOwner,
    ObjectiveRevision,
    Phase,
    Problem,
    TaskState,
)
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


def effects(conn: Connection, task_id: str) -> list[Effect]:
    """The task's effects in order, each with its attempts and observations (`boris
    effects`, the task's state)."""
    effs = queries._rows(conn, t.effects, task_id, t.effects.c.position)
    atts = queries._rows(conn, t.attempts, task_id, t.attempts.c.effect_id, t.attempts.c.attempt_no)
    obs = queries._rows(conn, t.observations, task_id, t.observations.c.seq)
    out = []
    for e in effs:
        rec = e["reconciliation"] or {}
        out.append(
            Effect.model_validate(
                {
                    **e,
                    # `id` is the stable name every read uses; `effect_id` stays too.
                    "id": e["effect_id"],
                    "attempts": [a for a in atts if a["effect_id"] == e["effect_id"]],
                    "observations": [o for o in obs if o["effect_id"] == e["effect_id"]],
                    "unresolved": rules.effect_unresolved(e["stage"], e["outcome"]),
                    "conflict_undecided": rules.conflict_undecided(
                        e["stage"], e["outcome"], rec.get("verdict")
                    ),
                }
            )
        )
    return out


def approvals(conn: Connection, task_id: str | None, now: str) -> list[Approval]:
    """The task's approvals (every task's when None), oldest request first, their state
    judged at `now` (`boris approvals`, the task's state)."""
    q = sa.select(t.approvals).order_by(t.approvals.c.requested_at)
    if task_id is not None:
        q = q.where(t.approvals.c.task_id == task_id)
    out = []
    for r in conn.execute(q):
        d = dict(r._mapping)
        d["id"] = d["approval_id"]
        d["state"] = approval_state(d, now)
        out.append(Approval.model_validate(d))
    return out


def task_state(conn: Connection, blobs: BlobStore, task_id: str, now: str) -> TaskState:
    """The task's whole current state read at `now` (`Store.task`, `boris show`)."""
    task = queries.task_row(conn, task_id)
    # Retired content is a typed absence (store.reads.retention), never a missing blob.
    # Each with its tombstone and weight: blocking or degraded, and what rests on it.
    retired_list = retention.retired_problems(conn, task_id)
    retired = {(r.kind, r.id): Tombstone(**_tombstone_of(r)) for r in retired_list}
    problems: list[Problem] = []
    arts = _artifacts(conn, blobs, task_id, retired, problems)
    evidence = _evidence(conn, blobs, task_id, retired, problems)
    revisions = [ObjectiveRevision.model_validate(r) for r in queries.objective(conn, task_id)]
    budgets = [
        Budget.model_validate(
            {**b, "exhausted": rules.budget_exhausted(b["used"], b["limit_value"])}
        )
        for b in queries._rows(conn, t.budgets, task_id, t.budgets.c.counter)
    ]
    fields: dict[str, Any] = {
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
        "criteria": _criteria(conn, task_id, evidence),
        "artifacts": arts,
        "phases": [Phase.model_validate(p) for p in queries.derive_phases(conn, task_id).values()],
        "budgets": budgets,
        "effects": effects(conn, task_id),
        "approvals": approvals(conn, task_id, now),
        "checkpoints": checkpoints(conn, task_id),
        "lease": lease_of(conn, task_id, now),
        "waits": task_waits(conn, task_id, now),
        "problems": problems,
        "retired": retired_list,
        "late": late_changes(conn, task_id),
        "now": now,
        "pending_work": [],
    }
    # Its parts were each validated as they were read: validating the whole only checks
    # that each is the model it should be. Its pending work is then said over them.
    state = TaskState.model_validate(fields)
    return state.model_copy(update={"pending_work": pending_of(state)})


def _tombstone_of(item: RetiredItem) -> dict[str, Any]:
    """The tombstone's own fields of a retired item (what an evidence item or a version
    carries as `retired`)."""
    return {name: getattr(item, name) for name in Tombstone.model_fields}


def _artifacts(
    conn: Connection,
    blobs: BlobStore,
    task_id: str,
    retired: dict[tuple[str, str], Tombstone],
    problems: list[Problem],
) -> list[Artifact]:
    """The task's artifacts, each version with its tombstone or the problem of its blob."""
    arts = queries.artifacts(conn, task_id)
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
                    Problem(
                        kind="artifact_version",
                        id=f"{a['artifact_id']} v{v['version']}",
                        digest=v["digest"],
                        problem=p,
                        owner=ArtifactVersionOwner(
                            artifact_id=a["artifact_id"], version=v["version"]
                        ),
                    )
                )
    return [Artifact.model_validate(a) for a in arts]


def _evidence(
    conn: Connection,
    blobs: BlobStore,
    task_id: str,
    retired: dict[tuple[str, str], Tombstone],
    problems: list[Problem],
) -> list[Evidence]:
    """The task's evidence, each item with its tombstone or the problem of its blob."""
    out = []
    for e in queries._rows(conn, t.evidence, task_id, t.evidence.c.at):
        stone = retired.get(("evidence", e["evidence_id"]))
        p = "retired" if stone else _blob_problem(blobs, e["digest"])
        if p and not stone:
            problems.append(
                Problem(
                    kind="evidence",
                    id=e["evidence_id"],
                    digest=e["digest"],
                    problem=p,
                    owner=EvidenceOwner(
                        criterion_id=e["criterion_id"], evidence_id=e["evidence_id"]
                    ),
                )
            )
        out.append(Evidence.model_validate({**e, "retired": stone, "blob_problem": p}))
    return out


def _criteria(conn: Connection, task_id: str, evidence: list[Evidence]) -> list[Criterion]:
    by_crit: dict[str, list[Evidence]] = {}
    for e in evidence:
        by_crit.setdefault(e.criterion_id, []).append(e)
    out = []
    for c in queries._rows(conn, t.criteria, task_id, t.criteria.c.position):
        items = by_crit.get(c["criterion_id"], [])
        # What the criterion counts as now: satisfied only while each item of its evidence
        # can be read and none was retired (its blob_problem says which), item by item.
        state = rules.criterion_state(c["status"], items, lambda e: not e.blob_problem)
        missing = [e.evidence_id for e in items if e.blob_problem]
        out.append(
            Criterion.model_validate(
                {**c, "evidence": items, "state": state, "evidence_missing": missing}
            )
        )
    return out


#: Approval states that still count as open work: decided but unused, or waiting.
_OPEN_APPROVALS = frozenset(
    {rules.ApprovalState.PENDING, rules.ApprovalState.APPROVED, rules.ApprovalState.EXPIRED}
)


def pending_of(
    task: TaskState, phases: Sequence[tuple[str, rules.PhaseReadiness]] | None = None
) -> list[str]:
    """The task's pending work (`rules.pending_work`) over the state this read assembled
    (with `phases`, each id and readiness, in place of its own: what it would be after a
    change): what a final checkpoint may not leave behind, said once for the window and
    the brief."""
    if phases is None:
        phases = [(p.phase_id, p.readiness) for p in task.phases]
    return rules.pending_work(
        {
            "criteria": [{"id": c.criterion_id, "status": c.state} for c in task.criteria],
            "unresolved_effects": [
                {
                    "id": e.effect_id,
                    "stage": e.stage,
                    "outcome": e.outcome,
                    "safe_recovery": rules.recovery(e.stage, e.outcome, e.requires_approval),
                }
                for e in task.effects
                if rules.effect_unresolved(e.stage, e.outcome)
            ],
            "open_approvals": [
                {"id": a.approval_id, "state": a.state}
                for a in task.approvals
                if a.state in _OPEN_APPROVALS
            ],
            "pending_phases": [
                {"id": phase_id, "status": readiness}
                for phase_id, readiness in phases
                if readiness != rules.PhaseReadiness.DONE
            ],
            "open_waits": [
                {"id": w.wait_id, "kind": w.kind}
                for w in task.waits
                if w.state == rules.WaitState.OPEN
            ],
        }
    )
