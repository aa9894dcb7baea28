"""Effects: what an effect's stage and outcome leave to do, and what is safe next.

An effect is resolved only when it is known to have happened or was cancelled: one whose
outcome is unknown is reconciled against a fresh observation before any new attempt, never
retried blind, and one that did not happen is tried again or cancelled, never forgotten.
"""

from __future__ import annotations

import re

from .states import EffectStage, Outcome, Verdict


def effect_unresolved(stage: str, outcome: str | None) -> bool:
    """Resolved only when it is known to have happened (reconciled present) or was
    cancelled. Planned, unknown, partial, failed and absent all leave work to do: an
    effect that did not happen must be tried again or cancelled, never forgotten."""
    if stage == EffectStage.CANCELLED:
        return False
    return not (stage == EffectStage.RECONCILED and outcome == Outcome.SUCCEEDED)


#: Stages in which an effect is reconciled: it was sent, or may have been, and nobody has
#: settled what became of it.
RECONCILABLE: frozenset[str] = frozenset({EffectStage.DISPATCHED, EffectStage.OBSERVED})


def effect_reconcilable(stage: str) -> bool:
    return stage in RECONCILABLE


def effect_to_reconcile(stage: str, outcome: str | None) -> bool:
    """Maybe sent and not settled: only a reconciliation against a fresh observation settles
    it (the resume brief's "effect_to_reconcile" blocker). Planned or approved effects have
    not left the building; one known not to have happened is retried or cancelled."""
    if not effect_unresolved(stage, outcome):
        return False
    return outcome in {Outcome.UNKNOWN, Outcome.PARTIAL} or stage == EffectStage.OBSERVED


def effect_uncertain(stage: str, outcome: str | None) -> bool:
    """Sent, and what happened is not known: no blind retry until reconciled."""
    return stage in {EffectStage.DISPATCHED, EffectStage.OBSERVED} and outcome in {
        Outcome.UNKNOWN,
        Outcome.PARTIAL,
    }


def intent_open(stage: str, outcome: str | None) -> bool:
    """Whether the effect's intent may still change, be approved or be cancelled: nothing
    was sent yet, or every attempt is known not to have happened (failed or absent)."""
    if stage in {EffectStage.PLANNED, EffectStage.APPROVED}:
        return True
    return stage in {
        EffectStage.DISPATCHED,
        EffectStage.OBSERVED,
        EffectStage.RECONCILED,
    } and outcome in {Outcome.FAILED, Outcome.ABSENT}


def effect_cancellable(stage: str, outcome: str | None) -> bool:
    """Whether the effect may be cancelled (CancelEffect): its intent is still open, nothing
    of it happened. A sent effect whose outcome is not known is reconciled, not cancelled."""
    return intent_open(stage, outcome)


def why_not_cancellable(stage: str, outcome: str | None) -> str | None:
    """Why the effect cannot be cancelled, in words a reviewer can act on (None: it can)."""
    if effect_cancellable(stage, outcome):
        return None
    if stage == EffectStage.CANCELLED:
        return "it was cancelled already"
    if stage == EffectStage.RECONCILED and outcome == Outcome.SUCCEEDED:
        return "it already happened (reconciled present)"
    return (
        f"it is {stage} ({outcome or 'outcome not settled'}): a sent effect is reconciled, "
        "not cancelled"
    )


#: Stages in which what became of an effect was settled: by a reconciliation, or by a cancel
#: after every attempt was known not to have happened.
SETTLED: frozenset[str] = frozenset({EffectStage.RECONCILED, EffectStage.CANCELLED})


def late_response_reopens(stage: str) -> bool:
    """Whether an executor's response arriving now re-opens the effect's reconciliation. A
    response after the effect was settled is news about the world the settling did not see
    (the executor wrote the file after it was found absent): it is kept, and the effect goes
    back to dispatched with an unknown outcome, so only a fresh observation settles it again.
    Its word is never the outcome (a late "failed" must not permit a blind retry of something
    found present), and refusing it would lose the only sign that the world changed."""
    return stage in SETTLED


def why_not_dispatchable(stage: str, outcome: str | None) -> str | None:
    if stage == EffectStage.CANCELLED:
        return "it was cancelled"
    if stage == EffectStage.RECONCILED and outcome == Outcome.SUCCEEDED:
        return "it already happened (reconciled present)"
    if outcome in {Outcome.UNKNOWN, Outcome.PARTIAL}:
        return (
            f"its last attempt's outcome is {outcome}: reconcile it against the target "
            "before any new attempt"
        )
    if stage == EffectStage.OBSERVED and outcome not in {Outcome.FAILED, Outcome.ABSENT}:
        return "it has been observed but not reconciled"
    return None


def recovery(stage: str, outcome: str | None, requires_approval: bool) -> str:
    """What is safe to do next with an effect, said plainly."""
    if outcome in {Outcome.UNKNOWN, Outcome.PARTIAL}:
        return "observe the target and reconcile; do not dispatch again until reconciled"
    if stage == EffectStage.OBSERVED:
        return "reconcile against the latest observation"
    if stage == EffectStage.PLANNED:
        return "request an approval, then dispatch" if requires_approval else "dispatch"
    if stage == EffectStage.APPROVED:
        return "dispatch with the approval while it is valid"
    if outcome in {Outcome.FAILED, Outcome.ABSENT}:
        return "a new attempt under the same effect is allowed"
    return "nothing"


def conflict_undecided(stage: str, outcome: str | None, verdict: str | None) -> bool:
    """A reconciliation found a conflict and nobody has decided it yet: a person's turn."""
    return effect_uncertain(stage, outcome) and verdict == Verdict.CONFLICT


#: A URI's scheme (RFC 3986), two letters or more so that a drive letter ("C:") is not one.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")


def is_destination(target: str) -> bool:
    """Whether `target` names a destination (a URI: https://…, smtp://…, mailto:…) rather
    than a file. `mailto:a@b` has no "//" and was once taken for a relative file name."""
    return _SCHEME.match(target) is not None
