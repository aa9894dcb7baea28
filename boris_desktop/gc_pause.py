"""Keep Python's cyclic garbage collector from stalling the GUI thread.

A full collection holds the GIL for as long as it scans, whatever thread set it off: a worker
diffing two 2 MiB versions triggered full passes of 30-90 ms, and the window stood still for
each (benchmarks/bench_preview.py). Two measures:

- `paused()` around worker jobs that make many short-lived containers (diffing, lexing): the
  collector waits until they are done; refcounting frees their objects meanwhile.
- `freeze_startup()` once the window has its first task: what start-up made (modules, classes,
  Qt wrappers) lives as long as the process, and is left out of every later scan.
"""

from __future__ import annotations

import contextlib
import gc
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


_frozen = False


def freeze_startup() -> None:
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
