"""`verify`: the whole record checked against itself, in the spirit of `git fsck`.

For each task, from the rows as stored:

- the hash chain: every event's hash recomputed from its stored row (`record.stored_body`,
  `canonical.chain_hash`), every `prev_hash` linked to the event before (the first to the
  genesis hash), seqs from 1 with no gap, every payload decodable;
- the task's head: `tasks.last_seq` / `head_hash` are the log's last event;
- the head verify last found clean (table `verified_heads`): the event at that seq must
  still be there with the same hash, else the log was truncated, or rolled back and
  rewritten (an attacker, or an older copy of the store restored);
- blobs: every blob an artifact version or evidence names exists and its content (streamed)
  hashes to its name; an effect's intended state is checked when its blob is there (the
  intent may name a state the store was never given: then its absence is only noted);
- projections: the task's events are replayed into the projection tables inside a write
  transaction that is always rolled back, and the replayed rows are compared with the rows
  as they were; the real tables are never changed;
- lineage (from the `checkpoint.written` events): exactly one `initial` checkpoint when there
  is any, and it supersedes nothing; every `supersedes` / `merged` id names a checkpoint of
  the same task written earlier; no checkpoint id twice; no cycle; each checkpoint's
  boundary seq and hash are those of the event at that seq, before the checkpoint; its
  `state_digest` is the digest of its state;
- approvals: none consumed more than once, none consumed that the task never requested;
- budgets: each counter's `used` equals the sum of its `budget.charged` amounts.

Problems are errors: the record is not what it claims. Info items are true and worth
saying but not errors: a fork in the lineage (more than one head checkpoint, which the
store reports and never resolves by itself), and an effect's intended-state blob that is
not in the blob store.

After a task verifies without a problem, its head (seq, hash) is remembered in
`verified_heads` (unless `remember=False`); a task with problems keeps the head last found
clean, so the problem is not forgotten by verifying again.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import db, projections
from . import events as ev
from . import schema as t
from .canonical import GENESIS_HASH, chain_hash, digest_of
from .errors import BlobProblem, StoreError, UnknownTask
from .model import Actor
from .record import Event, stored_body
from .store import Store

#: How many differing rows of one projection table are named before the rest are counted.
MAX_ROWS_NAMED = 10
_FLOAT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Finding:
    """One thing verify found. `kind` is a stable word for scripts; `message` names the seq,
    digest, checkpoint or approval concerned."""

    task_id: str
    kind: str
    message: str

    def line(self) -> str:
        return f"{self.task_id}: {self.kind}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class Report:
    #: The tasks verified, in order.
    tasks: list[str] = field(default_factory=list)
    #: Errors: any one of them makes the store not clean.
    problems: list[Finding] = field(default_factory=list)
    #: Reported, not errors: forks, intended-state blobs the store was never given.
    info: list[Finding] = field(default_factory=list)
    #: Each task's log head as verified: {"seq": ..., "hash": ...}.
    heads: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Tasks whose head was found clean and remembered by this run.
    remembered: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        n = len(self.tasks)
        tasks = f"{n} task{'s' if n != 1 else ''}"
        if self.ok:
            return f"verified {tasks}: ok"
        bad = len({p.task_id for p in self.problems})
        k = len(self.problems)
        return f"verified {tasks}: {k} problem{'s' if k != 1 else ''} in {bad} of them"

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "summary": self.summary(),
            "tasks": list(self.tasks),
            "problems": [p.to_json() for p in self.problems],
            "info": [i.to_json() for i in self.info],
            "heads": dict(self.heads),
            "remembered": list(self.remembered),
        }


class VerifyFailed(StoreError):
    """Verify found problems; the message is the report's one-line summary."""

    #: The exit code `boris verify` means to give when the store is not clean (1 is the CLI's
    #: code for any StoreError).
    exit_code = 3

    def __init__(self, report: Report) -> None:
        super().__init__(report.summary())
        self.report = report


# --- the whole store ---------------------------------------------------------------------


