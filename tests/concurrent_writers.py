"""Several processes appending to one task at once: the test's and the benchmark's writers.

Each writer opens the store itself (as an agent on another machine would), waits for a common
start, then records notes named `w<writer>-<n>` until its time is up, counting what the store
acknowledged and every error it raised. `log_problems` then checks the task's log against
what was acknowledged: nothing lost, nothing twice, seqs without a gap, the hash chain whole.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from store import Actor, Store
from store import commands as c
from store.events import NoteRecorded

AGENT = Actor(kind="agent", id="writer")


@dataclass
class WriterResult:
    writer: int
    acknowledged: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def write_notes(
    store_dir: str, url: str | None, task_id: str, writer: int, start_at: float, seconds: float
) -> WriterResult:
    result = WriterResult(writer)
    if os.environ.get("BORIS_BENCH_SEQ") == "retry":
        _without_row_lock()
    with Store.open(store_dir, url=url, create=False) as s:
        time.sleep(max(0.0, start_at - time.time()))
        t0 = time.perf_counter()
        deadline = t0 + seconds
        n = 0
        while time.perf_counter() < deadline:
            text = f"w{writer}-{n}"
            n += 1
            try:
                s.execute(c.RecordNote(task_id=task_id, text=text), AGENT)
            except Exception as exc:  # counted and reported: the test wants none
                result.errors.append(f"{type(exc).__name__}: {exc}")
            else:
                result.acknowledged.append(text)
        result.seconds = time.perf_counter() - t0
    return result


def _without_row_lock() -> None:
    """The alternative the benchmark measures: read the task's head without locking its row;
    a writer that loses the race for a seq retries (Store.execute's WriteConflict backoff)."""
    import sqlalchemy as sa

    from store import db, tx
    from store import schema as t

    tx._SELECT_TASK = db.Prepared(
        sa.select(*(t.tasks.c[f.removesuffix("_stored")] for f in tx.TaskRow._fields)).where(
            t.tasks.c.task_id == sa.bindparam("task_id")
        )
    )


def run_writers(
    store_dir: Path, url: str | None, task_id: str, writers: int, seconds: float
) -> list[WriterResult]:
    """`writers` processes writing to `task_id` for `seconds`, all starting together."""
    ctx = mp.get_context("spawn")
    start_at = time.time() + 3.0 + 0.3 * writers  # after every process has imported and opened
    with ctx.Pool(writers) as pool:
        return pool.starmap(
            write_notes,
            [(str(store_dir), url, task_id, w, start_at, seconds) for w in range(writers)],
        )


def log_problems(s: Store, task_id: str, results: list[WriterResult]) -> list[str]:
    import json

    import sqlalchemy as sa
    from test_store_integrity import chain_problems

    problems: list[str] = []
    with s.read() as conn:
        rows = conn.execute(
            sa.text("SELECT seq, type, payload FROM events WHERE task_id = :t ORDER BY seq"),
            {"t": task_id},
        ).all()
    seqs = [r.seq for r in rows]
    if seqs != list(range(1, len(seqs) + 1)):
        problems.append("the seqs have a gap or are out of order")
    notes = [json.loads(r.payload)["text"] for r in rows if r.type == NoteRecorded.TYPE]
    acknowledged = [t for r in results for t in r.acknowledged]
    if len(notes) != len(set(notes)):
        problems.append(f"{len(notes) - len(set(notes))} notes written twice")
    lost = set(acknowledged) - set(notes)
    if lost:
        problems.append(f"{len(lost)} acknowledged notes lost, e.g. {sorted(lost)[:3]}")
    bad = chain_problems(s, task_id)
    if bad:
        problems.append(f"the hash chain breaks at seqs {bad[:5]}")
    return problems
