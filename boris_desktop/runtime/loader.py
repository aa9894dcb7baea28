"""Work off the GUI thread: database reads, hashing, highlighting.

Each request has a kind ("load", "brief", "preview:artifacts", …) and a token; only the
newest request of a kind is delivered, so a result for a superseded request is dropped
(git-cola's token). Results come back by a queued signal of a QObject in the GUI thread,
and are handed to their callbacks one per turn of the event loop (`_Turns`).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

import shiboken6
from PySide6.QtCore import QObject, QThreadPool, QTimer, Signal

log = logging.getLogger(__name__)


class _Relay(QObject):
    finished = Signal(str, int, object, object)  # kind, token, result, the exception raised


def _job(relay: _Relay, kind: str, token: int, fn: Callable[[], Any]) -> Callable[[], None]:
    """What the pool runs: a plain closure given to QThreadPool.start. A job was once a
    Python QRunnable subclass, and one that ran on into the interpreter's exit found its own
    attributes gone ("'_Job' object has no attribute 'relay'", bench_queue.py). Now nothing
    runs into the exit (`drain`), and what a job needs is in its closure's cells, not on a
    Qt wrapper's instance."""

    def run() -> None:
        try:
            result, error = fn(), None
        except Exception as exc:  # handed to the window as itself, never lost on the worker
            result, error = None, exc
            if not _is_environment(exc):  # a bug: its traceback is logged where it happened
                log.error("%s failed on a worker", kind, exc_info=exc)
        # RuntimeError: the window closed while this ran, and nobody waits for the result.
        with contextlib.suppress(RuntimeError):
            relay.finished.emit(kind, token, result, error)

    return run


def _is_environment(exc: Exception) -> bool:
    try:
        from store.api import StoreError
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, StoreError)


#: What a job answers, handed to its callback as it is.
Result = TypeVar("Result")
#: A failure's callback gets the exception itself (Anki's `CollectionOp.failure`): the store's
#: refusals by their type, never a message to parse.
Failure = Callable[[Exception], None]


class _Turns(QObject):
    """Results handed over one per turn of the event loop, whichever window's loader they
    are for. Results that arrive together (the inbox, the decision queue, the task, the
    history: one start-up, one write) were each handled in the same pass over Qt's posted
    events, and then painted, before the loop could fire a timer or read the reviewer's
    input: a 50-70 ms pause made of 10-20 ms pieces (benchmarks/bench_queue.py). Now the
    first is handled at once and each of the others at a zero timer of its own, so the
    window paints and listens between them."""

    def __init__(self) -> None:
        super().__init__()
        self._waiting: deque[tuple[Loader, str, int, Any, Exception | None]] = deque()
        self._turn = QTimer(self)
        self._turn.setSingleShot(True)
        self._turn.setInterval(0)
        self._turn.timeout.connect(self._next)

    def hand(
        self, loader: Loader, kind: str, token: int, result: Any, error: Exception | None
    ) -> None:
        self._waiting.append((loader, kind, token, result, error))
        if not self._turn.isActive():  # nothing handed over yet in this turn
            self._next()

    def _next(self) -> None:
        while self._waiting:
            loader, *rest = self._waiting.popleft()
            # A loader whose window is gone is skipped: nobody waits for its result.
            if shiboken6.isValid(loader):
                self._turn.start()  # the next one at the next turn
                loader._deliver(*rest)
                return


_turns: _Turns | None = None


def _the_turns() -> _Turns:
    global _turns
    if _turns is None or not shiboken6.isValid(_turns):
        _turns = _Turns()
    return _turns


#: How long the interpreter's exit waits for jobs still running (a read, a highlight).
EXIT_WAIT_MS = 10_000
_drain_registered = False


def drain() -> None:
    """At interpreter exit (atexit, so before Python tears down modules and objects): drop
    the jobs not started, and let those running finish. A job that ran on into the teardown
    found what it was reading half torn down; its result has nobody to go to anyway."""
    pool = QThreadPool.globalInstance()
    pool.clear()
    pool.waitForDone(EXIT_WAIT_MS)


class Loader(QObject):
    """Runs callables on the thread pool; delivers the newest result of each kind."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._relay = _Relay(self)
        self._relay.finished.connect(self._finished)
        self._latest: dict[str, int] = {}
        # Each kind's callbacks: typed where `submit` pairs them with their job.
        self._callbacks: dict[str, tuple[Callable[[Any], object], Failure | None]] = {}
        self._pending: set[str] = set()
        self._counter = 0
        self.pool = QThreadPool.globalInstance()
        global _drain_registered
        if not _drain_registered:
            _drain_registered = True
            atexit.register(drain)

    def submit(
        self,
        kind: str,
        fn: Callable[[], Result],
        on_done: Callable[[Result], object],
        on_error: Failure | None = None,
    ) -> int:
        """Run `fn` on the pool; `on_done(its result)` or `on_error(the exception it
        raised)` on the GUI thread, unless a newer job of the same kind came meanwhile."""
        self._counter += 1
        token = self._counter
        self._latest[kind] = token
        self._callbacks[kind] = (on_done, on_error)
        self._pending.add(kind)
        self.pool.start(_job(self._relay, kind, token, fn))
        return token

    def busy(self, kind: str) -> bool:
        return kind in self._pending

    def cancel(self, kind: str) -> None:
        """Forget a kind: whatever is in flight for it is dropped when it arrives."""
        self._latest.pop(kind, None)
        self._pending.discard(kind)

    def _finished(self, kind: str, token: int, result: Any, error: Exception | None) -> None:
        if self._latest.get(kind) != token:
            return  # superseded
        _the_turns().hand(self, kind, token, result, error)

    def _deliver(self, kind: str, token: int, result: Any, error: Exception | None) -> None:
        # Asked again: a newer request may have been made while this one waited its turn.
        if self._latest.get(kind) != token:
            return  # superseded
        self._pending.discard(kind)
        on_done, on_error = self._callbacks[kind]
        if error is None:
            on_done(result)
        elif on_error is not None:
            on_error(error)
