"""Ledger benchmark (not part of the test run): checkpoint writes/s, latest-head reads, and a
two-process race on approvals.

Run: .venv/bin/pip install -e ".[bench]" && .venv/bin/python benchmarks/bench_ledger.py

1. Durable checkpoint writes, one commit each, measured in the same run at the same
   durability (WAL, synchronous=FULL): Boris's `execute(WriteCheckpoint)` on a task with a
   few criteria, artifacts, an effect and budgets (the command assembles the state from the
   projections inside its transaction), back to back and each after one other event (a
   note, an artifact's new version, an effect revised: that event's own write not timed), in
   a task of 10, 1,000 and 10,000 events; against LangGraph's `SqliteSaver.put()` of a
   checkpoint whose channel values are that same state, with as many checkpoints in its
   thread; beside Boris's own statements by raw sqlite3 and a bare durable commit. Each
   contender starts from a copy of the same store each round; `--rounds` interleaved rounds,
   medians, each ratio the median of the rounds' ratios, the load average printed. The sizes
   of both checkpoints and the WAL pages each commit writes are printed beside the rates.
2. Latest-head read latency with `--history` checkpoints in each: `Store.head_checkpoint`
   against `SqliteSaver.get_tuple`, median of many calls, best round: reading an unchanged
   head (what a polling view does); the same with Boris's kept head row dropped, so every
   call queries (LangGraph keeps none); and right after a new checkpoint was committed
   (checked to return it), which on a busy machine also pays for caches the write's fsync let
   go cold. The checkpoint writes made there give the write rate with that history.
3. Two processes (spawn) racing to dispatch the same `--approvals` approved file writes: each
   approval must be consumed exactly once, as the store's approvals, events and attempts
   show afterwards.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import importlib.util
import multiprocessing as mp
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from bench_store import TASK_ROW_SQL

from store import Actor, CommandRejected, Store
from store import commands as c
from store.canonical import canonical_json
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.commands.effects import DispatchEffect, PlanEffect, ReviseEffect
from store.reads.heads import head_reader

AGENT = Actor(kind="agent", id="bench")
REVIEWER = Actor(kind="person", id="rev")
THREAD = "bench"


# --- Boris: a realistic small task --------------------------------------------------------


def boris_task(s: Store, scope: Path) -> str:
    """A task with what a checkpoint's state is built from: criteria, artifacts, budgets."""
    scope.mkdir(parents=True, exist_ok=True)
    tid: str = s.execute(
        c.CreateTask(
            title="quarterly report",
            owner="ana",
            objective="Draft the quarterly report from the three source tables and get it reviewed",
            scope_paths=[str(scope)],
        ),
        AGENT,
    )
    cmds: list[c.Command] = [
        c.AddCriterion(task_id=tid, text=text)
        for text in (
            "every figure is traced to a source table",
            "the summary fits on one page",
            "a reviewer signed off the final draft",
        )
    ]
    cmds += [
        c.RecordArtifact(task_id=tid, name=name, content=c.Content(text=text))
        for name, text in (
            ("outline.md", "# Q3 report\n\n1. Revenue\n2. Costs\n3. Outlook\n"),
            ("draft.md", "# Q3 report\n\nRevenue grew 4% on the quarter.\n" * 20),
        )
    ]
    cmds += [
        c.SetBudget(task_id=tid, counter="model_calls", limit=500),
        c.SetBudget(task_id=tid, counter="artifact_bytes", limit=10_000_000),
    ]
    s.execute_all(cmds, AGENT)
    return tid


def boris_checkpointing(root: Path) -> tuple[Store, str, WriteCheckpoint]:
    s = signed_store(root / "boris")
    tid = boris_task(s, root / "scope")
    cmd = WriteCheckpoint(task_id=tid, reason="milestone", note="")
    s.execute(cmd, AGENT)  # the first also writes the task's initial checkpoint
    return s, tid, cmd


