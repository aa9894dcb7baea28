"""Open decisions across every task: what waits on a person now, in one read.

The reviewer's queue (the desktop's Decisions view, and `boris decisions [--mine] [--kind
KIND] [--task TASK] [--json]` in store.cli.decisions): pending approvals, effects whose
outcome must be reconciled (or whose reconciliation found a conflict), criteria awaiting a
person's judgement, runs stopped by policy or their owner that only a person resumes,
scheduled waits no agent will move, and completed tasks changed after completion.
Which of those are open is `store.rules`' word; this module only reads the rows, one query
per table (no N+1), so it stays quick on ten thousand tasks.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from pydantic import Field
from sqlalchemy.engine import Connection, CursorResult

from .. import rules
from .. import schema as t
from ..blobs import BlobStore
from .actors import ActorRef
from .read_model import ReadModel
from .routing import pending_routes
from .state import blob_problem


class DecisionKind(StrEnum):
    """What a person is asked to decide, in the order the queue lists kinds without expiry."""

    APPROVAL = "approval"
    RECONCILE = "reconcile"
    CONFLICT = "conflict"
    JUDGE = "judge"
    RESUME = "resume"
    #: A scheduled wait no agent will move (store.rules.wait_needs_person).
    WAIT = "wait"
    #: What changed after a task completed: acknowledge it or open a follow-up (issue 35 L).
    LATE = "late_changes"


APPROVAL, RECONCILE, CONFLICT, JUDGE, RESUME, WAIT, LATE = tuple(DecisionKind)
KINDS = (APPROVAL, RECONCILE, CONFLICT, JUDGE, RESUME, WAIT, LATE)


class Decision(ReadModel):
    """One open decision: the window's queue row, a row of `boris decisions --json`."""

    id: str = Field(description="KIND:TASK_ID:KEY, stable while the decision is open")
    kind: DecisionKind
    task_id: str
    task_title: str
    owner: str = Field(description="the task's owner")
    key: str = Field(description="the approval, effect, criterion or wait id; the task id (resume)")
    what: str = Field(description="what is decided: a consequence, a criterion's text, a run")
    why: str = Field(description="why it waits on a person, and what may be decided")
    since: str | None = Field(description="waiting since (UTC, ISO 8601)")
    expires_at: str | None = Field(description="when an approval expires; null for the rest")
    requester: ActorRef | None = Field(
        description="who asked for an approval ({kind, id, name}); null for the rest"
    )
    waits_on: list[str] | None = Field(
        default=None,
        description="a routed approval (issue 42): the people (ids) who may decide it now, "
        "its escalation's included once due; null when its policy routes it to nobody",
    )
    routing: str | None = Field(
        default=None,
        description="a routed approval: who it waits on and when it escalates, in words "
        '("waiting on group:release (rita, ben); escalates to person:olga at …"); else null',
    )


class Decisions(ReadModel):
    """The open decisions with the database clock they were read at: `decisions`, and
    `boris decisions --json` (which says for whom, with --mine)."""

    now: str = Field(description="the database clock the queue was read at")
    decider: str | None = Field(
        default=None, description="with --mine, the actor (kind:id) it was read for; else null"
    )
    decisions: list[Decision] = Field(
        description="approvals soonest expiry first, then the rest longest waiting first"
    )


def decision(
    kind: DecisionKind,
    task: Any,
    key: str,
    what: str,
    why: str,
    since: str | None,
    now: str,
    *,
    expires_at: str | None = None,
    requester: ActorRef | None = None,
) -> Decision:
    """A row, about the task whose columns `task` carries (`_TASK`): waiting since `since`,
    else since the task's last change. Validated as it is built: on 100,000 tasks that cost
    nothing measurable (the whole queue of 6,667 rows, or a page of 200, read as fast as
    with `model_construct`)."""
    return Decision(
        id=f"{kind}:{task.task_id}:{key}",
        kind=kind,
        task_id=task.task_id,
        task_title=task.task_title,
        owner=task.task_owner,
        key=key,
        what=what,
        why=why,
        since=since if since is not None else (task.task_updated_at or now),
        expires_at=expires_at,
        requester=requester,
    )


def _verdict(reconciliation: Any) -> str | None:
    if isinstance(reconciliation, dict):
        v = reconciliation.get("verdict")
        return str(v) if v is not None else None
    return None


#: The task's columns every decision row carries, read in the same query (a join).
_TASK = (
    t.tasks.c.title.label("task_title"),
    t.tasks.c.owner.label("task_owner"),
    t.tasks.c.updated_at.label("task_updated_at"),
)


