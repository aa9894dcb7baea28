"""The command layer: every write, from every caller, goes through `execute`.

A command is a pydantic model (its JSON Schema is what `boris schema` prints for writers in
other languages). Its handler checks every invariant against the current projections inside
the write transaction, then emits events. A rejected command raises `CommandRejected` and
the transaction, with anything it emitted, is rolled back.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import re
import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Protocol, Self, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy.engine import Connection

from .. import events as ev
from .. import rules
from .. import schema as t
from .. import status as st
from ..errors import (
    AuthorityRefused,
    BudgetBinds,
    CommandRejected,
    Conflict,
    EvidenceMissing,
    ForkOpen,
    LeaseHeld,
    LeaseLost,
    OlderEvidence,
    PhaseBlocked,
)
from ..limits import MAX_BLOB_BYTES, check_input
from ..model import (
    BUDGET_COUNTERS,
    Actor,
    ArtifactRole,
    EvidenceKind,
    PhaseInput,
    Scope,
)
from ..reads import judging, leases
from ..scope import make_scope, resolve_path
from ..tx import Tx


class Reading(Protocol):
    """What a preparer needs of the store: a read connection (the `Store` is one)."""

    def read(self) -> AbstractContextManager[Connection]: ...


_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
Ident = Annotated[str, Field(pattern=_ID)]


class Command(BaseModel):
    # defer_build: each model's validator is built the first time it is used, not at
    # import: most processes use a few of the ~70 (start-up was 60 ms of CPU shorter).
    # allow_inf_nan=False: "inf" or 1e400 for a float field is refused by pydantic itself.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, allow_inf_nan=False)

    @model_validator(mode="after")
    def _within_limits(self) -> Self:
        """Every value, free-form payloads included: finite, no NUL, within its size
        (store.limits), whichever path built the command, so the same input is refused
        the same way on both engines and whatever is accepted exports and imports again."""
        check_input(self)
        return self


class TaskCommand(Command):
    task_id: Ident
    #: The fencing token of the lease the writer works under (store.commands.leases): an
    #: agent's write whose token is not the task's current lease's is refused (LeaseLost).
    lease_token: int | None = Field(
        default=None,
        ge=1,
        description="the token of your lease on this task (acquire_lease); a write under an "
        "older token is refused as lease_lost (a person took the task over): stop",
    )
    #: Whether the task's lease fences this command in `execute`; the lease's own commands
    #: judge their token themselves, by the same rule.
    FENCED: ClassVar[bool] = True


#: The version of its subject a person's decision was based on: when given and no longer
#: current, the store refuses the decision with a `Conflict` naming who changed it and when.
BasedOn = Annotated[
    int | None,
    Field(
        default=None,
        ge=0,
        description="the version of the subject the decision was based on (a criterion's "
        "rev, an artifact's current version, the objective's revision, a budget limit's "
        "revision, the seq of an effect's last reconciliation, a phase's revision); refused as "
        "a conflict if it changed since",
    ),
]


#: What recording content with a retention class does: `set` (its class) and `note` (a note
#: kept as content), registered by store.commands.retention when imported (the commands
#: package imports it), so this module imports nothing of it (issue 35 part R).
RETENTION: dict[str, Callable[..., Any]] = {}

#: How long recorded content is kept (store.commands.retention, issue 35 part R).
Retain = Annotated[
    str | None,
    Field(
        default=None,
        max_length=48,
        description="how long the content is kept: keep (default), a duration from now "
        "(30d, 12h), or until-completion+Nd, on the database's clock",
    ),
]


# --- models ----------------------------------------------------------------------------------


class CreateTask(Command):
    type: Literal["create_task"] = "create_task"
    task_id: Ident | None = None
    title: str = Field(min_length=1)
    owner: str = Field(min_length=1)
    objective: str = Field(min_length=1)
    scope_paths: list[str] = Field(default_factory=list)
    destinations: list[str] = Field(default_factory=list)


class AmendObjective(TaskCommand):
    type: Literal["amend_objective"] = "amend_objective"
    text: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    based_on: BasedOn = None


class AddCriterion(TaskCommand):
    type: Literal["add_criterion"] = "add_criterion"
    text: str = Field(min_length=1)
    criterion_id: Ident | None = None


class ChangeCriterion(TaskCommand):
    type: Literal["change_criterion"] = "change_criterion"
    criterion_id: Ident
    text: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    based_on: BasedOn = None


class Content(Command):
    """Where new bytes come from: a file inside the task's scope, text, or base64."""

    path: str | None = None
    text: str | None = None
    base64: str | None = None
    media_type: str | None = None

    #: Carried as a blob, not as text in the event: bounded by MAX_BLOB_BYTES (one package
    #: member), and NUL is just a byte there.
    BULK: ClassVar[frozenset[str]] = frozenset({"text", "base64"})

    @model_validator(mode="after")
    def _blob_within_limit(self) -> Self:
        size = len(self.text.encode("utf-8", "surrogatepass")) if self.text is not None else 0
        if self.base64 is not None:
            size = len(self.base64) // 4 * 3
        if size > MAX_BLOB_BYTES:
            raise ValueError(
                f"the content is {size} bytes, more than the limit of {MAX_BLOB_BYTES} bytes "
                "for one content"
            )
        return self


