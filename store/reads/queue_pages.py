"""The decision queue in pages: what a window on 100,000 tasks reads as the reviewer scrolls.

`store.reads.decisions.open_decisions` reads every open decision and sorts them in Python:
right for ten thousand tasks. Here each kind of decision is a stream the database sorts and
pages by itself (keyset paging: `limit` rows after the last one shown, no OFFSET):

- approvals, pending and unexpired, by expiry (index ix_approvals_state: state, expires_at);
- effects to reconcile or whose conflict is undecided, by last change;
- criteria awaiting a judgement: stale (ix_criteria_status), or unverified with evidence
  attached (found from the evidence: few criteria of 100,000 tasks have any unjudged), by
  when they were judged (else their task's last change);
- runs only a person resumes, by their task's last change (ix_tasks_status_updated);
- waits no agent will move, by when they were to be considered (few: read whole);
- completed tasks changed after completion, by when that began.

A page is approvals first, soonest expiry first, then the other streams merged longest
waiting first: the whole read's order (ties between kinds aside). Each stream resumes after
its own last row shown, so a row is never shown twice or skipped, whatever the engine's
collation. The rows are the whole read's own (store.reads.decisions' row functions).

Unlike the whole read, a criterion judged satisfied whose evidence can no longer be read is
not listed: finding it means reading every satisfied criterion's evidence, which paging
avoids (`boris verify` finds missing blobs; the inbox says so of its task).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from pydantic import Field
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from . import decisions as d
from .decisions import Decision
from .read_model import ReadModel

#: The streams, in the groups a page shows one after another (approvals, then the rest).
APPROVALS, EFFECTS, STALE, UNJUDGED, RESUMES, WAITS, LATE = (
    "approvals",
    "effects",
    "stale",
    "unjudged",
    "resumes",
    "waits",
    "late",
)
GROUPS: tuple[tuple[str, ...], ...] = (
    (APPROVALS,),
    (EFFECTS, STALE, UNJUDGED, RESUMES, WAITS, LATE),
)
#: The kinds of decision each stream yields.
KINDS_OF: dict[str, tuple[str, ...]] = {
    APPROVALS: (d.APPROVAL,),
    EFFECTS: (d.RECONCILE, d.CONFLICT),
    STALE: (d.JUDGE,),
    UNJUDGED: (d.JUDGE,),
    RESUMES: (d.RESUME,),
    WAITS: (d.WAIT,),
    LATE: (d.LATE,),
}

#: Where a row stands in its stream: (sort value, task id, key).
Position = tuple[str, str, str]


@dataclass(frozen=True)
class QueuePageKey:
    """Where the next page starts: the group shown, each stream's last row shown, and the
    streams with no row left (not read again: each read is a statement, some a scan)."""

    group: int = 0
    after: tuple[tuple[str, Position], ...] = field(default=())
    finished: frozenset[str] = frozenset()


class QueueCounts(ReadModel):
    """What the queue says of itself, counted by SQL."""

    total: int = Field(description="every open decision")
    approvals: int = Field(description="the approvals among them")
    matching: int = Field(description="those the filters show")


class DecisionPage(ReadModel):
    """A page of the open decisions (`decision_page`): its rows, the database clock they
    were read at, where the next page starts and (the first page) the queue's counts."""

    now: str
    decisions: list[Decision]
    #: Where the next page starts (None: the queue ends here); handed back to read it.
    key: QueuePageKey | None
    counts: QueueCounts | None = None


@dataclass(frozen=True)
class Filters:
    """What the queue shows: one kind or all, one task or all (the database's filters)."""

    kind: str | None = None
    task: str | None = None

    def streams(self) -> set[str]:
        return {s for s, kinds in KINDS_OF.items() if self.kind is None or self.kind in kinds}


_CLOSED = sorted(rules.CLOSED)
_TASK = (
    t.tasks.c.title.label("task_title"),
    t.tasks.c.owner.label("task_owner"),
    t.tasks.c.updated_at.label("task_updated_at"),
)


def _after(sort: Any, a: Any, b: Any, pos: Position | None) -> Any:
    """Rows after `pos` in (sort, a, b) order; the first column alone bounds the index scan."""
    if pos is None:
        return sa.true()
    return sa.and_(sort >= pos[0], sa.tuple_(sort, a, b) > sa.tuple_(*pos))


def _approvals(now: str) -> tuple[Any, Any, Any, Any]:
    a = t.approvals.c
    q = (
        sa.select(
            a.approval_id,
            a.task_id,
            a.consequence,
            a.policy,
            a.requester,
            a.requested_at,
            a.expires_at,
            a.state,
            a.approvers,
            a.approved_by,
            *_TASK,
        )
        .join(t.tasks, t.tasks.c.task_id == a.task_id)
        .where(a.state == rules.ApprovalState.PENDING.value, a.expires_at > now)
    )
    return q, a.expires_at, a.task_id, a.approval_id


