"""Waiting on a person as MCP has it now: tasks (2025-11-25) and elicitation.

A call that waits on a person (`wait_for_approval`, Claude Code's `permission_prompt`) may be
task-augmented (`tools/call` with a `task` field, to a tool whose `execution.taskSupport` is
`optional`): the server answers at once with a task, keeps waiting in the background, and the
client polls `tasks/get`, reads the answer with `tasks/result` (which blocks until the task is
done), lists with `tasks/list` and stops with `tasks/cancel`. A client that does not ask for a
task gets the blocking call as before. The SDK (mcp 2.3) defines the tasks' types only and
serves none of their methods, so this module serves them; tasks live as long as this server
process (a restarted server has none: the approval itself is in the store, and
`wait_for_approval` picks it up again).

Status: `working` while the decision waits in Boris's queue (the person is not the requestor,
so it is not the requestor's input that is required); `input_required` while an elicitation to
the client's user is outstanding; `completed` with the call's answer (`failed` when that answer
is a refusal); `cancelled` after `tasks/cancel`.

Elicitation only sends the person to Boris: `boris mcp` acts for an agent, and a decision is a
person's (`decide_approval` is a person's command; a team store refuses its event from an
agents' login). What comes back over the agent's own connection cannot be told apart from the
agent answering itself, so an "accept" decides nothing: accepted, declined or cancelled, the
approval stays pending in the desktop queue until a person decides it there or with the CLI.
An accepted answer whose content is not the form asked for (`form_problem`: a string for the
boolean, say) is not read as an answer at all: the task's status says it was ignored.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
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

from .. import schema as t
from ..store import Store

#: `_meta` key tying a message to a task (the 2025-11-25 spec's).
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: How long a finished task is kept when the client asks for no time (ms), and at most.
DEFAULT_TTL_MS = 60 * 60 * 1000
MAX_TTL_MS = 24 * 60 * 60 * 1000
#: How often a client is told to poll `tasks/get` (ms).
POLL_INTERVAL_MS = 1000
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: The protocol revision whose task extension this serves.
TASKS_VERSION = "2025-11-25"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Running:
    """One task: a tool call going on (or done) in the background."""

    task_id: str
    tool: str
    ttl: int
    created_at: str = field(default_factory=_now)
    last_updated_at: str = field(default_factory=_now)
    status: str = "working"
    status_message: str = ""
    result: dict[str, Any] | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    born: float = field(default_factory=anyio.current_time)

    def say(self, status: str, message: str) -> None:
        """A new status (never after the task ended)."""
        if self.status in TERMINAL:
            return
        self.status, self.status_message = status, message
        self.last_updated_at = _now()

    def finish(self, status: str, result: dict[str, Any] | None, message: str) -> None:
        if self.status in TERMINAL:
            return
        self.say(status, message)
        self.status, self.result = status, result
        self.done.set()

    def wire(self) -> dict[str, Any]:
        """The Task object of the spec, as the client reads it."""
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

    def expired(self) -> bool:
        return self.done.is_set() and anyio.current_time() - self.born > self.ttl / 1000


Work = Callable[[Running], Awaitable[dict[str, Any]]]


class TaskBoard:
    """The tasks of one server process, and the task group their work runs in."""

    def __init__(self) -> None:
        self.tasks: dict[str, Running] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._numbers = itertools.count(1)

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

    def start(self, tool: str, ttl: int | None, work: Work) -> Running:
        if self._group is None:
            raise MCPError(code=types.INTERNAL_ERROR, message="this server runs no tasks now")
        self._forget_expired()
        kept = DEFAULT_TTL_MS if ttl is None else max(0, min(int(ttl), MAX_TTL_MS))
        task = Running(f"task-{next(self._numbers)}-{secrets.token_hex(6)}", tool, kept)
        self.tasks[task.task_id] = task
        self._group.start_soon(self._run, task, work)
        return task

    async def _run(self, task: Running, work: Work) -> None:
        with task.scope:
            try:
                result = await work(task)
            except Exception as exc:  # the call's own failures are answers; this is a bug
                task.finish("failed", None, f"the call failed: {type(exc).__name__}: {exc}")
                return
            failed = bool(result.get("isError"))
            task.finish(
                "failed" if failed else "completed",
                result,
                "the call answered with a refusal" if failed else "the call answered",
            )
        if task.scope.cancelled_caught:
            task.finish("cancelled", None, "cancelled by the client (tasks/cancel)")

    def get(self, task_id: str) -> Running:
        self._forget_expired()
        task = self.tasks.get(task_id)
        if task is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"no task {task_id!r} on this server (unknown, expired, or the server "
                "restarted: the approval is still in the store)",
            )
        return task

    def listed(self) -> list[dict[str, Any]]:
        self._forget_expired()
        return [task.wire() for task in self.tasks.values()]

    def cancel(self, task_id: str) -> dict[str, Any]:
        task = self.get(task_id)
        if task.status in TERMINAL:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"task {task_id} is {task.status} already: it cannot be cancelled",
            )
        task.scope.cancel()
        task.finish("cancelled", None, "cancelled by the client (tasks/cancel)")
        return task.wire()

    async def result(self, task_id: str) -> dict[str, Any]:
        """The call's answer once the task ended (the spec's tasks/result blocks till then)."""
        task = self.get(task_id)
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


# --- elicitation: sending the person to Boris --------------------------------------------

#: The form: nothing to fill in. A decision cannot be taken here (see the module's doc).
NOTICE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "seen": {
            "type": "boolean",
            "title": "I will decide it in Boris",
            "description": "Decide in Boris Desktop or with the boris CLI; an answer here "
            "approves nothing.",
            "default": True,
        }
    },
}


def notice_text(store: Store, task_id: str, approval_id: str) -> str:
    """What the client's user is told: what waits, and where a person decides it."""
    with store.read() as conn:
        row = conn.execute(
            sa.select(t.approvals.c.consequence).where(
                t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id
            )
        ).first()
    what = f": {row.consequence}" if row is not None and row.consequence else ""
    return (
        f"Boris: approval {approval_id} of task {task_id} waits for a person{what}. "
        "Decide it in Boris Desktop (Decisions) or with "
        f"`boris approve {task_id} {approval_id} --actor person:YOU` (or reject / send-back). "
        "An answer here decides nothing: this connection acts for an agent."
    )


