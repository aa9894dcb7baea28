"""What `boris mcp` reads off stdin before the SDK sees it: one JSON-RPC 2.0 message a line.

The SDK's stdio transport decodes stdin leniently (invalid UTF-8 becomes U+FFFD, so a damaged
line is acted on as if it were whole) and drops every line it cannot validate without a word,
so a client that sent one waits for an answer that never comes. Here each line is screened
first: a well-formed message passes on to the SDK unchanged; anything else is answered as
JSON-RPC 2.0 says, with `"id": null` (the id of a malformed message cannot be trusted):
-32700 for bytes that are not UTF-8 JSON, -32600 for JSON that is not one valid message
(a batch, no `"jsonrpc": "2.0"`, no method, nested too deep). Nesting is bounded here, on the
parsed value and without recursion, before anything walks the message recursively.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ..limits import MAX_DEPTH

#: A command may nest `MAX_DEPTH` levels (store.limits); a message carries it two levels down
#: (`params.arguments`), so that is as deep as a message may go.
MAX_MESSAGE_DEPTH = MAX_DEPTH + 2


def _refused(code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)
    )


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether objects and arrays nest more than `limit` levels inside `value` (the value
    itself is level 0), found without recursion so that no depth can exhaust the stack."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                pending.append((child, depth + 1))
    return False


def screen(line: bytes) -> str | types.JSONRPCError | None:
    """One line off the wire: the message's text for the SDK, the error that answers it, or
    None for a blank line (framing between messages, not a message)."""
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _refused(
            types.PARSE_ERROR,
            f"Parse error: the line is not UTF-8 (byte 0x{line[exc.start]:02x} at {exc.start})",
        )
    try:
        value = json.loads(text)
    except RecursionError:
        return _refused(
            types.INVALID_REQUEST,
            f"Invalid Request: nested more than {MAX_MESSAGE_DEPTH} levels deep",
        )
    except ValueError as exc:
        return _refused(types.PARSE_ERROR, f"Parse error: not JSON ({exc})")
    if isinstance(value, list):
        return _refused(
            types.INVALID_REQUEST,
            "Invalid Request: a batch (a JSON array) is not supported; send one message a line",
        )
    if not isinstance(value, dict):
        return _refused(types.INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    if value.get("jsonrpc") != "2.0":
        return _refused(
            types.INVALID_REQUEST, 'Invalid Request: a message must say "jsonrpc": "2.0"'
        )
    if depth_exceeds(value, MAX_MESSAGE_DEPTH):
        return _refused(
            types.INVALID_REQUEST,
            f"Invalid Request: nested more than {MAX_MESSAGE_DEPTH} levels deep",
        )
    try:
        # The SDK's own reading of the line: what passes here, it acts on.
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:])  # [0] names the union's member
        return _refused(
            types.INVALID_REQUEST,
            f"Invalid Request: {where + ': ' if where else ''}{first['msg']}",
        )
    return text


class ScreenedLines:
    """The SDK's stdin: the lines `screen` passes, in order. A refused line is answered on
    the SDK's own write stream (its stdout writer owns the wire, so frames never tear) before
    the next line is read, so an answer is never lost to the end of input that follows it."""

    def __init__(self, lines: AsyncIterable[bytes]) -> None:
        self._lines = lines
        self._answer: Callable[[SessionMessage], Awaitable[None]] | None = None
        self._ready = anyio.Event()

    def answer_through(self, send: Callable[[SessionMessage], Awaitable[None]]) -> None:
        """Where refusals go: the write stream the SDK's transport yields."""
        self._answer = send
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        await self._ready.wait()
        assert self._answer is not None
        async for line in self._lines:
            verdict = screen(line)
            if isinstance(verdict, str):
                yield verdict
            elif verdict is not None:
                await self._answer(SessionMessage(verdict))
