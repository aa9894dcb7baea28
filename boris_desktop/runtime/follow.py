"""An open dialog follows the store: its task's record, read again whenever anything is written.

On an SQLite store the follower asks the store for its data version (one cheap read, on a
worker) every FOLLOW_MS, and only when it grew reads the task's record again and hands it to
the dialog. On a team store (PostgreSQL) it asks only when the window's `live` feed
(boris_desktop.runtime.live) hears a commit: no polling. Either way another reviewer's decision, an
expiry, a stop or new work reaches an open screen within a second, from any process. An approval's expiry writes nothing, so a dialog also asks for a
fresh read at the moment a request expires (`at`). Nothing here blocks the GUI thread.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QObject, QTimer

from boris_desktop.host import Host

FOLLOW_MS = 250
_serial = itertools.count(1)
#: What a follower reads (`fetch`) and hands on: by default the task's record.
Read = TypeVar("Read")


def _read(store: Any, fetch: Callable[[Any], Read], known: int | None) -> tuple[int, Read | None]:
    """On a worker: the data version, and what `fetch` reads (the task's record) when it
    changed."""
    version = store.data_version()
    if known is not None and version == known:
        return version, None
    return version, fetch(store)


def _parse(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


class Follower(QObject, Generic[Read]):
    """Calls `on_task(task)` with the task's fresh record whenever the store changed (or,
    with `fetch`, with whatever `fetch(store)` reads: the decision queue follows so)."""

    def __init__(
        self,
        host: Host,
        task_id: str,
        on_task: Callable[[Read], None],
        parent: QObject,
        *,
        interval_ms: int = FOLLOW_MS,
        fetch: Callable[[Any], Read] | None = None,
    ) -> None:
        super().__init__(parent)
        self.host, self.task_id, self.on_task = host, task_id, on_task
        self._fetch: Callable[[Any], Read] = fetch or (lambda store: store.task(task_id))
        self.version: int | None = None
        self._kind = f"follow:{next(_serial)}"
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.poll)
        self._deadline = QTimer(self)
        self._deadline.setSingleShot(True)
        self._deadline.timeout.connect(self.force)
        self._feed: Any = None  # the window's StoreFeed while it drives us instead of the timer
        self._again = False  # a commit was heard while a read was in flight: read once more

    @property
    def running(self) -> bool:
        return self._timer.isActive() or self._feed is not None

    def start(self, version: int | None = None) -> None:
        self.version = version
        feed = getattr(self.host, "live", None)
        if feed is not None and feed.active:
            if self._feed is None:
                feed.changed.connect(self._heard)
                self._feed = feed
            self._timer.stop()
        else:
            self._unhear()
            self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        self._deadline.stop()
        self._unhear()
        self._again = False
        self.host.loader.cancel(self._kind)

    def _unhear(self) -> None:
        feed, self._feed = self._feed, None
        if feed is not None:
            with contextlib.suppress(RuntimeError, TypeError):
                feed.changed.disconnect(self._heard)

    def _heard(self, _changes: object) -> None:
        """A commit, from any machine: read the version now (or after the read in flight)."""
        if self._feed is None:
            return
        if self.host.loader.busy(self._kind):
            self._again = True
            return
        self.poll()

    def poll(self, *, force: bool = False) -> None:
        store = self.host.store
        if store is None or (self.host.loader.busy(self._kind) and not force):
            return
        known = None if force else self.version
        fetch = self._fetch
        self.host.loader.submit(
            self._kind, lambda: _read(store, fetch, known), self._got, lambda _e: None
        )

    def force(self) -> None:
        """Read the record now even if nothing was written (an expiry is not a write)."""
        self.poll(force=True)

    def at(self, when: str | None, now: str | None) -> None:
        """Read again just after `when` (database clock; `now` is the clock's last reading)."""
        self._deadline.stop()
        if not when or not now:
            return
        left = _parse(when) - _parse(now) + timedelta(milliseconds=50)
        ms = int(left.total_seconds() * 1000)
        if ms < 0 or ms > 7 * 24 * 3600 * 1000:
            return
        self._deadline.start(max(ms, 0))

    def _got(self, result: tuple[int, Read | None]) -> None:
        version, task = result
        self.version = version
        if task is not None:
            self.on_task(task)
        if self._again:
            self._again = False
            self.poll()
