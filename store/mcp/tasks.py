"""Waiting on a person as MCP has it now: tasks (2025-11-25) and elicitation.

(At 2026-07-28 the tasks are the `io.modelcontextprotocol/tasks` extension's and the notice a
multi round-trip request: store.mcp.sdk and store.mcp.mrtr; both forms are kept in the store by
store.mcp.board.)

A call that waits on a person (`wait_for_approval`, Claude Code's `permission_prompt`) may be
task-augmented (`tools/call` with a `task` field, to a tool whose `execution.taskSupport` is
`optional`): the server answers at once with a task, keeps waiting in the background, and the
client polls `tasks/get`, reads the answer with `tasks/result` (which blocks until the task is
done), lists with `tasks/list` and stops with `tasks/cancel`. A client that does not ask for a
task gets the blocking call as before. The SDK (mcp 2.3) defines the tasks' types only and
serves none of their methods, so this module serves them. Tasks are kept in the store
(store.mcp.board): a restarted server answers for the tasks of the one before it.

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

import re
from typing import Any

import anyio
import mcp_types as types
import sqlalchemy as sa

from .. import schema as t
from ..store import Store
from .board import (
    DEFAULT_TTL_MS,
    FORM_2025,
    FORM_2026,
    MAX_TTL_MS,
    POLL_INTERVAL_MS,
    RELATED_TASK,
    TERMINAL,
    Running,
    TaskBoard,
    Work,
)

__all__ = [
    "DEFAULT_TTL_MS",
    "FORM_2025",
    "FORM_2026",
    "MAX_TTL_MS",
    "NOTICE_SCHEMA",
    "POLL_INTERVAL_MS",
    "RELATED_TASK",
    "TASKS_VERSION",
    "TERMINAL",
    "Running",
    "TaskBoard",
    "Work",
    "can_elicit",
    "form_problem",
    "notice_text",
    "offer_to_person",
]

#: The protocol revision whose task forms this serves through `initialize`.
TASKS_VERSION = FORM_2025


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
