"""Event payloads: the facts in the log, one pydantic model per event type.

Every stored payload carries a format number. A payload in an older format is brought up to
date by an explicit upcaster registered here; a format with no path to the current one is
refused (`UnknownEventFormat`), never filled with defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from .errors import UnknownEventFormat
from .model import (
    Actor,
    ArtifactRole,
    CriterionStatus,
    EvidenceKind,
    PhaseInput,
    Scope,
)
from .rules import Verdict


class Payload(BaseModel):
    # defer_build: each model's validator is built the first time it is used, not at
    # import: most processes use a few of the ~70 (start-up was 60 ms of CPU shorter).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    TYPE: ClassVar[str]
    FORMAT: ClassVar[int] = 1


class Additive(Payload):
    """A payload that gained optional fields after events of its type were first stored.

    The fields in `ADDED` are left out of the payload while they are None, so an event
    written before they existed dumps to exactly the JSON it was stored and hashed as (an
    old record, an old archive still verifies), and a new event that does not use them is
    byte for byte what the older program wrote."""

    ADDED: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _leave_out_unused(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self.ADDED:
            if data.get(name) is None:
                data.pop(name, None)
        return data


_REGISTRY: dict[str, type[Payload]] = {}
Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def event_type(name: str) -> Callable[[type[Payload]], type[Payload]]:
    def register(cls: type[Payload]) -> type[Payload]:
        cls.TYPE = name
        _REGISTRY[name] = cls
        return cls

    return register


def upcaster(type_name: str, from_format: int) -> Callable[[Upcaster], Upcaster]:
    """Register the step that turns format `from_format` of an event into `from_format + 1`."""

    def register(fn: Upcaster) -> Upcaster:
        _UPCASTERS[(type_name, from_format)] = fn
        return fn

    return register


def payload_class(type_name: str) -> type[Payload]:
    try:
        return _REGISTRY[type_name]
    except KeyError:
        raise UnknownEventFormat(f"unknown event type {type_name!r}") from None


def decode(type_name: str, fmt: int, data: dict[str, Any]) -> Payload:
    cls = payload_class(type_name)
    if fmt > cls.FORMAT:
        raise UnknownEventFormat(
            f"event {type_name!r} is in format {fmt}; this program reads up to format {cls.FORMAT}"
        )
    while fmt < cls.FORMAT:
        step = _UPCASTERS.get((type_name, fmt))
        if step is None:
            raise UnknownEventFormat(f"no upcaster for event {type_name!r} format {fmt}")
        data = step(data)
        fmt += 1
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise UnknownEventFormat(f"event {type_name!r} does not match its format: {exc}") from exc


def registered_types() -> dict[str, type[Payload]]:
    return dict(_REGISTRY)


# --- the task contract -----------------------------------------------------------------------


@event_type("task.created")
class TaskCreated(Additive):
    title: str
    owner: str
    objective: str
    scope: Scope
    status: str = "running"
    # The task this one follows up (issue 35 part L): left out while None, so a task created
    # without one hashes as it always did.
    origin: TaskOrigin | None = None
    ADDED: ClassVar[frozenset[str]] = frozenset({"origin"})


@event_type("objective.amended")
class ObjectiveAmended(Additive):
    rev: int
    text: str
    reason: str
    # The objective revision the person amended (None: the writer named none).
    based_on: int | None = None

    ADDED: ClassVar[frozenset[str]] = frozenset({"based_on"})


@event_type("criterion.added")
class CriterionAdded(Payload):
    criterion_id: str
    text: str


@event_type("criterion.changed")
class CriterionChanged(Additive):
    criterion_id: str
    text: str
    reason: str
    # The criterion's revision the change was based on (None: the writer named none).
    based_on: int | None = None

    ADDED: ClassVar[frozenset[str]] = frozenset({"based_on"})


@event_type("criterion.judged")
class CriterionJudged(Additive):
    criterion_id: str
    status: CriterionStatus
    artifact_id: str | None = None
    artifact_version: int | None = None
    evidence_ids: tuple[str, ...] = ()
    note: str = ""
    # The criterion's revision the judgement was based on (None: the writer named none).
    based_on: int | None = None
    # Why evidence made on an older version of the artifact still holds for the one judged.
    older_evidence_reason: str | None = None

    ADDED: ClassVar[frozenset[str]] = frozenset({"based_on", "older_evidence_reason"})


class Producer(BaseModel):
    # defer_build: each model's validator is built the first time it is used, not at
    # import: most processes use a few of the ~70 (start-up was 60 ms of CPU shorter).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    actor: Actor
    effect_id: str | None = None
    attempt_no: int | None = None


@event_type("artifact.version_recorded")
class ArtifactVersionRecorded(Additive):
    artifact_id: str
    name: str
    role: ArtifactRole
    version: int
    digest: str
    media_type: str
    size: int
    path: str | None = None
    producer: Producer
    note: str = ""
    # The version the writer edited (None: it named none).
    based_on: int | None = None

    ADDED: ClassVar[frozenset[str]] = frozenset({"based_on"})


@event_type("evidence.attached")
class EvidenceAttached(Additive):
    evidence_id: str
    criterion_id: str
    kind: EvidenceKind
    digest: str
    media_type: str
    size: int
    description: str = ""
    locator: str = ""
    # The artifact version the evidence was made on, when the writer said (else: the one
    # current when it was attached, `rules.evidence_made_on`).
    artifact_id: str | None = None
    artifact_version: int | None = None

    ADDED: ClassVar[frozenset[str]] = frozenset({"artifact_id", "artifact_version"})


@event_type("phase.added")
class PhaseAdded(Payload):
    phase_id: str
    name: str
    inputs: tuple[PhaseInput, ...] = ()


@event_type("phase.completed")
class PhaseCompleted(Payload):
    phase_id: str
    ok: bool
    summary: str = ""
    # The identity of each input the result was computed from ("artifact:guide" -> "v2").
    input_identities: dict[str, str] = Field(default_factory=dict)


@event_type("budget.limit_set")
class BudgetLimitSet(Additive):
    counter: str
    limit: float | None
    # The counter's limit revision the person changed (None: the writer named none).
    based_on: int | None = None

    ADDED: ClassVar[frozenset[str]] = frozenset({"based_on"})


@event_type("budget.charged")
class BudgetCharged(Payload):
    counter: str
    amount: float
    note: str = ""


@event_type("budget.reserved")
class BudgetReserved(Payload):
    counter: str
    amount: float


@event_type("budget.released")
class BudgetReleased(Additive):
    counter: str
    amount: float
    # Why it was released: a person's release says why (rules.release_refusal).
    reason: str | None = None

    ADDED: ClassVar[frozenset[str]] = frozenset({"reason"})


@event_type("run.status_changed")
class RunStatusChanged(Payload):
    from_status: str
    to_status: str
    reason: str = ""


@event_type("note.recorded")
class NoteRecorded(Payload):
    """A free remark in the history; it changes no state and authorizes nothing."""

    text: str
    kind: Literal["note", "message"] = "note"


# --- what the task did to the world: effects, attempts, observations ------------------------


class FileState(BaseModel):
    """What a target was seen (or is intended) to be: exists?, and its digest and size."""

    # defer_build: each model's validator is built the first time it is used, not at
    # import: most processes use a few of the ~70 (start-up was 60 ms of CPU shorter).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    exists: bool
    digest: str | None = None
    size: int | None = None


@event_type("effect.planned")
class EffectPlanned(Additive):
    """The intent, recorded before any dispatch. `tool`, `tool_digest`: the tool definition
    it was planned under (pinned: a later configuration that changes that tool's digest
    leaves this intent on the older definition until it is migrated or re-planned)."""

    effect_id: str
    kind: str
    target: str
    idempotency_key: str
    pre_state: FileState | None
    intended: FileState
    # The exact object an executor will be given (what an approval binds), and its digest.
    prepared: dict[str, Any]
    prepared_digest: str
    consequence: str
    requires_approval: bool
    policy: str = ""
    tool: str | None = None
    tool_digest: str | None = None
    # Where a person may answer in the tool's place ("respond", issue 42): the JSON Schema
    # their result must fit, declared by an adapter whose prepared object is the call's args.
    result_schema: dict[str, Any] | None = None

    ADDED: ClassVar[frozenset[str]] = frozenset({"tool", "tool_digest", "result_schema"})


@event_type("effect.revised")
class EffectRevised(Payload):
    """The prepared object changed before dispatch: earlier approvals for it go stale."""

    effect_id: str
    intended: FileState
    prepared: dict[str, Any]
    prepared_digest: str
    consequence: str
    reason: str


@event_type("effect.cancelled")
class EffectCancelled(Payload):
    effect_id: str
    reason: str


@event_type("attempt.dispatched")
class AttemptDispatched(Payload):
    effect_id: str
    attempt_no: int
    executor: str
    inputs_digest: str
    approval_id: str | None = None


@event_type("attempt.responded")
class AttemptResponded(Payload):
    """What the executor said. Its word is kept as the response; the outcome it implies is
    never `succeeded`, which only an observation of the target can establish."""

    effect_id: str
    attempt_no: int
    response: dict[str, Any] | None = None
    error: str | None = None
    outcome: Literal["failed", "partial", "unknown"]


@event_type("observation.recorded")
class ObservationRecorded(Payload):
    observation_id: str
    effect_id: str | None = None
    artifact_id: str | None = None
    target: str
    state: FileState
    mtime_ns: int | None = None
    purpose: str


@event_type("effect.reconciled")
class EffectReconciled(Additive):
    """A verdict on an effect against one observation: computed, or a person's decision."""

    effect_id: str
    observation_id: str
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    decided_by_person: bool = False
    note: str = ""
    # A person's decision against the store's own observation of a file: the verdict the
    # observation gave, which this decision overrides (the note says why).
    overrode: Verdict | None = None
    # The seq of the effect's reconciliation the person saw when deciding (None: not named).
    based_on: int | None = None

    FORMAT: ClassVar[int] = 2
    ADDED: ClassVar[frozenset[str]] = frozenset({"based_on"})


