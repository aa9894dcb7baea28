"""The calls that wait on a person: `wait_for_approval` (polled until a person decides, with
progress told meanwhile) and Claude Code's permission prompt (store.adapters.claude_code),
each with a notice beside the wait telling the client's user where a person decides it."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import anyio

from ..adapters import claude_code
from ..services import answers, escalations
from . import tasks, tools
from .worker import StoreWorker

T = TypeVar("T")
#: How often a waiting call looks at the approval again, and tells its progress.
POLL_SECONDS = 0.2
PROGRESS_SECONDS = 2.0
Progress = Callable[[float, float, str], Awaitable[None]]
#: Run beside a wait on (task_id, approval_id), cancelled when the wait ends: how a waiting
#: call tells the client's user where a person decides it (store.mcp.tasks).
Notice = Callable[[str, str], Coroutine[Any, Any, None]]
#: The tools that wait on a person: they may run as MCP tasks (`execution.taskSupport`).
TASK_TOOLS = frozenset({tools.WAIT_TOOL, claude_code.PERMISSION_TOOL})


def _escalate(store: Any, actor: Any) -> None:
    try:
        escalations.escalate_due(store, actor)
    except Exception:  # an escalation's trouble never ends an agent's wait
        escalations.log.exception("boris mcp: escalations failed")


class Waits:
    """The waits of one server: at most `max_wait_seconds` each; the permission prompt's
    settings in `prompts`."""

    def __init__(
        self, worker: StoreWorker, max_wait_seconds: float, prompts: claude_code.PromptSettings
    ) -> None:
        self.worker = worker
        self.max_wait_seconds = max_wait_seconds
        self.prompts = prompts

    async def wait_for_approval(
        self, arguments: dict[str, Any], progress: Progress | None = None
    ) -> dict[str, Any]:
        """Poll the approval until a person decides it (or it expires, goes stale, is
        revoked), for at most `timeout_seconds`. Cancelling the call ends the wait. While it
        waits, `progress` is told every few seconds (a client that asked for progress keeps
        its request timer alive that way)."""
        task_id = str(arguments.get("task_id") or "")
        approval_id = str(arguments.get("approval_id") or "")
        if not task_id or not approval_id:
            raise answers.UsageError("wait_for_approval needs task_id and approval_id")
        timeout = arguments.get("timeout_seconds", min(300.0, self.max_wait_seconds))
        # A number as the schema says: not a text that float() happens to read, nor a bool.
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            shown = json.dumps(timeout, default=str)[:40]
            raise answers.UsageError(f"timeout_seconds must be a number of seconds, not {shown}")
        if not 0 <= timeout <= self.max_wait_seconds:  # nan fails this too
            raise answers.UsageError(
                f"timeout_seconds must be between 0 and {self.max_wait_seconds:g}"
            )
        worker = self.worker
        started = time.monotonic()
        told = started
        ticked = started - escalations.EVERY_SECONDS
        while True:
            if time.monotonic() - ticked >= escalations.EVERY_SECONDS:
                # While an agent waits, its server records the escalations that come due
                # (issue 42): nobody else may be running to do it.
                ticked = time.monotonic()
                await worker.run(_escalate, worker.store, worker.actor)
            now = await worker.run(
                tools.approval_now,
                worker.store,
                task_id,
                approval_id,
                arguments.get("lease_token"),
                worker.actor,
            )
            waited = round(time.monotonic() - started, 3)
            if now["decided"] or waited >= timeout:
                return answers.ok(now, timed_out=not now["decided"], waited_seconds=waited)
            if progress is not None and time.monotonic() - told >= PROGRESS_SECONDS:
                told = time.monotonic()
                await progress(waited, timeout, f"approval {approval_id} is {now['state']}")
            await anyio.sleep(min(POLL_SECONDS, max(timeout - waited, 0.0)))

    async def beside(
        self, wait: Awaitable[T], notice: Notice | None, task_id: str, approval_id: str
    ) -> T:
        """The wait, with the notice beside it (cancelled once the wait ends): a notice never
        holds up the wait, nor outlives it."""
        if notice is None or not task_id or not approval_id:
            return await wait
        async with anyio.create_task_group() as beside:
            beside.start_soon(notice, task_id, approval_id)
            result = await wait
            beside.cancel_scope.cancel()
        return result

    async def permission_prompt(
        self,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        notice: Notice | None = None,
    ) -> dict[str, Any]:
        """Claude Code's permission prompt: the call's intent recorded, an approval of exactly
        its input asked for, a person's decision waited for (at most the configured time),
        and Claude Code's answer, `allow` with the approved input or `deny` with why. Never
        an error: whatever fails denies, so nothing runs that Boris did not record."""
        prompts = self.prompts
        timeout = min(prompts.timeout_seconds, self.max_wait_seconds)

        async def wait(task_id: str, approval_id: str, _: float) -> tuple[dict[str, Any], bool]:
            waited = await self.beside(
                self.wait_for_approval(
                    {"task_id": task_id, "approval_id": approval_id, "timeout_seconds": timeout},
                    progress,
                ),
                notice,
                task_id,
                approval_id,
            )
            return dict(waited["result"]), bool(waited["timed_out"])

        return await claude_code.answer_prompt(
            self.worker.store,
            self.worker.actor,
            dataclasses.replace(prompts, timeout_seconds=timeout),
            arguments,
            in_store=self.worker.run,
            wait=wait,
        )

    def notice(self, session: Any, request_id: Any, task: tasks.Running | None) -> Notice | None:
        """Beside a wait: when the client declared elicitation, its user is told what waits
        and where a person decides it (the answer decides nothing: store.mcp.tasks says why);
        a task's status says where the decision stands. None when there is nothing to do."""
        elicit = tasks.can_elicit(session)
        if not elicit and task is None:
            return None
        worker = self.worker

        async def notice(task_id: str, approval_id: str) -> None:
            now = await worker.run(tools.approval_now, worker.store, task_id, approval_id)
            if now["decided"]:
                return
            queue = f"approval {approval_id} waits for a person in Boris Desktop's queue"
            if task is not None:
                task.say("working", queue)
            if not elicit:
                return
            text = await worker.run(tasks.notice_text, worker.store, task_id, approval_id)
            if task is not None:
                task.say("input_required", f"{queue}; the client's user is told where to decide")
            related = None if task is not None else request_id
            action = await tasks.offer_to_person(
                session, text, related, None if task is None else task.task_id
            )
            if task is not None:
                task.say("working", f"{queue} (the client's user answered: {action})")

        return notice


PERMISSION_SPEC = tools.ToolSpec(
    claude_code.PERMISSION_TOOL,
    "Claude Code's permission prompt, for `claude -p --permission-prompt-tool "
    "mcp__boris__permission_prompt` (not for agents to call): records the tool call's intent "
    "in the task `boris mcp --task` names, asks a person in Boris to approve exactly its input, "
    "waits for the decision and answers {behavior: allow, updatedInput} with the approved "
    "input (a person's edit when they made one) or {behavior: deny, message}.",
    {
        "type": "object",
        "properties": {
            "tool_name": {"type": "string", "description": "The tool requesting permission"},
            "input": {"type": "object", "description": "The input for the tool"},
            "tool_use_id": {"type": "string", "description": "The tool use request's id"},
        },
        "required": ["tool_name", "input"],
    },
    None,
    False,
)
