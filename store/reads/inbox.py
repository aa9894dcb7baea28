"""The inbox: every task with what needs the reviewer, one pass per table (no N+1).

The statements are plain SQL text, so the same rows are read by the Store (through
SQLAlchemy's `text`, on both engines) and by `store.reads.peek` (the standard library's
sqlite3, before SQLAlchemy is even imported: the window lists the tasks while the store
opens). Nothing here imports SQLAlchemy or pydantic; what counts comes from `store.rules`.
Its rows (`TaskRow`, with its `TaskNeeds` and `Lease`) are store.reads.read_row's frozen
dataclasses for that reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from .. import rules
from ..rules import BudgetStanding, LeaseStanding, RunStatus
from .actors import ActorRef
from .read_row import FORBID, ReadRow

#: Runs one statement with its named parameters (`:now`) and gives its rows.
Fetch = Callable[[str, Mapping[str, Any]], Iterable[Sequence[Any]]]

# json_array_length: SQLite's JSON1 and PostgreSQL's alike; the heads are only counted here.
TASKS = (
    "SELECT task_id, title, owner, status, updated_at, last_seq, "
    "json_array_length(checkpoint_heads), late_count FROM tasks"
)
CRITERIA = "SELECT task_id, status, count(*) FROM criteria GROUP BY task_id, status"
PENDING = (
    "SELECT task_id, count(*) FROM approvals WHERE state = 'pending' AND expires_at > :now "
    "GROUP BY task_id"
)
EFFECTS = "SELECT task_id, stage, outcome FROM effects"
BUDGETS = "SELECT task_id, used, reserved, limit_value FROM budgets WHERE limit_value IS NOT NULL"
# Every evidence blob and every current artifact version's blob, by task.
# Retired items (issue 35 part R) are a typed absence, not a missing blob: left out here.
RETAINED = (
    "SELECT e.task_id, e.digest FROM evidence e WHERE NOT EXISTS (SELECT 1 FROM retention r "
    "WHERE r.task_id = e.task_id AND r.item_kind = 'evidence' AND r.item_id = e.evidence_id "
    "AND r.retired_at IS NOT NULL) UNION ALL "
    "SELECT v.task_id, v.digest FROM artifact_versions v JOIN artifacts a "
    "ON a.task_id = v.task_id AND a.artifact_id = v.artifact_id "
    "AND a.current_version = v.version WHERE NOT EXISTS (SELECT 1 FROM retention r "
    "WHERE r.task_id = v.task_id AND r.item_kind = 'artifact_version' "
    "AND r.item_id = v.artifact_id || '@' || CAST(v.version AS VARCHAR) "
    "AND r.retired_at IS NOT NULL)"
)

# Each task's lease with its newest heartbeat (store.reads.leases): who works on it now.
LEASES = (
    "SELECT l.task_id, l.token, l.holder, l.session_id, l.granted_at, l.ttl_seconds, "
    "l.expires_at, l.ended_at, l.ended_by, l.end_reason, l.reason, h.token, "
    "h.last_heartbeat_at, h.expires_at FROM leases l "
    "LEFT JOIN lease_heartbeats h ON h.task_id = l.task_id"
)


@dataclass(frozen=True, slots=True)
class Lease(ReadRow):
    """Who works on a task now: a lease as every read shows it (`lease_fields`)."""

    __pydantic_config__ = FORBID

    token: int
    holder: ActorRef
    session_id: str
    #: When it was granted.
    since: str
    ttl_seconds: int | None
    #: Its expiry now, heartbeats counted (None: a person's, held until released).
    expires_at: str | None
    #: The newest heartbeat of this token (its grant when none came yet).
    last_heartbeat_at: str
    #: Judged now, on the database's clock (rules.lease_standing).
    standing: LeaseStanding
    ended_at: str | None
    ended_by: ActorRef | None
    end_reason: str | None
    #: A takeover's reason.
    reason: str

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> Lease:
        """The row of `lease_fields`' answer."""
        holder = ActorRef.of(fields["holder"])
        assert holder is not None  # the column is NOT NULL
        return cls(
            token=fields["token"],
            holder=holder,
            session_id=fields["session_id"],
            since=fields["since"],
            ttl_seconds=fields["ttl_seconds"],
            expires_at=fields["expires_at"],
            last_heartbeat_at=fields["last_heartbeat_at"],
            standing=LeaseStanding(fields["standing"]),
            ended_at=fields["ended_at"],
            ended_by=ActorRef.of(fields["ended_by"]),
            end_reason=fields["end_reason"],
            reason=fields["reason"] or "",
        )


