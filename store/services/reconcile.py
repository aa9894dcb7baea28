"""Reconciling an effect, as a reviewer does it: observe the target, then judge.

A use case built on the store: the observation is a command (`ObserveEffect`), the verdict
is the effect ledger's own `compute_verdict`; nothing here decides anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import events as ev
from .. import rules
from ..commands.effects import ObserveEffect, ReconcileEffect, compute_verdict
from ..model import Actor
from ..store import Store


@dataclass(frozen=True)
class Observed:
    """What a reviewer needs to decide a reconciliation: the recorded observation, the
    verdict the store computes from it, and what a diff of intended and current needs."""

    observation_id: str
    at: str | None
    target: str
    state: ev.FileState
    verdict: rules.Verdict
    reasons: tuple[str, ...]
    intended_digest: str | None


def observe_and_judge(store: Store, actor: Actor, task_id: str, effect_id: str) -> Observed:
    """Observe an effect's file target (hashed once, outside the write lock), record the
    observation and return the verdict it supports, without deciding anything."""
    obs_id = store.execute(
        ObserveEffect(task_id=task_id, effect_id=effect_id, purpose="reconcile"), actor
    )
    eff = next(e for e in store.task(task_id).effects if e.effect_id == effect_id)
    obs = next(o for o in eff.observations if o.observation_id == obs_id)
    state = ev.FileState(exists=obs.exists, digest=obs.digest, size=obs.size)
    responses = [a.response for a in eff.attempts if a.response]
    verdict, reasons = compute_verdict(eff.intent.to_json(), state, responses, eff.target)
    return Observed(
        obs_id,
        obs.at,
        eff.target,
        state,
        verdict,
        tuple(reasons),
        eff.intent.intended.digest,
    )


def reconcile_by_hand(
    store: Store,
    actor: Actor,
    task_id: str,
    effect_id: str,
    decision: rules.Verdict,
    note: str,
    based_on: int | None = None,
) -> rules.Verdict:
    """A destination the store cannot read (an upload, a message), reconciled by a person's
    finding. It rests on the latest observation there; when there is none, what the person
    found is recorded as the observation first — the intended content for present, the
    state before for absent, something else for conflict — so the verdict names one."""
    store.sign_as(actor)
    eff = next(e for e in store.task(task_id).effects if e.effect_id == effect_id)
    observations = eff.observations
    obs_id = observations[-1].observation_id if observations else None
    if obs_id is None:
        intent = eff.intent
        found = {
            rules.Verdict.PRESENT: intent.intended.to_json(),
            rules.Verdict.ABSENT: (
                intent.pre_state.to_json() if intent.pre_state else {"exists": False}
            ),
        }.get(decision) or {"exists": True, "digest": None}
        obs_id = store.execute(
            ObserveEffect(
                task_id=task_id,
                effect_id=effect_id,
                purpose="reconcile",
                state=ev.FileState.model_validate(found),
            ),
            actor,
        )
    verdict: rules.Verdict = store.execute(
        ReconcileEffect.model_validate(
            {
                "task_id": task_id,
                "effect_id": effect_id,
                "observation_id": obs_id,
                "decision": decision.value,
                "note": note,
                "based_on": based_on,
            }
        ),
        actor,
    )
    return verdict
