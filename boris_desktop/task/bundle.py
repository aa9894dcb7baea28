"""What the task view is shown: a task's record read together on a worker
(runtime.jobs.task_bundle), a page of its timeline, and the resume brief that follows.

Frozen: the view compares the bundle it shows with a fresh one (`same_record`) and never
edits what a worker read. No Qt and no store at import: the workers build these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from boris_desktop.runtime.keyed import Keyed

if TYPE_CHECKING:
    from store.api import (
        ArtifactBrief,
        DecisionSigners,
        EventFacets,
        EventRow,
        ModelSaw,
        Narrative,
        ResumeBrief,
        Signer,
        TaskState,
    )

#: A timeline filter: (event type, (actor kind, actor id)); None is "all".
Filter = tuple[str | None, tuple[str, str] | None]


@dataclass(frozen=True)
class TimelineEvent(Keyed):
    """An event as the timeline lists it: who signed it (the store's signer words,
    store.reads.signers) and its payload's one-line gist, both made on the worker."""

    event: EventRow
    signer: Signer | None
    gist: str


@dataclass(frozen=True)
class TimelinePage(Keyed):
    """One page of a task's events, newest first; `more`: older ones remain."""

    task_id: str
    filter: Filter
    before_seq: int | None  # None: the newest page
    events: tuple[TimelineEvent, ...]
    more: bool


@dataclass(frozen=True)
class TaskBundle(Keyed):
    """A task's record and what the panels show beside it, read in one go."""

    task: TaskState
    signing: DecisionSigners  # who signed its decisions and checkpoints
    timeline: TimelinePage  # its newest events
    event_facets: EventFacets  # the types and actors its events have (the filters)
    narratives: list[Narrative]  # the agent's claims, checked against the record
    model_saw: ModelSaw  # what the model saw and ran under (issue 35 part M)


@dataclass(frozen=True)
class TaskBrief(Keyed):
    """The resume brief and the summary: they observe the task's files, so they come on
    their own worker after the record."""

    task_id: str
    markdown: str  # the brief, in words
    summary: str  # the summary generated from the record, in words
    brief: ResumeBrief  # the brief as the store builds it
    artifacts: list[ArtifactBrief]  # each artifact's file as observed now
