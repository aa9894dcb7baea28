"""Value types shared by commands, events and reads."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ActorKind = Literal["agent", "person", "system"]
CriterionStatus = Literal["unverified", "satisfied", "failed", "stale", "waived"]
ArtifactRole = Literal["source", "draft", "output", "log", "screenshot", "receipt", "other"]
EvidenceKind = Literal["command_output", "source_span", "screenshot", "review", "receipt", "other"]
BudgetCounter = Literal[
    "model_calls",
    "tool_calls",
    "effects",
    "compute_seconds",
    "wall_seconds",
    "artifact_bytes",
    "reviews",
]
BUDGET_COUNTERS: tuple[str, ...] = BudgetCounter.__args__  # type: ignore[attr-defined]


class Frozen(BaseModel):
    # defer_build: each model's validator is built the first time it is used, not at
    # import: most processes use a few of the ~70 (start-up was 60 ms of CPU shorter).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Actor(Frozen):
    """Who did something: an agent, a person or the system, by a stable id."""

    kind: ActorKind
    id: str = Field(min_length=1, max_length=128)
    name: str = ""

    def label(self) -> str:
        return f"{self.kind}:{self.id}" + (f" ({self.name})" if self.name else "")

    @classmethod
    def parse(cls, text: str) -> Actor:
        """`kind:id[:name]`, the form the CLI and BORIS_ACTOR take."""
        kind, _, rest = text.partition(":")
        ident, _, name = rest.partition(":")
        return cls.model_validate({"kind": kind, "id": ident, "name": name})


SYSTEM = Actor(kind="system", id="boris")

_ACTOR_JSON: dict[Actor, str] = {}


def actor_json(actor: Actor) -> str:
    """The actor's canonical JSON, encoded once per actor: every event carries one."""
    text = _ACTOR_JSON.get(actor)
    if text is None:
        from .canonical import canonical_json

        if len(_ACTOR_JSON) >= 1024:
            _ACTOR_JSON.clear()
        text = _ACTOR_JSON[actor] = canonical_json(actor.model_dump(mode="json"))
    return text


class Scope(Frozen):
    """What a task may touch: filesystem roots (absolute, resolved) and destination prefixes."""

    paths: tuple[str, ...] = ()
    destinations: tuple[str, ...] = ()


class PhaseInput(Frozen):
    kind: Literal["artifact", "phase", "approval"]
    ref: str = Field(min_length=1)