def verify(store: Store, task_id: str | None = None, *, remember: bool = True) -> Report:
    """Verify one task, or every task the store knows (by its tasks, events or remembered
    heads). Raises UnknownTask for a task id the store has never heard of."""
    report = Report()
    ids = _task_ids(store)
    if task_id is not None:
        if task_id not in ids:
            raise UnknownTask(task_id)
        ids = [task_id]
    blob_cache: dict[str, str | None] = {}
    clean: dict[str, tuple[int, str]] = {}
    for tid in ids:
        found = _TaskCheck(store, tid, blob_cache).run()
        report.tasks.append(tid)
        report.problems.extend(found.problems)
        report.info.extend(found.info)
        if found.head is not None:
            report.heads[tid] = {"seq": found.head[0], "hash": found.head[1]}
            if not found.problems:
                clean[tid] = found.head
    if remember and clean:
        _remember(store, clean)
        report.remembered = list(clean)
    return report


def _task_ids(store: Store) -> list[str]:
    with store.read() as conn:
        ids: set[str] = set()
        for table in (t.tasks, t.verified_heads):
            ids.update(r[0] for r in conn.execute(sa.select(table.c.task_id)))
        ids.update(r[0] for r in conn.execute(sa.select(t.events.c.task_id).distinct()))
    return sorted(ids)


def _remember(store: Store, heads: dict[str, tuple[int, str]]) -> None:
    with store.transaction() as tx:
        now = db.database_now(tx.conn)
        vh = t.verified_heads
        tx.conn.execute(vh.delete().where(vh.c.task_id.in_(list(heads))))
        tx.conn.execute(
            vh.insert(),
            [
                {"task_id": tid, "seq": seq, "hash": h, "verified_at": now}
                for tid, (seq, h) in heads.items()
            ],
        )


def remembered_head(store: Store, task_id: str) -> dict[str, Any] | None:
    """The head verify last found clean for a task: seq, hash and when; None if never."""
    with store.read() as conn:
        row = conn.execute(
            sa.select(t.verified_heads).where(t.verified_heads.c.task_id == task_id)
        ).first()
        return None if row is None else dict(row._mapping)


# --- one task ------------------------------------------------------------------------------


class _Rollback(Exception):
    """Raised inside the replay's write transaction so that it is never committed."""


@dataclass
class _Snapshot:
    rows: list[Any] = field(default_factory=list)
    task: Any = None
    remembered: Any = None
    budgets: list[Any] = field(default_factory=list)
    before: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    after: dict[str, list[tuple[Any, ...]]] | None = None
    replay_error: str | None = None