def _approval_why(r: Any) -> str:
    """What a pending approval waits for; where several people must approve, how far it
    has come ("1 of 2 approved by maria")."""
    why = f"approve or reject (policy: {r.policy}); only a person decides"
    if int(r.approvers) <= 1:
        return why
    people = [str(x.get("id")) for x in (r.approved_by or [])]
    return f"{rules.quorum_words(people, int(r.approvers))}; {why}"


#: A closed record (rules.record_open) takes no judgement: its criteria wait on nobody.
_CLOSED = sorted(rules.CLOSED)


def open_decisions(conn: Connection, now: str, blobs: BlobStore) -> list[Decision]:
    """Every open decision, approvals soonest expiry first, then the rest longest waiting
    first. `blobs`: where a satisfied criterion's evidence is read, as a task's state reads
    it (a criterion whose evidence is gone waits on a person again). Each: `id`
    (KIND:TASK_ID:KEY), `kind`, `task_id`, `task_title`, `owner`, `key` (approval, effect
    or criterion id; the task id for a resume), `what`, `why`, `since` (waiting since),
    `expires_at` (approvals), `requester` (approvals): `Decision`."""
    out = [
        *_approvals_pending(conn, now),
        *_effects_to_decide(conn, now),
        *_criteria_to_judge(conn, now, blobs),
        *_runs_to_resume(conn, now),
        *_waits(conn, now),
        *_late(conn, now),
    ]
    out.sort(key=order_key)
    return with_routing(conn, out, now)


#: Tasks asked about by name in the query of their routes (well under any engine's parameter
#: limit); more, and every pending route is read.
_ROUTES_AT_ONCE = 500


def with_routing(conn: Connection, rows: list[Decision], now: str) -> list[Decision]:
    """The rows, each routed approval's with who it waits on now and its routing in words
    (store.reads.routing; its `why` starts with them): one query."""
    tasks = {r.task_id for r in rows if r.kind == APPROVAL}
    if not tasks:
        return rows
    # Many tasks (the whole queue): every pending route in one query, not one per 500.
    found = pending_routes(conn, None if len(tasks) > _ROUTES_AT_ONCE else tasks)
    if not found:
        return rows
    out = []
    for r in rows:
        p = found.get((r.task_id, r.key)) if r.kind == APPROVAL else None
        if p is not None:
            words = p.words(now)
            r = r.model_copy(
                update={
                    "waits_on": list(p.waits_on(now)),
                    "routing": words,
                    "why": f"{words}; {r.why}",
                }
            )
        out.append(r)
    return out


def _approvals_pending(conn: Connection, now: str) -> list[Decision]:
    """Each approval a person has yet to decide, not expired now."""
    pending = conn.execute(
        sa.select(
            t.approvals.c.approval_id,
            t.approvals.c.task_id,
            t.approvals.c.consequence,
            t.approvals.c.policy,
            t.approvals.c.requester,
            t.approvals.c.requested_at,
            t.approvals.c.expires_at,
            t.approvals.c.state,
            t.approvals.c.approvers,
            t.approvals.c.approved_by,
            *_TASK,
        )
        .join(t.tasks, t.tasks.c.task_id == t.approvals.c.task_id)
        .where(t.approvals.c.state == rules.ApprovalState.PENDING.value)
    )
    return [row for r in pending if (row := approval_row(r, now)) is not None]


def _effects_to_decide(conn: Connection, now: str) -> list[Decision]:
    """Each effect whose reconciliation or conflict waits on a person (effect_row says)."""
    effects = conn.execute(
        sa.select(
            t.effects.c.task_id,
            t.effects.c.effect_id,
            t.effects.c.stage,
            t.effects.c.outcome,
            t.effects.c.reconciliation,
            t.effects.c.consequence,
            t.effects.c.requires_approval,
            t.effects.c.updated_at,
            *_TASK,
        ).join(t.tasks, t.tasks.c.task_id == t.effects.c.task_id)
    )
    return [row for e in effects if (row := effect_row(e, now)) is not None]


