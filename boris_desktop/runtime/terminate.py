"""`kill PID` (SIGTERM: a session ending, a service manager, a person) quits the window the
way closing it does.

Python's default for SIGTERM ends the process on the spot: no atexit, so the lexing process
(runtime/lexing.py) and multiprocessing's resource tracker were left running with no window.
A Python signal handler alone would not do either, as it runs only when the interpreter runs
Python code, which an idle Qt event loop may not do for minutes; so the signal also wakes the
loop through a socket (`signal.set_wakeup_fd`) that a QSocketNotifier watches. The handler
then quits the event loop, and `main` closes the store and returns as after a close.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from types import FrameType

from PySide6.QtCore import QCoreApplication, QObject, QSocketNotifier


class _Wakeup(QObject):
    """Owns the socket pair the signal writes to, and drains it as the loop wakes."""

    def __init__(self, app: QCoreApplication) -> None:
        super().__init__(app)
        self._read, self._write = socket.socketpair()
        for end in (self._read, self._write):
            end.setblocking(False)
        self._notifier = QSocketNotifier(self._read.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._drain)
        signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)

    def _drain(self) -> None:
        # Running this (Python code) is what lets the interpreter call the handler.
        with contextlib.suppress(OSError):
            self._read.recv(512)


_installed: list[_Wakeup] = []  # what keeps the socket pair open for the process's life


def quit_on_terminate(app: QCoreApplication) -> None:
    """From now on SIGTERM quits `app`'s event loop (call it from the main thread)."""

    def terminate(signum: int, frame: FrameType | None) -> None:
        app.quit()

    _installed.append(_Wakeup(app))
    signal.signal(signal.SIGTERM, terminate)