def bare_commits(root: Path, n: int, size: int) -> float:
    """The floor under both: sqlite3 inserting one `size`-byte row per durable commit (WAL,
    synchronous=FULL), no other work."""
    db_file = root / "bare.sqlite"
    conn = sqlite3.connect(db_file, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
    body = b"x" * size
    t0 = time.perf_counter()
    for _ in range(n):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (body) VALUES (?)", (body,))
        conn.execute("COMMIT")
    rate = n / (time.perf_counter() - t0)
    conn.close()
    return rate


def same_statements(root: Path, n: int) -> float:
    """The floor for Boris's own guarantees: the seven statements one Boris checkpoint write
    runs on a signed store (BEGIN; read the task's head and heads with its lease (the fence)
    and the keyring's head; insert the chained event with the state; move the task's head
    and heads; insert the lineage row; insert the signature; COMMIT), sent by raw sqlite3 with the same
    state, and nothing computed in Python but the payload's text, the chain hash and the
    signature: no command, no validation, no state memo, no projection code."""
    import json

    from store.canonical import canonical_json, chain_hash_of_parts
    from store.clock import system_now
    from store.signing.seal import encode_signature, record_message

    s, tid, _ = boris_checkpointing(root)
    key = _AGENT_KEYS[root / "boris"]
    db_file = s.location.sqlite_file
    s.close()
    assert db_file is not None
    conn = sqlite3.connect(db_file, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    fmt, template = conn.execute(
        "SELECT format, payload FROM events WHERE type = 'checkpoint.written' "
        "ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    written = json.loads(template)
    state_json, digest = canonical_json(written["state"]), written["state_digest"]
    actor = '{"id":"bench","kind":"agent","name":""}'
    t0 = time.perf_counter()
    for i in range(n):
        conn.execute("BEGIN IMMEDIATE")
        (row,) = conn.execute(TASK_ROW_SQL, (tid,)).fetchall()
        seq, prev, heads, at = row[9] + 1, row[10], json.loads(row[11]), system_now()
        cid = f"floor-{i:08x}"  # never one of the generated ids (ckpt- and hex)
        payload = (
            f'{{"boundary_hash":"{prev}","boundary_seq":{seq - 1},"checkpoint_id":"{cid}",'
            f'"merged":[],"note":"","reason":"milestone","state":{state_json},'
            f'"state_digest":"{digest}","supersedes":["{heads[-1]}"]}}'
        )
        chained = chain_hash_of_parts(
            prev,
            actor_json=actor,
            at=at,
            fmt=fmt,
            payload_json=payload,
            seq=seq,
            task_id=tid,
            type_name="checkpoint.written",
        )
        conn.execute(
            "INSERT INTO events (task_id, seq, type, format, payload, actor_kind, actor_id, "
            "actor_name, at, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (tid, seq, "checkpoint.written", fmt, payload, "agent", "bench", "", at, prev, chained),
        )
        conn.execute(
            "UPDATE tasks SET updated_at = ?, last_seq = ?, head_hash = ?, checkpoint_heads = ? "
            "WHERE task_id = ?",
            (at, seq, chained, json.dumps([cid]), tid),
        )
        conn.execute(
            "INSERT INTO checkpoints (task_id, checkpoint_id, reason, supersedes, merged, seq, "
            "chain_hash, event_seq, state_digest, author, note, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (tid, cid, "milestone", json.dumps(heads[-1:]), "[]", seq - 1, prev, seq, digest,
             actor, "", at),
        )  # fmt: skip
        # The store requires signatures: one Ed25519 signature of the write, and its row.
        conn.execute(
            "INSERT INTO signatures (task_id, seq, key_id, signature) VALUES (?, ?, ?, ?)",
            (tid, seq, key.key_id, encode_signature(key.sign(record_message(tid, seq, chained)))),
        )
        conn.execute("COMMIT")
    rate = n / (time.perf_counter() - t0)
    conn.close()
    return rate


def wal_pages_per_commit(conn: sqlite3.Connection, commit: Callable[[], object]) -> float:
    """WAL frames (pages) each of 20 commits appends, as seen from a second connection."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for _ in range(20):
        commit()
    return float(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]) / 20


def statements_per_commit(s: Store, commit: Callable[[], object]) -> float:
    """SQL statements (BEGIN and COMMIT included) the writer's driver connection runs for
    each of 20 commits: Boris's hot path runs on the driver, below SQLAlchemy's events."""
    with s.transaction() as tx:
        raw = tx.conn.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)
    seen: list[str] = []
    raw.set_trace_callback(seen.append)
    try:
        for _ in range(20):
            commit()
    finally:
        raw.set_trace_callback(None)
    return len(seen) / 20


def boris_profile(root: Path) -> tuple[dict[str, Any], dict[str, float]]:
    """The head's state (LangGraph is given the same), its sizes and the pages per commit."""
    s, tid, cmd = boris_checkpointing(root)
    with s:
        head = s.head_checkpoint(tid)
        assert head is not None
        with s.read() as conn:
            payload = conn.execute(
                sa.text(
                    "SELECT length(CAST(payload AS BLOB)) FROM events WHERE task_id = :t "
                    "AND type = 'checkpoint.written' ORDER BY seq DESC LIMIT 1"
                ),
                {"t": tid},
            ).scalar_one()
        db_file = s.location.sqlite_file
        assert db_file is not None
        with closing(sqlite3.connect(db_file)) as conn:
            pages = wal_pages_per_commit(conn, lambda: s.execute(cmd, AGENT))
        statements = statements_per_commit(s, lambda: s.execute(cmd, AGENT))
        state: dict[str, Any] = head["state"]
        return state, {
            "state": len(canonical_json(state).encode()),
            "event": int(payload),
            "pages": pages,
            "statements": statements,
        }


# --- LangGraph ----------------------------------------------------------------------------


def langgraph_saver(path: Path) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    # SqliteSaver.setup() sets only journal_mode=WAL (and the sqlite3 module's default
    # deferred transactions, committed after each put). synchronous is left to SQLite's
    # default, FULL on most builds but not all: set it explicitly, as Boris does, so both
    # fsync the WAL on every commit.
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    saver = SqliteSaver(conn)
    saver.setup()
    return saver


class LangGraphLoop:
    """What a graph's loop hands `put()` each step: a new checkpoint (new id, timestamp and
    one channel's version bumped) whose channel values are the small state."""

    def __init__(self, saver: Any, channel_values: dict[str, Any]) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        self.saver = saver
        self.base = empty_checkpoint()
        self.base["channel_values"] = dict(channel_values)
        self.versions = {k: saver.get_next_version(None, None) for k in channel_values}
        self.base["channel_versions"] = dict(self.versions)
        self.config: dict[str, Any] = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
        self.step = 0
        self.channels = list(channel_values)

    def checkpoint(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
        from langgraph.checkpoint.base.id import uuid6

        self.step += 1
        channel = self.channels[self.step % len(self.channels)]
        self.versions[channel] = self.saver.get_next_version(self.versions[channel], None)
        ckpt = {
            **self.base,
            "id": str(uuid6(clock_seq=self.step)),
            "ts": dt.datetime.now(dt.UTC).isoformat(),
            "channel_versions": dict(self.versions),
        }
        meta = {"source": "loop", "step": self.step, "parents": {}}
        return ckpt, meta, {channel: self.versions[channel]}

    def put(self) -> None:
        ckpt, meta, new_versions = self.checkpoint()
        self.config = self.saver.put(self.config, ckpt, meta, new_versions)


def langgraph_writes(root: Path, n: int, state: dict[str, Any]) -> float:
    saver = langgraph_saver(root / "langgraph.sqlite")
    loop = LangGraphLoop(saver, state)
    loop.put()
    t0 = time.perf_counter()
    for _ in range(n):
        loop.put()
    rate = n / (time.perf_counter() - t0)
    saver.conn.close()
    return rate


def langgraph_profile(root: Path, state: dict[str, Any]) -> dict[str, float]:
    saver = langgraph_saver(root / "langgraph.sqlite")
    loop = LangGraphLoop(saver, state)
    loop.put()
    (size,) = saver.conn.execute(
        "SELECT length(checkpoint) + length(metadata) FROM checkpoints"
    ).fetchone()
    with closing(sqlite3.connect(root / "langgraph.sqlite")) as conn:
        pages = wal_pages_per_commit(conn, loop.put)
    seen: list[str] = []
    saver.conn.set_trace_callback(seen.append)
    for _ in range(20):
        loop.put()
    saver.conn.set_trace_callback(None)
    saver.conn.close()
    return {"size": int(size), "pages": pages, "statements": len(seen) / 20}


# --- latest-head reads --------------------------------------------------------------------


def median_us(fn: Callable[[], object], calls: int) -> float:
    times = []
    clock = time.perf_counter_ns
    for _ in range(calls):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times) / 1000


class Heads:
    """One contender's store for head reads: `write` adds a checkpoint and returns its id,
    `read` returns the latest head's id."""

    def __init__(
        self, write: Callable[[], str], read: Callable[[], str], uncached: Callable[[], str]
    ) -> None:
        self.write, self.read, self.uncached = write, read, uncached


def boris_heads(root: Path, history: int) -> tuple[Heads, Callable[[], None]]:
    s, tid, cmd = boris_checkpointing(root)
    for done in range(2, history, 100):
        s.execute_all([cmd] * min(100, history - done), AGENT)

    def read() -> str:
        head = s.head_checkpoint(tid)
        assert head is not None
        return str(head["checkpoint_id"])

    reader = head_reader(s)

    def uncached() -> str:
        reader.forget()  # the head row read last is dropped: this read queries
        return read()

    return Heads(lambda: str(s.execute(cmd, AGENT)), read, uncached), s.close


def langgraph_heads(
    root: Path, history: int, state: dict[str, Any]
) -> tuple[Heads, Callable[[], None]]:
    saver = langgraph_saver(root / "langgraph.sqlite")
    loop = LangGraphLoop(saver, state)
    for _ in range(history):
        loop.put()
    latest = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}

    def write() -> str:
        loop.put()
        return str(loop.config["configurable"]["checkpoint_id"])

    def read() -> str:
        return str(saver.get_tuple(latest).checkpoint["id"])

    return Heads(write, read, read), saver.conn.close


def head_reads(
    root: Path, a: argparse.Namespace, state: dict[str, Any] | None
) -> dict[str, dict[str, float]]:
    """Per contender: the median read of an unchanged head, the same without Boris's kept
    row, the median read right after a new checkpoint was committed (checked to return it),
    and those writes' rate with `--history` checkpoints already in the task. Interleaved
    rounds, the median of the rounds kept."""
    made = {"boris": boris_heads(root, a.history)}
    if state is not None:
        made["langgraph"] = langgraph_heads(root, a.history, state)
    seen: dict[str, dict[str, list[float]]] = {name: {} for name in made}
    clock = time.perf_counter_ns
    for _ in range(a.rounds):
        for name, (heads, _) in made.items():
            got = seen[name]
            got.setdefault("unchanged", []).append(median_us(heads.read, a.reads))
            got.setdefault("uncached", []).append(median_us(heads.uncached, a.reads))
            reads, writing = [], 0
            for _ in range(a.fresh):
                t0 = clock()
                cid = heads.write()
                t1 = clock()
                assert heads.read() == cid
                reads.append(clock() - t1)
                writing += t1 - t0
            got.setdefault("fresh", []).append(statistics.median(reads) / 1000)
            got.setdefault("write_rate", []).append(a.fresh / (writing / 1e9))
    best = {name: {k: statistics.median(v) for k, v in got.items()} for name, got in seen.items()}
    for _, close in made.values():
        close()
    return best


# --- the approval race --------------------------------------------------------------------


def race_setup(root: Path, n: int) -> tuple[str, list[str]]:
    scope = root / "workspace"
    scope.mkdir()
    with Store.open(root / "race") as s:
        tid: str = s.execute(
            c.CreateTask(
                title="race", owner="ana", objective="write files", scope_paths=[str(scope)]
            ),
            AGENT,
        )
        eids = [f"eff-{i:04d}" for i in range(n)]
        for lo in range(0, n, 250):
            batch = eids[lo : lo + 250]
            s.execute_all(
                [
                    PlanEffect(
                        task_id=tid,
                        effect_id=eid,
                        target=f"out/{eid}.txt",
                        consequence=f"write out/{eid}.txt",
                        content=c.Content(text=f"file {eid}\n"),
                        requires_approval=True,
                    )
                    for eid in batch
                ],
                AGENT,
            )
            s.execute_all(
                [
                    RequestApproval(
                        task_id=tid, effect_id=eid, approval_id=f"apr-{eid}", policy="bench"
                    )
                    for eid in batch
                ],
                AGENT,
            )
            s.execute_all(
                [
                    DecideApproval(task_id=tid, approval_id=f"apr-{eid}", decision="approved")
                    for eid in batch
                ],
                REVIEWER,
            )
        return tid, eids


def race_worker(
    store_dir: str, tid: str, eids: list[str], name: str, start: Any, results: Any
) -> None:
    ok = rejected = 0
    errors: list[str] = []
    with Store.open(store_dir, create=False) as s:
        start.wait()
        for eid in eids:
            try:
                s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor=name), AGENT)
                ok += 1
            except CommandRejected:
                rejected += 1
            except Exception as exc:  # anything else is a failure of the race, reported
                errors.append(f"{eid}: {type(exc).__name__}: {exc}")
    results.put((name, ok, rejected, errors))


