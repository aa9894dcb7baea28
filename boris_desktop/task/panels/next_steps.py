"""What the reviewer can do about a row, in words, keyed by the store's states (its enums).

The store decides what is allowed (its commands refuse the rest); these words only point the
reviewer at the action that fits the state. The store's resume brief words its next actions
for the next agent ("retry effect …", "verify criterion …"), not for the person at the desk,
so the reviewer's wording lives here, in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from store import api
from store.api import is_destination

if TYPE_CHECKING:
    from store.api import Approval, Criterion, Effect

NOTHING = ""  # the row needs no person now


def effect_to_reconcile(e: Effect) -> bool:
    """The store's rule: maybe sent and not settled (planned or approved effects have not
    left the building; one known not to have happened is retried or cancelled)."""
    from store.api import effect_to_reconcile as rule

    return rule(e.stage, e.outcome)


def effect_next(e: Effect, approvals: list[Approval]) -> str:
    if effect_to_reconcile(e):
        verdict = e.reconciliation.verdict if e.reconciliation else None
        look = "check the destination" if is_destination(e.target) else "observe the file"
        if verdict == api.Verdict.CONFLICT:
            return f"Conflict: a person decides present / absent — {look} again (Ctrl+R)"
        return f"Reconcile: {look} and decide (Ctrl+R)"
    if e.stage == api.EffectStage.PLANNED and e.requires_approval:
        pending = [
            a
            for a in approvals
            if a.effect_id == e.effect_id and a.state == api.ApprovalState.PENDING
        ]
        if pending:
            return f"Decide: approve or reject {pending[0].approval_id} (Ctrl+Return)"
    return NOTHING


def approval_next(a: Approval, expired: bool) -> str:
    """`expired`: the approval's expiry has passed by the database clock."""
    if a.state == api.ApprovalState.PENDING:
        if expired:
            return "Expired: it authorizes nothing; the agent must ask again"
        return "Decide: approve or reject (Ctrl+Return)"
    return NOTHING


def criterion_next(c: Criterion, stale_on_disk: bool = False) -> str:
    status = c.state  # the store's judgement at this read, not the stored status
    if status == api.CriterionState.EVIDENCE_MISSING:
        return "Evidence missing: restore it, or judge it again on new evidence (Ctrl+J)"
    if status == api.CriterionState.STALE or stale_on_disk:
        return "Re-check: judge it against the current version (Ctrl+J)"
    if status == api.CriterionState.UNVERIFIED:
        return "Verify: judge it satisfied, failed or waived, with evidence (Ctrl+J)"
    if status == api.CriterionState.FAILED:
        return "Failed: the agent fixes it, or you waive it with a reason (Ctrl+J)"
    return NOTHING
