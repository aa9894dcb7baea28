"""PySide6 6.12.0 on Python 3.11 drops a reference to `True` on every Python-side emit and on
connect+disconnect; a few hundred later the interpreter aborts in bool_dealloc, sometimes after
the tests printed "passed" (shared/PLATFORM.md). pyproject keeps PySide6 below 6.12; this
catches a release that brings the bug back before a reviewer's session crashes on it."""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal


class _Emitter(QObject):
    changed = Signal(bool)


def test_emitting_and_reconnecting_signals_keeps_the_references_of_true() -> None:
    emitter = _Emitter()
    seen: list[bool] = []
    before = sys.getrefcount(True)
    emitter.changed.connect(seen.append)
    for _ in range(3000):
        emitter.changed.emit(True)
    emitter.changed.disconnect(seen.append)
    for _ in range(500):
        emitter.changed.connect(seen.append)
        emitter.changed.disconnect(seen.append)
    # `seen` holds 3,000 new references to True; nothing else may have been taken away.
    assert len(seen) == 3000
    assert sys.getrefcount(True) >= before + 3000 - 10
    seen.clear()
