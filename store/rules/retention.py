"""Retention: how long content is kept, when it falls due, who may change or expire it.

Expiry destroys content, so it is a person's act; an agent changes the retention only of what
it wrote itself, or it could make evidence against its own work expire.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from .states import ActorKind, Refusal
from .times import store_time_after

#: What may carry a retention class: the three kinds of content a person may want gone
#: sooner than the run (an artifact version, an evidence item, a note kept as content).
RETAINED_KINDS: tuple[str, ...] = ("artifact_version", "evidence", "note")

_RETAIN = re.compile(
    r"^(?:(?P<keep>keep)|(?P<after>until-completion)(?:\+(?P<an>\d{1,5})(?P<au>[dh]))?|(?P<n>\d{1,5})(?P<u>[dh]))$"
)


@dataclass(frozen=True)
class RetentionClass:
    """How long content is kept: `keep` (for the life of the record), a duration from when
    it was recorded (`30d`, `12h`), or a duration after the task completed
    (`until-completion+7d`). Durations count on the database's clock."""

    text: str
    kind: str  # "keep", "duration", "after_completion"
    seconds: int = 0

    @property
    def keeps(self) -> bool:
        return self.kind == "keep"


def retention_class(text: str) -> RetentionClass:
    """Parse a class as written (`keep`, `30d`, `12h`, `until-completion+7d`); ValueError
    names the forms for anything else."""
    m = _RETAIN.match(text.strip())
    if m is None:
        raise ValueError(
            f"retention class {text!r} is not keep, a duration (30d, 12h) or until-completion+Nd"
        )
    if m["keep"]:
        return RetentionClass("keep", "keep")
    if m["after"]:
        n = int(m["an"] or 0)
        secs = n * (86400 if m["au"] == "d" else 3600)
        return RetentionClass(text.strip(), "after_completion", secs)
    return RetentionClass(
        text.strip(), "duration", int(m["n"]) * (86400 if m["u"] == "d" else 3600)
    )


def retention_due(cls: RetentionClass, recorded_at: str, completed_at: str | None) -> str | None:
    """When content of this class falls due, on the database's clock: never for keep; the
    recording time plus the duration; the completion time plus N once the task completed
    (until then it is not due: a run still working may need it)."""
    if cls.kind == "duration":
        return store_time_after(recorded_at, cls.seconds)
    if cls.kind == "after_completion" and completed_at is not None:
        return store_time_after(completed_at, cls.seconds)
    return None


def retain_refusal(
    actor_kind: str, actor_id: str, writer_id: str, writer_kind: str, retired: bool
) -> Refusal | None:
    """Who may change an item's retention class. A person may change any: how long a record
    keeps content is the owner's call (privacy, storage). An agent may change only what it
    wrote itself, in either direction: it knows what its own diagnostics are for, but it
    may not shorten (nor lengthen) the life of a person's note or another actor's evidence,
    or an agent could make evidence against its own work expire. A retired item has no
    content left to keep: its class is history."""
    if retired:
        return Refusal(
            "retired_is_final", "the item was retired; its content is gone and stays gone"
        )
    if actor_kind == ActorKind.PERSON:
        return None
    if writer_kind == actor_kind and writer_id == actor_id:
        return None
    return Refusal(
        "retention_of_anothers_is_a_persons",
        f"an {actor_kind} changes the retention only of content it wrote itself; this was "
        f"written by {writer_kind}:{writer_id}: ask a person to do it",
    )


def expire_refusal(actor_kind: str) -> Refusal | None:
    """Expiry destroys content, so it is a person's act (run by hand or by the person's
    scheduled maintenance, `boris expire --actor person:ops`): never an agent's, which could
    retire the evidence its own work is judged by, and never the store's unattended, so every
    tombstone names who retired it."""
    if actor_kind == ActorKind.PERSON:
        return None
    return Refusal(
        "expiry_is_a_persons",
        f"only a person expires content, not an {actor_kind}: ask a person to run boris expire",
    )


class RetiredWeight(StrEnum):
    """What a retired item means to the next actor: `blocking` (something it rests on is
    gone: evidence a satisfied criterion was judged on, the artifact version a criterion,
    a checkpoint or an approval names) or `degraded` (only optional context went)."""

    BLOCKING = "blocking"
    DEGRADED = "degraded"


def retired_weight(item_kind: str, required_by: Sequence[str]) -> RetiredWeight:
    """Blocking when anything still rests on the item (`required_by` names what), else
    degraded; a note is never required."""
    if item_kind != "note" and required_by:
        return RetiredWeight.BLOCKING
    return RetiredWeight.DEGRADED


def artifact_item(artifact_id: str, version: int) -> str:
    """An artifact version's item id, as retention names it: `report@2`."""
    return f"{artifact_id}@{version}"
