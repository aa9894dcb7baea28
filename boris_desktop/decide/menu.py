"""The window's Actions menu: what the reviewer can do to the selected task and row.

Mixed into MainWindow. Every entry opens a non-modal dialog (returned, for tests) built from
the task state the window loaded; the dialog runs the store command on a worker.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from store import rules, status

# Qt's classes are imported where used: touching one builds its enums, and this module is
# loaded before the first paint, which needs none of them.
if TYPE_CHECKING:
    from PySide6.QtWidgets import QMessageBox

# (attribute, menu text, shortcut, tooltip, method)
ACTIONS = (
    ("approve_action", "&Approve / Reject…", "Ctrl+Return", "Decide the selected approval", "approve"),
    ("reconcile_action", "&Reconcile Effect…", "Ctrl+R", "Observe and reconcile an effect", "reconcile"),
    ("stop_action", "&Stop the Run…", "Ctrl+.", "Stop the run by owner decision", "stop_task"),
    ("checkpoint_action", "&Checkpoint / Handoff…", "Ctrl+K", "Write a final or handoff checkpoint", "checkpoint"),
    None,
    ("amend_action", "A&mend Objective…", "Ctrl+E", "Amend the task's objective", "amend_objective"),
    ("add_criterion_action", "Add Crite&rion…", "Ctrl+Shift+N", "Add a criterion", "add_criterion"),
    ("judge_action", "&Judge Criterion…", "Ctrl+J", "Mark the selected criterion satisfied, failed or waived", "judge_criterion"),
    ("source_action", "Supply a So&urce…", "Ctrl+Shift+O", "Record a file inside the task's scope as a source", "supply_source"),
    ("edit_artifact_action", "&Edit Artifact Text…", "Ctrl+Shift+E", "Edit the selected artifact's text as a new version", "edit_artifact"),
)  # fmt: skip


class ActionsMixin:
    # Provided by MainWindow.
    store: Any
    loader: Any
    selected: str | None
    # Made by `_actions_menu` from ACTIONS.
    approve_action: Any
    reconcile_action: Any
    stop_action: Any
    checkpoint_action: Any
    amend_action: Any
    add_criterion_action: Any
    source_action: Any
    judge_action: Any
    edit_artifact_action: Any

    def _actions_menu(self, menu: Any) -> None:
        from PySide6.QtGui import QAction, QKeySequence

        self.actions_menu = menu
        self.dialog: Any = None
        self.message_box: QMessageBox | None = None
        for spec in ACTIONS:
            if spec is None:
                menu.addSeparator()
                continue
            attr, label, keys, tip, method = spec
            act = QAction(label, self)  # type: ignore[call-overload]
            act.setShortcut(QKeySequence(keys))
            shown = QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText)
            act.setToolTip(f"{tip} ({shown})")
            act.setStatusTip(tip)
            act.triggered.connect(lambda _=False, m=method: getattr(self, m)())
            act.setEnabled(False)
            menu.addAction(act)
            setattr(self, attr, act)
        menu.setToolTipsVisible(True)
        menu.aboutToShow.connect(self.update_actions)

    # --- what is selected ----------------------------------------------------------------

    def _task(self) -> dict[str, Any] | None:
        tv = getattr(self, "_task_view", None)
        if tv is None or tv.bundle is None or tv.task_id != self.selected:
            return None
        task: dict[str, Any] = tv.bundle["task"]
        return task

    def _current(self, panel: str) -> Any:
        """The selected row's top-level key in a panel (an effect id, an approval id…)."""
        # The selection as the panel holds it (by key), not filled first: asked on every
        # task shown, filling would undo the task view's filling in turns.
        tree = self.task_view.panels[panel].tree  # type: ignore[attr-defined]
        node = tree.current_node()
        while node is not None and node.parent is not None:
            node = node.parent
        return node.key if node is not None else None

    def _pick(self, panel: str, rows: list[dict[str, Any]], key: str, want: Any) -> Any:
        chosen = self._current(panel)
        for r in rows:
            if r[key] == chosen and want(r):
                return r
        return next((r for r in rows if want(r)), None)

    def _pending_approval(self, task: dict[str, Any]) -> Any:
        return self._pick(
            "Approvals", task["approvals"], "approval_id", lambda a: a["state"] == "pending"
        )

    def _open_effect(self, task: dict[str, Any]) -> Any:
        return self._pick(
            "Effects",
            task["effects"],
            "effect_id",
            lambda e: rules.effect_reconcilable(e["stage"]),
        )

    def update_actions(self) -> None:
        task = self._task()
        # The store says what a run in this status still takes: a stopped run is not
        # stopped again, and is still reconciled, edited and handed off.
        live = task is not None and rules.record_open(task["status"])
        self.approve_action.setEnabled(bool(task and self._pending_approval(task)))
        self.reconcile_action.setEnabled(bool(task and self._open_effect(task)))
        self.stop_action.setEnabled(task is not None and status.can_stop(task["status"]))
        for act in (
            self.checkpoint_action,
            self.amend_action,
            self.add_criterion_action,
            self.source_action,
        ):
            act.setEnabled(live)
        self.judge_action.setEnabled(bool(live and task and task["criteria"]))
        self.edit_artifact_action.setEnabled(bool(live and task and task["artifacts"]))

    # --- showing -------------------------------------------------------------------------

    def shortcuts(self) -> list[tuple[str, str, str]]:
        """(menu, action, keys) for every action of the window that has a shortcut, read
        from the actions themselves: the list cannot drift from what the keys do."""
        from PySide6.QtGui import QKeySequence

        out = []
        bar = self.menuBar()  # type: ignore[attr-defined]
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
        from .shortcuts import ShortcutsDialog

        self.shortcuts_dialog = ShortcutsDialog(self, self.shortcuts())  # type: ignore[arg-type]
        self.shortcuts_dialog.show()
        return self.shortcuts_dialog

    def _show(self, dialog: Any) -> Any:
        self.dialog = dialog
        dialog.open()
        return dialog

    def tell(self, title: str, text: str) -> QMessageBox:
        from PySide6.QtWidgets import QMessageBox

        """A non-modal message (a refusal, or why nothing can be done)."""
        box: QMessageBox = QMessageBox(QMessageBox.Icon.Information, title, text, parent=self)  # type: ignore[call-overload]
        box.setTextFormat(box.textFormat().PlainText)
        self.message_box = box
        box.open()
        self.statusBar().showMessage(f"{title}: {text}", 10000)  # type: ignore[attr-defined]
        return box

    # --- the actions ---------------------------------------------------------------------

    def approve(self) -> Any:
        task = self._task()
        a = task and self._pending_approval(task)
        if not task or not a:
            return self.tell("Approve", "No pending approval in the selected task.")
        from .dialogs import ApproveDialog

        return self._show(ApproveDialog(self, task["id"], a, task.get("now") or ""))  # type: ignore[arg-type]

    def reconcile(self) -> Any:
        task = self._task()
        e = task and self._open_effect(task)
        if not task or not e:
            return self.tell("Reconcile", "No dispatched effect waits for reconciliation.")
        from .reconcile import ReconcileDialog

        return self._show(ReconcileDialog(self, task["id"], e))  # type: ignore[arg-type]

    def stop_task(self) -> Any:
        task = self._task()
        if not task:
            return None
        from .dialogs import StopDialog

        return self._show(StopDialog(self, task))  # type: ignore[arg-type]

    def checkpoint(self) -> Any:
        task = self._task()
        if not task:
            return None
        from .dialogs import CheckpointDialog

        return self._show(CheckpointDialog(self, task))  # type: ignore[arg-type]

    def amend_objective(self) -> Any:
        task = self._task()
        if not task:
            return None
        from .dialogs import AmendDialog

        return self._show(AmendDialog(self, task))  # type: ignore[arg-type]

    def add_criterion(self) -> Any:
        task = self._task()
        if not task:
            return None
        from .dialogs import CriterionDialog

        return self._show(CriterionDialog(self, task))  # type: ignore[arg-type]

    def judge_criterion(self) -> Any:
        task = self._task()
        c = task and self._pick("Criteria", task["criteria"], "criterion_id", lambda _c: True)
        if not task or not c:
            return None
        from .dialogs import JudgeDialog

        return self._show(JudgeDialog(self, task, c))  # type: ignore[arg-type]

    def supply_source(self, path: str | None = None) -> Any:
        """A file inside the task's scope, recorded as a source by the reviewer."""
        task = self._task()
        if not task:
            return None
        if path is None:
            start = (task["scope"].get("paths") or [""])[0]
            from PySide6.QtWidgets import QFileDialog

            path, _ = QFileDialog.getOpenFileName(self, "Supply a source", start)  # type: ignore[arg-type]
            if not path:
                return None
        from store.commands import Content, RecordArtifact

        name = os.path.basename(path)
        result: dict[str, Any] = {}

        def done(r: Any) -> None:
            result["value"] = r
            self.statusBar().showMessage(f"Recorded {name} as a source", 5000)  # type: ignore[attr-defined]

        def refused(error: Exception) -> None:
            self.tell("Supply a source", f"Not recorded: {error}")

        from .actions import run_command

        run_command(
            self,  # type: ignore[arg-type]
            lambda: RecordArtifact(
                task_id=task["id"],
                name=name,
                role="source",
                content=Content(path=path),
                note="supplied by the reviewer",
            ),
            done,
            refused,
        )
        return result

    def edit_artifact(self) -> Any:
        task = self._task()
        a = task and self._pick(
            "Artifacts", task["artifacts"], "artifact_id", lambda a: a.get("current") is not None
        )
        if not task or not a:
            return None
        store, digest = self.store, a["current"]["digest"]

        def opened(data: bytes) -> None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                self.tell("Edit artifact", f"{a['name']} is not text: it cannot be edited here.")
                return
            from .dialogs import EditArtifactDialog

            self._show(EditArtifactDialog(self, task, a, text))  # type: ignore[arg-type]

        self.loader.submit(
            "edit-artifact",
            lambda: store.blobs.read(digest),
            opened,
            lambda err: self.tell("Edit artifact", f"Cannot read it: {_message_of(err)}"),
        )
        return None


def _message_of(error: str) -> str:
    from .actions import message_of

    return message_of(error)


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