def race(root: Path, n: int, reversed_second: bool) -> dict[str, Any]:
    tid, eids = race_setup(root, n)
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(2)
    results = ctx.Queue()
    orders = {"p1": eids, "p2": eids[::-1] if reversed_second else eids}
    procs = [
        ctx.Process(target=race_worker, args=(str(root / "race"), tid, order, name, start, results))
        for name, order in orders.items()
    ]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    got = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
        assert p.exitcode == 0, f"a racer exited with {p.exitcode}"
    elapsed = time.perf_counter() - t0
    with Store.open(root / "race", create=False) as s, s.read() as conn:
        states = dict(
            conn.execute(
                sa.text("SELECT state, count(*) FROM approvals WHERE task_id = :t GROUP BY state"),
                {"t": tid},
            ).all()
        )
        consumed = dict(
            conn.execute(
                sa.text(
                    "SELECT json_extract(payload, '$.approval_id'), count(*) FROM events "
                    "WHERE task_id = :t AND type = 'approval.consumed' GROUP BY 1"
                ),
                {"t": tid},
            ).all()
        )
        attempts = dict(
            conn.execute(
                sa.text(
                    "SELECT effect_id, count(*) FROM attempts WHERE task_id = :t GROUP BY effect_id"
                ),
                {"t": tid},
            ).all()
        )
    approvals = {f"apr-{eid}" for eid in eids}
    once = (
        states == {"consumed": n}
        and set(consumed) == approvals
        and all(v == 1 for v in consumed.values())
        and set(attempts) == set(eids)
        and all(v == 1 for v in attempts.values())
    )
    return {
        "procs": sorted(got),
        "elapsed": elapsed,
        "states": states,
        "consumed_events": sum(consumed.values()),
        "approvals_consumed_once": sum(1 for v in consumed.values() if v == 1),
        "attempts": sum(attempts.values()),
        "effects_with_one_attempt": sum(1 for v in attempts.values() if v == 1),
        "once": once,
    }


