"""The store: open a durable record, write to it through commands, read its projections."""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from . import commands as cmds
from . import db, notify, projections, scope
from . import schema as t
from .blob_db import ServerBlobStore
from .blobs import BlobStore
from .codec import EventDecoder
from .errors import CommandRejected, WriteConflict
from .location import Location, resolve
from .model import SYSTEM, Actor
from .opening import open_database
from .reads import queries
from .record import Event
from .signing import keyring
from .signing.keys import SigningKey, signer_for
from .signing.seal import Policy, check_signer, seal
from .tx import Guesses, StateMemo, Tx
from .writing import GuessMissed, Writer

if TYPE_CHECKING:
    from .reads.checkpoints import Checkpoint
    from .reads.decision_views import ApprovalDecision
    from .reads.evidence_views import EvidenceTarget
    from .reads.inbox import TaskRow
    from .reads.judging import JudgeDecision
    from .reads.phase_views import PhaseCompletion
    from .reads.queries import EventFacets, EventRow
    from .reads.state_models import TaskState

# Writers colliding on a server (store.db.write_conflict) retry after a jittered, growing
# pause, so that they do not collide again in step, for up to _RETRY_FOR_S: a busy server can
# break several deadlocks in a row (each found only after its deadlock_timeout).
_RETRY_FOR_S = 15.0
_BACKOFF_S = 0.004
_BACKOFF_CAP_S = 0.5


class _DryRun(Exception):
    """Rolls back a transaction that only checked a command."""


