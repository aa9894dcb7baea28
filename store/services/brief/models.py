"""The resume brief as a read model: what `resume_brief` answers, `boris resume --json` and
MCP's `resume_brief` print (`to_json()`), and the window reads by attribute.

The brief's JSON leaves out what does not apply to a part (an unreadable file has no digest,
only a `problem`; an artifact without a file path was not observed; an effect shows an
`override` or its `tool_drift` only when it has one): so a brief model drops the fields its
builder did not set (`BriefModel`), and at run time its dict face says the same as its JSON.
What the brief *says* (blockers, next actions, forbidden ones) is built by each part in its
own words and kinds (store.services.brief.said): an action is typed; a blocker keeps the
fields its kind names (a fork's heads, a criterion's missing evidence...), so it stays JSON.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import SerializerFunctionWrapHandler, model_serializer

from ... import rules
from ...reads.actors import ActorRef
from ...reads.late import LateFact
from ...reads.manifests import ToolDrift
from ...reads.read_model import ReadModel
from ...reads.waits import WaitReservation


class BriefModel(ReadModel):
    """A part of the brief: its JSON (and its run-time dict face) holds the fields set."""

    @model_serializer(mode="wrap")
    def _fields_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # In the serializer, not only in to_json: every dump (model_dump, a TypeAdapter's,
        # `boris schema`'s checks) prints the same JSON.
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}

    if not TYPE_CHECKING:
        # As ReadModel's, over the fields set: a key the JSON leaves out is not there.
        def __getitem__(self, key: str) -> Any:
            if key not in self.model_fields_set:
                raise KeyError(key)
            return getattr(self, key)

        def get(self, key: str, default: Any = None) -> Any:
            return getattr(self, key) if key in self.model_fields_set else default

        def __contains__(self, key: object) -> bool:
            return key in self.model_fields_set


class FileObservation(BriefModel):
    """A file the task depends on, hashed now: what is there (`exists`, `digest`, `size`,
    `mtime_ns`), or, when it cannot be read (outside the scope, unreadable), the `problem`."""

    path: str
    readable: bool
    exists: bool | None = None
    digest: str | None = None
    size: int | None = None
    mtime_ns: int | None = None
    problem: str | None = None


class ArtifactBrief(BriefModel):
    """An artifact's current version and, when it has a file, that file `observed` now
    (`changed_on_disk`: readable and not the recorded bytes)."""

    artifact_id: str
    name: str
    version: int | None
    digest: str | None
    blob_problem: str | None
    observed: FileObservation | None = None
    changed_on_disk: bool | None = None


class CriterionBrief(BriefModel):
    """A criterion as it counts now (stale when its file changed on disk), and why."""

    id: str
    status: rules.CriterionState
    reason: str


class ApprovalBrief(BriefModel):
    """An approval as history: `authorizes_now` only while it is valid at this moment."""

    id: str
    effect_id: str | None
    state: rules.ApprovalState
    payload_digest: str | None
    expires_at: str | None
    authorizes_now: bool


class EffectOverride(BriefModel):
    """A person's decision on an effect beside what the observation said."""

    decision: rules.Verdict
    observation_said: rules.Verdict
    by: ActorRef
    reason: str


class EffectBrief(BriefModel):
    """An effect by the case it is in (`meaning`), its target observed now (a file; a
    destination is not read)."""

    id: str
    kind: str
    target: str
    stage: rules.EffectStage
    outcome: rules.Outcome | None
    attempts: int
    dispatched: bool
    observed_now: FileObservation | None
    meaning: str
    override: EffectOverride | None = None
    tool_drift: ToolDrift | None = None


class EvidenceRef(BriefModel):
    """What an action rests on: a record's kind, id and digest."""

    kind: str
    id: str
    digest: str | None


class BriefAction(BriefModel):
    """A next action or a forbidden one: in words, who (actor kind), the command the command
    layer takes for it (its payload is the command's JSON), the fields the actor supplies."""

    action: str
    actor: rules.ActorKind
    command: dict[str, Any]
    needs: list[str]
    evidence: list[EvidenceRef] | None = None
    #: Why it is forbidden.
    reason: str | None = None
    #: A due wait's.
    wait_id: str | None = None
    reservation: WaitReservation | None = None


class RetiredContent(BriefModel):
    """Retired content (store.reads.retention): optional content the brief goes on without."""

    kind: str
    item_kind: str
    id: str
    digest: str
    size: int
    media_type: str
    retired_at: str
    required_by: list[str]
    message: str


class WaitBrief(BriefModel):
    """An open scheduled wait, on the database's clock."""

    id: str
    kind: rules.WaitKind
    ref: str
    waiting_for: str
    not_before: str
    clock: str
    due: bool
    reservation: WaitReservation | None
    condition: str | None


class LateBrief(BriefModel):
    """What changed after completion, not answered yet."""

    count: int
    since_seq: int | None
    since_at: str | None
    last_seq: int | None
    facts: list[LateFact]


class LeaseBrief(BriefModel):
    """Who holds the task: a lease controls who works now, never what happened remotely."""

    holder: str
    holder_kind: rules.ActorKind
    session_id: str
    token: int
    since: str
    last_heartbeat_at: str
    expires_at: str | None
    standing: rules.LeaseStanding
    reason: str | None


class ObjectiveBrief(BriefModel):
    rev: int
    text: str


class CheckpointBrief(BriefModel):
    """The checkpoint the brief starts from."""

    id: str
    reason: str
    seq: int
    chain_hash: str
    note: str | None


class EventsAfter(BriefModel):
    """The events written after the checkpoint, by type."""

    count: int
    types: dict[str, int]
    last_seq: int
    head_hash: str | None


class ResumeBrief(BriefModel):
    """What the next actor may do, and the evidence for it, from the record alone."""

    task_id: str
    title: str
    status: rules.RunStatus
    #: Who holds the task now (store.reads.leases), None when nobody ever leased it.
    lease: LeaseBrief | None
    objective: ObjectiveBrief | None
    checkpoint: CheckpointBrief | None
    events_after_checkpoint: EventsAfter
    artifacts: list[ArtifactBrief]
    criteria: list[CriterionBrief]
    effects: list[EffectBrief]
    approvals: list[ApprovalBrief]
    next_actions: list[BriefAction]
    #: Each in its kind's fields (`kind`, `message` and what the kind names).
    blockers: list[dict[str, Any]]
    forbidden: list[BriefAction]
    #: Scheduled waits (store.reads.waits) and, apart from the next actions, the due ones:
    #: each is to be considered again under current policy and the world as it is now.
    waits: list[WaitBrief]
    re_evaluate: list[BriefAction]
    #: Retired optional content (a note, diagnostics): resume goes on without it.
    degraded: list[RetiredContent]
    #: What changed after completion, not answered yet (store.reads.late); None: nothing.
    late_changes: LateBrief | None
    observed_at: str
