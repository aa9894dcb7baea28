"""`verify`: the whole record checked against itself, in the spirit of `git fsck`.

For each task, from the rows as stored:

- the hash chain: every event's hash recomputed from its stored row (`record.stored_body`,
  `canonical.chain_hash`), every `prev_hash` linked to the event before (the first to the
  genesis hash), seqs from 1 with no gap, every payload decodable;
- the task's head: `tasks.last_seq` / `head_hash` are the log's last event;
- the head verify last found clean (kept outside the database, see `store.verified_heads`):
  the event at that seq must still be there with the same hash, else the log was truncated,
  or rolled back (an older copy of the store restored), or rolled back and rewritten; a
  task remembered there whose log is gone altogether is named too;
- blobs: every blob an artifact version or evidence names exists and its content (streamed)
  hashes to its name; an effect's intended state is checked when its blob is there (the
  intent may name a state the store was never given: then its absence is only noted);
- projections: the task's events are replayed into a scratch database (a private temporary
  SQLite database holding only the projection tables) and the replayed rows are compared
  with the stored ones; the real tables are never written;
- lineage (from the `checkpoint.written` events): exactly one `initial` checkpoint when there
  is any, and it supersedes nothing; every `supersedes` / `merged` id names a checkpoint of
  the same task written earlier; no checkpoint id twice; no cycle; each checkpoint's
  boundary seq and hash are those of the event at that seq, before the checkpoint; its
  `state_digest` is the digest of its state;
- approvals: none consumed more than once, none consumed that the task never requested;
  each decided once, by a person who did not request it (store.rules.decider_refusal);
- budgets: each counter's `used` equals the sum of its `budget.charged` amounts;
- authority: the log replayed through the rules the commands enforce (store.rules
  `event_authority`, over the state `fold_log_state` folds as the projections do): each
  event one its actor's kind could have written at that point, whatever wrote the rows. A
  person's decision (an approval decided, a waiver, a take-over, an expiry, a late change
  acknowledged, a run reopened, a limit raised) by anyone else; a lease acquired beside a
  live holder; an agent's event while a person holds the task; a `system:` event the store
  did not write (not the first event of an import, a generated summary or an observation,
  nor the rules' consequence of the store's event before it in the same transaction). A
  signed task's transactions are known exactly (each signature closes one), an unsigned
  task's only by their shared time. And a deleted task's receipt names a person.

Problems are errors: the record is not what it claims. Info items are true and worth
saying but not errors: a fork in the lineage (more than one head checkpoint, which the
store reports and never resolves by itself), and an effect's intended-state blob that is
not in the blob store.

Everything is read in one read-only snapshot of the database, with the log streamed row by
row: verify takes no lock that a writer waits for, a writer committing meanwhile finishes
normally (and is simply not part of what was verified), and memory is bounded by the
task's projections, not by the length of its log.

After a task verifies without a problem, its head (seq, hash) is remembered in the witness
file (unless `remember=False`); a task with problems keeps the head last found clean, so
the problem is not forgotten by verifying again. A head an older program recorded in the
database's own `verified_heads` table is still compared when the file has none for a task.

This module runs the whole store; the checks of one task are in store.services.verify_checks,
one module per domain (chain, authority, replay, lineage, approvals, budgets, blobs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

# `projections` is not called here (the replay is verify_checks.replay's), but tests reach
# `projections.apply` through this module to pause a replay half-way.
from .. import (
    db,
    projections,  # noqa: F401
    rules,
    team,
)
from .. import schema as t
from ..errors import StoreError, UnknownTask
from ..signing import keyring
from ..signing.check import check_store as check_signatures
from ..signing.keyring import Keyring
from ..store import Store
from . import verified_heads
from .verified_heads import VerifiedHead
from .verify_checks.findings import AuthorityFinding, Finding, RoleFinding
from .verify_checks.replay import MAX_ROWS_NAMED, Scratch
from .verify_checks.task import TaskCheck

__all__ = [
    "MAX_ROWS_NAMED",
    "AuthorityFinding",
    "Finding",
    "Report",
    "RoleFinding",
    "VerifyFailed",
    "remembered_head",
    "verify",
]


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
    #: Why the heads found clean could not be remembered (the store directory read-only).
    remember_error: str | None = None
    #: Whether the store is signed (store.signing); False for an old or unsigned store,
    #: whose signatures are not checked.
    signed: bool = False

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
            "remember_error": self.remember_error,
            "signed": self.signed,
        }


class VerifyFailed(StoreError):
    """Verify found problems; the message is the report's one-line summary."""

    #: Problems in the record: `boris verify` exits 3 (store.answers.EXIT_CODES).
    code = "integrity_problems"
    category = "integrity"

    def __init__(self, report: Report) -> None:
        super().__init__(report.summary())
        self.report = report


