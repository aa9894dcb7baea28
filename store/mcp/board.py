"""The MCP tasks of `boris mcp`, kept in the store so that they outlive the server process.

A task-augmented call of a tool that waits on a person is recorded, before the task is
answered, as an `mcp_task.created` event of the Boris task it waits on (its id, the call, its
TTL and poll interval, the tasks form it was created in: store.commands.mcp_tasks), and its end
as `mcp_task.ended` (status, message, the call's result). The MCP task id names that Boris task
(`BORIS_TASK~RANDOM`), so any `boris mcp` on the store finds the record again: a server started
after the one that created the task was killed answers `tasks/get` and `tasks/result` for it,
from the record when it ended, and otherwise by taking the call up again (`Resume`: a wait for
a person's decision resumes with what is left of its timeout; the decision itself was always in
the store). A call the store cannot record (its Boris task does not exist, a signed store
without the agent's key) runs as a task of this process only, and says so in its status.

Two servers may take up one task; the record takes one end only (`mcp_task_ended`), and the
other reads it back.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import sqlalchemy as sa
from mcp.shared.exceptions import MCPError

from .. import commands as c
from .. import schema as t
from ..errors import StoreError
from ..model import Actor
from ..store import Store
from .worker import StoreWorker

#: `_meta` key tying a message to a task (the 2025-11-25 spec's, and the extension's).
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: How long a finished task is kept when the client asks for no time (ms), and at most.
DEFAULT_TTL_MS = 60 * 60 * 1000
MAX_TTL_MS = 24 * 60 * 60 * 1000
#: How often a client is told to poll `tasks/get` (ms).
POLL_INTERVAL_MS = 1000
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: The tasks forms: the 2025-11-25 core protocol's, and the 2026-07-28 extension's.
FORM_2025 = "2025-11-25"
FORM_2026 = "2026-07-28"
#: Between the Boris task's id and the random part of an MCP task id (never in a task id).
SEPARATOR = "~"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def age_seconds(task: Running) -> float:
    """How long ago the task was created, in seconds."""
    return _age_seconds(task.created_at)


def _age_seconds(created_at: str) -> float:
    try:
        then = dt.datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=dt.UTC)
    return (dt.datetime.now(dt.UTC) - then).total_seconds()


@dataclass
class Running:
    """One task: a tool call going on (or done) in the background."""

    task_id: str
    tool: str
    ttl: int | None
    form: str = FORM_2025
    arguments: dict[str, Any] = field(default_factory=dict)
    created_at: str = field(default_factory=_now)
    last_updated_at: str = field(default_factory=_now)
    status: str = "working"
    status_message: str = ""
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    kept: bool = False  # recorded in the store (its Boris task's log)
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    @property
    def boris_task(self) -> str:
        return self.task_id.split(SEPARATOR, 1)[0]

    def say(self, status: str, message: str) -> None:
        """A new status (never after the task ended)."""
        if self.status in TERMINAL:
            return
        self.status, self.status_message = status, message
        self.last_updated_at = _now()

    def finish(
        self,
        status: str,
        result: dict[str, Any] | None,
        message: str,
        error: dict[str, Any] | None = None,
    ) -> bool:
        """End the task; False when it had ended already."""
        if self.status in TERMINAL:
            return False
        self.say(status, message)
        self.status, self.result, self.error = status, result, error
        self.done.set()
        return True

    def wire(self) -> dict[str, Any]:
        """The Task object of the 2025-11-25 spec, as the client reads it."""
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttl": self.ttl,
            "pollInterval": POLL_INTERVAL_MS,
        }
        if self.status_message:
            out["statusMessage"] = self.status_message
        return out

    def detailed(self) -> dict[str, Any]:
        """The extension's DetailedTask (2026-07-28, io.modelcontextprotocol/tasks, "Tasks"
        and "Task Status"): `ttlMs` and `pollIntervalMs`; a completed task carries its
        `result`, a failed one its JSON-RPC `error`. "This includes tool calls that returned
        results with `isError: true`": those are `completed` in this form, whereas
        2025-11-25 has them `failed`. Boris never asks for input here (no `inputRequests`):
        the decision is a person's in Boris, never the client's (store.mcp.tasks)."""
        status = self.status
        if status == "failed" and self.result is not None:
            status = "completed"
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": "working" if status == "input_required" else status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttlMs": self.ttl,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if self.status_message:
            out["statusMessage"] = self.status_message
        if status == "completed" and self.result is not None:
            out["result"] = self.result
        if status == "failed":
            out["error"] = self.error or {
                "code": types.INTERNAL_ERROR,
                "message": self.status_message or "the call failed",
            }
        return out

    def expired(self) -> bool:
        return (
            self.done.is_set()
            and self.ttl is not None
            and _age_seconds(self.created_at) > self.ttl / 1000
        )


Work = Callable[[Running], Awaitable[dict[str, Any]]]
#: What takes up a recorded task no server runs now (its server stopped): its work, or None
#: when the call cannot be taken up again (then it ends as failed, saying why).
Resume = Callable[[Running], Work | None]


def _stored(
    store: Store, task_id: str, actor: Actor
) -> tuple[dict[str, Any], str, dict[str, Any], str] | None:
    """The recorded start (payload, at) and end (payload, at; empty when it has not ended) of
    MCP task `task_id`, or None when the store has no such task of `actor`'s: an agent reads
    the tasks it created, never another agent's (a team store's server serves many)."""
    boris_task = task_id.split(SEPARATOR, 1)[0]
    if SEPARATOR not in task_id or not boris_task:
        return None
    with store.read() as conn:
        rows = conn.execute(
            sa.select(
                t.events.c.type,
                t.events.c.payload,
                t.events.c.at,
                t.events.c.actor_kind,
                t.events.c.actor_id,
            )
            .where(
                t.events.c.task_id == boris_task, t.events.c.type.in_(c.mcp_tasks.MCP_TASK_EVENTS)
            )
            .order_by(t.events.c.seq)
        ).all()
    start: tuple[dict[str, Any], str] | None = None
    end: tuple[dict[str, Any], str] = ({}, "")
    for row in rows:
        payload = json.loads(row.payload)
        if payload.get("mcp_task_id") != task_id:
            continue
        if row.type == "mcp_task.created":
            if (row.actor_kind, row.actor_id) != (actor.kind, actor.id):
                return None
            start = (payload, str(row.at))
        else:
            end = (payload, str(row.at))
    if start is None:
        return None
    return start[0], start[1], end[0], end[1]


class TaskBoard:
    """The tasks this server knows (its own, and recorded ones it was asked about), the task
    group their work runs in, and the store they are kept in (None: this process only)."""

    def __init__(self, worker: StoreWorker | None = None, resume: Resume | None = None) -> None:
        self.tasks: dict[str, Running] = {}
        self.worker = worker
        self.resume = resume
        self._group: anyio.abc.TaskGroup | None = None
        self._numbers = itertools.count(1)
        self._loading = anyio.Lock()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Open for the server's life: a task's work outlives the request that started it."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    async def start(
        self,
        tool: str,
        ttl: int | None,
        work: Work,
        *,
        arguments: dict[str, Any] | None = None,
        record_in: str | None = None,
        form: str = FORM_2025,
    ) -> Running:
        """A new task running `work`, recorded in Boris task `record_in` first (the extension:
        "A server MUST NOT return CreateTaskResult until the task is durably created")."""
        if self._group is None:
            raise MCPError(code=types.INTERNAL_ERROR, message="this server runs no tasks now")
        self._forget_expired()
        kept = DEFAULT_TTL_MS if ttl is None else max(0, min(int(ttl), MAX_TTL_MS))
        token = secrets.token_hex(8)
        task = Running(
            f"task-{next(self._numbers)}-{token}", tool, kept, form, dict(arguments or {})
        )
        if record_in and self.worker is not None and SEPARATOR not in record_in:
            task.task_id = f"{record_in}{SEPARATOR}{token}"
            try:
                task.created_at = await self.worker.run(self._record_start, task)
                task.last_updated_at, task.kept = task.created_at, True
            except StoreError as exc:
                task.task_id = f"task-{next(self._numbers)}-{token}"
                task.say("working", f"kept by this server process only (not in the store: {exc})")
        self.tasks[task.task_id] = task
        self._group.start_soon(self._run, task, work)
        return task

    def _record_start(self, task: Running) -> str:
        assert self.worker is not None
        command = c.StartMcpTask(
            task_id=task.boris_task,
            mcp_task_id=task.task_id,
            tool=task.tool,
            arguments=task.arguments,
            ttl_ms=task.ttl,
            poll_interval_ms=POLL_INTERVAL_MS,
            form=task.form,  # type: ignore[arg-type]  # one of the two forms
        )
        return str(self.worker.store.execute(command, self.worker.actor))

    async def _run(self, task: Running, work: Work) -> None:
        with task.scope:
            try:
                result = await work(task)
            except Exception as exc:  # the call's own failures are answers; this is a bug
                message = f"the call failed: {type(exc).__name__}: {exc}"
                error = {"code": types.INTERNAL_ERROR, "message": message}
                await self._end(task, "failed", None, message, error)
                return
            failed = bool(result.get("isError"))
            await self._end(
                task,
                "failed" if failed else "completed",
                result,
                "the call answered with a refusal" if failed else "the call answered",
            )
        if task.scope.cancelled_caught:
            await self._end(task, "cancelled", None, "cancelled by the client (tasks/cancel)")

    async def _end(
        self,
        task: Running,
        status: str,
        result: dict[str, Any] | None,
        message: str,
        error: dict[str, Any] | None = None,
    ) -> None:
        """Record the task's end (once), then end it here. Another server that ended it
        first wins: its end is read back."""
        if task.status in TERMINAL:
            return
        if task.kept and self.worker is not None:
            command = c.EndMcpTask(
                task_id=task.boris_task,
                mcp_task_id=task.task_id,
                status=status,  # type: ignore[arg-type]  # a terminal status
                status_message=message,
                result=result,
                error=error,
            )
            with anyio.CancelScope(shield=True):
                try:
                    at = str(
                        await self.worker.run(self.worker.store.execute, command, self.worker.actor)
                    )
                except StoreError:
                    stored = await self.worker.run(
                        _stored, self.worker.store, task.task_id, self.worker.actor
                    )
                    if stored is not None and stored[2]:
                        self._apply_end(task, stored[2], stored[3])
                        return
                    at = _now()  # not recorded: this process's own end
                task.finish(status, result, message, error)
                task.last_updated_at = at  # as recorded, whichever server reads it
                return
        task.finish(status, result, message, error)

    @staticmethod
    def _apply_end(task: Running, end: dict[str, Any], at: str) -> None:
        task.finish(
            str(end["status"]),
            end.get("result"),
            str(end.get("status_message") or ""),
            end.get("error"),
        )
        task.last_updated_at = at

    async def get(self, task_id: str) -> Running:
        """The task, from this server or from the record (taken up again when no server
        ended it). -32602 for an unknown or expired one (both forms say so)."""
        self._forget_expired()
        task = self.tasks.get(task_id)
        if task is None and self.worker is not None and SEPARATOR in task_id:
            async with self._loading:
                task = self.tasks.get(task_id) or await self._load(task_id)
        if task is None or task.expired():
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"no task {task_id!r} (unknown, or expired: the approval itself is "
                "still in the store)",
            )
        return task

    async def _load(self, task_id: str) -> Running | None:
        assert self.worker is not None
        stored = await self.worker.run(_stored, self.worker.store, task_id, self.worker.actor)
        if stored is None:
            return None
        start, created_at, end, ended_at = stored
        task = Running(
            task_id,
            str(start["tool"]),
            start.get("ttl_ms"),
            str(start.get("form") or FORM_2025),
            dict(start.get("arguments") or {}),
            created_at=created_at,
            last_updated_at=created_at,
            kept=True,
        )
        self.tasks[task_id] = task
        if end:
            self._apply_end(task, end, ended_at)
            return task
        work = self.resume(task) if self.resume is not None else None
        if work is None or self._group is None:
            await self._end(
                task,
                "failed",
                None,
                "the server that ran this call stopped before it ended, and the call cannot "
                "be taken up again: call the tool again",
                {"code": types.INTERNAL_ERROR, "message": "the server running the call stopped"},
            )
            return task
        task.say("working", "taken up again by a restarted server")
        self._group.start_soon(self._run, task, work)
        return task

    async def listed(self) -> list[dict[str, Any]]:
        """This server's tasks (2025-11-25 tasks/list; the extension has no tasks/list)."""
        self._forget_expired()
        return [task.wire() for task in self.tasks.values() if task.form == FORM_2025]

    async def cancel(self, task_id: str) -> Running:
        task = await self.get(task_id)
        if task.status in TERMINAL:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"task {task_id} is {task.status} already: it cannot be cancelled",
            )
        task.scope.cancel()
        await self._end(task, "cancelled", None, "cancelled by the client (tasks/cancel)")
        return task

    async def result(self, task_id: str) -> dict[str, Any]:
        """The call's answer once the task ended (2025-11-25 tasks/result blocks till then)."""
        task = await self.get(task_id)
        await task.done.wait()
        if task.result is None:
            raise MCPError(
                code=types.INVALID_PARAMS if task.status == "cancelled" else types.INTERNAL_ERROR,
                message=f"task {task_id} {task.status}: {task.status_message}",
            )
        meta = dict(task.result.get("_meta") or {})
        meta[RELATED_TASK] = {"taskId": task.task_id}
        return {**task.result, "_meta": meta}

    def _forget_expired(self) -> None:
        for task_id in [k for k, v in self.tasks.items() if v.expired()]:
            del self.tasks[task_id]