class RecordArtifact(TaskCommand):
    type: Literal["record_artifact"] = "record_artifact"
    artifact_id: Ident | None = None
    name: str = Field(min_length=1)
    role: ArtifactRole = "draft"
    content: Content
    note: str = ""
    effect_id: str | None = None
    attempt_no: int | None = None
    # The current version the writer edited (0: it expects no version yet).
    based_on: BasedOn = None
    retain: Retain = None


class AttachEvidence(TaskCommand):
    type: Literal["attach_evidence"] = "attach_evidence"
    criterion_id: Ident
    kind: EvidenceKind
    content: Content
    evidence_id: Ident | None = None
    description: str = ""
    locator: str = ""
    # The artifact version the evidence was made on (else: the one current when attached).
    artifact_id: Ident | None = None
    artifact_version: int | None = Field(default=None, ge=1)
    retain: Retain = None


class JudgeCriterion(TaskCommand):
    type: Literal["judge_criterion"] = "judge_criterion"
    criterion_id: Ident
    status: Literal["satisfied", "failed", "waived", "unverified"]
    artifact_id: str | None = None
    artifact_version: int | None = None
    evidence_ids: list[str] = Field(default_factory=list)
    note: str = ""
    based_on: BasedOn = None
    # Why evidence made on an older version of the artifact than the one judged still holds:
    # without it, "satisfied" on such evidence is refused.
    older_evidence_reason: str | None = None


class AddPhase(TaskCommand):
    type: Literal["add_phase"] = "add_phase"
    phase_id: Ident
    name: str = Field(min_length=1)
    inputs: list[PhaseInput] = Field(default_factory=list)


class CompletePhase(TaskCommand):
    type: Literal["complete_phase"] = "complete_phase"
    phase_id: Ident
    ok: bool = True
    summary: str = ""
    # The phase's revision the person saw (`PhaseCompletion.rev`: the seq of the last change
    # to its result or to an input's identity); refused as a Conflict if it moved since.
    based_on: BasedOn = None


class SetBudget(TaskCommand):
    type: Literal["set_budget"] = "set_budget"
    counter: str
    limit: float | None = Field(default=None, ge=0)
    # The counter's limit revision the person changed (0: no limit was ever set).
    based_on: BasedOn = None


class ChargeBudget(TaskCommand):
    type: Literal["charge_budget"] = "charge_budget"
    counter: str
    amount: float = Field(gt=0)
    note: str = ""


class ReserveBudget(TaskCommand):
    type: Literal["reserve_budget"] = "reserve_budget"
    counter: str
    amount: float = Field(gt=0)


class ReleaseBudget(TaskCommand):
    type: Literal["release_budget"] = "release_budget"
    counter: str
    amount: float = Field(gt=0)
    # Why: a person's release is their decision and says why (rules.release_refusal).
    reason: str = ""


class SetStatus(TaskCommand):
    type: Literal["set_status"] = "set_status"
    status: st.RunStatus
    reason: str = ""


class RecordNote(TaskCommand):
    type: Literal["record_note"] = "record_note"
    text: str = Field(min_length=1)
    kind: Literal["note", "message"] = "note"
    # `private`: the text is kept as a blob the event names by digest, and an export leaves
    # it out unless asked (store.services.archive; issue 35 part D).
    visibility: rules.Visibility = rules.Visibility.SHARED
    # A class other than keep keeps the text as content (a blob, `note.stored`) so that it
    # can expire (store.commands.retention; issue 35 part R).
    retain: Retain = None


# --- dispatch --------------------------------------------------------------------------------

C = TypeVar("C", bound=Command)
Handler = Callable[[Tx, Any, Actor], Any]
_HANDLERS: dict[type[Command], Handler] = {}
Preparer = Callable[[Reading, Any], None]
_PREPARERS: dict[type[Command], Preparer] = {}


def handles(
    cls: type[C],
) -> Callable[[Callable[[Tx, C, Actor], Any]], Callable[[Tx, C, Actor], Any]]:
    def register(fn: Callable[[Tx, C, Actor], Any]) -> Callable[[Tx, C, Actor], Any]:
        _HANDLERS[cls] = fn
        return fn

    return register


def prepares(
    cls: type[C],
) -> Callable[[Callable[[Reading, C], None]], Callable[[Reading, C], None]]:
    """Register work a command needs done before the write lock is taken (hashing a file):
    it is kept on the command and re-validated cheaply inside the transaction."""

    def register(fn: Callable[[Reading, C], None]) -> Callable[[Reading, C], None]:
        _PREPARERS[cls] = fn
        return fn

    return register


def command_classes() -> list[type[Command]]:
    return list(_HANDLERS)


def prepare(store: Reading, command: Command) -> None:
    """Outside any transaction: the slow reading of the world a command rests on."""
    fn = _PREPARERS.get(type(command))
    if fn is not None:
        fn(store, command)


def authorize(tx: Tx, command: Command, actor: Actor, *, by_store: bool = False) -> None:
    """The authority table (`store.rules.AUTHORITY`), enforced for every caller; and no
    caller but the store itself (`by_store`) names a `system:` actor."""
    ctype = str(getattr(command, "type", ""))
    system = None if by_store else rules.system_actor_refusal(ctype, actor.kind)
    if system is not None:
        raise AuthorityRefused(system.rule, system.message)
    if ctype not in rules.AUTHORITY or actor.kind == "person":
        return
    status = ""
    limit: float | None = None
    task_id = getattr(command, "task_id", None)
    if ctype == "set_status" and task_id:
        status = str(tx.task(task_id).status)
    if ctype == "set_budget" and task_id:
        row = _budget(tx, task_id, str(getattr(command, "counter", "")))
        limit = None if row is None else row.limit_value
    refusal = rules.authority_refusal(
        ctype, command.model_dump(), actor.kind, status=status, current_limit=limit
    )
    if refusal is not None:
        raise AuthorityRefused(refusal.rule, refusal.message)