class _TaskCheck:
    def __init__(self, store: Store, task_id: str, blob_cache: dict[str, str | None]) -> None:
        self.store = store
        self.task_id = task_id
        self.blob_cache = blob_cache
        self.problems: list[Finding] = []
        self.info: list[Finding] = []
        self.head: tuple[int, str] | None = None
        self.events: list[Event] = []
        self.decoded_all = True

    def problem(self, kind: str, message: str) -> None:
        self.problems.append(Finding(self.task_id, kind, message))

    def note(self, kind: str, message: str) -> None:
        self.info.append(Finding(self.task_id, kind, message))

    def run(self) -> _TaskCheck:
        snap = self._snapshot()
        self._chain(snap.rows)
        if snap.rows:
            last = snap.rows[-1]
            self.head = (int(last.seq), str(last.hash))
        self._task_head(snap)
        self._remembered(snap)
        self._projections(snap)
        self._lineage(snap)
        self._approvals()
        self._budgets(snap)
        self._blobs()
        return self

    # Every read of the task, and the replay, in one write transaction that is rolled back:
    # a consistent snapshot, and the real projection rows are never changed.
    def _snapshot(self) -> _Snapshot:
        snap = _Snapshot()
        tid = self.task_id
        try:
            with self.store.transaction() as tx:
                conn = tx.conn
                snap.rows = list(
                    conn.execute(
                        sa.select(t.events)
                        .where(t.events.c.task_id == tid)
                        .order_by(t.events.c.seq)
                    )
                )
                snap.task = conn.execute(sa.select(t.tasks).where(t.tasks.c.task_id == tid)).first()
                snap.remembered = conn.execute(
                    sa.select(t.verified_heads).where(t.verified_heads.c.task_id == tid)
                ).first()
                snap.budgets = list(
                    conn.execute(sa.select(t.budgets).where(t.budgets.c.task_id == tid))
                )
                snap.before = projections.dump(conn, tid)
                self.events = self._decode(snap.rows)
                if self.decoded_all:
                    self._replay(conn, snap)
                raise _Rollback
        except _Rollback:
            pass
        return snap

    def _replay(self, conn: Connection, snap: _Snapshot) -> None:
        at: Event | None = None
        try:
            projections.clear(conn, self.task_id)
            for e in self.events:
                at = e
                projections.apply(conn, e)
            snap.after = projections.dump(conn, self.task_id)
        except Exception as exc:  # a broken log can make any apply function fail
            where = f" at seq {at.seq} ({at.type})" if at is not None else ""
            reason = " ".join(str(getattr(exc, "orig", None) or exc).splitlines())
            snap.replay_error = f"replaying the log failed{where}: {type(exc).__name__}: {reason}"

    # --- the log ---------------------------------------------------------------------------

    def _decode(self, rows: list[Any]) -> list[Event]:
        out: list[Event] = []
        for r in rows:
            try:
                data = json.loads(r.payload)
                if not isinstance(data, dict):
                    raise ValueError("the payload is not a JSON object")
                payload = ev.decode(r.type, r.format, data)
                actor = Actor(kind=r.actor_kind, id=r.actor_id, name=r.actor_name)
            # JSONDecodeError and pydantic's ValidationError are ValueErrors.
            except (ValueError, StoreError) as exc:
                self.decoded_all = False
                reason = " ".join(str(exc).splitlines())[:300]
                self.problem(
                    "event_unreadable",
                    f"seq {r.seq} ({r.type}) cannot be read: {reason}; "
                    "the task's projections were not compared with a replay",
                )
                continue
            out.append(Event(r.task_id, r.seq, r.type, payload, actor, r.at, r.prev_hash, r.hash))
        return out

    def _chain(self, rows: list[Any]) -> None:
        expected_prev, expected_seq, prev_seq = GENESIS_HASH, 1, 0
        for r in rows:
            seq = int(r.seq)
            if seq != expected_seq:
                if seq < 1:
                    self.problem("seq_gap", f"seq {seq}: seqs start at 1")
                else:
                    missing = (
                        f"seq {expected_seq}"
                        if seq == expected_seq + 1
                        else f"seqs {expected_seq}..{seq - 1}"
                    )
                    after = f"seq {prev_seq}" if prev_seq else "the start"
                    self.problem(
                        "seq_gap", f"{missing} missing: the log jumps from {after} to seq {seq}"
                    )
            if seq == 1 and r.type != "task.created":
                self.problem("event_hash", f"seq 1 is {r.type}, not task.created")
            if r.prev_hash != expected_prev:
                before = (
                    f"seq {prev_seq}'s hash {expected_prev}" if prev_seq else "the genesis hash"
                )
                self.problem("chain_link", f"seq {seq}: prev_hash {r.prev_hash} is not {before}")
            recomputed = _recompute(r)
            if recomputed != r.hash:
                self.problem(
                    "event_hash",
                    f"seq {seq} ({r.type}): stored hash {r.hash} does not match its content "
                    f"(recomputed {recomputed}): the event was changed after it was written",
                )
            expected_prev, expected_seq, prev_seq = str(r.hash), seq + 1, seq

    def _task_head(self, snap: _Snapshot) -> None:
        task, rows = snap.task, snap.rows
        if task is None and rows:
            self.problem(
                "task_head",
                f"the log has {len(rows)} events up to seq {rows[-1].seq} but no tasks row",
            )
        elif task is not None and not rows:
            self.problem("task_head", "the tasks row exists but the log has no events")
        elif task is not None and self.head is not None:
            seq, h = self.head
            if (task.last_seq, task.head_hash) != (seq, h):
                self.problem(
                    "task_head",
                    f"tasks row says the head is seq {task.last_seq} ({task.head_hash}); "
                    f"the log ends at seq {seq} ({h})",
                )

    def _remembered(self, snap: _Snapshot) -> None:
        mem = snap.remembered
        if mem is None:
            return
        seq, h, when = int(mem.seq), str(mem.hash), mem.verified_at
        said = f"verify found this task clean at seq {seq} ({h}) on {when}"
        by_seq = {int(r.seq): r for r in snap.rows}
        row = by_seq.get(seq)
        if row is None:
            if not snap.rows:
                now = "the log has no events for it now"
            elif self.head is not None and self.head[0] < seq:
                now = (
                    f"the log now ends at seq {self.head[0]}: it was truncated or rolled back "
                    "(or an older copy of the store restored)"
                )
            else:
                now = f"the event at seq {seq} is gone"
            self.problem("head_rolled_back", f"{said}; {now}")
        elif row.hash != h:
            self.problem(
                "head_rewritten",
                f"{said}; the event at seq {seq} now has hash {row.hash}: the log was rolled "
                "back and rewritten",
            )

    # --- projections ---------------------------------------------------------------------

    def _projections(self, snap: _Snapshot) -> None:
        if snap.replay_error is not None:
            self.problem("replay_failed", snap.replay_error)
            return
        if snap.after is None:
            return
        for table in t.PROJECTIONS:
            before = snap.before.get(table.name, [])
            after = snap.after.get(table.name, [])
            if before != after:
                for message in _row_differences(table, before, after):
                    self.problem("projection", message)

    # --- lineage -------------------------------------------------------------------------

    def _lineage(self, snap: _Snapshot) -> None:
        hashes = {int(r.seq): str(r.hash) for r in snap.rows}
        written: dict[str, tuple[int, ev.CheckpointWritten]] = {}
        for e in self.events:
            if e.type != "checkpoint.written":
                continue
            p = e.payload
            assert isinstance(p, ev.CheckpointWritten)
            cid = p.checkpoint_id
            if cid in written:
                self.problem(
                    "lineage_duplicate",
                    f"checkpoint {cid} is written twice (seq {written[cid][0]} and seq {e.seq})",
                )
                continue
            written[cid] = (e.seq, p)
            if p.boundary_seq >= e.seq:
                self.problem(
                    "checkpoint_boundary",
                    f"checkpoint {cid} (seq {e.seq}) names boundary seq {p.boundary_seq}, "
                    "which is not before it",
                )
            elif p.boundary_seq not in hashes:
                self.problem(
                    "checkpoint_boundary",
                    f"checkpoint {cid} (seq {e.seq}) names boundary seq {p.boundary_seq}, "
                    "which is not in the log",
                )
            elif hashes[p.boundary_seq] != p.boundary_hash:
                self.problem(
                    "checkpoint_boundary",
                    f"checkpoint {cid} (seq {e.seq}) names boundary seq {p.boundary_seq} with "
                    f"hash {p.boundary_hash}; the event there has hash {hashes[p.boundary_seq]}",
                )
            if digest_of(p.state) != p.state_digest:
                self.problem(
                    "checkpoint_digest",
                    f"checkpoint {cid} (seq {e.seq}): state_digest {p.state_digest} is not the "
                    f"digest of its state ({digest_of(p.state)})",
                )
        if not written:
            return
        initial = [cid for cid, (_, p) in written.items() if p.reason == "initial"]
        if len(initial) != 1:
            listed = ", ".join(f"{c} (seq {written[c][0]})" for c in initial)
            self.problem(
                "lineage_initial",
                f"{len(initial)} initial checkpoints ({listed}); a task has exactly one"
                if initial
                else f"no initial checkpoint among {len(written)} checkpoints",
            )
        for cid in initial:
            seq, p = written[cid]
            if p.supersedes or p.merged:
                self.problem(
                    "lineage_initial",
                    f"initial checkpoint {cid} (seq {seq}) supersedes "
                    f"{', '.join((*p.supersedes, *p.merged))}; an initial checkpoint has no parent",
                )
        edges: dict[str, list[str]] = defaultdict(list)
        replaced: set[str] = set()
        unresolved: list[tuple[str, int, str, str]] = []
        for cid, (seq, p) in written.items():
            for how, refs in (("supersedes", p.supersedes), ("merges", p.merged)):
                for ref in refs:
                    replaced.add(ref)
                    if ref == cid:
                        self.problem("lineage_cycle", f"checkpoint {cid} (seq {seq}) {how} itself")
                    elif ref in written:
                        edges[cid].append(ref)
                        if written[ref][0] > seq:
                            self.problem(
                                "lineage_forward",
                                f"checkpoint {cid} (seq {seq}) {how} {ref}, which is written "
                                f"only later (seq {written[ref][0]})",
                            )
                    else:
                        unresolved.append((cid, seq, how, ref))
        owners = self._owners_elsewhere({ref for *_, ref in unresolved})
        for cid, seq, how, ref in unresolved:
            where = (
                f"a checkpoint of task {owners[ref]}, not of this task"
                if ref in owners
                else "which is no checkpoint"
            )
            self.problem("lineage_unresolved", f"checkpoint {cid} (seq {seq}) {how} {ref}, {where}")
        for cycle in _cycles(edges):
            self.problem(
                "lineage_cycle",
                "checkpoints supersede each other in a cycle: " + " -> ".join(cycle),
            )
        heads = [cid for cid in written if cid not in replaced]
        if len(heads) > 1:
            self.note(
                "fork",
                f"the lineage has {len(heads)} heads: "
                + ", ".join(f"{c} (seq {written[c][0]})" for c in heads),
            )

    def _owners_elsewhere(self, refs: set[str]) -> dict[str, str]:
        """The other task each of these checkpoint ids belongs to, where one does."""
        if not refs:
            return {}
        cp = t.checkpoints
        with self.store.read() as conn:
            rows = conn.execute(
                sa.select(cp.c.checkpoint_id, cp.c.task_id).where(
                    cp.c.checkpoint_id.in_(sorted(refs)), cp.c.task_id != self.task_id
                )
            )
            return {str(r.checkpoint_id): str(r.task_id) for r in rows}

    # --- approvals and budgets -----------------------------------------------------------

    def _approvals(self) -> None:
        requested: set[str] = set()
        consumed: dict[str, list[int]] = defaultdict(list)
        for e in self.events:
            p = e.payload
            if isinstance(p, ev.ApprovalRequested):
                requested.add(p.approval_id)
            elif isinstance(p, ev.ApprovalConsumed):
                consumed[p.approval_id].append(e.seq)
                if p.approval_id not in requested:
                    self.problem(
                        "approval_unknown",
                        f"seq {e.seq} consumes approval {p.approval_id}, which this task never "
                        "requested before it",
                    )
        for approval_id, seqs in consumed.items():
            if len(seqs) > 1:
                self.problem(
                    "approval_reused",
                    f"approval {approval_id} is consumed {len(seqs)} times "
                    f"(seqs {', '.join(map(str, seqs))}); an approval is used at most once",
                )

    def _budgets(self, snap: _Snapshot) -> None:
        charged: dict[str, list[float]] = defaultdict(list)
        for e in self.events:
            if isinstance(e.payload, ev.BudgetCharged):
                charged[e.payload.counter].append(e.payload.amount)
        rows = {r.counter: r for r in snap.budgets}
        for counter in sorted(set(rows) | set(charged)):
            amounts = charged.get(counter, [])
            total = math.fsum(amounts)
            row = rows.get(counter)
            if row is None:
                self.problem(
                    "budget",
                    f"counter {counter} has {len(amounts)} charges ({total:g}) but no budgets row",
                )
            elif not math.isclose(
                float(row.used), total, rel_tol=_FLOAT_TOLERANCE, abs_tol=_FLOAT_TOLERANCE
            ):
                self.problem(
                    "budget",
                    f"counter {counter}: used is {row.used:g}, but its {len(amounts)} charges "
                    f"sum to {total:g}",
                )

    # --- blobs ---------------------------------------------------------------------------

    def _blobs(self) -> None:
        for digest, owner, required in _referenced_blobs(self.events):
            problem = self._blob_problem(digest)
            if problem is None:
                continue
            if problem == "missing" and not required:
                self.note(
                    "blob_absent",
                    f"blob {digest} ({owner}) is not in the blob store; the intent may name "
                    "content the store was never given",
                )
            elif problem == "missing":
                self.problem("blob_missing", f"blob {digest} ({owner}) is missing")
            else:
                self.problem("blob_corrupt", f"blob {digest} ({owner}) is {problem}")

    def _blob_problem(self, digest: str) -> str | None:
        if digest not in self.blob_cache:
            try:
                self.blob_cache[digest] = self.store.blobs.problem(digest, verify=True)
            except BlobProblem as exc:
                self.blob_cache[digest] = exc.problem
        return self.blob_cache[digest]


