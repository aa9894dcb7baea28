"""Deletion and visibility: when a task may be deleted, and what an export carries.

Deleting is a person's decision, with the task id typed again and a reason, refused while an
agent's lease is alive or an effect may have changed the world unreconciled (the record is its
only trace). A private note stays with this store unless an export asks for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum

from .states import ActorKind, Refusal


def deletion_authority(actor_kind: str) -> Refusal | None:
    """Deleting a task is a person's decision only: the command refuses anyone else, and
    verify names a receipt of a deletion by anyone else (store.services.verify)."""
    if actor_kind == ActorKind.PERSON:
        return None
    return Refusal(
        "deletion_is_a_persons",
        f"only a person deletes a task, not an {actor_kind}: ask a person to do it",
    )


def deletion_refusal(
    actor_kind: str,
    task_id: str,
    confirm: str,
    reason: str,
    *,
    live_agent_lease: str | None,
    effects_in_doubt: Sequence[str],
) -> Refusal | None:
    """Whether `delete-task` may remove this task now.

    A person's decision only, with the task id typed again and a reason (the receipt keeps
    it). Refused while an agent's lease is alive: a session writing now would meet a task
    gone from under it, so a person takes it over first (`boris take-over`). Refused while
    an effect was dispatched and its outcome is not settled (unknown, partial, dispatched
    without an answer): the record is the only trace of what may have changed in the
    world, so a person reconciles it first; deleting would forget a change nobody checked."""
    refused = deletion_authority(actor_kind)
    if refused is not None:
        return refused
    if confirm != task_id:
        return Refusal(
            "deletion_needs_the_task_id_typed",
            f"type the task id to confirm (--confirm {task_id}); nothing was removed",
        )
    if not reason.strip():
        return Refusal(
            "deletion_needs_a_reason",
            "give the reason for deleting (--reason); nothing was removed",
        )
    if live_agent_lease is not None:
        return Refusal(
            "deletion_waits_for_the_agent",
            f"{live_agent_lease} holds a live lease on {task_id}: take the task over first "
            f"(boris take-over {task_id} --reason ...); nothing was removed",
        )
    if effects_in_doubt:
        named = ", ".join(effects_in_doubt)
        return Refusal(
            "deletion_waits_for_reconciliation",
            f"effects {named} may have changed the world and are not reconciled: reconcile "
            "them first (the record is their only trace); nothing was removed",
        )
    return None


class Visibility(StrEnum):
    """Who a note is for. `shared` (the default) travels in every export; `private` stays
    with this store unless an export is asked for it (`--include private`)."""

    SHARED = "shared"
    PRIVATE = "private"


def export_classes(include: Iterable[str]) -> tuple[str, ...]:
    """The visibility classes an export carries: `shared` always, plus those asked for."""
    asked = {Visibility(x) for x in include}
    return tuple(v.value for v in Visibility if v == Visibility.SHARED or v in asked)