def _effects() -> tuple[Any, Any, Any, Any]:
    e = t.effects.c
    # Exactly the effects rules.effect_to_reconcile or rules.conflict_undecided hold for
    # (an outcome unknown or partial, or observed and not settled; never a cancelled one):
    # which of the two, by the reconciliation's verdict, is the row function's.
    q = (
        sa.select(
            e.task_id,
            e.effect_id,
            e.stage,
            e.outcome,
            e.reconciliation,
            e.consequence,
            e.requires_approval,
            e.updated_at,
            *_TASK,
        )
        .join(t.tasks, t.tasks.c.task_id == e.task_id)
        .where(
            e.stage != rules.EffectStage.CANCELLED.value,
            sa.or_(
                e.outcome.in_([rules.Outcome.UNKNOWN.value, rules.Outcome.PARTIAL.value]),
                e.stage == rules.EffectStage.OBSERVED.value,
            ),
        )
    )
    return q, e.updated_at, e.task_id, e.effect_id


def _judgements(stale: bool) -> tuple[Any, Any, Any, Any]:
    c = t.criteria.c
    since = sa.func.coalesce(c.judged_at, t.tasks.c.updated_at)
    q = sa.select(c.task_id, c.criterion_id, c.text, c.status, c.stale_reason, c.judged_at, *_TASK)
    if stale:
        q = q.join(t.tasks, t.tasks.c.task_id == c.task_id).where(
            c.status == rules.CriterionState.STALE.value
        )
    else:
        # From the criteria with evidence, each once: not a scan of every criterion.
        attached = sa.select(t.evidence.c.task_id, t.evidence.c.criterion_id).distinct().subquery()
        q = (
            q.select_from(attached)
            .join(
                t.criteria,
                sa.and_(c.task_id == attached.c.task_id, c.criterion_id == attached.c.criterion_id),
            )
            .join(t.tasks, t.tasks.c.task_id == c.task_id)
            # Not `c.status == ...`: with it SQLite's planner (no statistics) drove the join
            # from ix_criteria_status, every unverified criterion of 100,000 tasks (150 ms
            # against 20). Through a function the index is not offered.
            .where(sa.func.coalesce(c.status, "") == rules.CriterionState.UNVERIFIED.value)
        )
    # A closed record (rules.record_open) takes no judgement.
    return q.where(t.tasks.c.status.not_in(_CLOSED)), since, c.task_id, c.criterion_id


def _resumes() -> tuple[Any, Any, Any, Any]:
    k = t.tasks.c
    q = sa.select(k.task_id, k.status, k.status_reason, *_TASK).where(
        k.status.in_(sorted(rules.STOPPED_BY_POLICY))
    )
    return q, k.updated_at, k.task_id, k.task_id


def _late() -> tuple[Any, Any, Any, Any]:
    k = t.tasks.c
    q = sa.select(k.task_id, k.late_count, k.late_since_at, k.late_last_seq, *_TASK).where(
        k.status == rules.RunStatus.COMPLETED.value, k.late_count > 0
    )
    return q, sa.func.coalesce(k.late_since_at, k.updated_at), k.task_id, k.task_id


def _row_of(stream: str, r: Any, now: str) -> Decision | None:
    if stream == APPROVALS:
        return d.approval_row(r, now)
    if stream == EFFECTS:
        return d.effect_row(r, now)
    if stream in (STALE, UNJUDGED):
        return d.judge_row(r, r.status, now)
    if stream == RESUMES:
        return d.resume_row(r, now)
    return d.late_row(r, now)


_SQL: dict[str, Callable[[], tuple[Any, Any, Any, Any]]] = {
    EFFECTS: _effects,
    STALE: lambda: _judgements(stale=True),
    UNJUDGED: lambda: _judgements(stale=False),
    RESUMES: _resumes,
    LATE: _late,
}


class _Stream:
    """One stream's rows after a position, read `limit` at a time as the merge takes them."""

    def __init__(
        self, conn: Connection, name: str, now: str, filters: Filters, after: Position | None
    ) -> None:
        self.conn, self.name, self.now, self.filters = conn, name, now, filters
        self.read_to = after  # the last row read (shown or not)
        self.buffer: list[tuple[Position, Decision]] = []
        self.done = False

    def head(self, limit: int) -> tuple[Position, Decision] | None:
        while not self.buffer and not self.done:
            self._read(limit)
        return self.buffer[0] if self.buffer else None

    def _read(self, limit: int) -> None:
        got: list[tuple[Position, Decision | None]]
        if self.name == WAITS:
            waits = _wait_rows(self.conn, self.now, self.filters.task)
            got = [(p, r) for p, r in waits if self.read_to is None or p > self.read_to]
            self.done = True
        else:
            q, sort, a, b = _approvals(self.now) if self.name == APPROVALS else _SQL[self.name]()
            q = q.add_columns(sort.label("sort_at")).where(_after(sort, a, b, self.read_to))
            if self.filters.task is not None:
                q = q.where(a == self.filters.task)
            # One row more than asked: whether the stream goes on, without a count.
            q = q.order_by(sort, a, b).limit(limit + 1)
            got = []
            key = b.name
            for r in self.conn.execute(q):
                row = _row_of(self.name, r, self.now)
                got.append(((str(r.sort_at), str(r.task_id), str(getattr(r, key))), row))
            self.done = len(got) <= limit
            got = got[:limit]
        if got:
            self.read_to = got[-1][0]
        kinds = None if self.filters.kind is None else {self.filters.kind}
        self.buffer = [
            (p, r) for p, r in got if r is not None and (kinds is None or r.kind in kinds)
        ]


