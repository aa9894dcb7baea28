"""Concurrent writers to one task on PostgreSQL (not part of the test run): total appends/s
with 1, 4 and 8 processes, and zero refusals, losses or duplicates.

Run: .venv/bin/python benchmarks/bench_pg_writers.py [--seconds 60] [--url URL]

Without --url (or BORIS_TEST_PG_URL) it starts a throw-away server (tests/pg_server.py) with
fsync on, as a team store would run. Each writer is its own process with its own Store, as
agents on several machines would be. Two ways of allocating `seq` are measured:

- lock:  the store's way, the task's row taken FOR UPDATE at the start of the write;
- retry: no row lock; a writer that loses the race for a seq gets a unique violation and
  retries after a jittered pause (Store.execute's WriteConflict retry).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from concurrent_writers import log_problems, run_writers  # noqa: E402
from pg_server import PgServer  # noqa: E402

from store import Actor, Store  # noqa: E402
from store import commands as c  # noqa: E402

AGENT = Actor(kind="agent", id="bench")


def _admin(url: str, sql: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(sql)


def one_run(admin_url: str, writers: int, seconds: float, mode: str, n: int) -> dict[str, float]:
    from sqlalchemy.engine import make_url

    name = f"boris_bench_{os.getpid()}_{n}"
    _admin(admin_url, f"CREATE DATABASE {name}")
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store_dir = Path(tmp) / "store"
            with Store.open(store_dir, url=url) as s:
                tid = s.execute(c.CreateTask(title="bench", owner="o", objective="x"), AGENT)
                os.environ["BORIS_BENCH_SEQ"] = mode  # read by the writers (spawned after)
                results = run_writers(store_dir, url, tid, writers, seconds)
                problems = log_problems(s, tid, results)
        acknowledged = sum(len(r.acknowledged) for r in results)
        errors = sum(len(r.errors) for r in results)
        elapsed = max(r.seconds for r in results)
        if problems or errors:
            print(f"  PROBLEMS: {errors} errors, {problems}", file=sys.stderr)
            for r in results:
                for e in r.errors[:2]:
                    print(f"    {e}", file=sys.stderr)
        return {"rate": acknowledged / elapsed, "errors": errors, "bad": len(problems)}
    finally:
        _admin(admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--writers", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--modes", nargs="+", default=["lock", "retry"], choices=["lock", "retry"])
    p.add_argument("--url", default=os.environ.get("BORIS_TEST_PG_URL"))
    args = p.parse_args()
    server = None
    url = args.url
    if not url:
        server = PgServer.start(durable=True)
        url = server.url()
    try:
        print(f"{args.seconds:g} s per run, one task, PostgreSQL at {url.split('@')[-1]}")
        print(
            f"{'seq allocation':<16}{'writers':>8}{'appends/s':>12}{'refused':>9}{'lost/dup':>10}"
        )
        n = 0
        for mode in args.modes:
            for w in args.writers:
                n += 1
                r = one_run(url, w, args.seconds, mode, n)
                print(
                    f"{mode:<16}{w:>8}{r['rate']:>12.0f}{r['errors']:>9.0f}{r['bad']:>10.0f}",
                    flush=True,
                )
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