# --- the whole store ---------------------------------------------------------------------


def verify(
    store: Store,
    task_id: str | None = None,
    *,
    remember: bool = True,
    keys: Keyring | None = None,
) -> Report:
    """Verify one task, or every task the store knows (by its tasks, events or remembered
    heads). Raises UnknownTask for a task id the store has never heard of.

    Everything is read in one read-only snapshot (see `_snapshot`), and the replay runs in
    a scratch database: verify takes no lock a writer waits for, and a writer that commits
    meanwhile is simply not part of what was verified."""
    report = Report()
    # Read before the snapshot: a head another verify remembers meanwhile is then never
    # newer than the snapshot this run compares it with.
    witness = verified_heads.load(store.location)
    clean: dict[str, VerifiedHead] = {}
    with _snapshot(store) as conn:
        legacy = {
            str(r.task_id): VerifiedHead(int(r.seq), str(r.hash), str(r.verified_at))
            for r in conn.execute(sa.select(t.verified_heads))
        }
        ids = _task_ids(conn, set(witness) | set(legacy))
        # Tasks a person deleted (issue 35 part D): absent on purpose, their receipts checked
        # instead of a log (`_deleted`); a task absent without one is checked as before.
        gone = _deleted(conn, task_id, witness, legacy, report)
        if task_id is not None:
            if task_id not in ids and task_id not in gone:
                raise UnknownTask(task_id)
            ids = [task_id] if task_id not in gone else []
        ids = [x for x in ids if x not in gone]
        now = db.database_now(conn)
        blob_cache: dict[str, str | None] = {}
        with Scratch() as scratch:
            for tid in ids:
                mem = witness.get(tid) or legacy.get(tid)
                found = TaskCheck(store, conn, scratch, tid, blob_cache, mem, keys).run()
                report.tasks.append(tid)
                report.problems.extend(found.problems)
                report.info.extend(found.info)
                if found.head is not None:
                    report.heads[tid] = {"seq": found.head[0], "hash": found.head[1]}
                    if not found.problems:
                        clean[tid] = VerifiedHead(found.head[0], found.head[1], now)
        # Signatures, against the store's keyring or only `keys` (store.signing.check).
        sig_problems, _sig_info, report.signed = check_signatures(conn, ids, keys)
        report.problems.extend(
            Finding(f.task_id, f.kind, f.message, seq=f.seq, key_id=f.key_id, actor=f.actor)
            for f in sig_problems
        )
        for f in sig_problems:
            clean.pop(f.task_id, None)
        # A team store: events whose recorded database role could not have written them.
        for tid, seq, type_, akind, aid, role, refusal in team.role_violations(conn, ids):
            report.problems.append(
                RoleFinding(
                    tid,
                    "role_could_not_write",
                    f"seq {seq} ({type_}) claims {akind} {aid} but was written by database "
                    f"role {role}, which could not have written it: {refusal.message}",
                    seq=seq,
                    role=role,
                    rule=refusal.rule,
                )
            )
            clean.pop(tid, None)
    if remember and clean:
        try:
            verified_heads.remember(store.location, clean)
            report.remembered = list(clean)
        except OSError as exc:
            report.remember_error = (
                f"the heads found clean could not be recorded in "
                f"{verified_heads.witness_path(store.location)}: {exc.strerror or exc}"
            )
    return report


