"""MCP tasks in the record (issue 42): a tool call `boris mcp` runs as an MCP task is an event
of the task it waits on (`mcp_task.created`), and so is its end (`mcp_task.ended`), so a
server started again answers `tasks/get` and `tasks/result` for it (store.mcp.tasks).

Not fenced by the task's lease: they record that a call is waited on and how it ended,
nothing of the task's work. No projection: store.mcp.tasks reads the two events back.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

import sqlalchemy as sa
from pydantic import Field

from .. import events as ev
from .. import schema as t
from ..errors import CommandRejected
from ..model import Actor
from ..tx import Tx
from .core import TaskCommand, handles

#: The MCP tasks' event types, as store.mcp.tasks reads them back.
MCP_TASK_EVENTS = (ev.McpTaskCreated.TYPE, ev.McpTaskEnded.TYPE)


class StartMcpTask(TaskCommand):
    """`boris mcp`'s own: a tool call it runs as an MCP task (not a tool for agents)."""

    type: Literal["start_mcp_task"] = "start_mcp_task"
    mcp_task_id: str = Field(min_length=1, max_length=200)
    tool: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    ttl_ms: int | None = Field(default=None, ge=0)
    poll_interval_ms: int = Field(ge=0)
    form: Literal["2025-11-25", "2026-07-28"]
    FENCED: ClassVar[bool] = False


class EndMcpTask(TaskCommand):
    """`boris mcp`'s own: an MCP task's end, once (not a tool for agents)."""

    type: Literal["end_mcp_task"] = "end_mcp_task"
    mcp_task_id: str = Field(min_length=1, max_length=200)
    status: Literal["completed", "failed", "cancelled"]
    status_message: str = ""
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    FENCED: ClassVar[bool] = False


def _recorded(tx: Tx, task_id: str, mcp_task_id: str) -> set[str]:
    """The MCP task's event types already in the task's log."""
    rows = tx.conn.execute(
        sa.select(t.events.c.type, t.events.c.payload).where(
            t.events.c.task_id == task_id, t.events.c.type.in_(MCP_TASK_EVENTS)
        )
    )
    return {r.type for r in rows if json.loads(r.payload).get("mcp_task_id") == mcp_task_id}


@handles(StartMcpTask)
def _start(tx: Tx, cmd: StartMcpTask, actor: Actor) -> str:
    tx.task(cmd.task_id)
    if _recorded(tx, cmd.task_id, cmd.mcp_task_id):
        raise CommandRejected(f"MCP task {cmd.mcp_task_id} is recorded already")
    event = tx.emit(
        cmd.task_id,
        ev.McpTaskCreated(
            mcp_task_id=cmd.mcp_task_id,
            tool=cmd.tool,
            arguments=cmd.arguments,
            ttl_ms=cmd.ttl_ms,
            poll_interval_ms=cmd.poll_interval_ms,
            form=cmd.form,
        ),
        actor,
    )
    return event.at


@handles(EndMcpTask)
def _end(tx: Tx, cmd: EndMcpTask, actor: Actor) -> str:
    tx.task(cmd.task_id)
    recorded = _recorded(tx, cmd.task_id, cmd.mcp_task_id)
    if ev.McpTaskCreated.TYPE not in recorded:
        raise CommandRejected(f"no MCP task {cmd.mcp_task_id} in task {cmd.task_id}")
    if ev.McpTaskEnded.TYPE in recorded:
        raise CommandRejected(
            f"MCP task {cmd.mcp_task_id} has ended already", rule="mcp_task_ended"
        )
    event = tx.emit(
        cmd.task_id,
        ev.McpTaskEnded(
            mcp_task_id=cmd.mcp_task_id,
            status=cmd.status,
            status_message=cmd.status_message,
            result=cmd.result,
            error=cmd.error,
        ),
        actor,
    )
    return event.at
