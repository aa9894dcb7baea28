"""The interpreter's settings that keep the GUI thread responsive while workers run Python.

Workers share one GIL with the GUI thread. Three measures, each measured with
benchmarks/bench_preview.py, and one cost paid up front (`discover_widget_types`):

- `paused()` around worker jobs that make many short-lived containers (diffing, lexing): a
  full garbage collection holds the GIL for as long as it scans, whatever thread set it off,
  and a worker's difflib set off 30-90 ms ones. The collector waits until the job is done;
  refcounting frees its objects meanwhile.
- `freeze_startup()` once the window has its first task: what start-up made (modules,
  classes, Qt wrappers) lives as long as the process, and is left out of every later scan.
- `share_the_gil()`: a thread that wants the GIL waits for the holder to give it up, at most
  the switch interval (5 ms by default). The GUI thread asks for it at every call into
  Python (a slot, a model's data(), a highlighter's block); at 1 ms the longest pause while
  a worker diffed 1 MiB went from 28-56 ms to 17 ms. A table's paint is one call into
  Python per cell, each waiting its turn: beside a worker running Python the decision
  queue's paint took 80 ms at 1 ms, 20 ms at SWITCH_INTERVAL_S (11 ms with no worker), and
  two threads running Python at once kept their throughput within noise
  (benchmarks/bench_gil.py). The interval matters only while a thread waits for the GIL.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0
_resume = False  # whether the collector was on when the first pause began


@contextlib.contextmanager
def paused() -> Iterator[None]:
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()


def discover_widget_types() -> None:
    """Shiboken makes Qt's Python types lazily. The first widget it must wrap whose class it
    does not know (a scroll area's viewport is of a class private to Qt) makes it look through
    every type it has, creating ~70 enum types on the way: 14 ms here, 40-60 ms beside a worker
    (the first inbox load paid it, in the same turn as its rows: benchmarks/bench_queue.py).
    Asked once at start-up, in a turn of its own, every later call costs nothing."""
    from PySide6.QtWidgets import QAbstractScrollArea

    QAbstractScrollArea().viewport()


_frozen = False


#: How long a thread that wants the GIL waits before the holder is made to give it up.
SWITCH_INTERVAL_S = 0.00005


def share_the_gil() -> None:
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def freeze_startup() -> None:
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
