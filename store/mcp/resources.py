"""The task resources: each task's state (`boris://tasks/ID`) and its resume brief
(`boris://tasks/ID/brief`), as JSON."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import unquote

import mcp_types as types
from mcp.shared.exceptions import MCPError

from ..services import answers
from .worker import StoreWorker

T = TypeVar("T")
logger = logging.getLogger(__name__)
#: Refusal categories that are the caller's mistake (a bad URI, no such task): invalid params.
CALLERS_MISTAKE = frozenset({"usage", "not_found", "refused"})
TASK_URI = "boris://tasks/{task_id}"
BRIEF_URI = "boris://tasks/{task_id}/brief"
TEMPLATES = (
    types.ResourceTemplate(
        uri_template=TASK_URI,
        name="task state",
        description="A task's whole current state (JSON)",
        mime_type="application/json",
    ),
    types.ResourceTemplate(
        uri_template=BRIEF_URI,
        name="resume brief",
        description="A task's resume brief (JSON)",
        mime_type="application/json",
    ),
)


class Resources:
    """The resources of the worker's store: listed, read, and each request's store work."""

    def __init__(self, worker: StoreWorker) -> None:
        self.worker = worker

    def resource_list(self) -> list[types.Resource]:
        out = []
        for task in self.worker.store.tasks():
            tid = task.id
            out.append(
                types.Resource(
                    uri=TASK_URI.format(task_id=tid),
                    name=f"{tid} state",
                    title=f"{task.title} — state",
                    mime_type="application/json",
                )
            )
            out.append(
                types.Resource(
                    uri=BRIEF_URI.format(task_id=tid),
                    name=f"{tid} brief",
                    title=f"{task.title} — resume brief",
                    mime_type="application/json",
                )
            )
        return out

    async def step(self, fn: Callable[..., T], *args: Any) -> T:
        """Store work for a resource request; a failure is a JSON-RPC error with its code
        (the caller's: invalid params; the store's: internal) and the refusal object as
        `data`, never the SDK's catch-all (code 0 and a traceback on stderr)."""
        try:
            return await self.worker.run(fn, *args)
        except Exception as exc:
            error = answers.refusal(exc)["error"]
            if error["category"] == "internal":  # a bug: keep its traceback for the report
                logger.exception("resource request failed")
            code = (
                types.INVALID_PARAMS
                if error["category"] in CALLERS_MISTAKE
                else types.INTERNAL_ERROR
            )
            raise MCPError(code=code, message=error["message"], data=error) from None

    def read_resource(self, uri: str) -> str:
        prefix = "boris://tasks/"
        if not uri.startswith(prefix):
            raise answers.UsageError(f"no resource {uri!r}: boris://tasks/ID[/brief]")
        rest = uri[len(prefix) :]
        brief = rest.endswith("/brief")
        task_id = unquote(rest[: -len("/brief")] if brief else rest)
        value: Any
        store = self.worker.store
        if brief:
            from ..services.resume import resume_brief

            value = resume_brief(store, task_id)
        else:
            value = store.task(task_id)
        return json.dumps(answers.jsonable(value), default=str, sort_keys=True)
