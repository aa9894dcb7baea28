"""Telling the client's user where a person decides, at 2026-07-28: a multi round-trip request.

2026-07-28 has no server-initiated requests (specification/2026-07-28/basic/patterns/mrtr.mdx:
"Servers MUST send server-to-client requests (such as ... `elicitation/create`) using the MRTR
pattern"). So where 2025-11-25 sends an elicitation beside the wait (store.mcp.waits), a
`wait_for_approval` at 2026-07-28 from a client that declares elicitation, on an approval still
pending, first answers an `InputRequiredResult` ("resultType": "input_required") whose
`inputRequests` hold that one elicitation, the notice of store.mcp.tasks; the client asks its
user and retries the call with `inputResponses` under the same key, and the retry waits (or,
with the tasks extension, answers with a task: the extension says a server "SHOULD resolve all
MRTR exchanges synchronously before responding with a CreateTaskResult").

As over 2025-11-25, the answer decides nothing (store.mcp.tasks says why): any action goes on
to the wait. No `requestState` is sent (the spec: "at least one of `inputRequests` or
`requestState`"; a client "MUST NOT include one in the retry" when none was sent), so nothing of
the server's travels through the client. Only to a client that declared elicitation ("Servers
MUST NOT send an `inputRequests` that the client has not declared support for"). A retry
without our key is asked again ("SHOULD respond with a new InputRequiredResult requesting the
missing information again"); one whose answer is not an elicitation's result is an error
(-32602: "Servers SHOULD validate that the data provided by the client is a valid
InputResponses object").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from . import tasks, tools
from .worker import StoreWorker

#: The one input request's key (unique within the request, as the spec asks).
NOTICE_KEY = "boris_where_to_decide"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
ACTIONS = frozenset({"accept", "decline", "cancel"})


def elicits_forms(params: Mapping[str, Any]) -> bool:
    """Whether the request's client capabilities declare form elicitation (an empty
    `elicitation` object means form)."""
    meta = params.get("_meta")
    capabilities = meta.get(CLIENT_CAPABILITIES) if isinstance(meta, Mapping) else None
    elicitation = capabilities.get("elicitation") if isinstance(capabilities, Mapping) else None
    return isinstance(elicitation, Mapping) and (not elicitation or "form" in elicitation)


def answered(params: Mapping[str, Any]) -> str | None:
    """The action the client's user answered the notice with, or None when not answered."""
    responses = params.get("inputResponses")
    if not isinstance(responses, Mapping) or NOTICE_KEY not in responses:
        return None
    answer = responses[NOTICE_KEY]
    action = answer.get("action") if isinstance(answer, Mapping) else None
    if action not in ACTIONS:
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"inputResponses.{NOTICE_KEY} is not an elicitation's result "
            "(action: accept, decline or cancel)",
        )
    return str(action)


async def notice_first(
    worker: StoreWorker, name: str, params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The InputRequiredResult to answer a 2026-07-28 `wait_for_approval` with first, or None
    to go on with the call."""
    if name != tools.WAIT_TOOL or not elicits_forms(params) or answered(params) is not None:
        return None
    arguments = params.get("arguments")
    arguments = arguments if isinstance(arguments, Mapping) else {}
    task_id, approval_id = arguments.get("task_id"), arguments.get("approval_id")
    if not isinstance(task_id, str) or not isinstance(approval_id, str):
        return None  # the call itself says what is wrong
    try:
        now = await worker.run(tools.approval_now, worker.store, task_id, approval_id)
    except Exception:  # no such approval: the call itself answers with the refusal
        return None
    if now["decided"]:
        return None
    text = await worker.run(tasks.notice_text, worker.store, task_id, approval_id)
    return {
        "resultType": "input_required",
        "inputRequests": {
            NOTICE_KEY: {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": text,
                    "requestedSchema": tasks.NOTICE_SCHEMA,
                },
            }
        },
    }
