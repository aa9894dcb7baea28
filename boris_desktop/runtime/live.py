"""A window hears every commit to a team store: PostgreSQL notifications, no polling.

`StoreFeed` runs the store's `notify.Listener` on a worker thread of its own, which waits on
the listener's socket (no query, no timer reading the database) and hands what it heard to a
relay in the GUI thread by a queued signal. `changed` then carries a `notify.Changes`: the
tasks a commit wrote, or "everything" when the listener (re)connected and may have missed
commits. While the server is unreachable the listener retries every second and `state` says
so; the first notice after it is back is one full reload. An SQLite store has no listener:
`start` says False and the window keeps polling its data version.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from PySide6.QtCore import QObject, Signal

#: How long the worker waits on the socket before looking at its stop flag: bounds how long
#: a closed window's listener lingers, not how soon a commit is heard (that is at once).
WAIT_S = 0.25

LIVE = "live (PostgreSQL notifications)"
RECONNECTING = "reconnecting to PostgreSQL notifications"


class _Relay(QObject):
    # Each carries the generation of the `start` that made the worker: a stopped worker's
    # last words (another store's) are dropped.
    heard = Signal(int, object)  # notify.Changes
    state = Signal(int, str)


def _listen(listener: Any, stop: threading.Event, relay: _Relay, gen: int) -> None:
    """The worker: wait, report, and close the listener's connection on the way out."""
    connected: bool | None = None
    try:
        while not stop.is_set():
            try:
                changes = listener.wait(WAIT_S)
            except Exception as exc:  # never die silently: say so, and stop
                _emit(relay.state, gen, f"not following the store: {exc}")
                return
            if stop.is_set():
                return
            if listener.connected != connected:
                connected = listener.connected
                _emit(relay.state, gen, LIVE if connected else RECONNECTING)
            if changes is not None:
                _emit(relay.heard, gen, changes)
    finally:
        listener.close()


def _emit(signal: Any, gen: int, value: object) -> None:
    # RuntimeError: the window (and its relay) is gone while we were waiting.
    with contextlib.suppress(RuntimeError):
        signal.emit(gen, value)


class StoreFeed(QObject):
    """Hears the commits to the open store, from any machine (see the module's doc)."""

    changed = Signal(object)  # notify.Changes
    state_changed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._relay = _Relay(self)
        self._relay.heard.connect(self._heard)
        self._relay.state.connect(self._state)
        self._gen = 0
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None
        #: How the window follows the store, for its status line ("" when not listening).
        self.state = ""
        self.heard = 0

    @property
    def active(self) -> bool:
        return self._thread is not None

    def start(self, store: Any) -> bool:
        """Listen to `store` (replacing any store listened to); False if it announces nothing."""
        self.stop()
        listener = store.listener()
        if listener is None:
            return False
        self._gen += 1
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=_listen,
            args=(listener, self._stop, self._relay, self._gen),
            name="boris listener",
            daemon=True,
        )
        self.state = RECONNECTING.replace("re", "", 1)  # "connecting to …" until it is
        self._thread.start()
        return True

    def stop(self) -> None:
        """Stop listening. Returns at once: the worker closes its connection within WAIT_S."""
        if self._stop is not None:
            self._stop.set()
        self._stop = None
        self._thread = None
        self.state = ""

    def join(self, timeout: float = 2.0) -> bool:
        """Tests: stop and wait for the worker to have closed its connection."""
        thread = self._thread
        self.stop()
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def _heard(self, gen: int, changes: object) -> None:
        if gen != self._gen or self._thread is None:
            return  # a stopped worker's last word
        self.heard += 1
        self.changed.emit(changes)

    def _state(self, gen: int, state: str) -> None:
        if gen != self._gen or self._thread is None:
            return
        self.state = state
        self.state_changed.emit(state)
