"""A writer for the crash tests to kill: an agent's work on real files, step by step.

    python tests/crash_writer.py STORE_DIR WORKSPACE STEP [STEP ...]

Each step is `verb` or `verb:name` (name labels an effect; its target is `<name>.md` in the
workspace). After each step's boundary the writer prints one line, `MARK <step> <json>`,
and flushes; after the last step it blocks until it is killed. A `*_tx` step prints its
mark and blocks *inside* its write transaction, so the kill lands before the commit.

The tests start it through a multiprocessing fork server that has imported this module
(and so the store) once: `serve` is the same writer with its lines sent down a pipe, and
each writer is a process of its own, started in milliseconds instead of a second.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NoReturn

from store import Actor, Store
from store import commands as c
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.commands.effects import DispatchEffect, PlanEffect, RecordResponse

AGENT = Actor(kind="agent", id="writer-crash")
ANA = Actor(kind="person", id="ana", name="Ana Lind")
INTENDED = "the final report\n"
PARTIAL = "the fin"
DRAFT = "draft notes, edited locally\n"
HOLD_SECONDS = 60


def _print_line(line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.flush()


_out: Callable[[str], None] = _print_line


def mark(step: str, **info: Any) -> None:
    _out(f"MARK {step} {json.dumps(info, sort_keys=True)}\n")


def hold() -> NoReturn:
    time.sleep(HOLD_SECONDS)
    # Nobody killed us: say so, and exit in a way the parent cannot mistake for a kill.
    sys.stderr.write("crash_writer: held for a minute and was not killed\n")
    os._exit(3)


def wal_digest(s: Store) -> str:
    """What the WAL holds now. Not its size: once SQLite has checkpointed and restarted the
    WAL, new frames overwrite old ones inside the file instead of growing it."""
    db_file = s.location.sqlite_file
    assert db_file is not None
    wal = db_file.with_name(db_file.name + "-wal")
    return hashlib.sha256(wal.read_bytes()).hexdigest() if wal.exists() else ""


def run(store_dir: str, workspace: str, steps: list[str]) -> NoReturn:
    ws = Path(workspace)
    s = Store.open(store_dir)
    tid = ""
    effects: dict[str, str] = {}
    approvals: dict[str, str] = {}

    def committed() -> dict[str, Any]:
        state = s.task(tid)
        return {"last_seq": state["last_seq"], "head_hash": state["head_hash"]}

    for n, step in enumerate(steps):
        verb, _, name = step.partition(":")
        last = n == len(steps) - 1
        info: dict[str, Any] = {}
        if verb == "create":
            tid = s.execute(
                c.CreateTask(
                    title="report", owner="ana", objective="ship it", scope_paths=[str(ws)]
                ),
                AGENT,
            )
            s.execute(c.AddCriterion(task_id=tid, text="report saved", criterion_id="saved"), AGENT)
            info["task_id"] = tid
        elif verb == "draft":
            # A local edit: a file the agent changed in its workspace, kept as a draft.
            (ws / "notes.md").write_text(DRAFT)
            r = s.execute(
                c.RecordArtifact(
                    task_id=tid,
                    artifact_id="notes",
                    name="notes",
                    role="draft",
                    content=c.Content(path=str(ws / "notes.md")),
                ),
                AGENT,
            )
            info["digest"] = r["digest"]
        elif verb == "plan":
            effects[name] = s.execute(
                PlanEffect(
                    task_id=tid,
                    effect_id=f"eff-{name}",
                    target=f"{name}.md",
                    consequence=f"overwrite {name}.md with the final report",
                    content=c.Content(text=INTENDED),
                    requires_approval=True,
                    policy="writes need a person",
                ),
                AGENT,
            )
            info["effect_id"] = effects[name]
        elif verb == "request":
            approvals[name] = s.execute(
                RequestApproval(task_id=tid, effect_id=effects[name], policy="writes"), AGENT
            )
            info["approval_id"] = approvals[name]
        elif verb == "approve":
            s.execute(
                DecideApproval(
                    task_id=tid, approval_id=approvals[name], decision="approved", note="ok"
                ),
                ANA,
            )
        elif verb == "dispatch":
            info["attempt_no"] = s.execute(
                DispatchEffect(task_id=tid, effect_id=effects[name], executor="tool:save"), AGENT
            )
        elif verb == "write":
            # The executor does its work; its response never reaches the record.
            (ws / f"{name}.md").write_text(INTENDED)
        elif verb == "write_partial":
            (ws / f"{name}.md").write_text(PARTIAL)
        elif verb == "respond_partial":
            s.execute(
                RecordResponse(
                    task_id=tid,
                    effect_id=effects[name],
                    reported="partial",
                    response={"written_bytes": len(PARTIAL)},
                ),
                AGENT,
            )
        elif verb == "checkpoint":
            info["checkpoint_id"] = s.execute(
                WriteCheckpoint(task_id=tid, reason="milestone"), AGENT
            )
        elif verb in {"dispatch_tx", "checkpoint_tx"}:
            assert last, f"{step} blocks inside its transaction: it must be the last step"
            before = committed()
            with s.transaction() as tx:
                # A one-page cache makes SQLite spill the transaction's dirty pages into the
                # WAL before the commit: the kill then leaves uncommitted frames on disk.
                tx.conn.connection.driver_connection.execute("PRAGMA cache_size = 1")  # type: ignore[union-attr]
                wal_before = wal_digest(s)
                if verb == "dispatch_tx":
                    cmd: c.Command = DispatchEffect(
                        task_id=tid, effect_id=effects[name], executor="tool:save"
                    )
                else:
                    cmd = WriteCheckpoint(task_id=tid, reason="handoff")
                result = c.execute(tx, cmd, AGENT)
                mark(
                    step,
                    result=result,
                    emitted=[e.type for e in tx.emitted],
                    wal_before=wal_before,
                    wal_after=wal_digest(s),
                    **before,
                )
                hold()
        else:
            raise SystemExit(f"crash_writer: unknown step {step!r}")
        mark(step, **info, **committed())
    hold()


def serve(conn: Connection, store_dir: str, workspace: str, steps: list[str]) -> NoReturn:
    """The writer in a fork-server process: its lines go down `conn`, and so does the
    traceback if it fails, so that the test can show why."""
    global _out
    _out = lambda line: conn.send_bytes(line.encode())  # noqa: E731
    try:
        run(store_dir, workspace, steps)
    except BaseException:
        conn.send_bytes(("ERROR " + traceback.format_exc()).encode())
        raise


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3:])