def _criteria_to_judge(conn: Connection, now: str, blobs: BlobStore) -> list[Decision]:
    """Each criterion of an open record awaiting a person's judgement
    (rules.criterion_awaits_person), counted as a task's state counts it: a satisfied one
    whose evidence cannot be read (or was retired) waits on a person again."""
    counts = _evidence_counts(conn)
    judged_on = _judged_on(conn)

    def evidence_counts(item: tuple[str, bool]) -> bool:
        digest, retired = item
        return not retired and blob_problem(blobs, digest) is None

    judge_rows = []
    for c in _criteria_awaiting(conn):
        key = (c.task_id, c.criterion_id)
        state = rules.criterion_state(c.status, judged_on.get(key, ()), evidence_counts)
        if not rules.criterion_awaits_person(state, counts.get(key, 0)):
            continue
        judge_rows.append(judge_row(c, state, now))
    return judge_rows


def _evidence_counts(conn: Connection) -> dict[tuple[str, str], int]:
    """How many evidence items each criterion has, by (task, criterion)."""
    return {
        (task_id, crit): n
        for task_id, crit, n in conn.execute(
            sa.select(t.evidence.c.task_id, t.evidence.c.criterion_id, sa.func.count()).group_by(
                t.evidence.c.task_id, t.evidence.c.criterion_id
            )
        )
    }


def _judged_on(conn: Connection) -> dict[tuple[str, str], list[tuple[str, bool]]]:
    """The evidence of satisfied criteria only (the others' state is their stored status),
    of open records: each item as (digest, retired); a retired item never counts, though
    its blob reads."""
    judged_on: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    kept = t.retention
    for task_id, crit, digest, retired_at in conn.execute(
        sa.select(
            t.evidence.c.task_id, t.evidence.c.criterion_id, t.evidence.c.digest, kept.c.retired_at
        )
        .join(
            t.criteria,
            sa.and_(
                t.criteria.c.task_id == t.evidence.c.task_id,
                t.criteria.c.criterion_id == t.evidence.c.criterion_id,
            ),
        )
        .join(t.tasks, t.tasks.c.task_id == t.evidence.c.task_id)
        .outerjoin(
            kept,
            sa.and_(
                kept.c.task_id == t.evidence.c.task_id,
                kept.c.item_kind == "evidence",
                kept.c.item_id == t.evidence.c.evidence_id,
            ),
        )
        .where(
            t.criteria.c.status == rules.CriterionState.SATISFIED.value,
            t.tasks.c.status.not_in(_CLOSED),
        )
    ):
        judged_on.setdefault((task_id, crit), []).append((digest, retired_at is not None))
    return judged_on


def _criteria_awaiting(conn: Connection) -> CursorResult[Any]:
    """The criteria of open records that may await a person, said in SQL: on 100,000 tasks
    the unjudged criteria without evidence were most of this read (issue 36 part W). Stale;
    satisfied (its evidence may be gone); or unverified with evidence."""
    return conn.execute(
        sa.select(
            t.criteria.c.task_id,
            t.criteria.c.criterion_id,
            t.criteria.c.text,
            t.criteria.c.status,
            t.criteria.c.stale_reason,
            t.criteria.c.judged_at,
            *_TASK,
        )
        .join(t.tasks, t.tasks.c.task_id == t.criteria.c.task_id)
        .where(t.tasks.c.status.not_in(_CLOSED))
        .where(
            sa.or_(
                t.criteria.c.status.in_(
                    [rules.CriterionState.STALE.value, rules.CriterionState.SATISFIED.value]
                ),
                sa.and_(
                    t.criteria.c.status == rules.CriterionState.UNVERIFIED.value,
                    sa.exists().where(
                        t.evidence.c.task_id == t.criteria.c.task_id,
                        t.evidence.c.criterion_id == t.criteria.c.criterion_id,
                    ),
                ),
            )
        )
    )


def _runs_to_resume(conn: Connection, now: str) -> list[Decision]:
    """Each run stopped by policy that a person resumes. Only the runs awaiting a person are
    read (rules.awaits_resume, said in SQL), not every task: on ten thousand tasks the whole
    table was most of this read."""
    resumable = sorted(rules.STOPPED_BY_POLICY)
    runs = conn.execute(
        sa.select(t.tasks.c.task_id, t.tasks.c.status, t.tasks.c.status_reason, *_TASK).where(
            t.tasks.c.status.in_(resumable)
        )
    )
    return [resume_row(tr, now) for tr in runs if rules.awaits_resume(tr.status)]


# --- one row of each kind (the whole read's, and store.reads.queue_pages' pages) ---------


def approval_row(r: Any, now: str) -> Decision | None:
    """A pending approval's row (None once it expired)."""
    if rules.approval_state(r.state, r.expires_at, now) != rules.ApprovalState.PENDING:
        return None
    return decision(
        APPROVAL,
        r,
        r.approval_id,
        r.consequence,
        _approval_why(r),
        r.requested_at,
        now,
        expires_at=r.expires_at,
        requester=ActorRef.of(r.requester),
    )


