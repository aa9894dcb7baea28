"""Late changes: the facts a completed task still takes, and who answers them.

A completed task's record is closed to work, not to what the world says afterwards: a
corrected observation of an effect, an evaluator's revised judgement, a source or artifact
that went stale. Refusing them would leave the record saying what was known at completion
as if it were still true; accepting them as work would reopen the task on an agent's word.
So they are appended as late facts, the task stays completed (status.allowed has no way out
of completed but superseded), and a person decides: a follow-up task, or acknowledge.
"""

from __future__ import annotations

from .states import ActorKind, EffectStage, Refusal, RunStatus

#: Commands that still take a fact on a completed task (by command type).
LATE_FACT_COMMANDS: frozenset[str] = frozenset(
    {"observe_effect", "reconcile_effect", "judge_criterion", "record_artifact"}
)
#: The events such a command records that count as "changed after completion".
LATE_FACT_EVENTS: frozenset[str] = frozenset(
    {
        "observation.recorded",
        "effect.reconciled",
        "criterion.judged",
        "artifact.version_recorded",
    }
)
#: A person's decisions about late facts: the only writes, besides late facts, that a
#: completed record takes (and the only ones that clear "changed after completion").
LATE_DECISIONS: frozenset[str] = frozenset({"acknowledge_late_changes", "open_followup"})


def late_fact_accepted(status: str, command_type: str) -> bool:
    """Whether a record that is not open still takes this command as a late fact: only a
    completed one (a superseded task was replaced; its successor takes the news)."""
    return status == RunStatus.COMPLETED and command_type in LATE_FACT_COMMANDS


def late_reconcilable(status: str, stage: str) -> bool:
    """A reconciled effect of a completed task may be reconciled again: a corrected
    observation of what the effect did is a late fact, recorded beside the earlier verdict."""
    return status == RunStatus.COMPLETED and stage == EffectStage.RECONCILED


def late_decision_authority(actor_kind: str) -> Refusal | None:
    """Whether another task is needed after late facts is a person's decision: an agent
    neither acknowledges them away nor opens work on them itself."""
    if actor_kind == ActorKind.PERSON:
        return None
    return Refusal(
        "late_changes_are_a_persons",
        f"only a person acknowledges what changed after completion or opens a follow-up task, "
        f"not an {actor_kind}: ask a person to do it",
    )


def late_decision_refusal(status: str, late_count: int) -> str | None:
    """Why there is nothing to acknowledge or follow up here (None: there is)."""
    if status != RunStatus.COMPLETED:
        return f"the task is {status}: late changes are facts that arrive after completion"
    if late_count <= 0:
        return "nothing changed after completion since the last acknowledgement"
    return None


def late_words(count: int, since: str | None) -> str:
    """The task header's line: "changed after completion: 2 facts since 2026-12-06"."""
    facts = "1 fact" if count == 1 else f"{count} facts"
    day = (since or "")[:10]
    return f"changed after completion: {facts}" + (f" since {day}" if day else "")