@dataclass(frozen=True, slots=True)
class TaskNeeds(ReadRow):
    """What of a task needs the reviewer, counted (`attention_score` weighs it)."""

    __pydantic_config__ = FORBID

    pending_approvals: int
    #: Effects dispatched whose outcome is not settled (the agent's to answer, or a person's).
    unresolved_effects: int
    #: Effects a person must reconcile (rules.effect_to_reconcile).
    effects_to_reconcile: int
    stale_criteria: int
    failed_criteria: int
    #: Criteria not done, by stored status (rules.criterion_done).
    open_criteria: int
    #: The checkpoint lineage's heads: more than one is a fork.
    heads: int
    #: The most used counter's use of its limit (1.0: at the limit).
    budget_use: float
    #: How its most pressing counter stands (rules.budget_standing: reservations count).
    budget: BudgetStanding
    #: Evidence and current artifact versions whose blob is gone (0 where not checked).
    missing_blobs: int
    #: Facts recorded after completion that no person answered yet (issue 35 part L).
    late_changes: int


@dataclass(frozen=True, slots=True)
class TaskRow(ReadRow):
    """A task as the inbox lists it (`Store.tasks`, the paged inbox, the peek)."""

    __pydantic_config__ = FORBID

    id: str
    title: str
    owner: str
    status: RunStatus
    updated_at: str
    last_seq: int
    needs: TaskNeeds
    forked: bool
    #: How much it needs a person now (`attention_score`): above 0 it does.
    attention: int
    #: Who works on it now (None: never leased); `standing` judged now.
    lease: Lease | None


def decoded(value: Any) -> Any:
    """A JSON column as the driver gave it: text on SQLite, decoded on PostgreSQL."""
    return json.loads(value) if isinstance(value, str) else value


def lease_fields(
    *,
    token: int,
    holder: Any,
    session_id: str,
    granted_at: str,
    ttl_seconds: int | None,
    expires_at: str | None,
    ended_at: str | None,
    ended_by: Any,
    end_reason: str | None,
    reason: str,
    heartbeat_token: int | None,
    last_heartbeat_at: str | None,
    heartbeat_expires_at: str | None,
    now: str,
) -> dict[str, Any]:
    """A lease as every read shows it: token, holder, session_id, since, ttl_seconds,
    expires_at (heartbeats counted), last_heartbeat_at (its grant when none came yet),
    standing (rules.lease_standing, judged now), ended_at, ended_by, end_reason, reason (a
    takeover's)."""
    expiry = rules.lease_expiry(expires_at, int(token), heartbeat_token, heartbeat_expires_at)
    beat = last_heartbeat_at if heartbeat_token == token else None
    return {
        "token": int(token),
        "holder": decoded(holder),
        "session_id": session_id,
        "since": granted_at,
        "ttl_seconds": ttl_seconds,
        "expires_at": expiry,
        "last_heartbeat_at": beat or granted_at,
        "standing": str(rules.lease_standing(ended_at, expiry, now)),
        "ended_at": ended_at,
        "ended_by": decoded(ended_by),
        "end_reason": end_reason,
        "reason": reason,
    }


def _leases(fetch: Fetch, now: str) -> dict[str, Lease]:
    out = {}
    for r in fetch(LEASES, {}):
        out[str(r[0])] = Lease.of(
            lease_fields(
                token=r[1],
                holder=r[2],
                session_id=r[3],
                granted_at=r[4],
                ttl_seconds=r[5],
                expires_at=r[6],
                ended_at=r[7],
                ended_by=r[8],
                end_reason=r[9],
                reason=r[10],
                heartbeat_token=r[11],
                last_heartbeat_at=r[12],
                heartbeat_expires_at=r[13],
                now=now,
            )
        )
    return out