# --- report -------------------------------------------------------------------------------


# --- writes at three sizes, after other events ----------------------------------------------

SIZES = (10, 1_000, 10_000)
#: What comes before each timed checkpoint: nothing (back to back), or one other event.
MODES = ("checkpoint", "note", "artifact", "effect")


_AGENT_KEYS: dict[Path, Any] = {}


def signed_store(path: Path) -> Store:
    """A store as `boris init` makes it: signatures required (a person's key the keyring's
    root), the agent's key added, its writes signed."""
    from store.signing import SigningKey
    from store.signing.trust import add_key, require

    s = Store.open(path)
    owner, agent = SigningKey.generate(), SigningKey.generate()
    require(s, owner, REVIEWER)
    add_key(s, owner, agent.public_raw, AGENT)
    s.signer = agent
    _AGENT_KEYS[path] = agent
    return s


def boris_template(root: Path, size: int) -> Path:
    """A closed signed Boris store whose task has `size` events (the small task's own, then
    checkpoints), copied afresh for each round."""
    path = root / "boris"
    with signed_store(path) as s:
        tid = boris_task(s, root / "scope")
        cmd = WriteCheckpoint(task_id=tid, reason="milestone", note="")
        eff = s.execute(
            PlanEffect(task_id=tid, target="out.md", consequence="write out.md",
                       content=c.Content(text="v0")),
            AGENT,
        )  # fmt: skip
        s.execute(cmd, AGENT)
        events = len(s.events(tid))
        while events < size:
            batch = min(100, size - events)
            s.execute_all([cmd] * batch, AGENT)
            events += batch
    (root / "ids").write_text(f"{tid} {eff}")
    return path


