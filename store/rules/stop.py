"""Stop: what stopping a run revokes, cancels and leaves to reconcile, and its lineage.

A stop ends live authority (approvals revoked, planned effects cancelled) and leaves what was
sent and not settled for a person to reconcile; it never picks a branch of a forked lineage.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .effects import effect_unresolved
from .states import ApprovalState, EffectStage


@dataclass(frozen=True)
class StopPlan:
    """What stopping the run will do: revoke these approvals, cancel these planned effects,
    and leave these (sent, not settled) for a person to reconcile by hand."""

    revoke: tuple[str, ...]
    cancel: tuple[str, ...]
    unresolved: tuple[str, ...]
    # The lineage as the stop finds it and what the stop does with it. `fork`: the heads when
    # there are two or more, else empty. `continue_from`: the head the stopped checkpoint
    # supersedes: the one head there is, or, on a fork, only the head a person named (None:
    # none chosen). `merge`: the heads it merges, only those named. A stop never picks a
    # branch: which line of work goes on is a person's decision, not a side effect of stopping.
    fork: tuple[str, ...] = ()
    continue_from: str | None = None
    merge: tuple[str, ...] = ()

    @property
    def left_open(self) -> tuple[str, ...]:
        """The fork's heads the stop neither continues from nor merges: they stay heads."""
        return tuple(h for h in self.fork if h != self.continue_from and h not in self.merge)


def stop_lineage_refusal(
    heads: Sequence[str], continue_from: str | None, merge: Sequence[str]
) -> str | None:
    """Why a stop's choice of head is refused, or None: it may continue from a head and merge
    other heads, and merging needs the head it merges into named."""
    if continue_from is not None and continue_from not in heads:
        return f"checkpoint {continue_from} is not a head: a stop continues from a head"
    for ref in merge:
        if ref not in heads:
            return f"checkpoint {ref} is not a head: only a head can be merged"
        if ref == continue_from:
            return f"checkpoint {ref} is the head the stop continues from; it is not merged too"
    if merge and continue_from is None:
        return "name the head the stop continues from (the heads merged join it)"
    return None


def stop_plan(
    approvals: Iterable[tuple[str, str, str]],
    effects: Iterable[tuple[str, str, str | None]],
    now: str,
    heads: Sequence[str] = (),
    *,
    continue_from: str | None = None,
    merge: Sequence[str] = (),
) -> StopPlan:
    """`approvals` are (id, state, expires_at); `effects` are (id, stage, outcome); `heads`
    the task's checkpoint heads, oldest first; `continue_from` and `merge` what the person
    chose (see `stop_lineage_refusal`). An expired request is already dead; it stays
    `expired` in the history."""
    revoke = tuple(
        aid
        for aid, state, expires in approvals
        if state in {ApprovalState.PENDING, ApprovalState.APPROVED} and expires > now
    )
    effs = list(effects)
    cancel = tuple(
        eid for eid, stage, _ in effs if stage in {EffectStage.PLANNED, EffectStage.APPROVED}
    )
    unresolved = tuple(
        eid
        for eid, stage, outcome in effs
        if eid not in cancel and effect_unresolved(stage, outcome)
    )
    fork = tuple(heads) if len(heads) > 1 else ()
    if not fork and continue_from is None and heads:
        continue_from = heads[0]  # one head: there is nothing to choose
    return StopPlan(revoke, cancel, unresolved, fork, continue_from, tuple(merge))
