"""Verify benchmark (not part of the test run): events/s of `verify` on one long task.

Run: .venv/bin/python benchmarks/bench_verify.py [--events 100000] [--charges 0.02]

Builds a task of `--events` events in a temporary store (notes, and the given share of
budget charges, which the replay must apply), then verifies it `--rounds` times and prints
the best wall-clock and CPU rates and the peak memory of the process. CPU time is printed
beside wall time because the machines this runs on are shared: it is what verify itself
costs.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from store import Actor, Store
from store import commands as c
from store.services.verify import verify

AGENT = Actor(kind="agent", id="bench")


def build(root: Path, n: int, charges: float) -> str:
    with Store.open(root) as s:
        tid: str = s.execute(c.CreateTask(title="big", owner="o", objective="x"), AGENT)
        s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=1e12), AGENT)
        every = round(1 / charges) if charges else 0
        for start in range(0, n - 2, 1000):
            batch: list[c.Command] = [
                c.ChargeBudget(task_id=tid, counter="tool_calls", amount=1)
                if every and (start + i) % every == 0
                else c.RecordNote(task_id=tid, text=f"step {start + i}")
                for i in range(min(1000, n - 2 - start))
            ]
            s.execute_all(batch, AGENT)
        return tid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--charges", type=float, default=0.0, help="share of budget charges")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        tid = build(root, args.events, args.charges)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        best_wall = best_cpu = float("inf")
        with Store.open(root) as s:
            for _ in range(args.rounds):
                w0, c0 = time.perf_counter(), time.process_time()
                report = verify(s, tid, remember=False)
                best_wall = min(best_wall, time.perf_counter() - w0)
                best_cpu = min(best_cpu, time.process_time() - c0)
                assert report.ok, report.summary()
        n = report.heads[tid]["seq"]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"verify, {n} events ({args.charges:.0%} budget charges), best of {args.rounds}:")
        print(f"  wall {best_wall:.2f} s = {n / best_wall:,.0f} events/s")
        print(f"  cpu  {best_cpu:.2f} s = {n / best_cpu:,.0f} events/s")
        print(f"  peak RSS {peak / 1024:.0f} MB (after building the task: {before / 1024:.0f} MB)")


if __name__ == "__main__":
    main()
