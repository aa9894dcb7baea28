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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.pool import StaticPool

from .. import db, projections, rules, team
from .. import events as ev
from .. import schema as t
from ..canonical import GENESIS_HASH, canonical_json, chain_hash, digest_of
from ..codec import EventDecoder
from ..errors import BlobProblem, StoreError, UnknownTask
from ..model import Actor, actor_json
from ..record import Event, stored_body
from ..signing import keyring
from ..signing.check import check_store as check_signatures
from ..signing.keyring import Keyring
from ..store import Store, _environment_error
from . import verified_heads
from .verified_heads import VerifiedHead
from .verify_codes import ProblemCode, code_of

#: How many differing rows of one projection table are named before the rest are counted.
MAX_ROWS_NAMED = 10
_FLOAT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Finding:
    """One thing verify found. `kind` is a stable word for what was found, `code` which proof
    it is about (one of a few: store.services.verify_codes); `message` names the seq,
    digest, checkpoint or approval concerned, for a person."""

    task_id: str
    kind: str
    message: str
    #: The event, the signing key and the blob concerned, for a finding about one (the
    #: message names them too): a script reads them here, never from the message.
    seq: int | None = None
    key_id: str | None = None
    digest: str | None = None
    #: The actor of the event concerned (`kind:id`), where the finding is about who wrote it.
    actor: str | None = None
    #: Which proof it is about, where `kind` alone does not say (a package refused for an
    #: event altered is a `chain` problem); else `code_of(kind)`.
    given_code: ProblemCode | None = field(default=None, repr=False)

    @property
    def code(self) -> ProblemCode:
        """Which proof failed, from a small stable set (store.services.verify_codes)."""
        return self.given_code or code_of(self.kind)

    def line(self) -> str:
        return f"{self.task_id}: {self.kind}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        del out["given_code"]
        out["code"] = self.code.value
        return out


@dataclass(frozen=True)
class RoleFinding(Finding):
    """An event whose recorded database role (`events.db_role`, a team store's) could not
    have written it: `seq` is the event, `role` the role, `rule` the store.rules refusal."""

    role: str = ""
    rule: str = ""


@dataclass(frozen=True)
class AuthorityFinding(Finding):
    """An event its actor could not have written then (store.rules.event_authority): `seq`
    the event, `actor` who it names, `rule` the rule that refuses it."""

    rule: str = ""


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
        with _Scratch() as scratch:
            for tid in ids:
                mem = witness.get(tid) or legacy.get(tid)
                found = _TaskCheck(store, conn, scratch, tid, blob_cache, mem).run()
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
        env = _environment_error(exc)
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


class _Scratch:
    """A private temporary SQLite database holding only the projection tables: where a
    task's log is replayed, so the live tables are never written and no write lock is
    taken. SQLite keeps such a database in memory and spills it to a temporary file as it
    grows, so a large task's replay does not have to fit in memory. Each task's replay is
    one transaction, rolled back when the task is done."""

    def __init__(self) -> None:
        def connect() -> sqlite3.Connection:
            raw = sqlite3.connect("", check_same_thread=False, isolation_level=None)
            raw.execute("PRAGMA journal_mode=MEMORY")
            raw.execute("PRAGMA synchronous=OFF")
            return raw

        self.engine = sa.create_engine("sqlite://", creator=connect, poolclass=StaticPool)
        t.metadata.create_all(self.engine, tables=list(t.PROJECTIONS))
        self.conn = self.engine.connect()
        self._raw: Any = self.conn.connection.driver_connection

    def __enter__(self) -> _Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()
        self.engine.dispose()

    def begin(self) -> None:
        self._raw.execute("BEGIN")

    def discard(self) -> None:
        self.conn.rollback()
        if self._raw.in_transaction:
            self._raw.execute("ROLLBACK")


# --- one task ------------------------------------------------------------------------------