def execute(tx: Tx, command: Command, actor: Actor, *, by_store: bool = False) -> Any:
    """Run one command inside `tx`. Returns what the handler returns (usually an id).
    `by_store` only for the store's own writes (`Store.execute_as_store`)."""
    handler = _HANDLERS.get(type(command))
    if handler is None:
        raise CommandRejected(f"no handler for {type(command).__name__}")
    authorize(tx, command, actor, by_store=by_store)
    if isinstance(command, TaskCommand) and command.FENCED:
        fence(tx, command.task_id, command.lease_token, actor)
    return handler(tx, command, actor)


def fence(tx: Tx, task_id: str, token: int | None, actor: Actor) -> None:
    """The lease's fence on a write (rules.fence_refusal): raises LeaseLost for a token that
    is not the task's current lease's, LeaseHeld for an agent writing without one beside a
    live holder. Judged inside the write transaction, after the task's row lock (store.tx),
    so a takeover committed before it is seen and one after it waits for it."""
    if actor.kind != "agent":
        return  # a person's writes are never fenced by an agent's lease
    # The row lock first (concurrent writers to the task queue here); on a server the lease
    # comes with the task's row, in the same round trip (store.tx).
    row = tx.lease(task_id)
    judge_lease(row, tx.now, task_id, token, actor)


def judge_fence(conn: Connection, now: str, task_id: str, token: int | None, actor: Actor) -> None:
    """The fence's judgement on any connection (a write's, or a waiting reader's: an agent
    waiting for an approval is told as soon as the task was taken over)."""
    judge_lease(leases.current(conn, task_id), now, task_id, token, actor)


def judge_lease(row: Any, now: str, task_id: str, token: int | None, actor: Actor) -> None:
    """The fence's judgement of the task's lease row as `reads.leases.current` reads it."""
    view = None if row is None else leases.lease_view(row, now)
    refusal = rules.fence_refusal(actor.kind, token, view)
    if refusal is None:
        return
    holder = None if row is None else leases.lease_fields(row, now)["holder"]
    current = None if row is None else int(row.token)
    if refusal.lost:
        raise LeaseLost(
            task_id, refusal.message, lease_token=token, current_token=current, holder=holder
        )
    raise LeaseHeld(
        task_id,
        refusal.message,
        holder=holder,
        lease_token=current,
        expires_at=None if row is None else leases.expires_at_of(row),
    )


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text.strip()).strip("-._").lower()
    return (s or "item")[:48]


def _scope(tx: Tx, task_id: str) -> Scope:
    return Scope.model_validate(tx.task(task_id).scope)


def _require_writable(tx: Tx, task_id: str, fact: str = "") -> str:
    """The task's status, when its record takes this write. `fact`: the command's type where
    it may be a late fact, which a completed record still takes (rules.late_fact_accepted)."""
    status = str(tx.task(task_id).status)
    if not rules.record_open(status) and not rules.late_fact_accepted(status, fact):
        raise CommandRejected(f"task {task_id} is {status}; its record is closed")
    return status


# --- handlers: the task contract -------------------------------------------------------------


@handles(CreateTask)
def _create_task(tx: Tx, cmd: CreateTask, actor: Actor) -> str:
    task_id = cmd.task_id or new_id("task")
    for p in cmd.scope_paths:
        if not Path(p).expanduser().is_absolute():
            raise CommandRejected(f"scope path {p!r} must be absolute")
    scope = make_scope(cmd.scope_paths, tuple(cmd.destinations))
    tx.emit(
        task_id,
        ev.TaskCreated(title=cmd.title, owner=cmd.owner, objective=cmd.objective, scope=scope),
        actor,
    )
    return task_id


@handles(AmendObjective)
def _amend(tx: Tx, cmd: AmendObjective, actor: Actor) -> int:
    _require_writable(tx, cmd.task_id)
    current = int(tx.task(cmd.task_id).objective_rev)
    if cmd.based_on is not None and cmd.based_on != current:
        seq = tx.conn.execute(
            sa.select(t.objective_revisions.c.seq).where(
                t.objective_revisions.c.task_id == cmd.task_id,
                t.objective_revisions.c.rev == current,
            )
        ).scalar_one()
        _conflict(tx, cmd.task_id, "objective", cmd.task_id, cmd.based_on, current, seq)
    rev = current + 1
    tx.emit(
        cmd.task_id,
        ev.ObjectiveAmended(rev=rev, text=cmd.text, reason=cmd.reason, based_on=cmd.based_on),
        actor,
    )
    return rev


def _conflict(
    tx: Tx, task_id: str, kind: str, subject: str, based_on: int, current: int, seq: int | None
) -> None:
    """Refuse a decision based on `based_on` when the subject is at `current`, naming the
    change (the event at `seq`) that moved it."""
    if seq is None:
        raise Conflict(kind, subject, based_on, current)
    change = judging.change_at(tx.conn, task_id, seq)
    raise Conflict(
        kind,
        subject,
        based_on,
        current,
        changed_by=change.by,
        changed_at=change.at,
        change=change.what,
        actor=change.actor.to_json(),
    )


