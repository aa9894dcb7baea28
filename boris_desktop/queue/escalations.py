"""The open window records the escalations that come due (issue 42, routing).

A timer asks the store, on a worker, to record what is due (`api.escalate_due`): whether an
escalation is due is the store's word, on the database clock; the window adds no rule. When
one is recorded the queue reads again, so a routed approval says who it waits on now
("waiting on group:release (rita, ben); escalated to person:olga") without anyone asking.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

from boris_desktop.decide.base import reviewer_actor
from boris_desktop.host import Host

#: How often the window asks (a read when nothing is due), and how soon after a store opens.
EVERY_MS = 15_000
FIRST_MS = 2_000


class EscalationTimer(QObject):
    """Asks the store every `EVERY_MS` while a store is open; `escalated` is told what was
    recorded (TASK/APPROVAL each)."""

    def __init__(self, host: Host, escalated: Callable[[list[str]], None], parent: QObject) -> None:
        super().__init__(parent)
        self.host = host
        self.escalated = escalated
        self.timer = QTimer(self)
        self.timer.setInterval(EVERY_MS)
        self.timer.timeout.connect(self.tick)

    def start(self) -> None:
        """Ask soon (a store just opened may have waited on nobody's tick; after the first
        page is on screen), then every `EVERY_MS`."""
        self.timer.start()
        QTimer.singleShot(FIRST_MS, self, self.tick)

    def tick(self) -> None:
        store, person = self.host.store, reviewer_actor()
        loader = self.host.loader
        if store is None or person is None or loader.busy("escalations"):
            return
        from store.api import escalate_due

        # A read when nothing is due; what is, signed by the reviewer's key.
        loader.submit("escalations", lambda: escalate_due(store, person), self._done, self._failed)

    def _done(self, done: list[str]) -> None:
        if done:
            self.escalated(done)

    def _failed(self, error: Exception) -> None:
        from boris_desktop.ui import text as t

        self.host.statusBar().showMessage(f"Could not record an escalation: {t.failure(error)}")
