"""Criteria and completion: what a criterion counts as now, and what blocks completing.

A criterion judged satisfied counts only while every piece of its evidence still counts (not
retired, its blob readable): the task's state, the resume brief and the completion command
all judge item by item through these functions, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from .effects import effect_unresolved
from .states import CriterionState

_Item = TypeVar("_Item")


def criterion_state(
    status: str, evidence: Iterable[_Item], counts: Callable[[_Item], bool]
) -> CriterionState:
    """A criterion counts as satisfied only while every piece of its evidence counts (`counts`
    of each item: not retired, its blob present and readable); otherwise its evidence is
    missing. Each caller names its items as it reads them (a digest, an id, a row)."""
    if status == CriterionState.SATISFIED and not all(counts(e) for e in evidence):
        return CriterionState.EVIDENCE_MISSING
    return CriterionState(status)


def criterion_stales_on_change(status: str) -> bool:
    """A judgement that a change to what it was judged against undoes: satisfied speaks for
    one version only (failed and waived say nothing the next version could undo)."""
    return status == CriterionState.SATISFIED


def criterion_done(state: str) -> bool:
    return state in {CriterionState.SATISFIED, CriterionState.WAIVED}


def criterion_awaits_person(state: str, evidence_count: int) -> bool:
    """A criterion waiting on a person's judgement, by its state (`criterion_state`): what it
    was judged on changed (stale), what it was judged satisfied on can no longer be read
    (evidence missing), or evidence was attached and nobody has judged it yet (unverified
    with evidence)."""
    if state in (CriterionState.STALE, CriterionState.EVIDENCE_MISSING):
        return True
    return state == CriterionState.UNVERIFIED and evidence_count > 0


@dataclass(frozen=True)
class CriterionView:
    criterion_id: str
    status: str
    evidence: tuple[tuple[str, str], ...] = ()  # (evidence id, digest) of what it was judged on
    #: The evidence ids among `evidence` that were retired (a `content.retired` tombstone). A
    #: retired item never counts, though another item (of any task) keeps the same blob, so
    #: that its digest still reads: it is the item that was retired, not the bytes.
    retired: frozenset[str] = frozenset()


def missing_evidence(c: CriterionView, readable: Callable[[str], bool]) -> list[tuple[str, str]]:
    """The evidence the criterion rests on that does not count now: retired, or unreadable."""
    return [(eid, d) for eid, d in c.evidence if eid in c.retired or not readable(d)]


def view_state(c: CriterionView, readable: Callable[[str], bool]) -> CriterionState:
    """What the criterion counts as now (`criterion_state`): satisfied only while none of its
    evidence was retired and every blob of it reads (`readable`, by digest)."""
    return criterion_state(c.status, c.evidence, lambda e: e[0] not in c.retired and readable(e[1]))


def completion_blockers(
    criteria: Iterable[CriterionView],
    effects: Iterable[tuple[str, str, str | None]],
    readable: Callable[[str], bool],
) -> list[str]:
    """Why the task cannot be completed now; empty when it can. `effects` are
    (effect id, stage, outcome); `readable` says whether a blob can be read now. Retired
    evidence never counts (`CriterionView.retired`), whether or not its blob still reads."""
    out: list[str] = []
    for c in criteria:
        state = view_state(c, readable)
        if state == CriterionState.EVIDENCE_MISSING:
            gone = ", ".join(
                f"{eid} (retired)" if eid in c.retired else f"{eid} (blob {d})"
                for eid, d in missing_evidence(c, readable)
            )
            out.append(f"criterion {c.criterion_id} has evidence missing: {gone}")
        elif not criterion_done(state):
            out.append(f"criterion {c.criterion_id} is {state}")
    for effect_id, stage, outcome in effects:
        if effect_unresolved(stage, outcome):
            out.append(f"effect {effect_id} is unresolved ({stage}, {outcome or 'no outcome'})")
    return out