def boris_round(template: Path, mode: str, n: int) -> float:
    """Checkpoints/s on a copy of `template`, each after one event of `mode` (its own time
    not counted), the store open and warm."""
    import shutil

    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "boris"
        shutil.copytree(template, root)
        tid, eff = (template.parent / "ids").read_text().split()
        s = Store.open(root, create=False)
        s.signer = _AGENT_KEYS[template]
        cmd = WriteCheckpoint(task_id=tid, reason="milestone", note="")

        def before(i: int) -> c.Command | None:
            if mode == "note":
                return c.RecordNote(task_id=tid, text=f"step {i}")
            if mode == "artifact":
                return c.RecordArtifact(
                    task_id=tid, name="draft.md", content=c.Content(text=f"# draft {i}\n")
                )
            if mode == "effect":
                return ReviseEffect(
                    task_id=tid, effect_id=eff, reason="again", content=c.Content(text=f"v{i}")
                )
            return None

        with s:
            for i in range(5):  # warm: the statements compiled, the memo filled
                pre = before(-i - 1)
                if pre is not None:
                    s.execute(pre, AGENT)
                s.execute(cmd, AGENT)
            elapsed = cpu = 0.0
            clock, cpu_clock = time.perf_counter, time.thread_time
            for i in range(n):
                pre = before(i)
                if pre is not None:
                    s.execute(pre, AGENT)
                t0, c0 = clock(), cpu_clock()
                s.execute(cmd, AGENT)
                elapsed += clock() - t0
                cpu += cpu_clock() - c0
        CPU_US.setdefault((template, mode), []).append(cpu / n * 1e6)
        return n / elapsed


