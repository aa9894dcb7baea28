"""The dialogs the window opens itself (who the reviewer is, their public key, the
notifications, About) and what the Actions menu asks of it (host.Window): the task on
screen and the row selected in a part of it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject

from boris_desktop import settings

if TYPE_CHECKING:
    from boris_desktop.main_window.face import Window
    from store.api import TaskState


class Dialogs(QObject):
    """Opens the window's own dialogs, one reviewer dialog at a time."""

    def __init__(self, window: Window) -> None:
        super().__init__(window.owner())
        self.w = window
        self.reviewer_dialog: Any = None
        self.key_dialog: Any = None
        self.about: Any = None

    def ask_reviewer(self) -> Any:
        from boris_desktop.identity import ReviewerDialog

        open_ = self.reviewer_dialog
        if open_ is not None and open_.isVisible():
            return open_  # asked already (the demo store and start-up both ask): one dialog
        dlg = ReviewerDialog(self.w.owner())
        dlg.finished.connect(lambda _r: self.w.reviewer_changed())
        dlg.open()
        self.reviewer_dialog = dlg
        return dlg

    def export_public_key(self) -> Any:
        """Ask who the reviewer is first, if nobody said yet: the key is theirs."""
        from boris_desktop.export_key import ExportKeyDialog

        who = settings.reviewer()
        if who is None:
            dlg = self.w.ask_reviewer()
            dlg.accepted.connect(self.w.export_public_key)
            return dlg
        self.key_dialog = ExportKeyDialog(self.w.owner(), self.w.loader, self.w.store, who)
        self.key_dialog.open()
        return self.key_dialog

    def notification_settings(self) -> Any:
        from boris_desktop.runtime.notify_settings import NotificationSettingsDialog

        dlg = NotificationSettingsDialog(self.w.owner())
        dlg.open()
        return dlg

    def show_about(self) -> None:
        from boris_desktop.about import show_about

        self.about = show_about(self.w.owner(), self.w.store)

    # --- what the Actions menu asks of the window (host.Window) ---------------------------

    def shown_task(self) -> TaskState | None:
        tv = self.w._task_view
        if tv is None or tv.bundle is None or tv.task_id != self.w.selected:
            return None
        return tv.bundle.task

    def current_key(self, part: str) -> Any:
        # The selection as the panel holds it (by key), not filled first: asked on every
        # task shown, filling would undo the task view's filling in turns.
        from boris_desktop.task.panels.base import TreePanel

        panel = self.w.task_view.panels[part]
        if not isinstance(panel, TreePanel):
            # A part that is not a tree says what is selected in it, if it can (Budgets).
            current = getattr(panel, "current_key", None)
            return current() if callable(current) else None
        node = panel.tree.current_node()
        while node is not None and node.parent is not None:
            node = node.parent
        return node.key if node is not None else None
