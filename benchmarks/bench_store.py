"""Store benchmark (not part of the test run): durable appends/s and opening a big task.

Run: .venv/bin/python benchmarks/bench_store.py [--events 100000] [--appends 2000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from store import Actor, Store
from store import commands as c

AGENT = Actor(kind="agent", id="bench")


def durable_appends(root: Path, n: int) -> float:
    with Store.open(root / "appends") as s:
        tid = s.execute(c.CreateTask(title="b", owner="o", objective="x"), AGENT)
        cmd = c.RecordNote(task_id=tid, text="tick")
        t0 = time.perf_counter()
        for _ in range(n):
            s.execute(cmd, AGENT)
        return n / (time.perf_counter() - t0)


def open_big_task(root: Path, n: int) -> float:
    with Store.open(root / "big") as s:
        tid = s.execute(c.CreateTask(title="big", owner="o", objective="x"), AGENT)
        batch = [c.ChargeBudget(task_id=tid, counter="tool_calls", amount=1)] * 1000
        for _ in range(n // 1000):
            s.execute_all(batch, AGENT)
    with Store.open(root / "big") as s:
        t0 = time.perf_counter()
        s.task(tid)
        s.events(tid, limit=200, newest_first=True)
        return (time.perf_counter() - t0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--appends", type=int, default=2000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        print(f"durable event appends: {durable_appends(root, a.appends):,.0f}/s (one commit each)")
        print(f"open a task with {a.events:,} events: {open_big_task(root, a.events):.1f} ms")


if __name__ == "__main__":
    main()
