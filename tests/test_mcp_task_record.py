"""The record of MCP tasks (store.commands.mcp_tasks, store.mcp.board), on both engines:
one start and one end per task, in the log of the Boris task it waits on; read back only by
the agent that created it; never a tool."""

from __future__ import annotations

import pytest

from store import Actor, Store
from store import commands as c
from store.errors import CommandRejected
from store.mcp import board, tools

BOT = Actor(kind="agent", id="bot")
OTHER = Actor(kind="agent", id="other")


def test_an_mcp_task_starts_and_ends_once_in_its_tasks_log(store: Store) -> None:
    task = store.execute(c.CreateTask(title="T", owner="rita", objective="x"), BOT)
    mcp_id = f"{task}{board.SEPARATOR}0123456789abcdef"
    start = c.StartMcpTask(
        task_id=task,
        mcp_task_id=mcp_id,
        tool="wait_for_approval",
        arguments={"task_id": task, "approval_id": "A1"},
        ttl_ms=60000,
        poll_interval_ms=board.POLL_INTERVAL_MS,
        form="2026-07-28",
    )
    created_at = store.execute(start, BOT)
    with pytest.raises(CommandRejected):
        store.execute(start, BOT)  # one start
    assert board._stored(store, mcp_id, BOT) == (
        start.model_dump(include={"mcp_task_id", "tool", "arguments", "ttl_ms", "form"})
        | {"poll_interval_ms": board.POLL_INTERVAL_MS},
        created_at,
        {},
        "",
    )
    result = {"content": [{"type": "text", "text": "{}"}], "isError": False}
    end = c.EndMcpTask(
        task_id=task, mcp_task_id=mcp_id, status="completed", status_message="done", result=result
    )
    ended_at = store.execute(end, BOT)
    with pytest.raises(CommandRejected) as again:
        store.execute(end.model_copy(update={"status": "cancelled"}), BOT)
    assert again.value.rule == "mcp_task_ended"
    stored = board._stored(store, mcp_id, BOT)
    assert stored is not None
    assert stored[2]["status"] == "completed" and stored[2]["result"] == result
    assert stored[3] == ended_at
    # Another agent does not read it; an id of no record is unknown.
    assert board._stored(store, mcp_id, OTHER) is None
    assert board._stored(store, f"{task}{board.SEPARATOR}ffff", BOT) is None
    assert board._stored(store, "task-1-abc", BOT) is None
    with pytest.raises(CommandRejected):  # no start, no end
        store.execute(end.model_copy(update={"mcp_task_id": f"{task}~ffff"}), BOT)
    kinds = [e.type for e in store.events(task)]
    assert kinds.count("mcp_task.created") == 1 and kinds.count("mcp_task.ended") == 1


def test_boris_mcps_own_commands_are_not_tools() -> None:
    names = {s.name for s in tools.tool_specs(60)}
    assert not names & tools.SERVER_COMMANDS
    assert {"start_mcp_task", "end_mcp_task"} == tools.SERVER_COMMANDS