#: CPU per checkpoint (this thread's, µs) of each Boris contender's rounds: the part of a
#: write the disk's wait leaves out.
CPU_US: dict[tuple[Path, str], list[float]] = {}


def langgraph_template(root: Path, size: int, state: dict[str, Any]) -> Path:
    """A closed LangGraph database with `size` checkpoints in the thread."""
    path = root / f"langgraph-{size}.sqlite"
    saver = langgraph_saver(path)
    saver.conn.execute("PRAGMA synchronous=OFF")  # made once: its commits need not be durable
    loop = LangGraphLoop(saver, state)
    for _ in range(size):
        loop.put()
    saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    saver.conn.close()
    return path


def langgraph_round(template: Path, state: dict[str, Any], n: int) -> float:
    import shutil

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "langgraph.sqlite"
        shutil.copyfile(template, path)
        saver = langgraph_saver(path)
        loop = LangGraphLoop(saver, state)
        for _ in range(5):
            loop.put()
        t0 = time.perf_counter()
        for _ in range(n):
            loop.put()
        rate = n / (time.perf_counter() - t0)
        saver.conn.close()
        return rate


def load() -> str:
    import os

    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def write_rates(
    a: argparse.Namespace,
    state: dict[str, Any],
    sizes: dict[str, float],
    lg_profile: dict[str, float] | None,
) -> None:
    """Every contender once a round, interleaved; medians of the rounds, and each ratio the
    median of its rounds' ratios (a slow patch of the disk falls on one round's pair)."""
    load_before = load()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        boris_t = {n: boris_template(root / f"b{n}", n) for n in SIZES}
        lg_t = (
            {n: langgraph_template(root, n, state) for n in SIZES} if lg_profile is not None else {}
        )
        contenders: dict[str, Callable[[], float]] = {}
        for mode in MODES:
            contenders[f"boris {SIZES[0]} after {mode}"] = functools.partial(
                boris_round, boris_t[SIZES[0]], mode, a.writes
            )
        for n in SIZES[1:]:
            for mode in ("checkpoint", "note"):
                contenders[f"boris {n} after {mode}"] = functools.partial(
                    boris_round, boris_t[n], mode, a.writes
                )
        for n in SIZES:
            if n in lg_t:
                contenders[f"langgraph {n}"] = functools.partial(
                    langgraph_round, lg_t[n], state, a.writes
                )

        def floor(fn: Callable[[Path, int], float]) -> float:
            with tempfile.TemporaryDirectory() as d2:
                return fn(Path(d2), a.writes)

        contenders["same statements"] = functools.partial(floor, same_statements)
        contenders["bare"] = functools.partial(
            floor, lambda p, n: bare_commits(p, n, int(sizes["event"]))
        )
        rounds: list[dict[str, float]] = []
        for _ in range(a.rounds):
            rounds.append({name: fn() for name, fn in contenders.items()})
    med = {name: statistics.median(r[name] for r in rounds) for name in contenders}

    def ratio(x: str, y: str) -> float:
        return statistics.median(r[x] / r[y] for r in rounds)

    print(
        f"durable checkpoint writes, one commit each ({a.rounds} interleaved rounds x "
        f"{a.writes}, medians; load {load_before} before, {load()} after):"
    )
    print(
        f"  {sizes['pages']:.1f} WAL pages and {sizes['statements']:.0f} statements a commit; "
        f"state {sizes['state']:,.0f} B of JSON, kept once, in the event ({sizes['event']:,.0f} B)"
    )
    for name in contenders:
        cpu = ""
        if name.startswith("boris "):
            _, size, _, mode = name.split()
            cpu = f"   {statistics.median(CPU_US[(boris_t[int(size)], mode)]):6.0f} µs of CPU"
        print(f"  {name:32} {med[name]:8,.0f}/s{cpu}")
    small = f"boris {SIZES[0]} after checkpoint"
    print("  ratios (median of the rounds' ratios):")
    for mode in MODES[1:]:
        got = ratio(f"boris {SIZES[0]} after {mode}", small)
        cpu = statistics.median(CPU_US[(boris_t[SIZES[0]], mode)]) / statistics.median(
            CPU_US[(boris_t[SIZES[0]], "checkpoint")]
        )
        print(
            f"    after {'an' if mode[0] in 'aeiou' else 'a'} {mode:8} / back to back  {got:5.2f}x"
            f"   goal >= 0.8x   (CPU {cpu:.2f}x)"
        )
    print(f"    back to back / Boris's statements  {ratio(small, 'same statements'):5.2f}x")
    print(f"    Boris's statements / bare commit   {ratio('same statements', 'bare'):5.2f}x")
    if lg_t:
        print(f"    Boris's statements / langgraph {SIZES[0]}  {ratio('same statements', f'langgraph {SIZES[0]}'):5.2f}x")  # fmt: skip
        for n in SIZES:
            goal = "0.9" if n == SIZES[0] else "0.8"
            for mode in ("checkpoint", "note"):
                got = ratio(f"boris {n} after {mode}", f"langgraph {n}")
                print(f"    {n:>6,} events, after a {mode:10} / langgraph {got:5.2f}x   goal >= {goal}x (back to back)")  # fmt: skip
        print(
            f"  langgraph SqliteSaver.put: {lg_profile['pages']:.1f} WAL pages and "  # type: ignore[index]
            f"{lg_profile['statements']:.0f} statements a commit; checkpoint + metadata "  # type: ignore[index]
            f"{lg_profile['size']:,.0f} B (msgpack + JSON), the same state as its channel values"  # type: ignore[index]
        )
    else:
        print("  langgraph: not installed (pip install -e '.[bench]')")