# The enums by value: looked up, not called (an Enum call is a fifth of a row's making).
_RUN = {str(s): s for s in RunStatus}
_BUDGET = {str(s): s for s in BudgetStanding}
_UNLIMITED = str(BudgetStanding.UNLIMITED)


def list_tasks(
    fetch: Fetch, now: str, blob_exists: Callable[[str], bool] | None = None
) -> list[TaskRow]:
    """Every task with what needs the reviewer, most in need first.

    With `blob_exists`, evidence and current artifact versions whose blob is gone count as
    missing: nothing may be accepted on the word of a record that cannot be shown.
    """
    tasks = list(fetch(TASKS, {}))
    need: dict[str, dict[str, Any]] = {r[0]: _nothing_needed() for r in tasks}
    if blob_exists is not None:
        _count_missing_blobs(fetch, need, blob_exists)
    _count_criteria(fetch, need)
    for task_id, n in fetch(PENDING, {"now": now}):
        need[task_id]["pending_approvals"] = n
    _count_effects(fetch, need)
    _weigh_budgets(fetch, need)
    leases = _leases(fetch, now)
    out = [_task_row(r, need[r[0]], leases.get(r[0])) for r in tasks]
    # Most in need first, ties by last activity: two stable sorts on attributes, no key
    # tuple made per row (the peek sorts some 4,000 rows on 100,000 tasks).
    out.sort(key=_BY_ACTIVITY)
    out.sort(key=_BY_ATTENTION, reverse=True)
    return out


_BY_ACTIVITY = attrgetter("updated_at")
_BY_ATTENTION = attrgetter("attention")


def _nothing_needed() -> dict[str, Any]:
    """A task's needs before any is counted."""
    return {
        "pending_approvals": 0,
        "unresolved_effects": 0,
        "effects_to_reconcile": 0,
        "stale_criteria": 0,
        "failed_criteria": 0,
        "open_criteria": 0,
        "heads": 0,
        "budget_use": 0.0,
        # How its most pressing counter stands (rules.budget_standing: reservations count).
        "budget": _UNLIMITED,
        "missing_blobs": 0,
    }


def _count_missing_blobs(
    fetch: Fetch, need: dict[str, dict[str, Any]], blob_exists: Callable[[str], bool]
) -> None:
    """Evidence and current artifact versions whose blob is gone, per task."""
    for task_id, digest in fetch(RETAINED, {}):
        if not blob_exists(str(digest)):
            need[task_id]["missing_blobs"] += 1


def _count_criteria(fetch: Fetch, need: dict[str, dict[str, Any]]) -> None:
    """Stale, failed and open criteria, per task, by stored status: no blob is read per row."""
    done: dict[str, bool] = {}  # by status: the rule asked once per status, not per row
    for task_id, status, n in fetch(CRITERIA, {}):
        if status == "stale":
            need[task_id]["stale_criteria"] += n
        elif status == "failed":
            need[task_id]["failed_criteria"] += n
        is_done = done.get(status)
        if is_done is None:
            is_done = done[status] = rules.criterion_done(status)
        if not is_done:
            need[task_id]["open_criteria"] += n


def _count_effects(fetch: Fetch, need: dict[str, dict[str, Any]]) -> None:
    """Effects sent and not settled, and those waiting for a reconciliation, per task."""
    # By (stage, outcome): the rules asked once per pair, not per row.
    judged: dict[tuple[str, str | None], tuple[bool, bool]] = {}
    for task_id, stage, outcome in fetch(EFFECTS, {}):
        j = judged.get((stage, outcome))
        if j is None:
            j = judged[(stage, outcome)] = (
                rules.effect_unresolved(stage, outcome) and stage != "planned",
                rules.effect_to_reconcile(stage, outcome),
            )
        if j[0]:
            need[task_id]["unresolved_effects"] += 1
        if j[1]:
            need[task_id]["effects_to_reconcile"] += 1


