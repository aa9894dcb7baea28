"""Judging deliberately: which version evidence was made on, and what a verdict needs.

A satisfied verdict names the artifact version it was checked against and its evidence;
evidence made on an older version needs a reason; a waiver needs a reason and a person.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .states import CriterionState


def evidence_made_on(
    artifact_id: str,
    *,
    stated: tuple[str | None, int | None],
    attached_seq: int | None,
    version_seqs: Iterable[tuple[int, int]],
    vouched_on: int | None = None,
) -> int | None:
    """Which version of `artifact_id` a piece of evidence was made on, or None when the
    record cannot say (it was attached before the artifact had any version).

    The version its writer stated, if it stated one of this artifact; else the version that
    was current when it was attached (`version_seqs`: (version, seq it was recorded at)); a
    satisfied judgement against vN that cited it counts it as made on vN (`vouched_on`)."""
    stated_artifact, stated_version = stated
    if stated_version is not None and stated_artifact in (None, artifact_id):
        return stated_version
    dated = None
    if attached_seq is not None:
        before = [v for v, seq in version_seqs if seq < attached_seq]
        dated = max(before) if before else None
    if vouched_on is not None and (dated is None or vouched_on > dated):
        return vouched_on
    return dated


def evidence_is_current(made_on: int | None, current_version: int) -> bool:
    """Evidence speaks for the current version unless it is known to be made on an older one."""
    return made_on is None or made_on >= current_version


def evidence_version_words(artifact: str, made_on: int | None, current_version: int) -> str:
    """What a person reads beside the evidence: the version it was made on, against now."""
    if made_on is None:
        return f"made before {artifact} had a version"
    if made_on >= current_version:
        return f"made on {artifact} v{made_on} (current)"
    return f"made on {artifact} v{made_on}; the {artifact} is now v{current_version}"


@dataclass(frozen=True)
class VerdictNeeds:
    """What a verdict on a criterion needs before the store takes it."""

    verdict: CriterionState
    artifact: bool  # the artifact version it was checked against (the current one)
    evidence: bool  # at least one piece of evidence attached to the criterion
    reason: bool  # a reason in the note (a waiver)
    persons_only: bool  # only a person gives it
    words: str


#: The verdicts a person may give a criterion, in the order they are offered, and their needs.
VERDICTS: tuple[VerdictNeeds, ...] = (
    VerdictNeeds(
        CriterionState.SATISFIED,
        artifact=True,
        evidence=True,
        reason=False,
        persons_only=False,
        words="the artifact's current version and evidence; evidence made on an older "
        "version needs a reason",
    ),
    VerdictNeeds(
        CriterionState.FAILED,
        artifact=False,
        evidence=False,
        reason=False,
        persons_only=False,
        words="nothing more (a note helps the next actor)",
    ),
    VerdictNeeds(
        CriterionState.WAIVED,
        artifact=False,
        evidence=False,
        reason=True,
        persons_only=True,
        words="a reason: why the task may complete without it",
    ),
)


def verdict_needs(verdict: str) -> VerdictNeeds | None:
    return next((v for v in VERDICTS if v.verdict == verdict), None)


def judgement_missing(
    verdict: str,
    *,
    artifact_id: str | None,
    evidence_ids: Sequence[str],
    note: str,
    older_evidence: Sequence[str] = (),
    older_evidence_reason: str | None = None,
) -> str | None:
    """Why a judgement cannot be recorded as given, or None when it can: the checks of the
    judge command, for the command and for a dialog showing what is still missing.
    `older_evidence`: the cited evidence made on an older version than the one judged."""
    if verdict == CriterionState.SATISFIED:
        if not artifact_id:
            return "satisfied needs the artifact it was checked against"
        if not evidence_ids:
            return "satisfied needs at least one piece of evidence"
        if older_evidence and not (older_evidence_reason or "").strip():
            return (
                f"evidence {', '.join(older_evidence)} was made on an older version of "
                f"{artifact_id} than the one judged: say why it still holds, or attach "
                "evidence made on the current version"
            )
    if verdict == CriterionState.WAIVED and not note.strip():
        return "waiving a criterion needs a reason"
    return None
