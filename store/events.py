"""Event payloads: the facts in the log, one pydantic model per event type.

Every stored payload carries a format number. A payload in an older format is brought up to
date by an explicit upcaster registered here; a format with no path to the current one is
refused (`UnknownEventFormat`), never filled with defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import UnknownEventFormat
from .model import (
    Actor,
    ArtifactRole,
    CriterionStatus,
    EvidenceKind,
    PhaseInput,
    Scope,
)


class Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    TYPE: ClassVar[str]
    FORMAT: ClassVar[int] = 1


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
class TaskCreated(Payload):
    title: str
    owner: str
    objective: str
    scope: Scope
    status: str = "running"


@event_type("objective.amended")
class ObjectiveAmended(Payload):
    rev: int
    text: str
    reason: str


@event_type("criterion.added")
class CriterionAdded(Payload):
    criterion_id: str
    text: str


@event_type("criterion.changed")
class CriterionChanged(Payload):
    criterion_id: str
    text: str
    reason: str


@event_type("criterion.judged")
class CriterionJudged(Payload):
    criterion_id: str
    status: CriterionStatus
    artifact_id: str | None = None
    artifact_version: int | None = None
    evidence_ids: tuple[str, ...] = ()
    note: str = ""


class Producer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    actor: Actor
    effect_id: str | None = None
    attempt_no: int | None = None


@event_type("artifact.version_recorded")
class ArtifactVersionRecorded(Payload):
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


@event_type("evidence.attached")
class EvidenceAttached(Payload):
    evidence_id: str
    criterion_id: str
    kind: EvidenceKind
    digest: str
    media_type: str
    size: int
    description: str = ""
    locator: str = ""


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
class BudgetLimitSet(Payload):
    counter: str
    limit: float | None


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
class BudgetReleased(Payload):
    counter: str
    amount: float


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
