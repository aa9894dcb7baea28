"""What the deciding dialogs share: a note field, and following the store while open."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import (
    QPlainTextEdit,
)

from boris_desktop.decide.base import ActionDialog
from boris_desktop.runtime.follow import Follower
from boris_desktop.ui.widgets import notice_banner


def note_edit(placeholder: str, name: str) -> QPlainTextEdit:
    """A note: Return is a new line in it (never a decision), Tab leaves it."""
    edit = QPlainTextEdit()
    edit.setPlaceholderText(placeholder)
    edit.setAccessibleName(name)
    edit.setTabChangesFocus(True)
    edit.setMinimumHeight(60)
    edit.setMaximumHeight(110)
    return edit


class Following(ActionDialog):
    """A dialog about one task that reads the task again whenever the store changes."""

    def follow(
        self, task_id: str, now: str | None = None, fetch: Callable[[Any], Any] | None = None
    ) -> None:
        """Follow the task; with `fetch`, whatever `fetch(store)` reads of it (a decision
        view) is handed to `task_changed` instead of the task's record."""
        self.changed = notice_banner("What changed while this was open")
        self.changed.hide()
        self.follower = Follower(self.host, task_id, self._guarded, self, fetch=fetch)
        self.finished.connect(lambda _r: self.follower.stop())
        self._now = now

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if not self.follower.running:
            self.follower.start()

    def _guarded(self, task: Any) -> None:
        if self.isVisible() or not self.result():
            # The task's state and most decision views are read at a time (`now`).
            now = getattr(task, "now", None)
            self._now = now or self._now
            self.task_changed(task)

    def task_changed(self, task: Any) -> None:
        """Show the task (or what `fetch` reads of it) as the store has it now. Every dialog that follows the store defines
        it (a test checks): the base knows nothing of what its subclass shows."""
        raise NotImplementedError(f"{type(self).__name__} does not follow its task")

    def tell_change(self, text: str) -> None:
        self.changed.setText(text)
        self.changed.show()
