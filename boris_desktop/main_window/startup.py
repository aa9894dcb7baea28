"""The staged start-up's pieces: the turns of the event loop before the window is built
whole (WARM_UP), the event filter that notices the first paint, and the zero timers the
window's parts own."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget

from boris_desktop.runtime.interpreter import discover_widget_types


#: The modules `MainWindow._finish` imports, a turn of the event loop for each group before
#: it: imported inside it they made it one 85-110 ms turn on the big store, while the first
#: rows came in (benchmarks/bench_desktop_big.py, "filling the inbox"). Grouped at under
#: 40 ms each.
def _imports(*names: str) -> Callable[[], None]:
    def step() -> None:
        for name in names:
            importlib.import_module(name)

    return step


#: The staged start-up's first turns: what the inbox needs to show the first page of tasks
#: (peeked at on a worker meanwhile: `Opening.peek_early`), then `MainWindow._build_inbox`.
#: The rest of the window is built after, so the rows are not kept waiting for it (with
#: the GUI thread importing beside it, the peek's Python waited for the interpreter lock).
INBOX_FIRST: tuple[Callable[[], None], ...] = (
    _imports("boris_desktop.inbox.table", "boris_desktop.inbox.pages"),
    discover_widget_types,  # else paid by the first rows' paint
)

#: The staged start-up's turns before `_finish`, each one its own turn of the event loop.
WARM_UP: tuple[Callable[[], None], ...] = (
    *INBOX_FIRST,
    _imports("boris_desktop.ui.widgets"),  # Pygments' lexers, for the text panes
    # The Actions menu: imported here rather than with the window's module, whose import
    # the first paint waits for (50 ms of the 100).
    _imports("boris_desktop.decide.menu"),
    _imports(
        "boris_desktop.runtime.task_watch",
        "boris_desktop.queue.decisions",
        "boris_desktop.runtime.notifications",
        "boris_desktop.history.decided",
        "boris_desktop.runtime.live",
    ),
)


def soon(owner: QObject, then: Any) -> QTimer:
    """A single-shot zero timer owned by `owner`: started again before it fires, it fires
    once; deleted with its owner, it never calls into a deleted window."""
    timer = QTimer(owner)
    timer.setSingleShot(True)
    timer.setInterval(0)
    timer.timeout.connect(then)
    return timer


class FirstPaint(QObject):
    """Calls `then` once, when `widget` is first painted."""

    def __init__(self, widget: QWidget, then: Any) -> None:
        super().__init__(widget)
        self._then = then
        widget.installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self._then is not None:
            then, self._then = self._then, None
            obj.removeEventFilter(self)
            then()
        return False