def _recompute(r: Any) -> str:
    try:
        payload = json.loads(r.payload)
    except ValueError:
        return "(the stored payload is not JSON)"
    # model_construct: the hash covers what is stored, valid or not.
    actor = Actor.model_construct(kind=r.actor_kind, id=r.actor_id, name=r.actor_name)
    body = stored_body(r.task_id, int(r.seq), r.type, int(r.format), payload, actor, r.at)
    return chain_hash(str(r.prev_hash), body)


def _referenced_blobs(events: Iterable[Event]) -> Iterable[tuple[str, str, bool]]:
    """(digest, owner, required) of every blob the log names; `required` is False for an
    effect's intended state, which may never have been given to the store."""
    for e in events:
        p = e.payload
        if isinstance(p, ev.ArtifactVersionRecorded):
            yield p.digest, f"artifact {p.artifact_id} v{p.version}, seq {e.seq}", True
        elif isinstance(p, ev.EvidenceAttached):
            yield p.digest, f"evidence {p.evidence_id}, seq {e.seq}", True
        elif (
            isinstance(p, ev.EffectPlanned | ev.EffectRevised)
            and p.intended.exists
            and p.intended.digest
        ):
            yield p.intended.digest, f"effect {p.effect_id} intended state, seq {e.seq}", False