def effect_row(e: Any, now: str) -> Decision | None:
    """An effect's row: a conflict to decide or an outcome to reconcile (None: neither)."""
    verdict = _verdict(e.reconciliation)
    if rules.conflict_undecided(e.stage, e.outcome, verdict):
        kind = CONFLICT
        why = "a reconciliation found a conflict: decide present, absent or conflict"
    elif rules.effect_to_reconcile(e.stage, e.outcome):
        kind = RECONCILE
        why = f"outcome {e.outcome or 'not settled'}: " + rules.recovery(
            e.stage, e.outcome, bool(e.requires_approval)
        )
    else:
        return None
    return decision(kind, e, e.effect_id, e.consequence, why, e.updated_at, now)


def judge_row(c: Any, state: str, now: str) -> Decision:
    """A criterion awaiting a person's judgement, in `state` (rules.criterion_state)."""
    if state == rules.CriterionState.EVIDENCE_MISSING:
        why = "judged satisfied, but its evidence can no longer be read"
    elif c.stale_reason:
        why = f"stale: {c.stale_reason}"
    else:
        why = "evidence attached, not judged yet"
    why += "; judge it satisfied, failed or waived"
    return decision(JUDGE, c, c.criterion_id, c.text, why, c.judged_at, now)


def resume_row(tr: Any, now: str) -> Decision:
    """A run stopped by policy or its owner (rules.awaits_resume)."""
    why = (tr.status_reason + "; " if tr.status_reason else "") + (
        "only a person resumes it (or raises the limit)"
    )
    what = f"the run is {tr.status.replace('_', ' ')}"
    return decision(RESUME, tr, tr.task_id, what, why, tr.task_updated_at, now)


def _waits(conn: Connection, now: str, task: str | None = None) -> list[Decision]:
    """Open waits that need a person (store.rules.wait_needs_person: one whose reserved
    budget is exhausted, or one overdue with nobody re-evaluating it; never a wait for an
    approval, which is in the queue as itself)."""
    from .waits import wait_rows

    out = []
    rows = [
        w
        for w in wait_rows(conn, now, None if task is None else (task,), open_only=True)
        if w.needs_person
    ]
    titles = {
        r.task_id: r
        for r in conn.execute(
            sa.select(t.tasks.c.task_id, *_TASK).where(
                t.tasks.c.task_id.in_(sorted({w.task_id for w in rows}))
            )
        )
    }
    for w in rows:
        what = f"waiting for {w.waiting_for} (consider at {w.not_before})"
        why = f"{w.needs_person}; a person cancels it with a reason"
        out.append(decision(WAIT, titles[w.task_id], w.wait_id, what, why, w.not_before, now))
    return out


def _late(conn: Connection, now: str) -> list[Decision]:
    """Completed tasks with late facts no person answered (the task row's `late_count`, in
    SQL): a person acknowledges them or opens a follow-up task; the task stays completed."""
    out = []
    for r in conn.execute(
        sa.select(
            t.tasks.c.task_id,
            t.tasks.c.late_count,
            t.tasks.c.late_since_at,
            t.tasks.c.late_last_seq,
            *_TASK,
        ).where(t.tasks.c.late_count > 0, t.tasks.c.status == rules.RunStatus.COMPLETED.value)
    ):
        out.append(late_row(r, now))
    return out


def late_row(r: Any, now: str) -> Decision:
    """A completed task changed after completion, no person having answered it."""
    what = rules.late_words(int(r.late_count), r.late_since_at)
    why = (
        f"the task stays completed; acknowledge through #{r.late_last_seq} or "
        "open a follow-up task; only a person decides"
    )
    return decision(LATE, r, r.task_id, what, why, r.late_since_at, now)


def order_key(d: Decision) -> tuple[int, str, str]:
    """Approvals first, soonest expiry first; then the rest, longest waiting first."""
    if d.expires_at:
        return (0, d.expires_at, d.id)
    return (1, d.since or "", d.id)


def decisions(store: Any) -> Decisions:
    """The open decisions (`decisions`) with the database clock they were read at (`now`):
    the window reads it on a worker, `boris decisions` as it is."""
    from .. import db

    with store.read() as conn:
        now = db.database_now(conn)
        return Decisions(now=now, decisions=open_decisions(conn, now, store.blobs))
