"""Verify benchmark (not part of the test run): events/s of `verify` on one long task.

Run: .venv/bin/python benchmarks/bench_verify.py [--events 100000] [--charges 0.02]

Builds a task of `--events` events in a temporary store (notes, and the given share of
budget charges, which the replay must apply), then verifies it `--rounds` times and prints
the best wall-clock and CPU rates and the peak memory of the process. CPU time is printed
beside wall time because the machines this runs on are shared: it is what verify itself
costs. The floor, measured in the same run between verify's rounds: reading the same rows
from the same file and hashing each event's stored bytes with sha256, nothing else.
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import sqlite3
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


def hash_floor(db_file: Path, tid: str) -> tuple[float, float]:
    """Wall and CPU seconds to read the task's event rows in order and sha256 each one's
    stored bytes (what the chain hashes): the floor under any verify of the same log."""
    conn = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    try:
        w0, c0 = time.perf_counter(), time.process_time()
        cur = conn.execute(
            "SELECT prev_hash, actor_kind, actor_id, actor_name, at, format, payload, seq, type "
            "FROM events WHERE task_id = ? ORDER BY seq",
            (tid,),
        )
        sha = hashlib.sha256
        for row in cur:
            sha("\n".join(map(str, row)).encode("utf-8")).hexdigest()
        return time.perf_counter() - w0, time.process_time() - c0
    finally:
        conn.close()


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
        best_wall = best_cpu = floor_wall = floor_cpu = float("inf")
        with Store.open(root) as s:
            db_file = s.location.sqlite_file
            assert db_file is not None
            for _ in range(args.rounds):
                w0, c0 = time.perf_counter(), time.process_time()
                report = verify(s, tid, remember=False)
                best_wall = min(best_wall, time.perf_counter() - w0)
                best_cpu = min(best_cpu, time.process_time() - c0)
                assert report.ok, report.summary()
                fw, fc = hash_floor(db_file, tid)
                floor_wall, floor_cpu = min(floor_wall, fw), min(floor_cpu, fc)
        n = report.heads[tid]["seq"]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"verify, {n} events ({args.charges:.0%} budget charges), best of {args.rounds}:")
        print(f"  wall {best_wall:.2f} s = {n / best_wall:,.0f} events/s")
        print(f"  cpu  {best_cpu:.2f} s = {n / best_cpu:,.0f} events/s")
        print(f"  peak RSS {peak / 1024:.0f} MB (after building the task: {before / 1024:.0f} MB)")
        print(
            f"  floor, reading the rows and sha256 of each: wall {n / floor_wall:,.0f} events/s, "
            f"cpu {n / floor_cpu:,.0f} events/s"
        )
        verdict = "meets" if n / best_cpu >= 100_000 else "misses"
        print(
            f"  row: `boris verify` on a {n:,}-event task | {best_wall:.2f} s wall "
            f"({n / best_wall:,.0f} events/s), cpu {n / best_cpu:,.0f} events/s | sha256 of the "
            f"same rows: {floor_cpu * 1000:.0f} ms cpu ({n / floor_cpu:,.0f} events/s) | "
            f"{floor_cpu / best_cpu:.2f}x the floor (cpu) | {verdict} >= 100,000 events/s (cpu)"
        )


if __name__ == "__main__":
    main()
