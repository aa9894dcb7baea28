"""Watch files for changes with watchdog; hints reach the GUI thread by a Qt signal.

watchdog calls back on its own thread: the handler only emits a queued signal (an exception
in it is swallowed so the watcher never dies). The GUI side debounces the hints per path
and emits `changed(path, what)`; whoever listens decides with a fresh hash, never from the
event alone. A directory is watched (not the file), so an atomic save (a temp file renamed
over the target), a delete and a move are all seen. When inotify runs out of watches
(OSError), the watcher falls back to polling and says so in `state`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

IGNORED = {"opened", "closed_no_write"}  # our own hashing opens the file: not a change


class _Relay(QObject):
    hint = Signal(str, str)  # path, event type


def _handler(relay: _Relay, paths: set[str]) -> Any:
    from watchdog.events import FileSystemEventHandler

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            try:
                if event.event_type in IGNORED or event.is_directory:
                    return
                for attr in ("src_path", "dest_path"):
                    p = getattr(event, attr, "") or ""
                    if isinstance(p, bytes):
                        p = os.fsdecode(p)
                    if p and os.path.abspath(p) in paths:
                        kind = event.event_type
                        if kind == "moved":
                            kind = "replaced" if attr == "dest_path" else "moved away"
                        relay.hint.emit(os.path.abspath(p), kind)
            except Exception:
                pass

    return Handler()


class WatchState(StrEnum):
    """How the files are watched: not at all, by the platform's notifications (inotify), or
    by polling (asked for, or because the inotify limit was reached)."""

    OFF = "off"
    WATCHING = "watching"
    POLLING = "polling"
    POLLING_AT_LIMIT = "polling (inotify limit reached)"


class FileWatcher(QObject):
    changed = Signal(str, str)  # path, what happened (debounced)
    state_changed = Signal(str)

    def __init__(self, parent: QObject | None = None, *, debounce_ms: int = 150) -> None:
        super().__init__(parent)
        self._relay = _Relay(self)
        self._relay.hint.connect(self._hint)
        self._paths: set[str] = set()
        self._observer: Any = None
        self.state = WatchState.OFF
        self.events = 0
        self._seen: dict[str, list[str]] = {}
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(debounce_ms)
        self._timer.timeout.connect(self._flush)

    def watch(self, paths: Iterable[str], *, polling: bool = False) -> None:
        """Watch exactly these files (replacing what was watched)."""
        new = {os.path.abspath(p) for p in paths}
        if new == self._paths and self._observer is not None:
            return
        self.stop()
        self._paths = new
        if not new:
            return
        dirs = {os.path.dirname(p) for p in new}
        dirs = {d for d in dirs if os.path.isdir(d)}
        try:
            self._observer = self._start(dirs, polling)
            self._set_state(WatchState.POLLING if polling else WatchState.WATCHING)
        except OSError:  # inotify watch or instance limit reached
            self._observer = self._start(dirs, True)
            self._set_state(WatchState.POLLING_AT_LIMIT)

    def _start(self, dirs: set[str], polling: bool) -> Any:
        from watchdog.observers import Observer  # the platform's own (inotify on Linux)
        from watchdog.observers.api import BaseObserver
        from watchdog.observers.polling import PollingObserver

        obs: BaseObserver = PollingObserver(timeout=0.2) if polling else Observer()
        handler = _handler(self._relay, self._paths)
        try:
            for d in sorted(dirs):
                obs.schedule(handler, d, recursive=False)
            obs.daemon = True
            obs.start()
        except BaseException:
            with contextlib.suppress(Exception):
                obs.stop()
            raise
        return obs

    def _set_state(self, state: WatchState) -> None:
        self.state = state
        self.state_changed.emit(state)

    def stop(self) -> None:
        obs, self._observer = self._observer, None
        self._timer.stop()
        self._seen.clear()
        if obs is not None:
            with contextlib.suppress(Exception):
                obs.stop()
                obs.join(timeout=2)
        if self.state != WatchState.OFF:
            self._set_state(WatchState.OFF)

    def _hint(self, path: str, kind: str) -> None:
        if path not in self._paths:
            return
        self.events += 1
        kinds = self._seen.setdefault(path, [])
        if kind not in kinds:
            kinds.append(kind)
        self._timer.start()

    def _flush(self) -> None:
        seen, self._seen = self._seen, {}
        at = time.strftime("%H:%M:%S")
        for path, kinds in seen.items():
            self.changed.emit(path, f"{', '.join(kinds)} at {at}")