def _weigh_budgets(fetch: Fetch, need: dict[str, dict[str, Any]]) -> None:
    """Each task's most used budget (a fraction of its limit) and its most pressing standing."""
    for task_id, used, reserved, limit in fetch(BUDGETS, {}):
        frac = used / limit if limit else (1.0 if used else 0.0)
        n = need[task_id]
        n["budget_use"] = max(n["budget_use"], frac)
        standing = rules.budget_standing(used, reserved, limit)
        n["budget"] = rules.most_pressing(n["budget"], standing)


def _task_row(row: Any, n: dict[str, Any], lease: Lease | None) -> TaskRow:
    """A task's row in the inbox: its needs counted, how much it asks for a person."""
    task_id, title, owner, status, updated_at, last_seq, heads, late = row
    needs = TaskNeeds(
        pending_approvals=n["pending_approvals"],
        unresolved_effects=n["unresolved_effects"],
        effects_to_reconcile=n["effects_to_reconcile"],
        stale_criteria=n["stale_criteria"],
        failed_criteria=n["failed_criteria"],
        open_criteria=n["open_criteria"],
        heads=int(heads),
        budget_use=float(n["budget_use"]),
        budget=_BUDGET[n["budget"]],
        missing_blobs=n["missing_blobs"],
        late_changes=int(late or 0),
    )
    return TaskRow(
        id=task_id,
        title=title,
        owner=owner,
        status=_RUN[status],
        updated_at=updated_at,
        last_seq=last_seq,
        needs=needs,
        forked=needs.heads > 1,
        attention=attention_score(status, needs),
        lease=lease,
    )


#: Standings that count toward a task's need of a person.
BUDGET_NEEDS_YOU = frozenset({rules.BudgetStanding.NEAR_LIMIT} | rules.BUDGET_AT_LIMIT)
#: Runs stopped where only a person moves them on.
AT_ISSUE = frozenset({RunStatus.BUDGET_EXHAUSTED, RunStatus.BLOCKED, RunStatus.OUTCOME_UNKNOWN})
#: Records at rest: nothing in them asks for a person, so they sort below the rest.
_QUIET = frozenset({RunStatus.COMPLETED, RunStatus.SUPERSEDED, RunStatus.STOPPED})


#: What each need weighs in `attention_score` (the peek's SQL weighs with the same numbers:
#: store.reads.inbox_pages.NEED_SCORES).
PER_APPROVAL, PER_RECONCILE, FORKED, PER_CRITERION, PER_MISSING_BLOB = 100, 80, 60, 40, 70
AT_ISSUE_WEIGHT, BUDGET_WEIGHT, LATE_WEIGHT = 50, 20, 45


def attention_score(status: str, n: TaskNeeds) -> int:
    """How much a task needs a person now: what blocks progress first."""
    score = 0
    score += PER_APPROVAL * n.pending_approvals
    # Effects a person must reconcile, not those still in flight (the agent's to answer).
    score += PER_RECONCILE * n.effects_to_reconcile
    score += FORKED if n.heads > 1 else 0
    score += PER_CRITERION * (n.stale_criteria + n.failed_criteria)
    score += AT_ISSUE_WEIGHT if status in AT_ISSUE else 0
    score += BUDGET_WEIGHT if n.budget in BUDGET_NEEDS_YOU else 0
    return attention_of(status, score, n.missing_blobs, n.late_changes)


def attention_of(status: str, open_score: int, missing_blobs: int, late_changes: int) -> int:
    """`attention_score` from what an open record's needs weigh (all but missing blobs)."""
    if not rules.record_open(status):
        # A closed record takes no decision of work: only evidence it lost, and what changed
        # after it completed (acknowledge it or open a follow-up: issue 35 part L).
        late = LATE_WEIGHT if late_changes else 0
        return PER_MISSING_BLOB * missing_blobs + late or -1
    score = open_score + PER_MISSING_BLOB * missing_blobs
    if status in _QUIET and score == 0:
        score = -1
    return score