_LOG_COLUMNS = (
    t.events.c.seq,
    t.events.c.type,
    t.events.c.format,
    t.events.c.payload,
    t.events.c.actor_kind,
    t.events.c.actor_id,
    t.events.c.actor_name,
    t.events.c.at,
    t.events.c.prev_hash,
    t.events.c.hash,
)
#: Rows fetched at a time while the log streams (a server-side cursor on PostgreSQL).
_BATCH = 2000
#: The event types whose payloads the checks after the stream need (see `_gather`).
_GATHERED = frozenset(
    {
        ev.CheckpointWritten.TYPE,
        ev.ApprovalRequested.TYPE,
        ev.ApprovalConsumed.TYPE,
        ev.ApprovalDecided.TYPE,
        ev.BudgetCharged.TYPE,
        ev.ArtifactVersionRecorded.TYPE,
        ev.EvidenceAttached.TYPE,
        ev.EffectPlanned.TYPE,
        ev.EffectRevised.TYPE,
    }
)
# Retention (issue 35 part R): a note kept as content names a blob; a tombstone retires one.
_GATHERED = _GATHERED | {ev.NoteStored.TYPE, ev.ContentRetired.TYPE}
#: Checkpoint boundary seqs looked up per query.
_LOOKUP = 500


@dataclass
class _CheckpointSeen:
    """What lineage needs of a checkpoint.written event (its state is not kept)."""

    seq: int
    checkpoint_id: str
    reason: str
    supersedes: tuple[str, ...]
    merged: tuple[str, ...]
    boundary_seq: int
    boundary_hash: str
    digest_problem: str | None


