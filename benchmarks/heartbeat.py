"""A heartbeat on the GUI thread: how long the window stood still while something ran.

A QTimer beats every BEAT_MS; a stall is the longest gap between two beats, less BEAT_MS.
`longest_stall(action, cond)` runs `action()` on the GUI thread (as the reviewer's click
would) and the event loop until `cond()` holds, counting every beat from just before it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

BEAT_MS = 5


class Heartbeat:
    def __init__(self, app: Any) -> None:
        from PySide6.QtCore import QTimer

        self.app = app
        self.gaps: list[float] = []
        self._last = time.perf_counter()
        self.timer = QTimer()
        self.timer.setInterval(BEAT_MS)
        self.timer.timeout.connect(self._beat)

    def _beat(self) -> None:
        now = time.perf_counter()
        self.gaps.append((now - self._last) * 1000 - BEAT_MS)
        self._last = now

    def start(self) -> None:
        self._last = time.perf_counter()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def spin(self, cond: Callable[[], Any], timeout: float = 120.0) -> None:
        """Run the event loop until `cond()`, then a few beats more, so that a stall just
        before `cond` came true is closed by a beat and counted."""
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise TimeoutError("the window did not get there in time")
            self.app.processEvents()
            time.sleep(0.001)
        settle = time.perf_counter() + 3 * BEAT_MS / 1000
        while time.perf_counter() < settle:
            self.app.processEvents()
            time.sleep(0.001)

    def longest_stall(self, action: Callable[[], Any], cond: Callable[[], Any]) -> float:
        self.gaps.clear()
        self._last = time.perf_counter()
        action()
        self.spin(cond)
        return max(self.gaps, default=0.0)
