"""The GIL's switch interval: a table's paint beside a worker, and what workers pay for it
(not part of the tests).

    .venv/bin/python benchmarks/bench_gil.py [--runs 10]

A decision queue of 2,000 rows, offscreen, 1280x600. Its viewport is painted with no other
thread, then while a worker thread runs Python (as a worker reading the store does), at
Python's default switch interval, at 1 ms and at the app's (`runtime.SWITCH_INTERVAL_S`).
Each paint is one call into Python per cell, and each waits for the worker to give the GIL
up, at most the interval. Also: two threads running Python at once, their time against
running one after the other (what the extra switches cost the workers).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def _rows(n: int) -> list[dict[str, str]]:
    return [
        {
            "id": f"d{i}", "kind": "approval", "task_id": f"t{i:05d}", "task_title": f"Task {i}",
            "owner": "o", "key": f"ap{i}", "what": f"send message {i}", "why": "needs a person",
            "since": "2026-12-04T10:00:00.000000Z", "expires_at": "2026-12-04T23:00:00.000000Z",
        }
        for i in range(n)
    ]  # fmt: skip


def _python_work(stop: threading.Event) -> None:
    """What a worker building rows does: short Python operations, the GIL held."""
    x: dict[int, str] = {}
    while not stop.is_set():
        for i in range(1000):
            x[i % 100] = str(i)


def _paints(view: object, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        view.viewport().repaint()  # type: ignore[attr-defined]
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _contending(interval: float, n: int = 1_000_000) -> float:
    """Two threads running Python at once, against the same work one after the other."""

    def work() -> None:
        x: dict[int, str] = {}
        for i in range(n):
            x[i % 1000] = str(i)

    sys.setswitchinterval(interval)
    t0 = time.perf_counter()
    work()
    work()
    serial = time.perf_counter() - t0
    threads = [threading.Thread(target=work) for _ in range(2)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return serial / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=10)
    args = p.parse_args()
    from PySide6.QtWidgets import QApplication

    from boris_desktop.queue.decisions import DecisionFilter, DecisionModel, _Table
    from boris_desktop.runtime.interpreter import SWITCH_INTERVAL_S

    app = QApplication([])
    model = DecisionModel()
    model.rows, model.now = _rows(2000), "2026-12-04T12:00:00.000000Z"
    proxy = DecisionFilter()
    proxy.setSourceModel(model)
    view = _Table()
    view.setModel(proxy)
    view.resize(1280, 600)
    view.show()
    for _ in range(10):
        app.processEvents()
    default = sys.getswitchinterval()
    idle = _paints(view, args.runs)
    print(f"the decision queue's paint, 2,000 rows, {args.runs} paints (median, max ms):")
    print(f"  {'no other thread':<40}{statistics.median(idle):>8.1f}{max(idle):>8.1f}")
    for label, interval in [
        ("a worker running Python, interval 5 ms", default),
        ("a worker running Python, interval 1 ms", 0.001),
        (f"a worker running Python, {SWITCH_INTERVAL_S * 1e6:.0f} us (the app)", SWITCH_INTERVAL_S),
    ]:
        sys.setswitchinterval(interval)
        stop = threading.Event()
        worker = threading.Thread(target=_python_work, args=(stop,), daemon=True)
        worker.start()
        try:
            ms = _paints(view, args.runs)
        finally:
            stop.set()
            worker.join()
        print(f"  {label:<40}{statistics.median(ms):>8.1f}{max(ms):>8.1f}")
    print("two threads running Python at once, throughput against one after the other:")
    for interval in (default, 0.001, SWITCH_INTERVAL_S):
        ratio = statistics.median(_contending(interval) for _ in range(3))
        print(f"  interval {interval * 1e6:>6.0f} us{ratio:>8.3f}x")
    sys.setswitchinterval(default)


if __name__ == "__main__":
    main()