def _cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """Each cycle of the supersedes graph once, as a path that ends where it starts."""
    found: list[list[str]] = []
    seen_sets: set[frozenset[str]] = set()
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in edges.get(node, []):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :]
                key = frozenset(cycle)
                if key not in seen_sets:
                    seen_sets.add(key)
                    found.append([*cycle, nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def _row_differences(
    table: sa.Table, before: list[tuple[Any, ...]], after: list[tuple[Any, ...]]
) -> list[str]:
    names = [c.name for c in table.columns]
    pk = [names.index(c.name) for c in table.primary_key.columns if c.name != "task_id"]

    def key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(row[i] for i in pk)

    def label(k: tuple[Any, ...]) -> str:
        return f"{table.name} row" + (f" {'/'.join(map(str, k))}" if k else "")

    old = {key(r): r for r in before}
    new = {key(r): r for r in after}
    out: list[str] = []
    for k in sorted(set(old) | set(new), key=repr):
        if k not in new:
            out.append(f"{label(k)} is in the projection, but a replay of the log has no such row")
        elif k not in old:
            out.append(f"{label(k)} is missing from the projection; a replay of the log makes it")
        elif old[k] != new[k]:
            cols = [
                f"{n} is {_short(a)}, a replay gives {_short(b)}"
                for n, a, b in zip(names, old[k], new[k], strict=True)
                if a != b
            ]
            out.append(f"{label(k)} differs from a replay of the log: " + "; ".join(cols))
    if len(out) > MAX_ROWS_NAMED:
        out = [*out[:MAX_ROWS_NAMED], f"{table.name}: {len(out) - MAX_ROWS_NAMED} more rows differ"]
    return out


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