def can_elicit(session: Any) -> bool:
    """Whether the client declared form elicitation (2025-06-18 on, through the handshake)."""
    try:
        return bool(
            session.check_client_capability(
                types.ClientCapabilities(elicitation=types.ElicitationCapability())
            )
        )
    except Exception:  # no capabilities known: the queue it is
        return False


async def offer_to_person(
    session: Any, text: str, related_request_id: Any = None, related_task: str | None = None
) -> str:
    """Tell the client's user what waits and where to decide it; their answer's action
    (`accept`, `decline`, `cancel`), or `unanswered` when the client could not ask. Whatever
    it is, the approval stays pending: the desktop queue is where it is decided."""
    try:
        if related_task is not None:
            params = types.ElicitRequestFormParams.model_validate(
                {
                    "message": text,
                    "requestedSchema": NOTICE_SCHEMA,
                    "_meta": {RELATED_TASK: {"taskId": related_task}},
                }
            )
            answer = await session.send_request(
                types.ElicitRequest(params=params), types.ElicitResult
            )
        else:
            answer = await session.elicit_form(text, NOTICE_SCHEMA, related_request_id)
    except anyio.get_cancelled_exc_class():
        raise
    except Exception:  # the client could not ask (no back channel, an error): the queue
        return "unanswered"
    action = str(answer.action)
    problem = form_problem(NOTICE_SCHEMA, answer.content) if action == "accept" else None
    if problem is not None:  # malformed: not read as an answer, never coerced into one
        return f"an answer that did not match the form asked for ({problem}), ignored"
    return action


#: The JSON types a form's fields may have (elicitation's restricted schema), as Python's.
_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "number": (int, float),
    "integer": int,
    "boolean": bool,
    "array": list,
}


def form_problem(schema: dict[str, Any], content: Any) -> str | None:
    """What makes an accepted elicitation's content other than the form asked for, or None.
    2025-11-25, elicitation: "Servers SHOULD validate received data matches the requested
    schema". The schema is elicitation's restricted one: a flat object whose fields are
    strings (enum, oneOf, minLength, maxLength, pattern), numbers or integers (minimum,
    maximum), booleans, or arrays of choices (minItems, maxItems)."""
    if content is None:
        content = {}
    if not isinstance(content, dict):
        return "its content is not an object"
    fields: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in content:
            return f"{name} is missing"
    for name, value in content.items():
        field = fields.get(name)
        if field is None:
            if schema.get("additionalProperties") is False:
                return f"{name} was not asked for"
            continue
        problem = _field_problem(field, value)
        if problem is not None:
            return f"{name} {problem}"
    return None


def _choices(field: dict[str, Any], key: str) -> list[Any] | None:
    if "enum" in field:
        return list(field["enum"])
    if key in field:
        return [option.get("const") for option in field[key] if isinstance(option, dict)]
    return None


def _field_problem(field: dict[str, Any], value: Any) -> str | None:
    kind = field.get("type")
    expected = _FIELD_TYPES.get(str(kind))
    if expected is None:
        return None  # no type elicitation allows: nothing it could be held to
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON's 2.0 is the integer 2
    if isinstance(value, bool) != (kind == "boolean") or not isinstance(value, expected):
        return f"is {type(value).__name__}, not {kind}"
    if isinstance(value, str):
        choices = _choices(field, "oneOf")
        if choices is not None and value not in choices:
            return "is not one of its choices"
        if not field.get("minLength", 0) <= len(value) <= field.get("maxLength", len(value)):
            return "is not of the length asked for"
        if "pattern" in field and re.search(str(field["pattern"]), value) is None:
            return "does not match its pattern"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and not field.get("minimum", value) <= value <= field.get("maximum", value):
        return "is out of its range"
    if isinstance(value, list):
        items = field.get("items")
        choices = _choices(items if isinstance(items, dict) else {}, "anyOf")
        if any(not isinstance(v, str) or (choices is not None and v not in choices) for v in value):
            return "holds something that is not one of its choices"
        if not field.get("minItems", 0) <= len(value) <= field.get("maxItems", len(value)):
            return "holds more or fewer choices than asked for"
    return None
