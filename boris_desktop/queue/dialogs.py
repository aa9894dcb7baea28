"""The dialog each kind of open decision opens (Enter in the queue): the decision's own
dialog, built from the task's record as the pane below the queue shows it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from boris_desktop.host import Host
from store import api

if TYPE_CHECKING:
    from PySide6.QtWidgets import QDialog

    from store.api import Decision, TaskState


def exhausted_counter(task: TaskState) -> str | None:
    """The counter whose exhaustion stopped a budget_exhausted run, by the store's word (the
    task's budgets say which are exhausted); None for any other run."""
    if task.status != api.RunStatus.BUDGET_EXHAUSTED:
        return None
    return next((str(b.counter) for b in task.budgets if b.exhausted), None)


def dialog_for(host: Host, d: Decision, task: TaskState) -> QDialog | None:
    """The dialog that makes decision `d` on `task`, or None when the task's record no
    longer holds what it is about (decided meanwhile: the queue reads again)."""
    kind, key = d.kind, d.key
    if kind == api.DecisionKind.APPROVAL:
        return _approval(host, task, key)
    if kind in {api.DecisionKind.RECONCILE, api.DecisionKind.CONFLICT}:
        e = next((x for x in task.effects if x.effect_id == key), None)
        if e is None:
            return None
        from boris_desktop.decide.reconcile import ReconcileDialog

        return ReconcileDialog(host, task.id, e)
    if kind == api.DecisionKind.JUDGE:
        c = next((x for x in task.criteria if x.criterion_id == key), None)
        if c is None:
            return None
        from boris_desktop.decide.judge import JudgeDialog

        return JudgeDialog(host, task, c)
    if kind == api.DecisionKind.WAIT:
        w = next((x for x in task.waits if x.wait_id == key), None)
        if w is None:
            return None
        from boris_desktop.decide.takeover import CancelWaitDialog

        return CancelWaitDialog(host, task, w)
    if kind == api.DecisionKind.RESUME:
        return _resume(host, task)
    if kind == api.DecisionKind.LATE and task.late.count:
        from boris_desktop.decide.late import LateChangesDialog

        return LateChangesDialog(host, task)
    return None


def _approval(host: Host, task: TaskState, approval_id: str) -> QDialog | None:
    a = next((x for x in task.approvals if x.approval_id == approval_id), None)
    if a is None:
        return None
    from boris_desktop.decide.approve import ApproveDialog

    return ApproveDialog(host, task.id, a, task.now)


def _resume(host: Host, task: TaskState) -> QDialog | None:
    if spent := exhausted_counter(task):
        # Its budget ran out: raising that counter's limit is what lets it go on (the
        # store's rule); the dialog says so, and how to resume it as it is instead.
        from boris_desktop.decide.budget import BudgetDialog

        return BudgetDialog(host, task, spent, raise_limit=True)
    if api.can_resume(task.status):
        from boris_desktop.decide.finish import ResumeDialog

        return ResumeDialog(host, task)
    return None