@contextlib.contextmanager
def _snapshot(store: Store) -> Iterator[Connection]:
    """One read transaction over the whole run: a consistent snapshot that no writer waits
    for. SQLite in WAL: a deferred BEGIN (the store's engine issues a plain BEGIN for a
    reader) takes its snapshot at the first SELECT and never blocks or is blocked by a
    writer. PostgreSQL: REPEATABLE READ is one snapshot for every statement (READ COMMITTED,
    the default, is a new one per statement), READ ONLY, and only plain SELECTs, so no row
    lock is ever taken."""
    engine = store.engine
    if engine.dialect.name == "postgresql":
        engine = engine.execution_options(
            isolation_level="REPEATABLE READ", postgresql_readonly=True
        )
    try:
        with engine.connect() as conn, conn.begin():
            yield conn
    except sa.exc.DBAPIError as exc:
        env = db.environment_error(exc)
        if env is not None:
            raise env from exc
        raise


def _deleted(
    conn: Connection,
    task_id: str | None,
    witness: dict[str, VerifiedHead],
    legacy: dict[str, VerifiedHead],
    report: Report,
) -> set[str]:
    """The tasks a person deleted (a receipt, no tasks row, no event), each reported: info
    `task_deleted` when its receipt holds (its hash, its person, its signature on a signed
    store, and a head verify remembered no later than the receipt's), else the problem
    `deletion_receipt`."""
    from .deletion import receipt_problem, receipts_of

    found = {r.task_id: r for r in receipts_of(conn) if task_id in (None, r.task_id)}
    if not found:
        return set()
    present = {str(x) for (x,) in conn.execute(sa.select(t.tasks.c.task_id))}
    present.update(str(x) for (x,) in conn.execute(sa.select(t.events.c.task_id).distinct()))
    ring = keyring.load(conn)
    signed = keyring.required(conn) or not ring.empty
    gone = set()
    for tid, receipt in sorted(found.items()):
        if tid in present:
            continue  # deleted, then made again: the task there now is verified as any
        gone.add(tid)
        report.tasks.append(tid)
        refused = rules.deletion_authority(str(receipt.actor.get("kind")))
        if refused is not None:
            report.problems.append(
                AuthorityFinding(
                    tid,
                    "not_authorized",
                    f"the receipt says {receipt.who} deleted it: {refused.message}",
                    seq=receipt.head_seq,
                    key_id=receipt.key_id,
                    actor=receipt.who,
                    rule=refused.rule,
                )
            )
            continue
        problem = receipt_problem(receipt, ring, signed)
        mem = witness.get(tid) or legacy.get(tid)
        if problem is None and mem is not None and mem.seq > receipt.head_seq:
            problem = (
                f"verify found it clean at seq {mem.seq}, after the receipt's head "
                f"(seq {receipt.head_seq}): events were lost before it was deleted"
            )
        same_seq = mem is not None and mem.seq == receipt.head_seq
        if problem is None and same_seq and mem is not None and mem.hash != receipt.head_hash:
            problem = "the receipt's head hash is not the head verify found clean"
        if problem is not None:
            report.problems.append(Finding(tid, "deletion_receipt", problem))
        else:
            report.info.append(
                Finding(
                    tid,
                    "task_deleted",
                    f"deleted on {receipt.deleted_at} by {receipt.who} at seq "
                    f"{receipt.head_seq} ({receipt.head_hash}): {receipt.reason}",
                    seq=receipt.head_seq,
                    key_id=receipt.key_id,
                )
            )
    return gone


def _task_ids(conn: Connection, remembered: set[str]) -> list[str]:
    ids: set[str] = set(remembered)
    ids.update(r[0] for r in conn.execute(sa.select(t.tasks.c.task_id)))
    ids.update(r[0] for r in conn.execute(sa.select(t.events.c.task_id).distinct()))
    return sorted(ids)


def remembered_head(store: Store, task_id: str) -> dict[str, Any] | None:
    """The head verify last found clean for a task: seq, hash and when; None if never.
    The witness file outside the database first; a head an older program recorded in the
    database's own `verified_heads` table otherwise."""
    head = verified_heads.load(store.location).get(task_id)
    if head is not None:
        return {"task_id": task_id, **head.to_json()}
    with store.read() as conn:
        row = conn.execute(
            sa.select(t.verified_heads).where(t.verified_heads.c.task_id == task_id)
        ).first()
        return None if row is None else dict(row._mapping)