def read_latency(a: argparse.Namespace, state: dict[str, Any] | None) -> None:
    with tempfile.TemporaryDirectory() as d:
        got = head_reads(Path(d), a, state)
    b, lg = got["boris"], got.get("langgraph")
    print(
        f"latest-head read with {a.history:,} checkpoints in the task (medians of {a.rounds} "
        f"interleaved rounds; load {load()}):"
    )
    for key, what in (
        ("unchanged", f"unchanged since the last read, median of {a.reads:,}"),
        ("uncached", f"the same, with Boris's kept head row dropped first, median of {a.reads:,}"),
        ("fresh", f"right after a new checkpoint, median of {a.fresh:,}"),
    ):
        print(f"  {what}:")
        print(f"    boris head_checkpoint         {b[key]:8.1f} µs")
        if lg is not None:
            verdict = "meets" if b[key] <= lg[key] else "misses"
            print(
                f"    langgraph get_tuple           {lg[key]:8.1f} µs   boris takes "
                f"{b[key] / lg[key]:.2f}x ({verdict} the <= 1.0x goal)"
            )
    if lg is not None:
        print(
            f"  row: latest head read, unchanged / right after a write | {b['unchanged']:.1f} µs /"
            f" {b['fresh']:.1f} µs | get_tuple {lg['unchanged']:.1f} µs / {lg['fresh']:.1f} µs |"
            f" {b['unchanged'] / lg['unchanged']:.2f}x / {b['fresh'] / lg['fresh']:.2f}x |"
            " goal <= 1.0x"
        )
    print(f"  checkpoint writes with {a.history:,} already in the task:")
    print(f"    boris execute(WriteCheckpoint) {b['write_rate']:7,.0f}/s")
    if lg is not None:
        print(
            f"    langgraph SqliteSaver.put      {lg['write_rate']:7,.0f}/s   "
            f"boris = {b['write_rate'] / lg['write_rate']:.2f}x"
        )