@upcaster("effect.reconciled", 1)
def _reconciled_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Format 1 had no overrides: every decision agreed with, or settled, an observation."""
    return {**data, "overrode": None}


# --- approvals ---------------------------------------------------------------------------------


@event_type("approval.requested")
class ApprovalRequested(Additive):
    """`approvers`: how many distinct people must approve (the larger of what the request
    asked and what its policy said in the store when it was asked); left out when one."""

    approval_id: str
    effect_id: str | None = None
    payload: dict[str, Any]
    payload_digest: str
    consequence: str
    policy: str
    expires_at: str
    approvers: int | None = None

    ADDED: ClassVar[frozenset[str]] = frozenset({"approvers"})


@event_type("approval.decided")
class ApprovalDecided(Additive):
    """A person's answer. `sent_back`: changes requested (the note says which). `edited`:
    the person's revision of the requested object, approved as edited; the approval binds
    `edited_digest` from here on (the requester's version stays in `approval.requested`).
    Where several people must approve, `approved` counts this person once; an edit makes a
    new object, so only approvals given after it count toward it."""

    approval_id: str
    decision: Literal["approved", "rejected", "sent_back"]
    note: str = ""
    edited: dict[str, Any] | None = None
    edited_digest: str | None = None
    # How many people the request needs as of this decision, where its policy in the store
    # was raised after it was asked (left out otherwise): the larger number holds.
    needed: int | None = None
    # The WebAuthn assertion of a decision made with a passkey (store.reads.passkeys'
    # PasskeyAssertion): `boris verify` checks it again against the registered passkey.
    assertion: dict[str, Any] | None = None

    ADDED: ClassVar[frozenset[str]] = frozenset({"edited", "edited_digest", "needed", "assertion"})


@event_type("approval.consumed")
class ApprovalConsumed(Payload):
    approval_id: str
    effect_id: str
    attempt_no: int


@event_type("approval.retired")
class ApprovalRetired(Payload):
    """No longer usable: `stale` (its payload changed) or `revoked` (the run stopped)."""

    approval_ids: tuple[str, ...]
    state: Literal["stale", "revoked"]
    reason: str


@event_type("approval.answered")
class ApprovalAnswered(Payload):
    """A person answered in the tool's place (issue 42, "respond"): `result` is what the call
    returns, supplied by them, never run (no attempt; an effect it asked about is cancelled
    with it). `result_digest`: its canonical digest; `schema_checked`: whether it was checked
    against the result schema the request carried."""

    approval_id: str
    result: Any
    result_digest: str
    note: str = ""
    schema_checked: bool = False


# --- standing rules (issue 42): a person's "allow calls like this", and the calls it decided


@event_type("rule.granted")
class RuleGranted(Payload):
    """A person's standing answer to calls like one (store.commands.standing_rules): the
    calls its scope covers (this task, an agent, a session; a tool, a target glob, fields the
    payload must match) are decided `verdict` without asking, until `expires_at` (database
    clock) or a revocation. `answered`: the approval it was given from, where there was one;
    `origin`: the framework answer it came from (an adapter's), else empty."""

    rule_id: str
    verdict: Literal["approved", "rejected"]
    scope: Literal["task", "agent", "session"]
    agent: str | None = None
    session_id: str | None = None
    tool: str
    target: str
    payload: dict[str, Any] | None = None
    expires_at: str
    note: str = ""
    answered: str | None = None
    origin: str = ""


@event_type("rule.revoked")
class RuleRevoked(Payload):
    """A person ends a standing rule: it decides nothing after this event's time."""

    rule_id: str
    reason: str


@event_type("approval.ruled")
class ApprovalRuled(Payload):
    """A request decided by a standing rule, in the requester's transaction: the rule is
    named by its id and where its grant is (`rule_task_id`, `rule_seq`), so dispatch and
    verify judge it by the person's signed event, never by this claim. `granted_by`: the
    person whose rule it is (the approval's decider in the projections)."""

    approval_id: str
    rule_id: str
    rule_task_id: str
    rule_seq: int
    granted_by: str
    decision: Literal["approved", "rejected"]
    session_id: str | None = None


# --- routing (issue 42): who decides a request, and when it escalates


@event_type("approval.routed")
class ApprovalRouted(Payload):
    """A request under a routed policy, in its own transaction: the people who may decide it
    (`deciders`, groups resolved to people then; `named`, as the policy named them), when
    nobody having answered widens it to `escalate_to` (`escalate_at`, database clock), and
    what its expiry does (`on_expiry`: reject, as any request; or escalate)."""

    approval_id: str
    policy: str
    named: tuple[str, ...]
    deciders: tuple[str, ...]
    escalate_at: str | None = None
    escalate_to: tuple[str, ...] = ()
    escalate_named: tuple[str, ...] = ()
    on_expiry: Literal["reject", "escalate"] = "reject"


@event_type("approval.escalated")
class ApprovalEscalated(Payload):
    """Nobody answered in time: the request is now also the escalation's people's to decide
    (`to`); `why` says whether its escalation time came or it expired (then `expires_at` is
    its new expiry, a policy's `on_expiry: escalate`)."""

    approval_id: str
    to: tuple[str, ...]
    why: Literal["unanswered", "expired"]
    expires_at: str | None = None


# --- checkpoints and stop ------------------------------------------------------------------


@event_type("checkpoint.written")
class CheckpointWritten(Additive):
    ADDED: ClassVar[frozenset[str]] = frozenset({"external"})
    checkpoint_id: str
    reason: Literal["initial", "milestone", "handoff", "stopped", "final"]
    supersedes: tuple[str, ...]
    merged: tuple[str, ...] = ()
    # The event boundary the state was taken at: the last event before this one.
    boundary_seq: int
    boundary_hash: str
    state: dict[str, Any]
    state_digest: str
    note: str = ""
    # The same moment's identities in another system, e.g. a LangGraph checkpointer's
    # `{"framework": "langgraph", "thread_id": …, "checkpoint_id": …}`; left out while None.
    external: dict[str, str] | None = None


@event_type("run.stopped")
class RunStopped(Payload):
    from_status: str
    reason: str
    revoked_approvals: tuple[str, ...] = ()
    cancelled_effects: tuple[str, ...] = ()
    unresolved_effects: tuple[str, ...] = ()
    account: str = ""


# --- scheduled waits (store.commands.waits) --------------------------------------------------


class WaitCondition(BaseModel):
    """What cancels a wait: an approval rejected, an effect reconciled (both checked by the
    store, store.rules.wait_condition_met), or free text that only the reader judges."""

    # defer_build: each model's validator is built the first time it is used, not at
    # import: most processes use a few of the ~70 (start-up was 60 ms of CPU shorter).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    kind: Literal["approval_rejected", "effect_reconciled", "text"]
    ref: str = ""
    text: str = ""


class WaitReservation(BaseModel):
    # defer_build: each model's validator is built the first time it is used, not at
    # import: most processes use a few of the ~70 (start-up was 60 ms of CPU shorter).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    counter: str
    amount: float


@event_type("wait.recorded")
class WaitRecorded(Payload):
    """Waiting as state: what for, the next time to consider it (on `clock`: always the
    database's), what budget it holds (reserved by a `budget.reserved` beside it), and what
    cancels it. Considering it when due is a re-evaluation, never an instruction to act."""

    wait_id: str
    kind: Literal["rate_limit", "approval", "status_check", "retry", "time"]
    ref: str = ""
    not_before: str
    clock: Literal["database"] = "database"
    reserve: WaitReservation | None = None
    cancel_if: WaitCondition | None = None
    note: str = ""


@event_type("wait.rescheduled")
class WaitRescheduled(Payload):
    """The wait was considered and is still waiting: the next time to consider it."""

    wait_id: str
    not_before: str
    note: str = ""


@event_type("wait.ended")
class WaitEnded(Payload):
    """The wait is over: `settled` (its actor re-evaluated it and is done waiting),
    `cancelled` (a person, or its recorder, with a reason), `retired` (the run stopped, or its
    cancellation condition came true). Its reservation is released by a `budget.released`
    beside it."""

    wait_id: str
    state: Literal["settled", "cancelled", "retired"]
    reason: str = ""


# --- leases: who works on the task now (store.commands.leases) ------------------------------
# Only acquiring, releasing and taking over are events; a heartbeat is not (it would flood
# the log): it moves the lease's expiry in `lease_heartbeats`, outside the chain.


class LeaseBefore(BaseModel):
    """The lease a new one replaced, as it stood then: `released`, `taken_over`, or `expired`
    (held, but no heartbeat came in time: seen here, by the database's clock, and recorded)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    token: int
    holder: Actor
    session_id: str
    standing: Literal["released", "taken_over", "expired", "alive"]
    expires_at: str | None = None


@event_type("lease.acquired")
class LeaseAcquired(Payload):
    """A session took the task's lease: it works on the task under fencing token `token`
    (one more than any before) until it releases it, is taken over, or lets `expires_at`
    pass without a heartbeat."""

    token: int
    session_id: str
    ttl_seconds: int
    expires_at: str
    before: LeaseBefore | None = None


@event_type("lease.released")
class LeaseReleased(Payload):
    """The holder let the lease go (an agent done or pausing; a person handing the task back
    after a handoff checkpoint), or a person's stop or close ended the agent's lease."""

    token: int
    note: str = ""


@event_type("lease.taken_over")
class LeaseTakenOver(Payload):
    """A person's decision: the session working on the task stops. The person holds the task
    under token `token` (no expiry) until they release it; a write under an older token is
    refused (LeaseLost)."""

    token: int
    reason: str
    before: LeaseBefore | None = None


@event_type("narrative.recorded")
class NarrativeRecorded(Payload):
    """An agent's account of its work: a claim, kept apart from the record. It changes no
    state and authorizes nothing; where it disagrees with the record, the record wins."""

    narrative_id: str
    digest: str
    size: int
    claims: tuple[NarrativeClaim, ...] = ()


class NarrativeClaim(BaseModel):
    # defer_build: each model's validator is built the first time it is used, not at
    # import: most processes use a few of the ~70 (start-up was 60 ms of CPU shorter).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    criterion_id: str
    status: Literal["satisfied", "failed", "waived", "unverified"]
    text: str = ""


NarrativeRecorded.model_rebuild()


# --- retention (issue 35 part R) ------------------------------------------------------
# New event types, not new fields on old ones: a program that predates retention refuses
# them by name in one line ("unknown event type 'content.retired'") instead of reading a
# record whose content it would look for in vain.

RetainedKind = Literal["artifact_version", "evidence", "note"]


@event_type("retention.set")
class RetentionSet(Payload):
    """An item's retention class (store.rules.retention_class), set when it was recorded or
    changed later. `due_at`: when it falls due on the database's clock, where that is known
    now (None for keep, and for until-completion before the task completed: then the read
    computes it from the completion, store.reads.retention)."""

    item_kind: RetainedKind
    item_id: str
    # The item's identity, repeated so that the class names exactly the content it governs.
    digest: str
    size: int
    media_type: str
    written_by: Actor
    retain: str
    due_at: str | None = None
    reason: str = ""


@event_type("note.stored")
class NoteStored(Payload):
    """A note whose text is kept as content (a blob), not in the log, so that it can expire:
    written instead of `note.recorded` when a note is given a retention class other than
    keep. Like every note it changes no state and authorizes nothing."""

    note_id: str
    kind: Literal["note", "message"] = "note"
    digest: str
    size: int
    media_type: str


@event_type("content.retired")
class ContentRetired(Payload):
    """The tombstone of expired content: the blob is gone (unless another live item still
    names the digest), and this keeps what is safe to keep: the digest, size and media type,
    what the item was, its class, and what it proved (e.g. "criterion C1 satisfied on
    report v2"), so the record still says what was decided on it."""

    item_kind: RetainedKind
    item_id: str
    digest: str
    size: int
    media_type: str
    retain: str
    due_at: str
    proved: tuple[str, ...] = ()


# --- deletion and visibility (issue 35 part D) ----------------------------------------


@event_type("note.private")
class PrivateNote(Payload):
    """A note only this store's people read (visibility `private`): the event names the
    text's blob by digest and carries none of it, so the chain verifies (and a package
    imports) without the text, which an export leaves out unless asked (`--include
    private`). A new type, not a field on `note.recorded`: a program that does not know it
    refuses it in one line ("unknown event type 'note.private'") instead of reading a
    private note as a shared one."""

    digest: str
    size: int
    kind: Literal["note", "message"] = "note"


# --- late changes (issue 35 part L) ---------------------------------------------------
# New event types: a program that predates them refuses them by name in one line ("unknown
# event type 'late_changes.acknowledged'"); a follow-up's origin on `task.created` is Additive,
# and a program that predates it refuses such an event as not matching its format.


class TaskOrigin(BaseModel):
    """The completed task a follow-up was opened from, and the last late fact it answers."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    task_id: str
    through_seq: int


TaskCreated.model_rebuild()


@event_type("late_changes.acknowledged")
class LateChangesAcknowledged(Payload):
    """A person saw what changed after completion up to `through_seq` and decided that no
    further task is needed. `based_on`: the last late fact they saw (a newer one arriving
    while they decided is a conflict, never acknowledged unseen)."""

    through_seq: int
    based_on: int
    note: str = ""


@event_type("followup.opened")
class FollowupOpened(Payload):
    """A person opened a follow-up task for what changed after completion up to
    `through_seq`: the new task (`followup_task_id`) names this one as its origin. The
    completed task stays completed; the late facts count as answered."""

    followup_task_id: str
    title: str
    through_seq: int
    based_on: int
    note: str = ""


# --- context manifests and configuration (issue 35 part M) ----------------------------
# New event types: a program that predates manifests refuses them by name in one line
# ("unknown event type 'context.manifest'"); the pinned tool on `effect.planned` is Additive,
# so an intent planned without one hashes as it always did.


class ModelConfig(BaseModel):
    """The model a request went to: provider, model id, and the digest of its parameters
    (temperature, limits, system prompt…: their canonical JSON's sha256, never the text)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    provider: str
    model: str
    parameters_digest: str | None = None


class ManifestItem(BaseModel):
    """One item of context, by identity: what kind (message, tool_result, file, memory,
    instruction, tool_definition…), which (`ref`), its digest and size, tokens if known.
    `reason`: why it was left out (only on an omitted item)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    kind: str
    ref: str
    digest: str
    size: int
    tokens: int | None = None
    reason: Literal["budget", "policy", "stale", "retired"] | None = None
    note: str = ""


class LedTo(BaseModel):
    """What a model request led to: an effect or a checkpoint of the task."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    kind: Literal["effect", "checkpoint"]
    id: str


@event_type("context.manifest")
class ContextManifest(Payload):
    """What the model saw for one request or decision: the items included and those left
    out with why, by digest (the content stays wherever it lives), the model and its
    configuration, and what it led to (also set later by `context.manifest_linked`). A view
    for one decision: it changes no state and authorizes nothing."""

    manifest_id: str
    model: ModelConfig
    included: tuple[ManifestItem, ...] = ()
    omitted: tuple[ManifestItem, ...] = ()
    led_to: LedTo | None = None
    purpose: str = ""


@event_type("context.manifest_linked")
class ContextManifestLinked(Payload):
    """The manifest's request led to this effect or checkpoint (known only after it)."""

    manifest_id: str
    led_to: LedTo


class ToolDefinition(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    name: str
    digest: str


class Configuration(BaseModel):
    """What an agent runs under: model, provider, its parameters' digest, and its tool
    catalogue (each tool's definition digest, and the catalogue's digest over them)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    provider: str
    model: str
    parameters_digest: str | None = None
    tool_catalogue_digest: str
    tools: tuple[ToolDefinition, ...] = ()


@event_type("configuration.changed")
class ConfigurationChanged(Payload):
    """A configuration transition at checkpoint `checkpoint_id`: from here on the task's
    agent runs under `configuration` (the first one recorded is a transition from none)."""

    checkpoint_id: str
    configuration: Configuration
    reason: str = ""


@event_type("effect.tool_migrated")
class EffectToolMigrated(Payload):
    """An intent planned under an older tool definition was reviewed against the current
    one and re-pinned to it (`to_digest`); its approvals bound the older reading and went
    stale (an `approval.retired` beside it)."""

    effect_id: str
    tool: str
    from_digest: str
    to_digest: str
    reason: str


# --- MCP tasks (store.mcp.tasks; issue 42) ---------------------------------------------------


@event_type("mcp_task.created")
class McpTaskCreated(Payload):
    """A tool call that `boris mcp` runs as an MCP task: its id, the call, how long it is kept
    (`ttl_ms`, from creation; None: unlimited), how often its client is told to poll, and the
    tasks form it was created in (`2025-11-25`, or the `io.modelcontextprotocol/tasks`
    extension of 2026-07-28). Kept here so that a restarted server answers for it."""

    mcp_task_id: str
    tool: str
    arguments: dict[str, Any]
    ttl_ms: int | None
    poll_interval_ms: int
    form: str


@event_type("mcp_task.ended")
class McpTaskEnded(Payload):
    """An MCP task's end: `completed` or `failed` with the call's result (a CallToolResult),
    `failed` with a JSON-RPC `error`, or `cancelled`."""

    mcp_task_id: str
    status: Literal["completed", "failed", "cancelled"]
    status_message: str = ""
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
