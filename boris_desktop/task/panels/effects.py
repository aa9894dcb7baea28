"""Effects: stage and outcome, the intent, every attempt with inputs, response or error, and
the observations, and the reconciliation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from boris_desktop.runtime.task_watch import MarkState
from boris_desktop.task.bundle import TaskBundle
from boris_desktop.task.panels import manifest
from boris_desktop.task.panels.base import FormDetail, TreePanel, form_detail
from boris_desktop.task.panels.next_steps import effect_next, effect_to_reconcile
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import words
from boris_desktop.ui.records import Node
from store import api

if TYPE_CHECKING:
    from store.api import (
        Approval,
        Attempt,
        Effect,
        Observation,
        Reconciliation,
        TargetState,
        TaskState,
    )


def _state(s: TargetState | Observation | None) -> str:
    if not s:
        return "—"
    if not s.exists:
        return "absent"
    return f"{t.digest(s.digest)}, {t.size(s.size)}"


def outcome_words(e: Effect) -> str:
    """The effect's outcome; where it has none, why, by its stage: a cancelled effect was
    never sent (nothing is to be known of it), a planned or approved one not yet."""
    if e.outcome:
        return words(e.outcome)
    stage = e.stage
    if stage == api.EffectStage.CANCELLED:
        return "never dispatched" if not e.attempts else "none: cancelled"
    if stage in (api.EffectStage.PLANNED, api.EffectStage.APPROVED):
        return "not dispatched yet"
    return "not known yet"


def _with_model_saw(detail: FormDetail, drift: str) -> FormDetail:
    """An intent planned under an older tool definition says so first (issue 35 part M)."""
    if drift:
        detail.lead.insert(0, ("Tool definition", drift))
    return detail


class EffectsPanel(TreePanel):
    title = "Effects"
    uses_disk = True
    headers = ("Effect / record", "Stage", "Outcome", "What", "When", "What you can do")
    forms = True

    def tab_note(self, task: TaskState) -> str:
        n = sum(effect_to_reconcile(e) for e in task.effects)
        return f"{n} to reconcile" if n else ""

    def summary(self, bundle: TaskBundle) -> str:
        effs = bundle.task.effects
        if not effs:
            return "No effects planned."
        n = sum(effect_to_reconcile(e) for e in effs)
        todo = f"{n} to reconcile" if n else "none to reconcile"
        return (
            f"{t.count(len(effs), 'effect', 'effects')}, {todo}. Select a row for its full record."
        )

    def nodes(self, bundle: TaskBundle) -> list[Node]:
        approvals = bundle.task.approvals
        return [self._effect(bundle, e, approvals) for e in bundle.task.effects]

    def _effect(self, bundle: TaskBundle, e: Effect, approvals: list[Approval]) -> Node:
        """The effect's row, with its intent, attempts, observations, what the model saw
        and its reconciliation under it."""
        step = effect_next(e, approvals)
        kids = [_intent(e)]
        kids += [_attempt(a) for a in e.attempts]
        kids += [_observation(o) for o in e.observations]
        # What the model saw when it chose this effect (issue 35 part M).
        kids += manifest.nodes(bundle, "effect", e.effect_id)
        drift = manifest.tool_drift(bundle, e.effect_id)
        watched = self.disk.effects.get(e.effect_id)
        if watched is not None and watched.state == MarkState.SAME:
            watched = None
        if e.reconciliation:
            kids.append(_reconciliation(e.reconciliation))
        return Node(
            key=e.effect_id,
            cells=(
                e.effect_id,
                words(e.stage),
                outcome_words(e),
                f"{e.kind} → {e.target}" + (f" · target {watched.state}" if watched else ""),
                t.when(e.updated_at),
                step or ("tool changed: migrate or re-plan" if drift else "—"),
            ),
            # Attention only where a person is needed: an approved effect waits
            # for the agent, not for the reviewer.
            status=watched.state if watched else e.stage,
            icon_name=None if watched else "attention" if step else None,
            tip=e.consequence
            + (
                f"\nthe target {watched.state} on disk ({watched.what} at {watched.at})"
                if watched
                else ""
            ),
            detail=_with_model_saw(
                form_detail(
                    e.model_dump(mode="json", exclude={"attempts", "observations"})
                    | manifest.section(bundle, "effect", e.effect_id),
                    step,
                ),
                drift,
            ),
            children=kids,
        )


def _intent(e: Effect) -> Node:
    intent = e.intent
    return Node(
        key="intent",
        cells=(
            "intent",
            "",
            "",
            f"from {_state(intent.pre_state)} to {_state(intent.intended)}",
            t.when(e.created_at),
        ),
        icon_name="pending",
        detail=form_detail(
            {
                "consequence": e.consequence,
                "idempotency_key": e.idempotency_key,
                "requires_approval": e.requires_approval,
                **intent.to_json(),
            }
        ),
    )


def _attempt(a: Attempt) -> Node:
    # What the executor reported: a key of the executor's own JSON (its response).
    said = (a.response or {}).get("reported") or ("error" if a.error else "no response")
    return Node(
        key=f"attempt:{a.attempt_no}",
        cells=(
            f"attempt {a.attempt_no}",
            f"by {a.executor}",
            words(a.outcome),
            f"executor said: {words(said)}" + (f" — {a.error}" if a.error else ""),
            t.when(a.started_at),
        ),
        status=a.outcome or "unknown",  # no outcome recorded: the unknown icon
        detail=form_detail(a.to_json()),
    )


def _observation(o: Observation) -> Node:
    return Node(
        key=f"observation:{o.observation_id}",
        cells=(
            f"observation {o.observation_id}",
            o.purpose,
            "",
            f"target {_state(o)}",
            t.when(o.at),
        ),
        icon_name="running",
        detail=form_detail(o.to_json()),
    )


def _reconciliation(r: Reconciliation) -> Node:
    return Node(
        key="reconciliation",
        cells=("reconciliation", "", words(r.verdict), "; ".join(r.reasons), ""),
        status=r.verdict,
        detail=form_detail(r.to_json()),
    )
