"""Reconciling an effect, as a reviewer does it: observe the target, then judge.

A use case built on the store: the observation is a command (`ObserveEffect`), the verdict
is the effect ledger's own `compute_verdict`; nothing here decides anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import events as ev
from .. import rules
from ..commands.effects import ObserveEffect, compute_verdict
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
    eff = next(e for e in store.task(task_id)["effects"] if e["effect_id"] == effect_id)
    obs = next(o for o in eff["observations"] if o["observation_id"] == obs_id)
    state = ev.FileState(exists=bool(obs["exists"]), digest=obs["digest"], size=obs["size"])
    responses = [a["response"] for a in eff["attempts"] if a.get("response")]
    verdict, reasons = compute_verdict(eff["intent"], state, responses, eff["target"])
    return Observed(
        obs_id,
        obs.get("at"),
        eff["target"],
        state,
        verdict,
        tuple(reasons),
        (eff["intent"].get("intended") or {}).get("digest"),
    )