def approval_race(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        r = race(Path(d), a.approvals, a.reversed)
        total = time.perf_counter() - t0
    order = "opposite orders" if a.reversed else "the same order"
    print(
        f"two processes dispatching {a.approvals:,} approved effects in {order} "
        f"({r['elapsed']:.1f} s race, {total:.1f} s with setup):"
    )
    for name, ok, rejected, errors in r["procs"]:
        print(
            f"  {name}: {ok:5,} dispatched, {rejected:5,} CommandRejected, {len(errors)} other errors"
        )
        for e in errors[:3]:
            print(f"      {e}")
    print(
        f"  store: approvals by state {r['states']}; {r['consumed_events']:,} approval.consumed "
        f"events, {r['approvals_consumed_once']:,} approvals consumed exactly once; "
        f"{r['attempts']:,} attempts, {r['effects_with_one_attempt']:,} effects with exactly one"
    )
    print(f"  exactly one consumption each: {'yes' if r['once'] else 'no'}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--history", type=int, default=1000, help="checkpoints before head reads")
    ap.add_argument("--reads", type=int, default=2000, help="reads of an unchanged head")
    ap.add_argument("--fresh", type=int, default=100, help="reads right after a write")
    ap.add_argument("--approvals", type=int, default=1000)
    ap.add_argument("--reversed", action="store_true", help="the second racer goes backwards")
    ap.add_argument("--parts", default="writes,reads,race", help="which of them to run")
    ap.add_argument(
        "--dir",
        help="where the stores are made (default: the system's temporary directory); "
        "/dev/shm measures the work with the disk's wait taken out",
    )
    a = ap.parse_args()
    if a.dir:
        tempfile.tempdir = a.dir
    parts = set(a.parts.split(","))

    have_langgraph = importlib.util.find_spec("langgraph.checkpoint.sqlite") is not None
    with tempfile.TemporaryDirectory() as d:
        state, sizes = boris_profile(Path(d))
        lg = langgraph_profile(Path(d), state) if have_langgraph else None
    if "writes" in parts:
        write_rates(a, state, sizes, lg)
    if "reads" in parts:
        read_latency(a, state if have_langgraph else None)
    if "race" in parts:
        approval_race(a)


if __name__ == "__main__":
    main()