def _wait_rows(conn: Connection, now: str, task: str | None) -> list[tuple[Position, Decision]]:
    """The waits that need a person (few: an open wait no agent moves), sorted as a stream."""
    rows = d._waits(conn, now, task)
    return sorted((((str(w.since), w.task_id, w.key), w) for w in rows), key=lambda pw: pw[0])


def page(
    conn: Connection,
    now: str,
    filters: Filters,
    after: QueuePageKey | None,
    limit: int,
) -> tuple[list[Decision], QueuePageKey | None]:
    """Up to `limit` open decisions after `after` (None: the first page), and where the next
    page starts (None: the queue ends here)."""
    key = after or QueuePageKey()
    shown: dict[str, Position] = dict(key.after)
    wanted = filters.streams() - key.finished
    finished = set(key.finished)
    out: list[Decision] = []
    group = key.group
    while group < len(GROUPS) and len(out) < limit:
        streams = [
            _Stream(conn, name, now, filters, shown.get(name))
            for name in GROUPS[group]
            if name in wanted
        ]
        while len(out) < limit:
            heads = [(h, s) for s in streams if (h := s.head(limit - len(out))) is not None]
            if not heads:
                break
            (pos, row), stream = min(heads, key=lambda hs: hs[0][0])
            stream.buffer.pop(0)
            shown[stream.name] = pos
            out.append(row)
        else:
            finished.update(s.name for s in streams if s.done and not s.buffer)
            break  # the page is full within this group
        group += 1
    out = d.with_routing(conn, out, now)  # who a routed approval waits on (issue 42)
    if group >= len(GROUPS):
        return out, None
    return out, QueuePageKey(group, tuple(sorted(shown.items())), frozenset(finished))


def counts(conn: Connection, now: str, filters: Filters) -> QueueCounts:
    """How many open decisions there are (`total`), approvals among them (`approvals`), and
    how many the filters show (`matching`): by SQL, each stream counted where it is read."""
    every, shown = 0, 0
    approvals = 0
    for name in KINDS_OF:
        for mine, n in _count(conn, now, name, filters).items():
            every += n
            if name == APPROVALS:
                approvals += n
            if mine:
                shown += n
    return QueueCounts(total=every, approvals=approvals, matching=shown)


def _count(conn: Connection, now: str, name: str, filters: Filters) -> dict[bool, int]:
    """The stream's count, by whether the filters keep its rows."""
    want = filters.streams()
    if name == WAITS:
        rows = d._waits(conn, now)
        out = {True: 0, False: 0}
        for w in rows:
            out[name in want and filters.task in (None, w.task_id)] += 1
        return out
    q = (_approvals(now) if name == APPROVALS else _SQL[name]())[0]
    inner = q.subquery()
    task_col = inner.c.task_id
    if name == EFFECTS and filters.kind in KINDS_OF[EFFECTS]:
        # Conflict or reconcile: by each row's verdict (rules.conflict_undecided).
        out = {True: 0, False: 0}
        for r in conn.execute(sa.select(inner)):
            row = d.effect_row(r, now)
            out[
                row is not None and row.kind == filters.kind and filters.task in (None, r.task_id)
            ] += 1
        return out
    if name not in want:
        n = conn.execute(sa.select(sa.func.count()).select_from(inner)).scalar_one()
        return {False: int(n)}
    if filters.task is None:
        n = conn.execute(sa.select(sa.func.count()).select_from(inner)).scalar_one()
        return {True: int(n)}
    mine = sa.case((task_col == filters.task, 1), else_=0)
    got = conn.execute(
        sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(mine), 0)).select_from(inner)
    ).one()
    return {True: int(got[1]), False: int(got[0]) - int(got[1])}


def tasks_of(rows: Sequence[Decision]) -> Iterator[tuple[str, str]]:
    """(title, id) of the tasks these rows are about: the task filter's items."""
    return iter(sorted({(r.task_title, r.task_id) for r in rows}))


def decision_page(
    store: Any,
    *,
    kind: str | None = None,
    task: str | None = None,
    after: QueuePageKey | None = None,
    limit: int = 200,
    count: bool = True,
) -> DecisionPage:
    """A page of the open decisions with the database clock it was read at (`now`), where
    the next starts (`key`), and (`count`, the first page) the counts the queue says."""
    from .. import db

    filters = Filters(kind, task)
    with store.read() as conn:
        now = db.database_now(conn)
        rows, key = page(conn, now, filters, after, limit)
        return DecisionPage(
            now=now, decisions=rows, key=key, counts=counts(conn, now, filters) if count else None
        )
