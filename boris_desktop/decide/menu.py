"""The window's Actions menu: what the reviewer can do to the selected task and row.

`Actions` is an object the window hands itself to (git-cola's context commands), not a
mixin: it knows the window only as `host.Window` — the task on screen, the selected row of a
part, where to say things — so it reads no widget of the window's. Every entry opens a
non-modal dialog (returned, for tests) built from the task state the window loaded; the
dialog runs the store command on a worker.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

from boris_desktop.host import Window
from boris_desktop.ui.text import failure
from store import api

# The dialogs' Qt classes are imported where used: touching one builds its enums, and this
# module is loaded before the first paint, which needs none of them.
if TYPE_CHECKING:
    from PySide6.QtWidgets import QMenu, QMessageBox

Row = TypeVar("Row")

# (attribute, menu text, shortcut, tooltip, method)
ACTIONS = (
    ("approve_action", "&Approve / Reject…", "Ctrl+Return", "Decide the selected approval", "approve"),
    ("reconcile_action", "&Reconcile Effect…", "Ctrl+R", "Observe and reconcile an effect", "reconcile"),
    ("stop_action", "&Stop the Run…", "Ctrl+.", "Stop the run by owner decision", "stop_task"),
    ("checkpoint_action", "&Checkpoint / Handoff…", "Ctrl+K", "Write a final or handoff checkpoint", "checkpoint"),
    ("resume_action", "Resume the Ru&n…", "Ctrl+Shift+R", "Resume a stopped run (its revoked approvals stay revoked)", "resume_task"),
    ("close_action", "Close the Tas&k…", "Ctrl+Shift+X", "Close a task that will not be finished, with your reason", "close_task"),
    ("budget_action", "Change &Budget…", "Ctrl+Shift+B", "Raise or lower a budget's limit, or release a reservation", "change_budget"),
    ("cancel_effect_action", "Cancel a Planned E&ffect…", "Ctrl+Shift+Del", "Cancel the selected planned effect; its approvals are revoked", "cancel_effect"),
    ("take_over_action", "&Take Over…", "Ctrl+Shift+T", "Take the task over from the session working on it; its next write is refused", "take_over"),
    ("cancel_wait_action", "Cancel &Wait…", "Ctrl+Shift+W", "Cancel the selected scheduled wait; its reservation goes back", "cancel_wait"),
    ("delete_task_action", "De&lete Task…", "Ctrl+Alt+Shift+Del", "Delete the task and everything of it; the store keeps a receipt", "delete_task"),
    None,
    ("amend_action", "A&mend Objective…", "Ctrl+E", "Amend the task's objective", "amend_objective"),
    ("add_criterion_action", "Add Crite&rion…", "Ctrl+Shift+N", "Add a criterion", "add_criterion"),
    ("judge_action", "&Judge Criterion…", "Ctrl+J", "Mark the selected criterion satisfied, failed or waived", "judge_criterion"),
    ("evidence_action", "Attach E&vidence…", "Ctrl+Shift+V", "Attach a file in the task's scope as evidence for the selected criterion", "attach_evidence"),
    ("phase_action", "Complete &Phase…", "Ctrl+Shift+P", "Complete the selected phase, done or failed", "complete_phase"),
    ("source_action", "Supply a So&urce…", "Ctrl+Shift+O", "Record a file inside the task's scope as a source", "supply_source"),
    ("edit_artifact_action", "&Edit Artifact Text…", "Ctrl+Shift+E", "Edit the selected artifact's text as a new version", "edit_artifact"),
)  # fmt: skip


class Actions(QObject):
    """The Actions menu's entries, enabled for what the store says the task on screen
    still takes, each opening its dialog over the window."""

    approve_action: QAction
    reconcile_action: QAction
    stop_action: QAction
    checkpoint_action: QAction
    resume_action: QAction
    close_action: QAction
    budget_action: QAction
    cancel_effect_action: QAction
    take_over_action: QAction
    cancel_wait_action: QAction
    delete_task_action: QAction
    amend_action: QAction
    add_criterion_action: QAction
    source_action: QAction
    judge_action: QAction
    evidence_action: QAction
    phase_action: QAction
    edit_artifact_action: QAction

    def __init__(self, window: Window, menu: QMenu) -> None:
        self.window = window
        self.widget = window if isinstance(window, QWidget) else None
        super().__init__(self.widget)
        self.menu = menu
        self.dialog: Any = None
        self.message_box: QMessageBox | None = None
        self.shortcuts_dialog: Any = None
        for spec in ACTIONS:
            if spec is None:
                menu.addSeparator()
                continue
            attr, label, keys, tip, method = spec
            act = QAction(label, self.widget)
            act.setShortcut(QKeySequence(keys))
            shown = QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText)
            act.setToolTip(f"{tip} ({shown})")
            act.setStatusTip(tip)
            act.triggered.connect(lambda _=False, m=method: getattr(self, m)())
            act.setEnabled(False)
            menu.addAction(act)
            setattr(self, attr, act)
        menu.setToolTipsVisible(True)
        menu.aboutToShow.connect(self.update)

    # --- what is selected ----------------------------------------------------------------

    def _task(self) -> api.TaskState | None:
        return self.window.shown_task()

    def _pick(
        self,
        panel: str,
        rows: Sequence[Row],
        key: Callable[[Row], str],
        want: Callable[[Row], bool] = lambda _row: True,
    ) -> Row | None:
        """The row selected in `panel` when it is one `want`s, else the first that is."""
        chosen = self.window.current_key(panel)
        for r in rows:
            if key(r) == chosen and want(r):
                return r
        return next((r for r in rows if want(r)), None)

    def _pending_approval(self, task: api.TaskState) -> api.Approval | None:
        return self._pick(
            "Approvals",
            task.approvals,
            lambda a: a.approval_id,
            lambda a: a.state is api.ApprovalState.PENDING,
        )

    def _open_effect(self, task: api.TaskState) -> api.Effect | None:
        return self._pick(
            "Effects",
            task.effects,
            lambda e: e.effect_id,
            lambda e: api.effect_reconcilable(e.stage),
        )

    def _cancellable(self, task: api.TaskState) -> api.Effect | None:
        return self._pick(
            "Effects",
            task.effects,
            lambda e: e.effect_id,
            lambda e: api.effect_cancellable(e.stage, e.outcome),
        )

    def _open_wait(self, task: api.TaskState) -> api.Wait | None:
        return self._pick(
            "Waits", task.waits, lambda w: w.wait_id, lambda w: w.state is api.WaitState.OPEN
        )

    def _criterion(self, task: api.TaskState) -> api.Criterion | None:
        return self._pick("Criteria", task.criteria, lambda c: c.criterion_id)

    def _counter(self, task: api.TaskState) -> str:
        """The counter a budget change is about: the one selected in the Budgets part, else
        the one that asks most of a person (exhausted first), else the first there is."""
        chosen = self.window.current_key("Budgets")
        if chosen in api.BUDGET_COUNTERS:
            return str(chosen)
        return api.most_pressing_counter(task.budgets) or api.BUDGET_COUNTERS[0]

    def update(self) -> None:
        task = self._task()
        # The store says what a run in this status still takes: a stopped run is not
        # stopped again, and is still reconciled, edited and handed off.
        live = task is not None and api.record_open(task.status)
        self.approve_action.setEnabled(bool(task and self._pending_approval(task)))
        self.reconcile_action.setEnabled(bool(task and self._open_effect(task)))
        self.stop_action.setEnabled(task is not None and api.can_stop(task.status))
        self.resume_action.setEnabled(task is not None and api.can_resume(task.status))
        self.close_action.setEnabled(bool(task and api.close_targets(task.status)))
        self.budget_action.setEnabled(live)
        self.cancel_effect_action.setEnabled(bool(live and task and self._cancellable(task)))
        self.take_over_action.setEnabled(live)
        self.cancel_wait_action.setEnabled(bool(live and task and self._open_wait(task)))
        # Any task, in any status: the store's plan says when it must wait (issue 35 part D).
        self.delete_task_action.setEnabled(task is not None)
        for act in (
            self.checkpoint_action,
            self.amend_action,
            self.add_criterion_action,
            self.source_action,
        ):
            act.setEnabled(live)
        self.judge_action.setEnabled(bool(live and task and task.criteria))
        self.evidence_action.setEnabled(bool(live and task and task.criteria))
        self.phase_action.setEnabled(bool(live and task and task.phases))
        self.edit_artifact_action.setEnabled(bool(live and task and task.artifacts))

    # --- showing -------------------------------------------------------------------------

    def shortcuts(self) -> list[tuple[str, str, str]]:
        """(menu, action, keys) for every action of the window that has a shortcut, read
        from the actions themselves: the list cannot drift from what the keys do."""
        out = []
        bar = self.window.menuBar()
        for menu_action in bar.actions():
            menu = menu_action.menu()
            if menu is None:
                continue
            for act in _all_actions(menu):
                keys = act.shortcuts()
                if not keys:
                    continue
                shown = " or ".join(
                    k.toString(QKeySequence.SequenceFormat.NativeText) for k in keys
                )
                out.append((_plain(menu.title()), _plain(act.text()), shown))
        return out

    def show_shortcuts(self) -> Any:
        from boris_desktop.shortcuts import ShortcutsDialog

        self.shortcuts_dialog = ShortcutsDialog(self.widget, self.shortcuts())
        self.shortcuts_dialog.show()
        return self.shortcuts_dialog

    def _show(self, dialog: Any) -> Any:
        self.dialog = dialog
        dialog.open()
        return dialog

    def tell(self, title: str, text: str) -> QMessageBox:
        """A non-modal message (a refusal, or why nothing can be done)."""
        from PySide6.QtWidgets import QMessageBox

        box = QMessageBox(QMessageBox.Icon.Information, title, text, parent=self.widget)
        box.setTextFormat(box.textFormat().PlainText)
        self.message_box = box
        box.open()
        self.window.statusBar().showMessage(f"{title}: {text}", 10000)
        return box

    # --- the actions ---------------------------------------------------------------------

    def approve(self) -> Any:
        task = self._task()
        a = task and self._pending_approval(task)
        if not task or not a:
            return self.tell("Approve", "No pending approval in the selected task.")
        from boris_desktop.decide.approve import ApproveDialog

        return self._show(ApproveDialog(self.window, task.id, a.approval_id, task.now))

    def reconcile(self) -> Any:
        task = self._task()
        e = task and self._open_effect(task)
        if not task or not e:
            return self.tell("Reconcile", "No dispatched effect waits for reconciliation.")
        from boris_desktop.decide.reconcile import ReconcileDialog

        return self._show(ReconcileDialog(self.window, task.id, e))

    def stop_task(self) -> Any:
        task = self._task()
        if not task:
            return None
        from boris_desktop.decide.stop import StopDialog

        return self._show(StopDialog(self.window, task))

    def resume_task(self) -> Any:
        task = self._task()
        if not task:
            return None
        from boris_desktop.decide.finish import ResumeDialog

        return self._show(ResumeDialog(self.window, task))

    def close_task(self) -> Any:
        task = self._task()
        if not task:
            return None
        from boris_desktop.decide.finish import CloseDialog

        return self._show(CloseDialog(self.window, task))

    def delete_task(self) -> Any:
        task = self._task()
        if not task:
            return None
        from boris_desktop.decide.delete_task import DeleteTaskDialog

        return self._show(DeleteTaskDialog(self.window, task))

    def change_budget(self, counter: str | None = None) -> Any:
        task = self._task()
        if not task:
            return None
        from boris_desktop.decide.budget import BudgetDialog

        return self._show(BudgetDialog(self.window, task, counter or self._counter(task)))

    def cancel_effect(self) -> Any:
        task = self._task()
        e = task and self._cancellable(task)
        if not task or not e:
            return self.tell(
                "Cancel effect", "No planned effect in the selected task can be cancelled."
            )
        from boris_desktop.decide.cancel_effect import CancelEffectDialog

        return self._show(CancelEffectDialog(self.window, task, e))

    def take_over(self) -> Any:
        task = self._task()
        if not task:
            return None
        from boris_desktop.decide.takeover import TakeOverDialog

        return self._show(TakeOverDialog(self.window, task))

    def cancel_wait(self) -> Any:
        task = self._task()
        w = task and self._open_wait(task)
        if not task or not w:
            return self.tell("Cancel wait", "No open wait in the selected task.")
        from boris_desktop.decide.takeover import CancelWaitDialog

        return self._show(CancelWaitDialog(self.window, task, w))

    def checkpoint(self) -> Any:
        task = self._task()
        if not task:
            return None
        from boris_desktop.decide.checkpoint import CheckpointDialog

        return self._show(CheckpointDialog(self.window, task))

    def amend_objective(self) -> Any:
        task = self._task()
        if not task:
            return None
        from boris_desktop.decide.edits import AmendDialog

        return self._show(AmendDialog(self.window, task))

    def add_criterion(self) -> Any:
        task = self._task()
        if not task:
            return None
        from boris_desktop.decide.edits import CriterionDialog

        return self._show(CriterionDialog(self.window, task))

    def judge_criterion(self) -> Any:
        task = self._task()
        c = task and self._criterion(task)
        if not task or not c:
            return None
        from boris_desktop.decide.judge import JudgeDialog

        return self._show(JudgeDialog(self.window, task, c))

    def attach_evidence(self, path: str | None = None) -> Any:
        """A file inside the task's scope, attached as evidence for the selected criterion
        on the artifact version the dialog shows (the store refuses a file outside)."""
        task = self._task()
        c = task and self._criterion(task)
        if not task or not c:
            return self.tell("Attach evidence", "The task has no criterion to attach it to.")
        if path is None:
            start = _first_scope_path(task)
            from PySide6.QtWidgets import QFileDialog

            path, _ = QFileDialog.getOpenFileName(
                self.widget, f"Evidence for {c.criterion_id}", start
            )
            if not path:
                return None
        from boris_desktop.decide.evidence import AttachEvidenceDialog

        return self._show(AttachEvidenceDialog(self.window, task, c, path))

    def complete_phase(self) -> Any:
        task = self._task()
        p = task and self._pick("Dependencies", task.phases, lambda p: p.phase_id)
        if not task or not p:
            return self.tell("Complete phase", "The task has no phase.")
        from boris_desktop.decide.phase import CompletePhaseDialog

        return self._show(CompletePhaseDialog(self.window, task, p.phase_id))

    def supply_source(self, path: str | None = None) -> Any:
        """A file inside the task's scope, recorded as a source by the reviewer."""
        task = self._task()
        if not task:
            return None
        if path is None:
            start = _first_scope_path(task)
            from PySide6.QtWidgets import QFileDialog

            path, _ = QFileDialog.getOpenFileName(self.widget, "Supply a source", start)
            if not path:
                return None
        from store.api import Content, RecordArtifact

        name = os.path.basename(path)

        def done(_artifact_id: Any) -> None:
            self.window.statusBar().showMessage(f"Recorded {name} as a source", 5000)

        def refused(error: Exception) -> None:
            self.tell("Supply a source", f"Not recorded: {error}")

        from boris_desktop.decide.base import run_command

        run_command(
            self.window,
            lambda: RecordArtifact(
                task_id=task.id,
                name=name,
                role="source",
                content=Content(path=path),
                note="supplied by the reviewer",
            ),
            done,
            refused,
        )
        return None

    def edit_artifact(self) -> Any:
        task = self._task()
        a = task and self._pick(
            "Artifacts", task.artifacts, lambda a: a.artifact_id, lambda a: a.current is not None
        )
        if not task or not a or a.current is None:
            return None
        store, digest = self.window.store, a.current.digest

        def opened(data: bytes) -> None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                self.tell("Edit artifact", f"{a.name} is not text: it cannot be edited here.")
                return
            from boris_desktop.decide.edits import EditArtifactDialog

            self._show(EditArtifactDialog(self.window, task, a, text))

        self.window.loader.submit(
            "edit-artifact",
            lambda: store.blobs.read(digest),
            opened,
            lambda err: self._cannot_read(err),
        )
        return None

    def _cannot_read(self, error: Exception) -> None:
        self.tell("Edit artifact", f"Cannot read it: {failure(error)}")


def _first_scope_path(task: api.TaskState) -> str:
    """Where a file dialog starts: the first path of the task's scope (the agent's JSON)."""
    paths = task.scope.get("paths") or [""]
    return str(paths[0])


def _plain(text: str) -> str:
    """A menu text without its mnemonic marks and ellipsis."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").removesuffix("…")


def _all_actions(menu: Any) -> list[Any]:
    out = []
    for act in menu.actions():
        if act.menu() is not None:
            out += _all_actions(act.menu())
        elif not act.isSeparator():
            out.append(act)
    return out
