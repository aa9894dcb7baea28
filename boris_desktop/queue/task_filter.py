"""The queue's task filter: the tasks with open decisions, by title, and "All tasks"."""

from __future__ import annotations

import bisect

from PySide6.QtWidgets import QComboBox, QWidget


class TaskFilter(QComboBox):
    """Item i + 1 is `listed[i]`, a (title, id) pair, sorted (after "All tasks"). The first
    list goes in with one call; later an arrival in a new task adds one item."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Filter decisions by task")
        self.addItem("All tasks", None)
        self.listed: list[tuple[str, str]] = []

    def task_id(self) -> str | None:
        """The task the queue is filtered to, if any."""
        i = self.currentIndex()
        return self.listed[i - 1][1] if 0 < i <= len(self.listed) else None

    def set_tasks(self, tasks: list[tuple[str, str]]) -> None:
        """List these tasks, (title, id) sorted, keeping the one chosen; says nothing of it
        (no currentIndexChanged)."""
        listed = self.listed
        if tasks == listed:
            return
        keep = self.task_id()
        self.blockSignals(True)
        if not listed:
            # (No merge: 2,000 turns of a Python loop are milliseconds of the GUI thread, and
            # each turn waits for the interpreter lock while a worker reads.)
            self.listed = listed = list(tasks)
            self.addItems([title for title, _tid in tasks])
        else:
            now = set(tasks)
            for i in range(len(listed) - 1, -1, -1):
                if listed[i] not in now:
                    self.removeItem(i + 1)
                    del listed[i]
            for item in tasks:
                i = bisect.bisect_left(listed, item)
                if i == len(listed) or listed[i] != item:
                    listed.insert(i, item)
                    self.insertItem(i + 1, item[0])
        at = next((i for i, (_title, tid) in enumerate(listed) if tid == keep), -1)
        self.setCurrentIndex(at + 1)
        self.blockSignals(False)
