"""Recording a narrative: an account of a task, never the task's truth.

An agent's narrative is stored as a claim (its text as a blob, its structured claims in the
event). Checking it against the record, and summaries, are `services.narratives`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .. import events as ev
from ..model import Actor
from ..tx import Tx
from .core import TaskCommand, handles, new_id


class ClaimIn(BaseModel):
    # defer_build: each model's validator is built the first time it is used, not at
    # import: most processes use a few of the ~70 (start-up was 60 ms of CPU shorter).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    criterion_id: str
    status: Literal["satisfied", "failed", "waived", "unverified"]
    text: str = ""


class RecordNarrative(TaskCommand):
    type: Literal["record_narrative"] = "record_narrative"
    text: str = Field(min_length=1)
    claims: list[ClaimIn] = Field(default_factory=list)


@handles(RecordNarrative)
def _record_narrative(tx: Tx, cmd: RecordNarrative, actor: Actor) -> str:
    tx.task(cmd.task_id)
    digest, size = tx.blobs.put_bytes(cmd.text.encode("utf-8"))
    nid = new_id("narr")
    tx.emit(
        cmd.task_id,
        ev.NarrativeRecorded(
            narrative_id=nid,
            digest=digest,
            size=size,
            claims=tuple(ev.NarrativeClaim(**x.model_dump()) for x in cmd.claims),
        ),
        actor,
    )
    return nid