def _criterion_based_on(tx: Tx, task_id: str, row: Any, based_on: int | None) -> None:
    if based_on is not None and based_on != int(row.rev):
        _conflict(tx, task_id, "criterion", row.criterion_id, based_on, int(row.rev), row.rev_seq)


def _criterion(tx: Tx, task_id: str, criterion_id: str) -> Any:
    row = tx.conn.execute(
        sa.select(t.criteria).where(
            t.criteria.c.task_id == task_id, t.criteria.c.criterion_id == criterion_id
        )
    ).first()
    if row is None:
        raise CommandRejected(f"task {task_id} has no criterion {criterion_id!r}")
    return row


@handles(AddCriterion)
def _add_criterion(tx: Tx, cmd: AddCriterion, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    if cmd.criterion_id is None:
        n = tx.conn.execute(
            sa.select(sa.func.count()).where(t.criteria.c.task_id == cmd.task_id)
        ).scalar_one()
        cid = f"C{n + 1}"
    else:
        cid = cmd.criterion_id
    exists = tx.conn.execute(
        sa.select(t.criteria.c.criterion_id).where(
            t.criteria.c.task_id == cmd.task_id, t.criteria.c.criterion_id == cid
        )
    ).first()
    if exists:
        raise CommandRejected(f"task {cmd.task_id} already has a criterion {cid!r}")
    tx.emit(cmd.task_id, ev.CriterionAdded(criterion_id=cid, text=cmd.text), actor)
    return cid


@handles(ChangeCriterion)
def _change_criterion(tx: Tx, cmd: ChangeCriterion, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    row = _criterion(tx, cmd.task_id, cmd.criterion_id)
    _criterion_based_on(tx, cmd.task_id, row, cmd.based_on)
    tx.emit(
        cmd.task_id,
        ev.CriterionChanged(
            criterion_id=cmd.criterion_id,
            text=cmd.text,
            reason=cmd.reason,
            based_on=cmd.based_on,
        ),
        actor,
    )
    return cmd.criterion_id


def _guess_media_type(name: str, data_head: bytes) -> str:
    guessed, _ = mimetypes.guess_type(name)
    if guessed:
        return guessed
    try:
        data_head.decode("utf-8")
        return "text/plain"
    except UnicodeDecodeError:
        return "application/octet-stream"


def store_content(tx: Tx, task_id: str, content: Content, name: str) -> dict[str, Any]:
    """Put the content in the blob store; return its identity (digest, size, media, path)."""
    given = [x is not None for x in (content.path, content.text, content.base64)]
    if sum(given) != 1:
        raise CommandRejected("give exactly one of content.path, content.text, content.base64")
    path: str | None = None
    if content.path is not None:
        real = resolve_path(_scope(tx, task_id), content.path)
        if not real.is_file():
            as_given = "" if str(real) == content.path else f" (given as {content.path!r})"
            raise CommandRejected(f"no readable file at {real}{as_given}")
        if real.stat().st_size > MAX_BLOB_BYTES:
            raise CommandRejected(
                f"{real} is {real.stat().st_size} bytes, more than the limit of "
                f"{MAX_BLOB_BYTES} bytes for one content (a package could not carry it)"
            )
        try:
            digest, size = tx.blobs.put_file(real)
            with open(real, "rb") as f:
                head = f.read(4096)
        except OSError as exc:
            raise CommandRejected(f"cannot read {content.path!r}: {exc.strerror}") from exc
        path, label = str(real), real.name
    else:
        if content.text is not None:
            data = content.text.encode("utf-8")
        else:
            try:
                data = base64.b64decode(content.base64 or "", validate=True)
            except binascii.Error as exc:
                raise CommandRejected(f"content.base64 is not valid base64: {exc}") from exc
        digest, size = tx.blobs.put_bytes(data)
        head, label = data[:4096], name
    media = content.media_type or _guess_media_type(label, head)
    return {"digest": digest, "size": size, "media_type": media, "path": path}


@handles(RecordArtifact)
def _record_artifact(tx: Tx, cmd: RecordArtifact, actor: Actor) -> dict[str, Any]:
    status = _require_writable(tx, cmd.task_id, cmd.type)
    artifact_id = cmd.artifact_id or slug(cmd.name)
    row = tx.conn.execute(
        sa.select(t.artifacts).where(
            t.artifacts.c.task_id == cmd.task_id, t.artifacts.c.artifact_id == artifact_id
        )
    ).first()
    if row is None and not rules.record_open(status):
        # Late, only a newer version of what the task had (a source gone stale) is a fact
        # about the completed work; a new artifact would be new work (issue 35 part L).
        raise CommandRejected(f"task {cmd.task_id} is {status}; its record is closed")
    if cmd.based_on is not None:
        current = 0 if row is None else int(row.current_version)
        if cmd.based_on != current:
            seq = tx.conn.execute(
                sa.select(t.artifact_versions.c.seq).where(
                    t.artifact_versions.c.task_id == cmd.task_id,
                    t.artifact_versions.c.artifact_id == artifact_id,
                    t.artifact_versions.c.version == current,
                )
            ).scalar()
            _conflict(tx, cmd.task_id, "artifact", artifact_id, cmd.based_on, current, seq)
    identity = store_content(tx, cmd.task_id, cmd.content, cmd.name)
    if row is not None:
        current = tx.conn.execute(
            sa.select(t.artifact_versions.c.digest).where(
                t.artifact_versions.c.task_id == cmd.task_id,
                t.artifact_versions.c.artifact_id == artifact_id,
                t.artifact_versions.c.version == row.current_version,
            )
        ).scalar_one()
        if current == identity["digest"]:
            # The same bytes again are not a new version: recording them must not turn
            # criteria checked against the current version stale.
            return {
                "artifact_id": artifact_id,
                "version": int(row.current_version),
                "digest": current,
                "unchanged": True,
            }
    version = 1 if row is None else int(row.current_version) + 1
    role = cmd.role if row is None else row.role
    producer = ev.Producer(actor=actor, effect_id=cmd.effect_id, attempt_no=cmd.attempt_no)
    tx.emit(
        cmd.task_id,
        ev.ArtifactVersionRecorded(
            artifact_id=artifact_id,
            name=cmd.name,
            role=role,
            version=version,
            producer=producer,
            note=cmd.note,
            based_on=cmd.based_on,
            **identity,
        ),
        actor,
    )
    _charge_artifact_bytes(tx, cmd.task_id, identity["size"], actor)
    if cmd.retain is not None:
        item = f"{artifact_id}@{version}"
        RETENTION["set"](tx, cmd.task_id, "artifact_version", item, identity, cmd.retain, actor)
    return {
        "artifact_id": artifact_id,
        "version": version,
        "digest": identity["digest"],
        "unchanged": False,
    }


@handles(AttachEvidence)
def _attach_evidence(tx: Tx, cmd: AttachEvidence, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    _criterion(tx, cmd.task_id, cmd.criterion_id)
    evidence_id = cmd.evidence_id or new_id("ev")
    exists = tx.conn.execute(
        sa.select(t.evidence.c.evidence_id).where(
            t.evidence.c.task_id == cmd.task_id, t.evidence.c.evidence_id == evidence_id
        )
    ).first()
    if exists:
        raise CommandRejected(f"task {cmd.task_id} already has evidence {evidence_id!r}")
    if cmd.artifact_version is not None and cmd.artifact_id is None:
        raise CommandRejected("an evidence's artifact_version needs the artifact_id it is of")
    if cmd.artifact_id is not None:
        art = tx.conn.execute(
            sa.select(t.artifacts.c.current_version).where(
                t.artifacts.c.task_id == cmd.task_id, t.artifacts.c.artifact_id == cmd.artifact_id
            )
        ).scalar()
        if art is None:
            raise CommandRejected(f"task {cmd.task_id} has no artifact {cmd.artifact_id!r}")
        if cmd.artifact_version is not None and cmd.artifact_version > int(art):
            raise CommandRejected(
                f"artifact {cmd.artifact_id} has no version {cmd.artifact_version}"
            )
    identity = store_content(tx, cmd.task_id, cmd.content, evidence_id)
    identity.pop("path")
    tx.emit(
        cmd.task_id,
        ev.EvidenceAttached(
            evidence_id=evidence_id,
            criterion_id=cmd.criterion_id,
            kind=cmd.kind,
            description=cmd.description,
            locator=cmd.locator or (cmd.content.path or ""),
            artifact_id=cmd.artifact_id,
            artifact_version=cmd.artifact_version,
            **identity,
        ),
        actor,
    )
    if cmd.retain is not None:
        RETENTION["set"](tx, cmd.task_id, "evidence", evidence_id, identity, cmd.retain, actor)
    return evidence_id


@handles(JudgeCriterion)
def _judge(tx: Tx, cmd: JudgeCriterion, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id, cmd.type)  # a revised judgement may come late
    crit = _criterion(tx, cmd.task_id, cmd.criterion_id)
    _criterion_based_on(tx, cmd.task_id, crit, cmd.based_on)
    version = cmd.artifact_version
    refusal = rules.judgement_missing(
        cmd.status, artifact_id=cmd.artifact_id, evidence_ids=cmd.evidence_ids, note=cmd.note
    )
    if refusal is not None:
        raise CommandRejected(refusal, rule="judgement_needs")
    if cmd.status == "satisfied":
        assert cmd.artifact_id is not None  # rules.judgement_missing said so
        art = tx.conn.execute(
            sa.select(t.artifacts).where(
                t.artifacts.c.task_id == cmd.task_id, t.artifacts.c.artifact_id == cmd.artifact_id
            )
        ).first()
        if art is None:
            raise CommandRejected(f"task {cmd.task_id} has no artifact {cmd.artifact_id!r}")
        version = version or int(art.current_version)
        if not 1 <= version <= int(art.current_version):
            raise CommandRejected(f"artifact {cmd.artifact_id} has no version {version}")
        if version != int(art.current_version):
            raise CommandRejected(
                f"{cmd.artifact_id} v{version} is not current (v{art.current_version}): "
                "a criterion is satisfied against the current version only"
            )
    for eid in cmd.evidence_ids:
        row = tx.conn.execute(
            sa.select(t.evidence.c.criterion_id).where(
                t.evidence.c.task_id == cmd.task_id, t.evidence.c.evidence_id == eid
            )
        ).first()
        if row is None:
            raise CommandRejected(f"task {cmd.task_id} has no evidence {eid!r}")
        if row.criterion_id != cmd.criterion_id:
            raise CommandRejected(f"evidence {eid} was attached to {row.criterion_id}, not here")
    reason = (cmd.older_evidence_reason or "").strip() or None
    if cmd.status == "satisfied" and cmd.artifact_id and version is not None:
        older = judging.older_evidence(
            tx.conn, cmd.task_id, crit, cmd.artifact_id, version, cmd.evidence_ids
        )
        refusal = rules.judgement_missing(
            cmd.status,
            artifact_id=cmd.artifact_id,
            evidence_ids=cmd.evidence_ids,
            note=cmd.note,
            older_evidence=older,
            older_evidence_reason=reason,
        )
        if refusal is not None:
            raise OlderEvidence(older, refusal)
        if not older:
            reason = None  # nothing older to account for
    else:
        reason = None
    tx.emit(
        cmd.task_id,
        ev.CriterionJudged(
            criterion_id=cmd.criterion_id,
            status=cmd.status,
            artifact_id=cmd.artifact_id if cmd.status == "satisfied" else None,
            artifact_version=version if cmd.status == "satisfied" else None,
            evidence_ids=tuple(cmd.evidence_ids),
            note=cmd.note,
            based_on=cmd.based_on,
            older_evidence_reason=reason,
        ),
        actor,
    )
    return cmd.criterion_id


# --- phases ----------------------------------------------------------------------------------


def phase_readiness(tx_conn: Any, task_id: str) -> dict[str, dict[str, Any]]:
    """Each phase's readiness and the identity of each input, derived from projections."""
    from ..reads.queries import derive_phases

    return derive_phases(tx_conn, task_id)


@handles(AddPhase)
def _add_phase(tx: Tx, cmd: AddPhase, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    known = {
        r.phase_id
        for r in tx.conn.execute(
            sa.select(t.phases.c.phase_id).where(t.phases.c.task_id == cmd.task_id)
        )
    }
    if cmd.phase_id in known:
        raise CommandRejected(f"task {cmd.task_id} already has a phase {cmd.phase_id!r}")
    for i in cmd.inputs:
        if i.kind == "phase" and i.ref not in known:
            raise CommandRejected(f"phase input {i.ref!r} is not a phase of this task")
    tx.emit(
        cmd.task_id,
        ev.PhaseAdded(phase_id=cmd.phase_id, name=cmd.name, inputs=tuple(cmd.inputs)),
        actor,
    )
    return cmd.phase_id


@handles(CompletePhase)
def _complete_phase(tx: Tx, cmd: CompletePhase, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    phases = phase_readiness(tx.conn, cmd.task_id)
    phase = phases.get(cmd.phase_id)
    if phase is None:
        raise CommandRejected(f"task {cmd.task_id} has no phase {cmd.phase_id!r}")
    if cmd.based_on is not None:
        from ..reads.phase_views import phase_rev

        current = phase_rev(tx.conn, cmd.task_id, cmd.phase_id)
        if cmd.based_on != current:
            _conflict(
                tx, cmd.task_id, "phase", cmd.phase_id, cmd.based_on, current, current or None
            )
    refusal = rules.phase_completion_refusal(cmd.phase_id, phase["blocked_by"])
    if refusal is not None:
        raise PhaseBlocked(cmd.phase_id, list(phase["blocked_by"]), refusal)
    tx.emit(
        cmd.task_id,
        ev.PhaseCompleted(
            phase_id=cmd.phase_id,
            ok=cmd.ok,
            summary=cmd.summary,
            input_identities=phase["input_identities"],
        ),
        actor,
    )
    return cmd.phase_id


# --- budgets ---------------------------------------------------------------------------------


def _check_counter(counter: str) -> None:
    if counter not in BUDGET_COUNTERS:
        raise CommandRejected(
            f"unknown budget counter {counter!r}; one of {', '.join(BUDGET_COUNTERS)}"
        )


def _budget(tx: Tx, task_id: str, counter: str) -> Any:
    return tx.conn.execute(
        sa.select(t.budgets).where(t.budgets.c.task_id == task_id, t.budgets.c.counter == counter)
    ).first()


def _exhausted(tx: Tx, task_id: str) -> list[str]:
    rows = tx.conn.execute(
        sa.select(t.budgets.c.counter, t.budgets.c.used, t.budgets.c.limit_value).where(
            t.budgets.c.task_id == task_id
        )
    )
    return rules.exhausted_counters(
        {"counter": c, "used": u, "limit_value": lim} for c, u, lim in rows
    )


@handles(SetBudget)
def _set_budget(tx: Tx, cmd: SetBudget, actor: Actor) -> None:
    _check_counter(cmd.counter)
    status = _require_writable(tx, cmd.task_id)
    if cmd.based_on is not None:
        rev, seq = judging.budget_limit_rev(tx.conn, cmd.task_id, cmd.counter)
        if cmd.based_on != rev:
            _conflict(tx, cmd.task_id, "budget", cmd.counter, cmd.based_on, rev, seq)
    tx.emit(
        cmd.task_id,
        ev.BudgetLimitSet(counter=cmd.counter, limit=cmd.limit, based_on=cmd.based_on),
        actor,
    )
    reopens = rules.limit_change_reopens(status, _exhausted(tx, cmd.task_id))
    running = {"status": rules.RunStatus.RUNNING}
    if reopens and rules.authority_refusal("set_status", running, actor.kind, status=status):
        # A limit an agent may set (on a counter that had none, or lower) reopens nothing:
        # only a person reopens a budget_exhausted run (raises its limit, or resumes it).
        reopens = False
    if reopens:
        # Raising the limit (a person's, by the authority table) is what lets the run go on.
        change_status(
            tx,
            cmd.task_id,
            rules.RunStatus.RUNNING,
            f"{actor.label()} raised the {cmd.counter} limit to "
            + ("none" if cmd.limit is None else f"{cmd.limit:g}"),
            actor,
        )
        settle_status(tx, cmd.task_id, actor)


def charge(tx: Tx, task_id: str, counter: str, amount: float, actor: Actor, note: str = "") -> None:
    """Record spending. A charge past the limit is recorded (it happened) and the run moves to
    budget_exhausted, so nobody can miss it. While the run is budget_exhausted, a counter
    that is exhausted takes no more (`rules.spend_refusal`)."""
    status = str(tx.task(task_id).status)
    if status == rules.RunStatus.BUDGET_EXHAUSTED:
        refusal = rules.spend_refusal(status, counter, _exhausted(tx, task_id))
        if refusal is not None:
            raise BudgetBinds(counter, refusal.message)
    tx.emit(task_id, ev.BudgetCharged(counter=counter, amount=amount, note=note), actor)
    row = _budget(tx, task_id, counter)
    if row is not None and row.limit_value is not None and row.used >= row.limit_value:
        status = str(tx.task(task_id).status)
        if st.allowed(status, "budget_exhausted"):
            tx.emit(
                task_id,
                ev.RunStatusChanged(
                    from_status=status,
                    to_status="budget_exhausted",
                    reason=f"{counter} used {row.used:g} of {row.limit_value:g}",
                ),
                actor,
            )


def _charge_artifact_bytes(tx: Tx, task_id: str, size: int, actor: Actor) -> None:
    row = _budget(tx, task_id, "artifact_bytes")
    if row is not None and size > 0:
        charge(tx, task_id, "artifact_bytes", float(size), actor, "artifact version")


@handles(ChargeBudget)
def _charge(tx: Tx, cmd: ChargeBudget, actor: Actor) -> None:
    _check_counter(cmd.counter)
    _require_writable(tx, cmd.task_id)
    charge(tx, cmd.task_id, cmd.counter, cmd.amount, actor, cmd.note)


@handles(ReserveBudget)
def _reserve(tx: Tx, cmd: ReserveBudget, actor: Actor) -> None:
    _check_counter(cmd.counter)
    _require_writable(tx, cmd.task_id)
    row = _budget(tx, cmd.task_id, cmd.counter)
    if row is not None and row.limit_value is not None:
        free = rules.budget_left(row.used, row.reserved, row.limit_value)
        if cmd.amount > free:
            raise CommandRejected(
                f"cannot reserve {cmd.amount:g} {cmd.counter}: only {max(free, 0):g} left"
            )
    tx.emit(cmd.task_id, ev.BudgetReserved(counter=cmd.counter, amount=cmd.amount), actor)


@handles(ReleaseBudget)
def _release(tx: Tx, cmd: ReleaseBudget, actor: Actor) -> None:
    _check_counter(cmd.counter)
    _require_writable(tx, cmd.task_id)
    row = _budget(tx, cmd.task_id, cmd.counter)
    reserved = 0.0 if row is None else float(row.reserved)
    refusal = rules.release_refusal(cmd.counter, reserved, cmd.amount, actor.kind, cmd.reason)
    if refusal is not None:
        raise CommandRejected(refusal.message)
    reason = cmd.reason.strip() or None
    tx.emit(
        cmd.task_id,
        ev.BudgetReleased(counter=cmd.counter, amount=cmd.amount, reason=reason),
        actor,
    )


# --- run status ------------------------------------------------------------------------------


def criterion_views(tx: Tx, task_id: str) -> list[rules.CriterionView]:
    """Each criterion with the evidence it rests on (id, digest), and which of it was retired
    (a tombstone: never counted, though its blob may still read), for the rules."""
    evidence: dict[str, list[tuple[str, str]]] = {}
    retired: set[str] = set()
    ev, kept = t.evidence, t.retention
    for eid, cid, digest, retired_at in tx.conn.execute(
        sa.select(ev.c.evidence_id, ev.c.criterion_id, ev.c.digest, kept.c.retired_at)
        .select_from(
            ev.outerjoin(
                kept,
                sa.and_(
                    kept.c.task_id == ev.c.task_id,
                    kept.c.item_kind == "evidence",
                    kept.c.item_id == ev.c.evidence_id,
                ),
            )
        )
        .where(ev.c.task_id == task_id)
        .order_by(ev.c.at)
    ):
        evidence.setdefault(cid, []).append((eid, digest))
        if retired_at is not None:
            retired.add(eid)
    views = [
        rules.CriterionView(
            cid,
            status,
            tuple(evidence.get(cid, ())),
            frozenset(e for e, _ in evidence.get(cid, ()) if e in retired),
        )
        for cid, status in tx.conn.execute(
            sa.select(t.criteria.c.criterion_id, t.criteria.c.status)
            .where(t.criteria.c.task_id == task_id)
            .order_by(t.criteria.c.position)
        )
    ]
    if any(v.status == rules.CriterionState.WAIVED for v in views):
        # A waiver is a person's decision: it counts only as the log has it (the table is a
        # copy an agent's login could have been writing; store.commands.authority).
        from .authority import waivers_on_record

        waived = waivers_on_record(tx.conn, task_id)
        views = [
            v
            if v.status != rules.CriterionState.WAIVED or v.criterion_id in waived
            else rules.CriterionView(
                v.criterion_id, rules.CriterionState.UNVERIFIED, v.evidence, v.retired
            )
            for v in views
        ]
    return views


def readable_in(tx: Tx) -> Callable[[str], bool]:
    """Whether a blob is present and hashes to its digest now (the I/O the rules leave out)."""
    from ..reads.state import blob_problem

    return lambda digest: blob_problem(tx.blobs, digest) is None


def completion_blockers(tx: Tx, task_id: str) -> list[str]:
    """Why the task cannot be completed now; empty when it can."""
    return _completion(tx, task_id)[0]


def _completion(tx: Tx, task_id: str) -> tuple[list[str], list[str]]:
    """The blockers, and the criteria among them whose evidence is missing."""
    effects = tx.conn.execute(
        sa.select(t.effects.c.effect_id, t.effects.c.stage, t.effects.c.outcome)
        .where(t.effects.c.task_id == task_id)
        .order_by(t.effects.c.position)
    )
    views, readable = criterion_views(tx, task_id), readable_in(tx)
    blockers = rules.completion_blockers(views, [(e, s, o) for e, s, o in effects], readable)
    missing = [
        v.criterion_id
        for v in views
        if rules.view_state(v, readable) == rules.CriterionState.EVIDENCE_MISSING
    ]
    return blockers, missing


effect_unresolved = rules.effect_unresolved


effect_to_reconcile = rules.effect_to_reconcile


def change_status(tx: Tx, task_id: str, to_status: str, reason: str, actor: Actor) -> None:
    current = str(tx.task(task_id).status)
    if current == to_status:
        return
    if not st.allowed(current, to_status):
        raise CommandRejected(f"a run that is {current} cannot become {to_status}")
    if to_status == "completed":
        # Never completed with two heads: a final checkpoint that names every head closes
        # the fork first (commands.checkpoints.write_checkpoint).
        heads = tx.task(task_id).checkpoint_heads
        if len(heads) > 1:
            raise ForkOpen(
                list(heads),
                list(heads),
                f"cannot complete: the lineage is forked (heads {', '.join(heads)}); a final "
                "checkpoint that continues from one head and merges every other completes it",
            )
        blockers, missing = _completion(tx, task_id)
        if blockers:
            message = "cannot complete: " + "; ".join(blockers)
            if missing:
                raise EvidenceMissing(missing, message)
            raise CommandRejected(message)
    tx.emit(
        task_id, ev.RunStatusChanged(from_status=current, to_status=to_status, reason=reason), actor
    )


def settle_status(tx: Tx, task_id: str, actor: Actor) -> None:
    """Move an active run between running, awaiting approval and outcome unknown as the
    ledger dictates; any other status is a decision somebody made and is left alone."""
    current = str(tx.task(task_id).status)
    if current not in {"running", "awaiting_approval", "outcome_unknown"}:
        return
    uncertain = tx.conn.execute(
        sa.select(t.effects.c.effect_id).where(
            t.effects.c.task_id == task_id,
            t.effects.c.stage.in_(tuple(rules.RECONCILABLE)),
            t.effects.c.outcome.in_(("unknown", "partial")),
        )
    ).first()
    pending = tx.conn.execute(
        sa.select(t.approvals.c.approval_id).where(
            t.approvals.c.task_id == task_id,
            t.approvals.c.state == "pending",
            t.approvals.c.expires_at > tx.now,
        )
    ).first()
    wanted, why = rules.ledger_status(
        None if uncertain is None else str(uncertain.effect_id),
        None if pending is None else str(pending.approval_id),
    )
    if wanted != current and st.allowed(current, wanted):
        change_status(tx, task_id, wanted, why, actor)


@handles(SetStatus)
def _set_status(tx: Tx, cmd: SetStatus, actor: Actor) -> str:
    if cmd.status == "stopped":
        raise CommandRejected("use the stop command: it revokes approvals and writes a checkpoint")
    reopening = rules.is_reopening(str(tx.task(cmd.task_id).status), cmd.status)
    change_status(tx, cmd.task_id, cmd.status, cmd.reason, actor)
    if reopening:
        # A resumed run is as the ledger has it: an effect still in doubt makes it
        # outcome_unknown again (what the stop revoked stays revoked: nothing is pending).
        settle_status(tx, cmd.task_id, actor)
    return str(tx.task(cmd.task_id).status)


@handles(RecordNote)
def _note(tx: Tx, cmd: RecordNote, actor: Actor) -> str | None:
    tx.task(cmd.task_id)
    if cmd.retain is not None and cmd.visibility == rules.Visibility.PRIVATE:
        # Not yet both: a retained note's event (part R) would carry no visibility, and the
        # text would travel in every export. Refused rather than shared by surprise.
        raise CommandRejected(
            "a private note cannot carry a retention class yet: record it without --retain",
            rule="private_note_not_retained",
        )
    if cmd.retain is not None:
        note_id = RETENTION["note"](tx, cmd, actor)
        if note_id is not None:
            return str(note_id)
    if cmd.visibility == rules.Visibility.PRIVATE:
        digest, size = tx.blobs.put_bytes(cmd.text.encode("utf-8"))
        tx.emit(cmd.task_id, ev.PrivateNote(digest=digest, size=size, kind=cmd.kind), actor)
        return None
    tx.emit(cmd.task_id, ev.NoteRecorded(text=cmd.text, kind=cmd.kind), actor)
    return None
