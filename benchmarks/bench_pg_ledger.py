"""The team store's write paths against LangGraph's PostgresSaver on the same server (not part
of the test run): durable appends/s and checkpoint writes/s, one commit each.

Run: .venv/bin/pip install -e ".[bench,postgres]" && .venv/bin/python benchmarks/bench_pg_ledger.py

Without --url (or BORIS_TEST_PG_URL) it starts a throw-away server (tests/pg_server.py) with
fsync on, as a team store would run. Each contender gets its own database on that server:

- Boris append: `execute(RecordNote)`, one event per commit (the hash chain, the task's row
  lock for the seq, the projections, the signature policy check);
- Boris checkpoint: `execute(WriteCheckpoint)` on the task bench_ledger.py uses (criteria,
  artifacts, budgets: the state is assembled from the projections in the transaction);
- PostgresSaver.put: a checkpoint whose channel values are that same state, as a graph's loop
  hands it over each step;
- bare commit: psycopg inserting one row of the checkpoint's size per commit, the floor.

Interleaved rounds, best of `--rounds` for each, so a noisy neighbour costs everyone alike.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from bench_ledger import AGENT, LangGraphLoop, boris_task  # noqa: E402
from pg_server import PgServer  # noqa: E402

from store import Store  # noqa: E402
from store import commands as c  # noqa: E402
from store.canonical import canonical_json  # noqa: E402
from store.commands.checkpoints import WriteCheckpoint  # noqa: E402


def _plain(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(_plain(url), autocommit=True) as conn:
        conn.execute(sql)


class Database:
    """A fresh database on the server for one contender, dropped afterwards."""

    serial = 0

    def __init__(self, admin_url: str) -> None:
        from sqlalchemy.engine import make_url

        Database.serial += 1
        self.admin_url = admin_url
        self.name = f"boris_bench_{os.getpid()}_{Database.serial}"
        _admin(admin_url, f"CREATE DATABASE {self.name}")
        self.url = make_url(admin_url).set(database=self.name).render_as_string(hide_password=False)

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        _admin(self.admin_url, f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


def boris_appends(admin_url: str, n: int) -> float:
    with (
        Database(admin_url) as db,
        tempfile.TemporaryDirectory() as tmp,
        Store.open(Path(tmp) / "s", url=db.url) as s,
    ):
        tid = s.execute(c.CreateTask(title="bench", owner="o", objective="x"), AGENT)
        note = c.RecordNote(task_id=tid, text="a step")
        s.execute(note, AGENT)
        t0 = time.perf_counter()
        for _ in range(n):
            s.execute(note, AGENT)
        return n / (time.perf_counter() - t0)


def boris_checkpoints(admin_url: str, n: int) -> tuple[float, dict[str, Any]]:
    with (
        Database(admin_url) as db,
        tempfile.TemporaryDirectory() as tmp,
        Store.open(Path(tmp) / "s", url=db.url) as s,
    ):
        tid = boris_task(s, Path(tmp) / "scope")
        cmd = WriteCheckpoint(task_id=tid, reason="milestone", note="")
        s.execute(cmd, AGENT)
        t0 = time.perf_counter()
        for _ in range(n):
            s.execute(cmd, AGENT)
        rate = n / (time.perf_counter() - t0)
        head = s.head_checkpoint(tid)
        assert head is not None
        return rate, head["state"]


def postgres_saver(admin_url: str, n: int, state: dict[str, Any]) -> float:
    from langgraph.checkpoint.postgres import PostgresSaver

    with Database(admin_url) as db, PostgresSaver.from_conn_string(_plain(db.url)) as saver:
        saver.setup()
        loop = LangGraphLoop(saver, state)
        loop.put()
        t0 = time.perf_counter()
        for _ in range(n):
            loop.put()
        return n / (time.perf_counter() - t0)


def bare_commits(admin_url: str, n: int, size: int) -> float:
    import psycopg

    with Database(admin_url) as db, psycopg.connect(_plain(db.url), autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id bigserial PRIMARY KEY, body bytea)")
        body = b"x" * size
        t0 = time.perf_counter()
        for _ in range(n):
            conn.execute("INSERT INTO t (body) VALUES (%s)", (body,))
        return n / (time.perf_counter() - t0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--writes", type=int, default=300, help="writes per contender per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--url", default=os.environ.get("BORIS_TEST_PG_URL"))
    args = p.parse_args()
    server = None
    url = args.url
    if not url:
        server = PgServer.start(durable=True)
        url = server.url()
    try:
        _, state = boris_checkpoints(url, 1)
        size = len(canonical_json(state).encode())
        contenders: dict[str, Callable[[], float]] = {
            "Boris append (one event a commit)": lambda: boris_appends(url, args.writes),
            "Boris checkpoint write": lambda: boris_checkpoints(url, args.writes)[0],
            "LangGraph PostgresSaver.put": lambda: postgres_saver(url, args.writes, state),
            f"bare commit of a {size}-byte row": lambda: bare_commits(url, args.writes, size),
        }
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            for name, run in contenders.items():
                best[name] = max(best.get(name, 0.0), run())
        print(
            f"PostgreSQL at {url.split('@')[-1]} (fsync on); best of {args.rounds} rounds "
            f"of {args.writes} writes, interleaved"
        )
        saver = best["LangGraph PostgresSaver.put"]
        bare = best[f"bare commit of a {size}-byte row"]
        for name, rate in best.items():
            print(
                f"  {name:<38}{rate:>9.0f}/s   {rate / saver:5.2f}x PostgresSaver   "
                f"{rate / bare:5.2f}x bare"
            )
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
