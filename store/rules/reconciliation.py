"""Reconciliation: the intended state against what is observed at the target now.

The verdict (present, absent, conflict) rests on the store's own observation, never on an
executor's word; a person's hand decision is for what the store cannot settle, and one that
contradicts an observation is an explicit override with its reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .effects import is_destination
from .states import Refusal, Verdict


@dataclass(frozen=True)
class State:
    """A target's state as observed or intended: exists, and its digest when it does."""

    exists: bool
    digest: str | None = None


def same_state(a: State, b: State) -> bool:
    return a.exists == b.exists and (not a.exists or a.digest == b.digest)


def _as_state(x: Any) -> State:
    if isinstance(x, State):
        return x
    if isinstance(x, Mapping):
        return State(bool(x.get("exists")), x.get("digest"))
    return State(bool(x.exists), x.digest)


def reconcile_verdict(
    intended: Any,
    pre_state: Any | None,
    observed: Any,
    responses: Sequence[Mapping[str, Any]],
    target: str,
    resolve: Callable[[str], str] = lambda p: p,
) -> tuple[Verdict, list[str]]:
    """Intent against a current observation: the intended post-state at the authorized
    target is present; the pre-state still there is absent; anything else is a conflict.
    `resolve` maps a path an executor claims to its real path (the caller's I/O)."""
    reasons: list[str] = []
    want, seen = _as_state(intended), _as_state(observed)
    pre = _as_state(pre_state) if pre_state is not None else None
    elsewhere = False
    for r in responses:
        claimed = r.get("target") or r.get("path")
        if claimed and resolve(str(claimed)) != target and str(claimed) != target:
            elsewhere = True
            reasons.append(
                f"the executor reports writing to {claimed}, not the authorized target {target}"
            )
        if r.get("reported") == "reported_success":
            reasons.append("the executor reported success (its word, not evidence)")
    if seen.exists and want.exists and seen.digest == want.digest:
        verdict = Verdict.PRESENT
        reasons.append(f"the target holds the intended content {want.digest}")
    elif not want.exists and not seen.exists:
        verdict = Verdict.PRESENT
        reasons.append("the target is gone, as intended")
    elif pre is not None and same_state(seen, pre):
        verdict = Verdict.ABSENT
        reasons.append("the target still holds its pre-state: the effect did not happen")
    elif not seen.exists:
        verdict = Verdict.CONFLICT
        reasons.append("the target is missing")
    else:
        verdict = Verdict.CONFLICT
        reasons.append(
            f"the target holds {seen.digest}, neither the intended {want.digest} nor the pre-state"
        )
    if verdict == Verdict.ABSENT and elsewhere:
        # Something was written somewhere: a person must look, not a blind retry.
        verdict = Verdict.CONFLICT
    return verdict, reasons


def decision_refusal(
    target: str, computed: Verdict, decision: str | None, override: bool, note: str
) -> Refusal | None:
    """A hand decision is for what the store cannot settle: a destination it cannot read, or
    a conflict. Against a file it has just hashed to a definite verdict, a different decision
    is an override of the observation, explicit and with a reason."""
    if decision is None:
        if override:
            return Refusal("override_needs_decision", "an override names the decision it makes")
        return None
    if not note.strip():
        return Refusal("decision_needs_note", "a decision by hand needs a note saying why")
    contradicts = (
        not is_destination(target) and computed != Verdict.CONFLICT and decision != computed
    )
    if contradicts and not override:
        return Refusal(
            "observation_overrides_need_override",
            f"the store observed the target and it is {computed}; deciding {decision} "
            "overrides that observation: say so (override) with the reason in the note",
        )
    if override and not contradicts:
        return Refusal(
            "override_without_contradiction",
            f"nothing to override: the observation's verdict is {computed}"
            + (" (a conflict is decided, not overridden)" if computed == Verdict.CONFLICT else ""),
        )
    return None