class _TaskCheck:
    def __init__(
        self,
        store: Store,
        conn: Connection,
        scratch: _Scratch,
        task_id: str,
        blob_cache: dict[str, str | None],
        remembered: VerifiedHead | None,
    ) -> None:
        self.store = store
        self.conn = conn
        self.scratch = scratch
        self.task_id = task_id
        self.blob_cache = blob_cache
        self.mem = remembered
        self.problems: list[Finding] = []
        self.info: list[Finding] = []
        self.head: tuple[int, str] | None = None
        self.count = 0
        self.hash_at_remembered: str | None = None
        self.decoded_all = True
        self.replaying = True
        self.replay_error: str | None = None
        self.replay_seq: int | None = None
        # What the later checks need, gathered as the log streams by.
        self.checkpoints: list[_CheckpointSeen] = []
        self.requested: set[str] = set()
        self.decided: dict[str, list[int]] = defaultdict(list)
        # Each decision as rules.why_decided_again reads it, and each request's quorum.
        self.decisions: dict[str, list[tuple[str, str, bool, int | None]]] = defaultdict(list)
        self.asked: dict[str, int | None] = {}
        self.bad_deciders: list[tuple[int, str, str, str]] = []
        self.consumed: dict[str, list[int]] = defaultdict(list)
        self.unknown_consumed: list[tuple[int, str]] = []
        self.charged: dict[str, tuple[int, list[float]]] = {}
        self.blob_refs: dict[tuple[str, bool], str] = {}
        # How many items name each digest, and how many of them a tombstone retired: a blob
        # gone after all its items were retired is accounted for, not missing.
        self.item_refs: Counter[str] = Counter()
        self.retired_refs: Counter[str] = Counter()
        # The authority replay (store.rules.event_authority): the state the rules ask of the
        # log so far, the event before, and the seqs that close a signed transaction.
        self.log_state = rules.LogState()
        self.person_holds = False  # a person holds the task's lease (no agent writes)
        self.signed_seqs: frozenset[int] = frozenset()
        self.signed_to = 0

    def problem(
        self, kind: str, message: str, seq: int | None = None, *, digest: str | None = None
    ) -> None:
        self.problems.append(Finding(self.task_id, kind, message, seq=seq, digest=digest))

    def note(self, kind: str, message: str, digest: str | None = None) -> None:
        self.info.append(Finding(self.task_id, kind, message, digest=digest))

    def run(self) -> _TaskCheck:
        sg = t.signatures
        self.signed_seqs = frozenset(
            int(seq)
            for (seq,) in self.conn.execute(sa.select(sg.c.seq).where(sg.c.task_id == self.task_id))
        )
        self.signed_to = max(self.signed_seqs, default=0)
        self.scratch.begin()
        try:
            self._stream_log()
            task = self.conn.execute(
                sa.select(t.tasks).where(t.tasks.c.task_id == self.task_id)
            ).first()
            self._task_head(task)
            self._remembered()
            self._projections()
        finally:
            self.scratch.discard()
        self._lineage()
        self._approvals()
        self._budgets()
        self._blobs()
        return self

    # --- the log ---------------------------------------------------------------------------

    def _stream_log(self) -> None:
        """One pass over the log, row by row: the chain, decoding, the replay into the
        scratch database, and what lineage, approvals, budgets and blobs need. Memory stays
        bounded by the task's projections, not by the length of its log."""
        tid = self.task_id
        q = sa.select(*_LOG_COLUMNS).where(t.events.c.task_id == tid).order_by(t.events.c.seq)
        rows = _stream(self.conn, q)
        expected_prev, expected_seq, prev_seq, count = GENESIS_HASH, 1, 0, 0
        mem_seq = self.mem.seq if self.mem is not None else None
        fast_hash = _RowHasher(tid)
        decoder = EventDecoder()
        pending: Event | None = None
        head_only_by_type: dict[str, bool] = {}
        # The authority replay: only an event a rule judges, one in or after the store's
        # name, or an agent's while a person holds the task is judged (`_authority`); the
        # rest only moves the state the rules read, where it does (most do not).
        judged, folded = rules.JUDGED_EVENTS, rules.LOG_STATE_EVENTS
        last: tuple[str, Any, str, str, str] | None = None
        last_kind, holds = "", False
        for row in rows:
            seq, type_, fmt, payload, akind, aid, aname, at, prev, digest = row
            count += 1
            self._check_link(row, fast_hash, expected_seq, expected_prev, prev_seq)
            if seq == mem_seq:
                self.hash_at_remembered = digest
            expected_prev, expected_seq, prev_seq = digest, seq + 1, seq
            try:
                decoded, actor = decoder(type_, fmt, payload, akind, aid, aname)
            # JSONDecodeError and pydantic's ValidationError are ValueErrors.
            except (ValueError, StoreError) as exc:
                self.decoded_all = self.replaying = False
                reason = " ".join(str(exc).splitlines())[:300]
                self.problem(
                    "event_unreadable",
                    f"seq {seq} ({type_}) cannot be read: {reason}; "
                    "the task's projections were not compared with a replay",
                    seq,
                )
                continue
            event = Event(tid, seq, type_, decoded, actor, at, prev, digest)
            if (
                type_ in judged
                or akind == "system"
                or last_kind == "system"
                or (holds and akind == "agent")
            ):
                self._authority(rules.LogEvent(type_, decoded, akind, aid, at), seq, last)
                holds = self.person_holds
            elif type_ in folded:
                self._fold(rules.LogEvent(type_, decoded, akind, aid, at))
                holds = self.person_holds
            last, last_kind = (type_, decoded, akind, aid, at), akind
            if type_ in _GATHERED:
                self._gather(event)
            if self.replaying:
                # An event that only moves the head is replayed only if no later event
                # moves it again (every apply moves it first): same rows, less work.
                head_only = head_only_by_type.get(type_)
                if head_only is None:
                    head_only = head_only_by_type[type_] = projections.only_advances_head(type_)
                if head_only:
                    pending = event
                else:
                    pending = None
                    self._replay(event)
        self.count = count
        if count:
            self.head = (prev_seq, expected_prev)
        if pending is not None and self.replaying:
            self._replay(pending)

    def _check_link(
        self,
        row: Sequence[Any],
        fast_hash: _RowHasher,
        expected_seq: int,
        expected_prev: str,
        prev_seq: int,
    ) -> None:
        """One row's place in the chain: the seq after the one before, the first a task's
        creation, its prev_hash the hash before it, and its hash its content's."""
        seq, type_, fmt, payload, akind, aid, aname, at, prev, digest = row
        if seq != expected_seq:
            self._seq_gap(seq, expected_seq, prev_seq)
        if seq == 1 and type_ != "task.created":
            self.problem("event_hash", f"seq 1 is {type_}, not task.created", seq)
        if prev != expected_prev:
            before = f"seq {prev_seq}'s hash {expected_prev}" if prev_seq else "the genesis hash"
            self.problem("chain_link", f"seq {seq}: prev_hash {prev} is not {before}", seq)
        # The hash of the stored bytes as they are: what the writer hashed. Only when that
        # differs is the payload parsed and hashed in canonical form (the slow way), so a
        # payload stored in another but equal form is not taken for a changed one.
        if fast_hash(prev, akind, aid, aname, at, fmt, payload, seq, type_) != digest:
            tid = self.task_id
            recomputed = _recompute(tid, seq, type_, fmt, payload, akind, aid, aname, at, prev)
            if recomputed != digest:
                self.problem(
                    "event_hash",
                    f"seq {seq} ({type_}): stored hash {digest} does not match its content "
                    f"(recomputed {recomputed}): the event was changed after it was written",
                    seq,
                )

    def _authority(
        self, e: rules.LogEvent, seq: int, last: tuple[str, Any, str, str, str] | None
    ) -> None:
        """The event against the rules, on the state before it; then the state after it."""
        # The event before it in the same transaction: one transaction's events share its
        # time, and on a signed task a signature closes one (an unsigned task's transactions
        # are only guessed from their time: two may share one on a server).
        prev = None
        if last is not None and last[4] == e.at and (seq - 1) not in self.signed_seqs:
            prev = rules.LogEvent(*last)
        refused = rules.event_authority(e, self.log_state, prev, exact=seq <= self.signed_to)
        if refused is not None:
            self._refused(e, seq, refused)
        if e.type in rules.LOG_STATE_EVENTS:
            self._fold(e)

    def _fold(self, e: rules.LogEvent) -> None:
        state = self.log_state
        rules.fold_log_state(state, e)
        lease = state.lease
        self.person_holds = (
            lease is not None and lease.holder_kind == rules.ActorKind.PERSON and not lease.ended
        )

    def _refused(self, e: rules.LogEvent, seq: int, refused: rules.Refusal) -> None:
        actor = f"{e.actor_kind}:{e.actor_id}"
        if e.type == ev.ApprovalDecided.TYPE and refused.rule.startswith("approval_"):
            # As verify always named it: an approval decided against its rules.
            said = f"seq {seq} decides approval {e.payload.approval_id}: {refused.message}"
            self.bad_deciders.append((seq, said, actor, refused.rule))
            return
        kind = "not_by_the_store" if e.actor_kind == rules.ActorKind.SYSTEM else "not_authorized"
        self.problems.append(
            AuthorityFinding(
                self.task_id,
                kind,
                f"seq {seq} ({e.type}) by {actor}: {refused.message}",
                seq=seq,
                actor=actor,
                rule=refused.rule,
            )
        )

    def _seq_gap(self, seq: int, expected_seq: int, prev_seq: int) -> None:
        if seq < 1:
            self.problem("seq_gap", f"seq {seq}: seqs start at 1", seq)
            return
        missing = (
            f"seq {expected_seq}" if seq == expected_seq + 1 else f"seqs {expected_seq}..{seq - 1}"
        )
        after = f"seq {prev_seq}" if prev_seq else "the start"
        self.problem("seq_gap", f"{missing} missing: the log jumps from {after} to seq {seq}", seq)

    def _replay(self, e: Event) -> None:
        try:
            projections.apply(self.scratch.conn, e)
        except Exception as exc:  # a broken log can make any apply function fail
            reason = " ".join(str(getattr(exc, "orig", None) or exc).splitlines())
            self.replay_error = (
                f"replaying the log failed at seq {e.seq} ({e.type}): "
                f"{type(exc).__name__}: {reason}"
            )
            self.replay_seq = e.seq
            self.replaying = False

    def _gather(self, e: Event) -> None:
        p = e.payload
        if isinstance(p, ev.CheckpointWritten):
            digest = digest_of(p.state)
            self.checkpoints.append(
                _CheckpointSeen(
                    e.seq,
                    p.checkpoint_id,
                    p.reason,
                    tuple(p.supersedes),
                    tuple(p.merged),
                    p.boundary_seq,
                    p.boundary_hash,
                    None
                    if digest == p.state_digest
                    else f"checkpoint {p.checkpoint_id} (seq {e.seq}): state_digest "
                    f"{p.state_digest} is not the digest of its state ({digest})",
                )
            )
        elif isinstance(p, ev.ApprovalRequested):
            self.requested.add(p.approval_id)
            self.asked[p.approval_id] = p.approvers
        elif isinstance(p, ev.ApprovalDecided):
            self.decided[p.approval_id].append(e.seq)
            self.decisions[p.approval_id].append(
                (p.decision, e.actor.id, p.edited is not None, p.needed)
            )
        elif isinstance(p, ev.ApprovalConsumed):
            self.consumed[p.approval_id].append(e.seq)
            if p.approval_id not in self.requested:
                self.unknown_consumed.append(
                    (
                        e.seq,
                        f"seq {e.seq} consumes approval {p.approval_id}, which this task "
                        "never requested before it",
                    )
                )
        elif isinstance(p, ev.BudgetCharged):
            n, partials = self.charged.get(p.counter, (0, []))
            _add_exact(partials, p.amount)
            self.charged[p.counter] = (n + 1, partials)
        if isinstance(p, ev.ContentRetired):
            self.retired_refs[p.digest] += 1
        for digest, owner, required in _referenced_blobs((e,)):
            self.blob_refs.setdefault((digest, required), owner)
            self.item_refs[digest] += required

    def _task_head(self, task: Any) -> None:
        if task is None and self.head is not None:
            self.problem(
                "task_head",
                f"the log has {self.count} events up to seq {self.head[0]} but no tasks row",
            )
        elif task is not None and self.head is None:
            self.problem("task_head", "the tasks row exists but the log has no events")
        elif task is not None and self.head is not None:
            seq, h = self.head
            if (task.last_seq, task.head_hash) != (seq, h):
                self.problem(
                    "task_head",
                    f"tasks row says the head is seq {task.last_seq} ({task.head_hash}); "
                    f"the log ends at seq {seq} ({h})",
                )

    def _remembered(self) -> None:
        mem = self.mem
        if mem is None:
            return
        seq, h = mem.seq, mem.hash
        said = f"verify found this task clean at seq {seq} ({h}) on {mem.verified_at}"
        if self.hash_at_remembered is None:
            if self.head is None:
                now = f"the log has no events for it now: {_seqs(1, seq)} went missing"
            elif self.head[0] < seq:
                now = (
                    f"the log now ends at seq {self.head[0]}: {_seqs(self.head[0] + 1, seq)} "
                    "went missing; the store was truncated or rolled back (or an older copy "
                    "of it restored)"
                )
            else:
                now = f"the event at seq {seq} is gone"
            self.problem("head_rolled_back", f"{said}; {now}", seq)
        elif self.hash_at_remembered != h:
            self.problem(
                "head_rewritten",
                f"{said}; the event at seq {seq} now has hash {self.hash_at_remembered}: the "
                "log was rolled back and rewritten",
                seq,
            )

    # --- projections ---------------------------------------------------------------------

    def _projections(self) -> None:
        if self.replay_error is not None:
            self.problem("replay_failed", self.replay_error, self.replay_seq)
            return
        if not self.decoded_all:
            return
        for table in t.PROJECTIONS:
            before = _dump_table(self.conn, table, self.task_id)
            after = _dump_table(self.scratch.conn, table, self.task_id)
            if before != after:
                for message in _row_differences(table, before, after):
                    self.problem("projection", message)

    # --- lineage -------------------------------------------------------------------------

    def _boundary_hashes(self) -> dict[int, str]:
        """The hash of each event a checkpoint names as its boundary, from the snapshot:
        looked up afterwards, so the stream need not keep every hash of the log."""
        wanted = sorted({c.boundary_seq for c in self.checkpoints})
        found: dict[int, str] = {}
        ev_t = t.events
        for i in range(0, len(wanted), _LOOKUP):
            chunk = wanted[i : i + _LOOKUP]
            rows = self.conn.execute(
                sa.select(ev_t.c.seq, ev_t.c.hash).where(
                    ev_t.c.task_id == self.task_id, ev_t.c.seq.in_(chunk)
                )
            )
            found.update((int(r.seq), str(r.hash)) for r in rows)
        return found

    def _lineage(self) -> None:
        """The checkpoints' lineage: each written once at a boundary in the log, one initial
        checkpoint with no parent, every parent a checkpoint of this task written earlier,
        no cycle; more than one head is a fork (said, not a problem)."""
        if not self.checkpoints:
            return
        written = self._checkpoints_written()
        self._initial_checkpoint(written)
        edges, replaced = self._lineage_edges(written)
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
                + ", ".join(f"{c} (seq {written[c].seq})" for c in heads),
            )

    def _checkpoints_written(self) -> dict[str, _CheckpointSeen]:
        """Each checkpoint by id, written once, its boundary an event before it with the
        hash it names, its state's digest its own."""
        hashes = self._boundary_hashes()
        written: dict[str, _CheckpointSeen] = {}
        for c in self.checkpoints:
            cid = c.checkpoint_id
            if cid in written:
                self.problem(
                    "lineage_duplicate",
                    f"checkpoint {cid} is written twice (seq {written[cid].seq} and seq {c.seq})",
                    c.seq,
                )
                continue
            written[cid] = c
            named = f"checkpoint {cid} (seq {c.seq}) names boundary seq {c.boundary_seq}"
            if c.boundary_seq >= c.seq:
                self.problem("checkpoint_boundary", f"{named}, which is not before it", c.seq)
            elif c.boundary_seq not in hashes:
                self.problem("checkpoint_boundary", f"{named}, which is not in the log", c.seq)
            elif hashes[c.boundary_seq] != c.boundary_hash:
                self.problem(
                    "checkpoint_boundary",
                    f"{named} with hash {c.boundary_hash}; the event there has hash "
                    f"{hashes[c.boundary_seq]}",
                    c.seq,
                )
            if c.digest_problem is not None:
                self.problem("checkpoint_digest", c.digest_problem, c.seq)
        return written

    def _initial_checkpoint(self, written: dict[str, _CheckpointSeen]) -> None:
        """Exactly one initial checkpoint, and it has no parent."""
        initial = [cid for cid, c in written.items() if c.reason == "initial"]
        if len(initial) != 1:
            listed = ", ".join(f"{i} (seq {written[i].seq})" for i in initial)
            self.problem(
                "lineage_initial",
                f"{len(initial)} initial checkpoints ({listed}); a task has exactly one"
                if initial
                else f"no initial checkpoint among {len(written)} checkpoints",
            )
        for cid in initial:
            c = written[cid]
            if c.supersedes or c.merged:
                self.problem(
                    "lineage_initial",
                    f"initial checkpoint {cid} (seq {c.seq}) supersedes "
                    f"{', '.join((*c.supersedes, *c.merged))}; an initial checkpoint has no parent",
                    c.seq,
                )

    def _lineage_edges(
        self, written: dict[str, _CheckpointSeen]
    ) -> tuple[dict[str, list[str]], set[str]]:
        """Each checkpoint's parents (what it supersedes or merges) that are checkpoints of
        this task written before it, and every id some checkpoint replaces."""
        edges: dict[str, list[str]] = defaultdict(list)
        replaced: set[str] = set()
        unresolved: list[tuple[str, int, str, str]] = []
        for cid, c in written.items():
            seq = c.seq
            for how, refs in (("supersedes", c.supersedes), ("merges", c.merged)):
                for ref in refs:
                    replaced.add(ref)
                    if ref == cid:
                        self.problem(
                            "lineage_cycle", f"checkpoint {cid} (seq {seq}) {how} itself", seq
                        )
                    elif ref in written:
                        edges[cid].append(ref)
                        if written[ref].seq > seq:
                            self.problem(
                                "lineage_forward",
                                f"checkpoint {cid} (seq {seq}) {how} {ref}, which is written "
                                f"only later (seq {written[ref].seq})",
                                seq,
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
            self.problem(
                "lineage_unresolved", f"checkpoint {cid} (seq {seq}) {how} {ref}, {where}", seq
            )
        return edges, replaced

    def _owners_elsewhere(self, refs: set[str]) -> dict[str, str]:
        """The other task each of these checkpoint ids belongs to, where one does."""
        if not refs:
            return {}
        cp = t.checkpoints
        rows = self.conn.execute(
            sa.select(cp.c.checkpoint_id, cp.c.task_id).where(
                cp.c.checkpoint_id.in_(sorted(refs)), cp.c.task_id != self.task_id
            )
        )
        return {str(r.checkpoint_id): str(r.task_id) for r in rows}

    # --- approvals and budgets -----------------------------------------------------------

    def _approvals(self) -> None:
        for seq, message in self.unknown_consumed:
            self.problem("approval_unknown", message, seq)
        for seq, message, actor, rule in self.bad_deciders:
            self.problems.append(
                AuthorityFinding(
                    self.task_id, "approval_decider", message, seq=seq, actor=actor, rule=rule
                )
            )
        for approval_id, seqs in self.decided.items():
            # Several people may approve one request (its quorum), each once, until it is
            # settled; nothing is decided after that.
            why = rules.why_decided_again(self.decisions[approval_id], self.asked.get(approval_id))
            if len(seqs) > 1 and why is not None:
                self.problem(
                    "approval_redecided",
                    f"approval {approval_id} is decided {len(seqs)} times "
                    f"(seqs {', '.join(map(str, seqs))}); {why}",
                )
        for approval_id, seqs in self.consumed.items():
            if len(seqs) > 1:
                self.problem(
                    "approval_reused",
                    f"approval {approval_id} is consumed {len(seqs)} times "
                    f"(seqs {', '.join(map(str, seqs))}); an approval is used at most once",
                )

    def _budgets(self) -> None:
        rows = {
            r.counter: r
            for r in self.conn.execute(
                sa.select(t.budgets).where(t.budgets.c.task_id == self.task_id)
            )
        }
        for counter in sorted(set(rows) | set(self.charged)):
            n, partials = self.charged.get(counter, (0, []))
            total = math.fsum(partials)
            row = rows.get(counter)
            if row is None:
                self.problem(
                    "budget",
                    f"counter {counter} has {n} charges ({total:g}) but no budgets row",
                )
            elif not math.isclose(
                float(row.used), total, rel_tol=_FLOAT_TOLERANCE, abs_tol=_FLOAT_TOLERANCE
            ):
                self.problem(
                    "budget",
                    f"counter {counter}: used is {row.used:g}, but its {n} charges "
                    f"sum to {total:g}",
                )

    # --- blobs ---------------------------------------------------------------------------

    def _blobs(self) -> None:
        for (digest, required), owner in self.blob_refs.items():
            problem = self._blob_problem(digest)
            if problem is None:
                continue
            if problem == "missing" and required and self._retired(digest):
                self.note(
                    "blob_retired",
                    f"blob {digest} ({owner}) was retired by its retention class; its "
                    "tombstone keeps the digest, size and media type",
                    digest,
                )
            elif problem == "missing" and not required:
                self.note(
                    "blob_absent",
                    f"blob {digest} ({owner}) is not in the blob store; the intent may name "
                    "content the store was never given",
                    digest,
                )
            elif problem == "missing":
                self.problem("blob_missing", f"blob {digest} ({owner}) is missing", digest=digest)
            else:
                self.problem("blob_corrupt", f"blob {digest} ({owner}) is {problem}", digest=digest)

    def _retired(self, digest: str) -> bool:
        """Every item of this task naming the digest was retired (store.commands.retention):
        the blob may have gone. One live item left, and it is missing, not retired."""
        return 0 < self.item_refs[digest] <= self.retired_refs[digest]

    def _blob_problem(self, digest: str) -> str | None:
        if digest not in self.blob_cache:
            try:
                self.blob_cache[digest] = self.store.blobs.problem(digest, verify=True)
            except BlobProblem as exc:
                self.blob_cache[digest] = exc.problem
        return self.blob_cache[digest]


def _stream(conn: Connection, stmt: sa.Select[Any]) -> Iterator[Sequence[Any]]:
    """The rows of `stmt`, fetched a batch at a time, inside the snapshot's transaction. On
    SQLite straight from the driver's cursor on the snapshot's own connection (plain tuples:
    SQLAlchemy's rows cost as much as hashing them); elsewhere through a server-side cursor
    (`yield_per`), so a long log is never held whole in memory on either side."""
    if conn.dialect.name != "sqlite":
        yield from conn.execution_options(yield_per=_BATCH).execute(stmt)
        return
    compiled = stmt.compile(dialect=conn.dialect)
    args = [compiled.params[name] for name in compiled.positiontup or ()]
    raw: Any = conn.connection.driver_connection
    cursor = raw.cursor()
    try:
        try:
            cursor.execute(compiled.string, args)
            batch = cursor.fetchmany(_BATCH)
            while batch:
                yield from batch
                batch = cursor.fetchmany(_BATCH)
        except sqlite3.Error as exc:  # the same wrapped errors as Core raises
            raise sa.exc.DBAPIError.instance(
                compiled.string, args, exc, sqlite3.Error, dialect=conn.dialect
            ) from exc
    finally:
        cursor.close()


class _RowHasher:
    """`canonical.chain_hash_of_parts` of a stored row, built from its stored texts with the
    parts that repeat along a task's log (task id, type names, actors, the time shared by
    one transaction's events) encoded once. Verify only trusts a match: a mismatch is
    checked again the slow way (`_recompute`)."""

    def __init__(self, task_id: str) -> None:
        self.tail = f',"task_id":{canonical_json(task_id)},"type":'
        self.types: dict[str, str] = {}
        self.actors: dict[tuple[str, str, str], str] = {}
        self.last_at = ("", "")

    def __call__(
        self,
        prev: str,
        kind: str,
        actor_id: str,
        name: str,
        at: str,
        fmt: int,
        payload: str,
        seq: int,
        type_: str,
    ) -> str:
        key = (kind, actor_id, name)
        actor = self.actors.get(key)
        if actor is None:
            text = actor_json(Actor.model_construct(kind=kind, id=actor_id, name=name))
            actor = self.actors[key] = f'{{"actor":{text},"at":'
        type_text = self.types.get(type_)
        if type_text is None:
            type_text = self.types[type_] = canonical_json(type_) + "}"
        if self.last_at[0] != at:
            self.last_at = (at, canonical_json(at))
        body = (
            f"{prev}\n{actor}{self.last_at[1]},"
            f'"format":{fmt},"payload":{payload},"seq":{seq}{self.tail}{type_text}'
        )
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _recompute(
    task_id: str,
    seq: int,
    type_: str,
    fmt: int,
    payload_text: str,
    kind: str,
    actor_id: str,
    name: str,
    at: str,
    prev: str,
) -> str:
    try:
        payload = json.loads(payload_text)
    except ValueError:
        return "(the stored payload is not JSON)"
    # model_construct: the hash covers what is stored, valid or not.
    actor = Actor.model_construct(kind=kind, id=actor_id, name=name)
    body = stored_body(task_id, int(seq), type_, int(fmt), payload, actor, at)
    try:
        return chain_hash(str(prev), body)
    except UnicodeEncodeError:
        return "(the stored prev_hash is not ASCII)"


def _add_exact(partials: list[float], x: float) -> None:
    """Add `x` to a sum kept as non-overlapping partials (Shewchuk, as `math.fsum` does
    inside), so a counter's charges are summed exactly without keeping every one."""
    i = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            partials[i] = lo
            i += 1
        x = hi
    partials[i:] = [x]


def _seqs(first: int, last: int) -> str:
    return f"seq {last}" if first == last else f"seqs {first}..{last}"


def _dump_table(conn: Connection, table: sa.Table, task_id: str) -> list[tuple[Any, ...]]:
    """A task's rows of one projection table in primary-key order (as projections.dump,
    one table at a time, so only one table's rows are held at once)."""
    order = list(table.primary_key.columns)
    q = sa.select(table).where(table.c.task_id == task_id).order_by(*order)
    return [tuple(r) for r in conn.execute(q)]


def _referenced_blobs(events: Iterable[Event]) -> Iterable[tuple[str, str, bool]]:
    """(digest, owner, required) of every blob the log names; `required` is False for an
    effect's intended state, which may never have been given to the store."""
    for e in events:
        p = e.payload
        if isinstance(p, ev.ArtifactVersionRecorded):
            yield p.digest, f"artifact {p.artifact_id} v{p.version}, seq {e.seq}", True
        elif isinstance(p, ev.EvidenceAttached):
            yield p.digest, f"evidence {p.evidence_id}, seq {e.seq}", True
        elif isinstance(p, ev.NoteStored):
            yield p.digest, f"note {p.note_id}, seq {e.seq}", True
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
