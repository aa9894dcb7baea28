"""The task's state as read models: what `Store.task()` answers, `boris show --json` prints
and the window shows (store.reads.state builds it).

Field names are the projection's columns and the read's own words, as the JSON has always
had them; a value the store knows the shape of is a model or one of the rules' enums, and
only what an agent or a tool wrote (a prepared object, a response, a scope) stays JSON.
"""

from __future__ import annotations

from typing import Any

from .. import rules
from .actors import ActorRef
from .checkpoints import Checkpoints
from .inbox import Lease
from .late import LateChanges
from .read_model import ReadModel
from .retention import RetiredItem, Tombstone
from .waits import Wait


class ObjectiveRevision(ReadModel):
    """One revision of the task's objective: its text, why it changed and who changed it."""

    task_id: str
    rev: int
    text: str
    reason: str
    actor: ActorRef
    at: str
    seq: int


class Evidence(ReadModel):
    """An item of evidence on a criterion. `retired`: its tombstone when its content was
    retired; `blob_problem`: why its content cannot be read now ("retired", "missing", ...),
    None when it can."""

    task_id: str
    evidence_id: str
    criterion_id: str
    kind: str
    digest: str
    media_type: str
    size: int
    description: str
    locator: str
    actor: ActorRef
    at: str
    artifact_id: str | None
    artifact_version: int | None
    seq: int
    retired: Tombstone | None = None
    blob_problem: str | None = None


class Criterion(ReadModel):
    """A criterion with its evidence. `status` as judged; `state` what it counts as now
    (satisfied only while each item of its evidence can be read: `evidence_missing` names
    those that cannot)."""

    task_id: str
    criterion_id: str
    position: int
    text: str
    status: rules.CriterionState
    artifact_id: str | None
    artifact_version: int | None
    evidence_ids: list[str]
    note: str
    judged_by: ActorRef | None
    judged_at: str | None
    stale_reason: str
    rev: int
    rev_seq: int
    evidence: list[Evidence]
    state: rules.CriterionState
    evidence_missing: list[str]


class Producer(ReadModel):
    """Who produced an artifact version, and through which effect's attempt if any."""

    actor: ActorRef
    effect_id: str | None = None
    attempt_no: int | None = None


class ArtifactVersion(ReadModel):
    """One version of an artifact (`retired`, `blob_problem` as for evidence)."""

    task_id: str
    artifact_id: str
    version: int
    digest: str
    media_type: str
    size: int
    path: str | None
    producer: Producer
    note: str
    at: str
    seq: int
    retired: Tombstone | None = None
    blob_problem: str | None = None


class Artifact(ReadModel):
    """An artifact with every version and its current one."""

    task_id: str
    artifact_id: str
    position: int
    name: str
    role: str
    current_version: int
    versions: list[ArtifactVersion]
    current: ArtifactVersion | None


class PhaseInput(ReadModel):
    """What a phase reads: an artifact, another phase's result or an approval, by id."""

    kind: str
    ref: str


class PhaseResult(ReadModel):
    """A phase's result and the identity of each input it was computed from."""

    ok: bool
    summary: str
    input_identities: dict[str, str]
    seq: int
    at: str
    actor: ActorRef


class PhaseHistoryEntry(PhaseResult):
    """A result in a phase's history: one an input's change retired says when
    (`retired_at_seq`) and which input (`retired_because`, "artifact:guide")."""

    retired_at_seq: int | None = None
    retired_because: str | None = None


class Phase(ReadModel):
    """A phase and its readiness now: `blocked_by` names each missing input."""

    phase_id: str
    name: str
    inputs: list[PhaseInput]
    readiness: rules.PhaseReadiness
    blocked_by: list[str]
    input_identities: dict[str, str]
    result: PhaseResult | None
    history: list[PhaseHistoryEntry]


class Budget(ReadModel):
    """A budget counter: its limit (None: unlimited), what was used and reserved."""

    task_id: str
    counter: str
    limit_value: float | None
    used: float
    reserved: float
    exhausted: bool


class TargetState(ReadModel):
    """What a target was seen, or is intended, to be: exists, and its digest and size."""

    exists: bool
    digest: str | None = None
    size: int | None = None


class Intent(ReadModel):
    """An effect's intent, recorded before any dispatch: the state before and the state
    intended, the exact object an executor is given (`prepared`, what an approval binds) and
    the tool definition it was planned under, where it named one; `result_schema`, where a
    person may answer in the tool's place (respond) with a result fitting it."""

    pre_state: TargetState | None
    intended: TargetState
    prepared: dict[str, Any]
    prepared_digest: str
    policy: str = ""
    tool: str | None = None
    tool_digest: str | None = None
    result_schema: dict[str, Any] | None = None


class AttemptInputs(ReadModel):
    """What an attempt was given: the prepared object and its digest."""

    prepared: dict[str, Any]
    prepared_digest: str