class Store:
    def __init__(self, location: Location, engine: Engine, *, read_only: bool = False) -> None:
        self.location = location
        self.engine = engine
        #: Opened without write access (a read-only mount or directory): reads work, every
        #: write raises StoreReadOnly.
        self.read_only = read_only
        self._states = StateMemo()
        self._guesses = Guesses()
        self.blobs: BlobStore
        if db.is_sqlite(engine):
            self.blobs = BlobStore(location.blobs)
        else:
            # A team store: blob content in the database, the directory only a cache.
            self.blobs = ServerBlobStore(location.blobs, engine)
        self.migrated_from_backup: str | None = None
        #: The key this process signs its writes with (store.signing); None writes unsigned,
        #: which a store that requires signatures refuses. Chosen by the one rule,
        #: `signing.keys.signer_for` (`open`, `sign_as`); set it to sign with another key.
        self.signer: SigningKey | None = None
        # What `sign_as` chose last and for whom: only a key it chose is ever replaced by it.
        self._chosen: SigningKey | None = None
        self._chosen_for: tuple[str, str] | None = None
        self._signing = Policy(where=location)
        refusal = f"the store at {location.describe()} is read-only here; nothing was written"
        self._writes = Writer(
            self,
            self.blobs,
            seal=self._seal,
            read_only=refusal if read_only else None,
            states=self._states,
            guesses=self._guesses,
        )
        # Serializes this process's writers (store.writing).
        self._write_lock = self._writes.lock
        self._held = location.sqlite_file
        if self._held is not None:
            scope.hold_store_files(self._held)

    # --- opening -------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        store: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        create: bool = True,
        signer: SigningKey | str | os.PathLike[str] | None = None,
        require_signatures: bool = False,
    ) -> Store:
        """Open the store at `store` (a directory) or `url`; with neither, the store the
        `boris` command line opens: BORIS_STORE (else the user data directory) and
        BORIS_STORE_URL (store.location.resolve). With `create=False` a store that does not
        exist yet raises StoreMissing and nothing is created, not even a directory. A store
        this process cannot write is opened read-only (see `read_only`).

        `signer` signs every write (store.signing): a key in hand or a key file's path; when
        None, the key file BORIS_KEY names, if any (`signing.keys.signer_for`, the rule the
        CLI follows). A person's own key is chosen by `sign_as(actor)`, which the adapters
        and the window call. With `require_signatures` the store is made to refuse unsigned
        writes from now on, trusting `signer` (a person's key) as its root when its keyring
        is empty."""
        location = resolve(store, url)
        opened = open_database(location, create=create)  # store.opening
        store_ = cls(location, opened.engine, read_only=opened.read_only)
        store_.migrated_from_backup = opened.migrated_from_backup
        if not opened.read_only and (create or location.directory.is_dir()):
            store_.blobs.ensure()
            store_.blobs.sweep()
        try:
            given = signer_for(None, signer) if signer is not None else None
            store_.signer = given or signer_for(None)  # else BORIS_KEY's, if set
            if require_signatures:
                from .signing.trust import require

                require(store_, given)
        except BaseException:
            store_.close()
            raise
        return store_

    def close(self) -> None:
        self._writes.close()
        self.engine.dispose()
        held, self._held = self._held, None
        if held is not None:
            scope.release_store_files(held)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing -------------------------------------------------------------------------

    def transaction(self, *, guess: bool = False) -> contextlib.AbstractContextManager[Tx]:
        """One write transaction; on return its events are durably on disk (store.writing).

        With `guess` (the command path, which retries), a team store's write to a task this
        process wrote last is sent in one exchange (tx.Guesses); if what it knew turns out
        wrong, or the write fails in any way, it raises `GuessMissed` and nothing is written.

        If it fails, the blobs it created are removed again: on SQLite while the write lock
        is still held, so no other writer can have come to reference them; on a server they
        were stored in the transaction itself (`ServerBlobStore.within`), which takes them
        back, and a blob it found already stored was held there until it ended (so that
        `remove_blob` cannot take it from under the item being recorded)."""
        return self._writes.transaction(guess=guess)

    def _seal(self, tx: Tx) -> None:
        """Sign what the transaction wrote, as the store's policy asks (store.signing.seal)."""
        seal(tx.conn, self._signing, self.signer, tx.emitted, tx.now)

    def remove_blob(self, digest: str, in_use: Callable[[Connection], bool]) -> bool:
        """Remove the blob unless `in_use(conn)` finds something live naming its digest;
        whether it was removed. The question and the removal are one step that no write
        naming the digest can come between (issue 40): a write that found the blob stored
        either committed its item before the question (which then sees it) or waits, and
        then finds the blob gone and stores it again.

        On a server the blob's row is locked FOR UPDATE, the question asked and the rows
        deleted in one transaction (`ServerBlobStore.remove_unused`). On SQLite the file
        goes inside a write transaction that writes nothing, after the question: writers,
        who decide "already stored" inside their own write transaction, are held off by
        the write lock until the file is gone. The caller has already committed what made
        the blob unused (the tombstone, the deletion): a crash at any point leaves a blob
        nothing names, or none, never an item without its blob."""
        if isinstance(self.blobs, ServerBlobStore):
            return self.blobs.remove_unused(digest, in_use)
        with self.transaction() as tx:
            if not self.blobs.has(digest) or in_use(tx.conn):
                return False
            self.blobs.remove(digest)
        return True

    def is_signed(self) -> bool:
        """Whether this store signs its records: it trusts a key, or requires signatures."""
        with self.read() as conn:
            return keyring.required(conn) or not keyring.load(conn).empty

    def sign_as(self, actor: Actor) -> None:
        """Sign this process's writes as `actor`, by the one rule (`signing.keys.signer_for`):
        a key already given (`signer=`, `--key`, or set on `signer`) or BORIS_KEY's is kept;
        else, for a person on a signed store, their own key from the user's config directory
        (created on first use, trusted by someone with `boris keys add`). An unsigned store
        stays unsigned; an agent's key is given (`signer`, `--key`, BORIS_KEY), never taken
        from a config dir nor from a person: an agent with none writes unsigned, which a
        signed store refuses naming the next step (`check_signature` says so up front)."""
        if self.signer is not None and self.signer is not self._chosen:
            return  # given: the rule's first word
        who = (str(actor.kind), actor.id)
        if self._chosen is not None and self._chosen_for == who:
            return  # chosen for them already: no file read again
        self.signer = self._chosen = signer_for(actor, store_signed=self.is_signed)
        self._chosen_for = who

    def check_signature(self, actor: Actor) -> None:
        """Raise now the `SignatureRefused` a write by `actor` would meet (unsigned where
        signatures are required, a key not trusted, revoked, or another actor's), with its
        next step; nothing is written. For a caller that must not fail half-way (an agent
        framework's run, refused inside its own hooks)."""
        policy = Policy(where=self.location)
        with self.read() as conn:
            policy.refresh(conn)
            now = db.database_now(conn)
        if policy.signed or self.signer is not None:
            check_signer(policy, self.signer, {(str(actor.kind), actor.id)}, now)

    def execute(self, command: cmds.Command, actor: Actor) -> Any:
        return self._execute_all((command,), actor, by_store=False)[0]

    def execute_all(self, commands: Sequence[cmds.Command], actor: Actor) -> list[Any]:
        """All commands in one transaction: every one is written, or none is."""
        return self._execute_all(commands, actor, by_store=False)

    def execute_as_store(self, command: cmds.Command) -> Any:
        """The store's own write (a summary it generated), recorded as `system:boris`: the
        one way a `system:` actor is written through the command layer, which refuses that
        name from any caller (rules.system_actor_refusal)."""
        return self._execute_all([command], SYSTEM, by_store=True)[0]

    def _execute_all(
        self, commands: Sequence[cmds.Command], actor: Actor, *, by_store: bool
    ) -> list[Any]:
        for c in commands:
            cmds.prepare(self, c)  # slow reads of the world (hashing), before the write lock
        give_up = time.monotonic() + _RETRY_FOR_S
        attempt = 0
        while True:
            try:
                with self._writes.transaction(guess=True) as tx:  # Store.transaction's
                    return [cmds.execute(tx, c, actor, by_store=by_store) for c in commands]
            except GuessMissed:
                continue  # the tasks are no longer guessed: this time they are read first
            except WriteConflict:
                if time.monotonic() >= give_up:
                    raise
            except sa.exc.IntegrityError as exc:
                raise CommandRejected(f"the store refused the write: {exc.orig}") from exc
            time.sleep(random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_S * 2**attempt)))
            attempt += 1

    def check(self, command: cmds.Command, actor: Actor) -> None:
        """Whether the command layer would accept this command from this actor now: every
        rule runs as in `execute`, and the transaction is rolled back. Raises the refusal
        (a `CommandRejected`) when it would be refused; returns None when it would be
        accepted. Content it would store may stay in the blob store (content-addressed,
        unreferenced)."""
        cmds.prepare(self, command)
        try:
            with self.transaction() as tx:
                cmds.execute(tx, command, actor)
                raise _DryRun
        except _DryRun:
            return

    # --- reading -------------------------------------------------------------------------

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A consistent snapshot for several reads."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except sa.exc.DBAPIError as exc:
            env = db.environment_error(exc)
            if env is not None:
                raise env from exc
            raise

    def now(self) -> str:
        with self.read() as conn:
            return db.database_now(conn)

    def tasks(self) -> list[TaskRow]:
        """Every task with what needs the reviewer, most in need first."""
        with self.read() as conn:
            return queries.list_tasks(conn, db.database_now(conn), self.blobs.has)

    def task(self, task_id: str) -> TaskState:
        """The task's whole current state, read now (store.reads.state)."""
        from .reads.state import task_state

        with self.read() as conn:
            return task_state(conn, self.blobs, task_id, db.database_now(conn))

    def approval_decision(self, task_id: str, approval_id: str) -> ApprovalDecision:
        """What a person decides on this approval (store.reads.decision_views), read now."""
        from .reads.decision_views import approval_decision

        with self.read() as conn:
            now = db.database_now(conn)
            return approval_decision(conn, self.blobs, task_id, approval_id, now)

    def judge_decision(self, task_id: str, criterion_id: str) -> JudgeDecision:
        """What a person judging this criterion decides on (store.reads.judging), read now."""
        from .reads.judging import judge_decision
        from .reads.state import blob_problem

        with self.read() as conn:
            return judge_decision(
                conn, task_id, criterion_id, lambda d: blob_problem(self.blobs, d)
            )

    def phase_completion(self, task_id: str, phase_id: str) -> PhaseCompletion:
        """What completing this phase changes (store.reads.phase_views), read now."""
        from .reads.phase_views import phase_completion

        with self.read() as conn:
            return phase_completion(conn, self.blobs, task_id, phase_id, db.database_now(conn))

    def evidence_target(self, task_id: str, criterion_id: str) -> EvidenceTarget:
        """What evidence attached to this criterion is made on (store.reads.evidence_views)."""
        from .reads.evidence_views import evidence_target

        with self.read() as conn:
            return evidence_target(conn, task_id, criterion_id)

    def events(self, task_id: str, **kw: Any) -> list[EventRow]:
        with self.read() as conn:
            queries.task_row(conn, task_id)
            return queries.events(conn, task_id, **kw)

    def event_type_counts(self, task_id: str, after_seq: int = 0) -> dict[str, int]:
        with self.read() as conn:
            return queries.event_type_counts(conn, task_id, after_seq)

    def event_facets(self, task_id: str) -> EventFacets:
        with self.read() as conn:
            return queries.event_facets(conn, task_id)

    def data_version(self) -> int:
        """Grows with every committed event, from any process: what live views poll."""
        with self.read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.coalesce(sa.func.max(t.events.c.id), 0))
                ).scalar_one()
            )

    def listener(self, *, retry_s: float = 1.0) -> notify.Listener | None:
        """A new `notify.Listener` hearing every commit to this store, from any machine; None
        where the database announces nothing (SQLite: watch the file or poll `data_version`).
        It connects on its first `wait`; its owner closes it."""
        if not notify.available(self.location.url):
            return None
        return notify.Listener(self.location.url, retry_s=retry_s)

    def head_checkpoint(self, task_id: str) -> Checkpoint | None:
        """The newest head checkpoint of a task (None before the first); with a fork, the
        newest of the heads: `checkpoints()` tells whether there is a fork."""
        if db.is_sqlite(self.engine):
            # Asked often (resuming, polling views): a kept connection and the events index,
            # or the writer connection while it is idle (store.writing, store.reads.heads).
            return self._writes.head_checkpoint(task_id)
        from .reads.checkpoints import head_checkpoint

        with self.read() as conn:
            return head_checkpoint(conn, task_id)

    def task_ids(self) -> list[str]:
        with self.read() as conn:
            return [
                r[0] for r in conn.execute(sa.select(t.tasks.c.task_id).order_by(t.tasks.c.task_id))
            ]

    # --- replay --------------------------------------------------------------------------

    def load_events(self, conn: Connection, task_id: str) -> Iterable[Event]:
        """The task's events decoded (and upcast) from the log, in order."""
        q = sa.select(t.events).where(t.events.c.task_id == task_id).order_by(t.events.c.seq)
        decoder = EventDecoder()
        for r in conn.execute(q):
            yield decoder.event(r)

    def rebuild(self, task_id: str) -> None:
        """Throw the task's projections away and fold them again from its events."""
        with self.transaction() as tx:
            evts = list(self.load_events(tx.conn, task_id))
            projections.clear(tx.conn, task_id)
            for e in evts:
                projections.apply(tx.conn, e)

    def projection_dump(self, task_id: str) -> dict[str, list[tuple[Any, ...]]]:
        with self.read() as conn:
            return projections.dump(conn, task_id)
