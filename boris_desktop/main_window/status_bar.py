"""The status bar's line: how many tasks, how many need the reviewer, which store, whether
the window follows it live (and as of which event), and who the reviewer is."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from boris_desktop import settings

if TYPE_CHECKING:
    from boris_desktop.main_window.face import Window


class StatusLine(QObject):
    """Says the window's state in its status bar; the reviewer's name is part of it."""

    def __init__(self, window: Window) -> None:
        super().__init__(window.owner())
        self.w = window
        self.reviewer_label = ""

    def reviewer_changed(self) -> None:
        """The reviewer said who they are: the inbox's "needs you" and the history are
        theirs."""
        w = self.w
        self.show_reviewer()
        if w._built:
            w.inbox.reviewer_id = (settings.reviewer() or (None, None))[1]
        w.history.start()  # the list is this reviewer's decisions

    def show_reviewer(self) -> None:
        who = settings.reviewer()
        self.reviewer_label = f"Reviewer: {who[0]} ({who[1]})" if who else "Reviewer: not set"
        self.show()

    def show(self) -> None:
        w = self.w
        n = len(w.inbox.all_rows)
        needy = w.needy  # counted with the inbox's last read (jobs.refresh)
        shown = ""
        if w.paged:  # counted by the database with the pages' last reading
            counts = w.pages.counts
            n, needy = counts.total, counts.needy
            if w.pages.search or w.pages.status:
                shown = f" ({counts.matching:,} shown)"
        where = w.store.location.describe() if w.store else "no store"
        from boris_desktop.ui import text as t

        need = "needs" if needy == 1 else "need"
        w.statusBar().showMessage(
            f"{t.count(n, 'task', 'tasks')}{shown}, {needy} {need} you · {where} · "
            f"{w.live.state or f'live (event {w._version})'} · {self.reviewer_label}"
        )