class Attempt(ReadModel):
    """One dispatch of an effect and what its executor said (`response`, `error`)."""

    task_id: str
    effect_id: str
    attempt_no: int
    executor: str
    inputs: AttemptInputs
    approval_id: str | None
    started_at: str
    ended_at: str | None
    response: dict[str, Any] | None
    error: str | None
    outcome: rules.Outcome | None


class Observation(ReadModel):
    """What an observer saw of a target, for an effect or an artifact."""

    task_id: str
    observation_id: str
    effect_id: str | None
    artifact_id: str | None
    target: str
    exists: bool
    digest: str | None
    size: int | None
    mtime_ns: int | None
    purpose: str
    observer: ActorRef
    at: str
    seq: int


class Reconciliation(ReadModel):
    """An effect's verdict against one observation: computed, or a person's decision
    (`by_person`; `overrode` the observation's own verdict it overrides)."""

    verdict: rules.Verdict
    observation_id: str
    reasons: list[str]
    by: ActorRef
    by_person: bool = False
    overrode: rules.Verdict | None = None
    note: str = ""
    at: str
    seq: int


class Effect(ReadModel):
    """An effect on the world with its attempts and observations. `unresolved`: its outcome
    is not settled; `conflict_undecided`: a conflict waits for a person's decision."""

    task_id: str
    effect_id: str
    #: The stable name every read uses; `effect_id` stays for existing readers.
    id: str
    position: int
    kind: str
    target: str
    idempotency_key: str
    intent: Intent
    consequence: str
    requires_approval: bool
    stage: rules.EffectStage
    outcome: rules.Outcome | None
    reconciliation: Reconciliation | None
    created_at: str
    updated_at: str
    attempts: list[Attempt]
    observations: list[Observation]
    unresolved: bool
    conflict_undecided: bool


class Approval(ReadModel):
    """A request for a person's approval of an exact object (`payload`, its digest). `state`
    is judged now (`expired` by the database's clock)."""

    approval_id: str
    #: The stable name every read uses; `approval_id` stays for existing readers.
    id: str
    task_id: str
    effect_id: str | None
    payload: dict[str, Any]
    payload_digest: str
    consequence: str
    policy: str
    requester: ActorRef
    requested_at: str
    expires_at: str
    state: rules.ApprovalState
    decided_by: ActorRef | None
    decided_at: str | None
    note: str
    consumed_at: str | None
    consumed_by: str | None
    approvers: int
    approved_by: list[ActorRef]


class ArtifactVersionOwner(ReadModel):
    """The artifact version a problem blob belongs to."""

    artifact_id: str
    version: int


class EvidenceOwner(ReadModel):
    """The evidence item a problem blob belongs to."""

    criterion_id: str
    evidence_id: str


class Problem(ReadModel):
    """Content the record names that cannot be read now (retired content is not a problem:
    see `TaskState.retired`)."""

    kind: str
    id: str
    digest: str
    problem: str
    owner: ArtifactVersionOwner | EvidenceOwner


class TaskState(ReadModel):
    """A task's whole current state, read at `now` (the database's clock)."""

    id: str
    title: str
    owner: str
    status: rules.RunStatus
    status_reason: str
    scope: dict[str, Any]
    created_at: str
    updated_at: str
    last_seq: int
    head_hash: str
    objective: ObjectiveRevision | None
    objective_revisions: list[ObjectiveRevision]
    criteria: list[Criterion]
    artifacts: list[Artifact]
    phases: list[Phase]
    budgets: list[Budget]
    effects: list[Effect]
    approvals: list[Approval]
    checkpoints: Checkpoints
    #: Who works on the task now (store.reads.leases): None when it was never leased.
    lease: Lease | None
    #: Scheduled waits, judged at `now` (store.reads.waits).
    waits: list[Wait]
    problems: list[Problem]
    #: Retired items, each blocking or degraded (store.reads.retention.retired_problems).
    retired: list[RetiredItem]
    #: What changed after completion, not yet answered by a person (store.reads.late).
    late: LateChanges
    now: str
    #: What a final checkpoint may not leave behind (rules.pending_work).
    pending_work: list[str]


class SignedWrite(ReadModel):
    """The signature covering a write: its key and the actor the keyring binds it to
    (`known` False: a key the keyring does not hold)."""

    key_id: str
    actor: str | None
    name: str
    known: bool


class TaskSignatures(ReadModel):
    """How the task's record is signed (store.signing.check.task_signatures): `signed` (the
    store is), `required`, events after `unsigned_after` unsigned, and per signed seq its
    signature."""

    signed: bool
    required: bool
    unsigned_after: int | None
    signed_seqs: dict[str, SignedWrite]


class ShownTask(TaskState):
    """`boris show --json`: the task's state and how its record is signed."""

    signatures: TaskSignatures
