"""A store of 100,000 tasks, built once and cached (issue 36 part W; not part of the tests).

    .venv/bin/python benchmarks/gen_big_store.py [--tasks 100000] [--events-per-task 20]
        [--full] [--store DIR] [--postgres URL]

A few template tasks are made through the store's own commands (so every event, projection
row and approval is what Boris writes); then each is cloned under new task ids, in bulk
SQL: every row of every per-task table copied with the task id (and title) replaced, and
the events chained anew through `store.canonical.chain_hash_of_parts`, the append path's
own function, so `boris verify` holds on every clone.

Templates, one clone in `NEEDS_EVERY` needing a person: three approvals waiting, a failed
criterion, a blocked run, two effects whose outcome is unknown, two criteria with evidence
nobody judged, a run whose budget ran out (the decision queue's kinds: some 7,500 open decisions on
100,000 tasks); the rest running or completed, with notes and budget charges.
Each task has `--events-per-task` events (the full size, `--full`: 100 a task, 10,000,000
events). The SQLite store is cached under ~/.cache/boris-bench/ by shape; `--postgres URL`
fills an empty PostgreSQL database instead (the engine test's smaller variant).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

GENERATOR = 2  # bump when the shape changes: the cache is keyed by it
CACHE = Path.home() / ".cache" / "boris-bench"
#: Tables whose rows are a task's own, copied per clone (others: the store's, or caches).
SKIP = {"deletion_receipts", "verified_heads", "signatures", "retention"}
NEEDS_EVERY = 20
_TITLE = "@@TITLE@@"
_WORDS = (
    "quarterly report",
    "invoice batch",
    "migration plan",
    "release notes",
    "customer reply",
    "data cleanup",
    "security review",
    "onboarding guide",
)


def _templates(s: Any, scope: Path, events: int) -> list[str]:
    """Template tasks through the real commands; returns their ids, the first needing no one."""
    from store import Actor
    from store import commands as c
    from store.commands.approvals import RequestApproval
    from store.commands.effects import DispatchEffect, PlanEffect, RecordResponse

    agent = Actor(kind="agent", id="bench-agent", name="Bench agent")
    person = Actor(kind="person", id="ana", name="Ana")
    shapes = (
        *("running", "completed", "running-notes", "approval", "failed", "blocked"),
        *("reconcile", "judge", "exhausted"),
    )
    out = []
    for k, shape in enumerate(shapes):
        tid = f"tmpl{k}"
        s.execute(
            c.CreateTask(
                task_id=tid,
                title=_TITLE,
                owner=("ana", "ben", "chen")[k % 3],
                objective="Draft the section from its sources and get it reviewed",
                scope_paths=[str(scope)],
            ),
            agent,
        )
        batch: list[Any] = [
            c.AddCriterion(
                task_id=tid, criterion_id="c1", text="every figure is traced to a source"
            ),
            c.SetBudget(task_id=tid, counter="model_calls", limit=float(events * 4)),
        ]
        if shape == "approval":
            for n in (1, 2, 3):
                batch += [
                    PlanEffect(
                        task_id=tid,
                        effect_id=f"eff-{n}",
                        target=f"out/section-{n}.md",
                        consequence=f"write out/section-{n}.md",
                        content=c.Content(text="section\n"),
                        requires_approval=True,
                    ),
                    RequestApproval(
                        task_id=tid,
                        effect_id=f"eff-{n}",
                        policy="every write is reviewed",
                        expires_in_seconds=(365 - 30 * n) * 86400,
                    ),
                ]
        if shape == "reconcile":  # sent, nothing came back: a person reconciles each
            for n in (1, 2):
                batch += [
                    PlanEffect(
                        task_id=tid,
                        effect_id=f"eff-{n}",
                        target=f"out/upload-{n}.md",
                        consequence=f"upload out/upload-{n}.md",
                        content=c.Content(text="upload\n"),
                    ),
                    DispatchEffect(task_id=tid, effect_id=f"eff-{n}", executor="bench-uploader"),
                    RecordResponse(task_id=tid, effect_id=f"eff-{n}", reported="timeout"),
                ]
        if shape == "judge":  # evidence attached, nobody judged it yet
            batch.append(c.AddCriterion(task_id=tid, criterion_id="c2", text="the tone is kept"))
            for crit in ("c1", "c2"):
                batch.append(
                    c.AttachEvidence(
                        task_id=tid,
                        criterion_id=crit,
                        kind="review",
                        content=c.Content(text=f"review of {crit}\n"),
                    )
                )
        tail: list[Any] = []
        if shape == "failed":
            tail.append(c.JudgeCriterion(task_id=tid, criterion_id="c1", status="failed"))
        if shape == "blocked":
            tail.append(c.SetStatus(task_id=tid, status="blocked", reason="waits on a person"))
        if shape == "exhausted":  # its budget ran out: only a person lets it go on
            tail.append(c.SetStatus(task_id=tid, status="budget_exhausted", reason="no calls left"))
        if shape == "completed":
            tail.append(
                c.JudgeCriterion(task_id=tid, criterion_id="c1", status="waived", note="n/a")
            )
            tail.append(c.SetStatus(task_id=tid, status="completed", reason="done"))
        for i in range(max(0, events - 1 - len(batch) - len(tail))):
            if i % 3 == 0:
                batch.append(c.ChargeBudget(task_id=tid, counter="model_calls", amount=1))
            else:
                batch.append(c.RecordNote(task_id=tid, text=f"step {i}: read a source"))
        s.execute_all(batch, agent)
        if tail:
            s.execute_all(tail, person)
        out.append(tid)
    return out


def _clone_all(
    source: sa.Connection,
    conn: sa.Connection,
    templates: list[str],
    tasks: int,
    report: Callable[[str], None],
) -> None:
    from store import schema as t
    from store.canonical import GENESIS_HASH, chain_hash_of_parts

    tables = [
        tb
        for tb in t.metadata.sorted_tables
        if "task_id" in tb.c and tb.name not in SKIP and tb.name != "events"
    ]
    rows_of: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for tid in templates:
        rows_of[tid] = {
            tb.name: [
                dict(r._mapping) for r in source.execute(sa.select(tb).where(tb.c.task_id == tid))
            ]
            for tb in tables
        }
        rows_of[tid]["events"] = [
            dict(r._mapping)
            for r in source.execute(
                sa.select(t.events).where(t.events.c.task_id == tid).order_by(t.events.c.seq)
            )
        ]
    by_name = {tb.name: tb for tb in tables}
    needing = templates[3:]
    quiet = templates[:3]
    t0 = time.perf_counter()
    pending: dict[str, list[dict[str, Any]]] = {}

    def flush() -> None:
        for name, rows in pending.items():
            if rows:
                conn.execute((t.events if name == "events" else by_name[name]).insert(), rows)
        pending.clear()

    for i in range(tasks):
        tmpl = needing[i // NEEDS_EVERY % len(needing)] if i % NEEDS_EVERY == 0 else quiet[i % 3]
        new_id = f"task-{i:06d}"
        title = f"Task {i:06d}: {_WORDS[i % len(_WORDS)]} {i % 97}"

        # Ids unique across the store (an approval's) get the clone's number too.
        own = [(a["approval_id"], f"{a['approval_id']}-{i}") for a in rows_of[tmpl]["approvals"]]

        def swap(
            v: Any, tmpl: str = tmpl, new_id: str = new_id, title: str = title, own: Any = own
        ) -> Any:
            if isinstance(v, str):
                v = v.replace(tmpl, new_id).replace(_TITLE, title)
                for old, new in own:
                    v = v.replace(old, new)
                return v
            if isinstance(v, dict | list):
                return json.loads(swap(json.dumps(v)))
            return v

        prev = GENESIS_HASH
        for e in rows_of[tmpl]["events"]:
            payload = swap(e["payload"])
            actor = json.dumps(
                {"id": e["actor_id"], "kind": e["actor_kind"], "name": e["actor_name"]},
                sort_keys=True,
                separators=(",", ":"),
            )
            digest = chain_hash_of_parts(
                prev,
                actor_json=actor,
                at=e["at"],
                fmt=e["format"],
                payload_json=payload,
                seq=e["seq"],
                task_id=new_id,
                type_name=e["type"],
            )
            row = {k: v for k, v in e.items() if k not in ("id", "db_role")}
            row.update(task_id=new_id, payload=payload, prev_hash=prev, hash=digest)
            pending.setdefault("events", []).append(row)
            prev = digest
        for name, rows in rows_of[tmpl].items():
            if name == "events":
                continue
            for r in rows:
                c = {k: swap(v) for k, v in r.items()}
                if name == "tasks":
                    c["head_hash"] = prev
                pending.setdefault(name, []).append(c)
        if len(pending.get("events", ())) >= 50_000:
            flush()
        if i and i % 10_000 == 0:
            report(f"  {i:,} tasks, {time.perf_counter() - t0:,.0f} s")
    flush()


def fill(s: Any, tasks: int, events: int, report: Callable[[str], None] = print) -> None:
    """Clone `tasks` tasks of `events` events each into the open store `s` (either engine)."""
    import shutil
    import tempfile

    from store import Store

    t0 = time.perf_counter()
    # The templates live in a scratch store: events are never deleted, so none is left over.
    with tempfile.TemporaryDirectory() as scratch:
        with Store.open(Path(scratch)) as src:
            templates = _templates(src, Path(scratch) / "workspace", events)
            with src.engine.begin() as source, s.engine.begin() as conn:
                _clone_all(source, conn, templates, tasks, report)
        blobs, mine = Path(scratch) / "blobs", getattr(s.blobs, "root", None)
        if isinstance(mine, Path) and blobs.is_dir():  # the templates' content, shared by all
            shutil.copytree(blobs, mine, dirs_exist_ok=True)
    report(f"  built {tasks:,} tasks x {events} events in {time.perf_counter() - t0:,.0f} s")


def build(directory: Path, tasks: int, events: int, url: str | None = None) -> Path:
    """Make the store in `directory` (on `url`'s PostgreSQL if given)."""
    from store import Store

    directory.mkdir(parents=True, exist_ok=True)
    with Store.open(directory, url=url) if url else Store.open(directory) as s:
        fill(s, tasks, events)
    return directory


def cached(tasks: int = 100_000, events: int = 20, report: Callable[[str], None] = print) -> Path:
    """The SQLite store of this shape, built once under ~/.cache/boris-bench/."""
    directory = CACHE / f"inbox-{GENERATOR}-{tasks}x{events}"
    marker = directory / "generated"
    if marker.exists():
        return directory
    if directory.exists():
        import shutil

        shutil.rmtree(directory)
    build(directory, tasks, events)
    marker.write_text("ok\n")
    return directory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--events-per-task", type=int, default=20)
    ap.add_argument("--full", action="store_true", help="100 events a task: 10,000,000 events")
    ap.add_argument("--store", type=Path, help="build here (default: the cache)")
    ap.add_argument("--postgres", help="fill this empty PostgreSQL database instead")
    a = ap.parse_args()
    events = 100 if a.full else a.events_per_task
    if a.store or a.postgres:
        build(a.store or Path("bench-store"), a.tasks, events, a.postgres)
    else:
        print(cached(a.tasks, events))


if __name__ == "__main__":
    main()
