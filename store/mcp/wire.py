"""What `boris mcp` reads off stdin before the SDK sees it: one JSON-RPC 2.0 message a line.

The SDK's stdio transport decodes stdin leniently (invalid UTF-8 becomes U+FFFD, so a damaged
line is acted on as if it were whole), reads a line whole however long it is, and drops every
line it cannot validate without a word, so a client that sent one waits for an answer that
never comes. Here each line is read with the cap of store.limits (`read_line`: at most
`MAX_LINE_BYTES` + 1 bytes of it are held; the rest of a longer line is skipped to its
newline, never held) and screened: a well-formed message passes on to the SDK unchanged;
anything else is answered as JSON-RPC 2.0 says: -32700 for bytes that are not UTF-8 JSON,
-32600 for JSON that is not one valid message (a batch, no `"jsonrpc": "2.0"`, no method,
nested too deep, too large), -32602 for a request whose params hold a lone surrogate (valid
JSON, such as `"\\ud800"`, but not UTF-8 text: the refusal object is its `data`).

The answer carries the request's id wherever it can be determined (the line is a JSON object
saying `"jsonrpc": "2.0"`, naming a method, with a string or integer id), else null: so a
client waiting on a request hears why it was refused. A line too large or too deep to parse
is read for its id without recursion (`request_id`): the whole of a line nested too deep, the
head of a line too large (its id, as far as the head shows it). Nesting is bounded here, on
the parsed value and without recursion, before anything walks the message recursively.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import IO, Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ..limits import (
    MAX_DEPTH,
    MAX_LINE_ITEMS,
    Line,
    line_problem,
    lone_surrogate,
    not_utf8,
    read_line,
)
from ..services import answers

#: A command may nest `MAX_DEPTH` levels (store.limits); a message carries it two levels down
#: (`params.arguments`), so that is as deep as a message may go.
MAX_MESSAGE_DEPTH = MAX_DEPTH + 2
#: How many tokens of a line's head are read for its id: JSON-RPC's members come first in
#: every client's messages; one that puts its id after a large params has it answered null.
HEAD_TOKENS = 10_000

RequestId = int | str


def _refused(
    code: int, message: str, request: RequestId | None = None, data: Any = None
) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request,
        error=types.ErrorData(code=code, message=" ".join(message.split()), data=data),
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


_MISSING = object()


def _as_id(jsonrpc: Any, method: Any, request: Any) -> RequestId | None:
    """The id a JSON-RPC 2.0 request names, or None when it is not one or names none that
    can be echoed (MCP's ids are strings or integers; a string must be UTF-8 text)."""
    if jsonrpc != "2.0" or not isinstance(method, str):
        return None
    if isinstance(request, bool) or not isinstance(request, int | str):
        return None
    if isinstance(request, str) and not_utf8(request, "id") is not None:
        return None
    return request


def _id_of(value: dict[str, Any]) -> RequestId | None:
    return _as_id(value.get("jsonrpc"), value.get("method"), value.get("id"))


# --- a line's id without parsing it whole ------------------------------------------------------

_SPACE = re.compile(rb"[ \t\n\r]*")
_SCALAR = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
#: The rest of a JSON string after its opening quote, closing quote included.
_STRING_REST = re.compile(
    rb'[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
)
_PUNCTUATION = frozenset(b"{}[],:")
#: The members of a message that make it a request with an id.
_ENVELOPE = ("jsonrpc", "method", "id")


class _Cut(Exception):
    """Bytes that are no JSON token: the end of a head cut short, or not JSON."""


def _tokens(data: bytes | bytearray) -> Iterator[tuple[str, int, int]]:
    """JSON tokens: punctuation as itself, "s" a string, "v" a number or literal, with where
    each starts and ends."""
    pos, end = 0, len(data)
    while True:
        match = _SPACE.match(data, pos)
        pos = match.end() if match is not None else pos
        if pos >= end:
            return
        byte = data[pos]
        if byte in _PUNCTUATION:
            yield chr(byte), pos, pos + 1
            pos += 1
            continue
        found = _STRING_REST.match(data, pos + 1) if byte == 0x22 else _SCALAR.match(data, pos)
        if found is None:
            raise _Cut
        yield ("s" if byte == 0x22 else "v"), pos, found.end()
        pos = found.end()


def request_id(
    data: bytes | bytearray, *, whole: bool, budget: int = HEAD_TOKENS
) -> RequestId | None:
    """The id of the JSON-RPC 2.0 request in `data`, read token by token without recursion,
    or None. With `whole`, `data` is the whole line and must be valid JSON; else it is a
    line's head, read until its envelope is known or `budget` tokens are spent."""
    return _scan(data, whole, budget)[1]


def _scan(data: bytes | bytearray, whole: bool, budget: int) -> tuple[bool, RequestId | None]:
    """Whether `data` reads as JSON (as far as it was read) and the request id it names."""
    members: dict[str, tuple[int, int] | None] = {}
    stack: list[str] = []
    expect = "value"
    key: str | None = None
    tokens = 0

    def envelope() -> RequestId | None:
        found: list[Any] = []
        for name in _ENVELOPE:
            where = members.get(name)
            found.append(_MISSING if where is None else json.loads(data[where[0] : where[1]]))
        return _as_id(*found)

    def close() -> str:
        stack.pop()
        return "after" if stack else "end"

    try:
        for kind, start, end in _tokens(data):
            tokens += 1
            if tokens > budget or expect == "end":  # too long to read, or more after it
                return (False, None) if whole or expect == "end" else (True, envelope())
            if expect in ("key", "first key"):
                if kind == "}" and expect == "first key":
                    expect = close()
                elif kind == "s":
                    top = len(stack) == 1 and stack[0] == "{"
                    key = json.loads(data[start:end]) if top and end - start <= 64 else None
                    expect = "colon"
                else:
                    return False, None
            elif expect == "colon":
                if kind != ":":
                    return False, None
                expect = "value"
            elif expect in ("value", "first value"):
                if kind == "]" and expect == "first value":
                    expect = close()
                    continue
                if kind not in ("{", "[", "s", "v"):
                    return False, None
                if len(stack) == 1 and stack[0] == "{" and key is not None:
                    members[key] = (start, end) if kind in ("s", "v") else None
                if kind in ("{", "["):
                    stack.append(kind)
                    expect = "first key" if kind == "{" else "first value"
                else:
                    expect = "after" if stack else "end"
            elif expect == "after":
                if kind == ",":
                    expect = "key" if stack[-1] == "{" else "value"
                elif kind == ("}" if stack[-1] == "{" else "]"):
                    expect = close()
                else:
                    return False, None
            if not whole and all(members.get(name) is not None for name in _ENVELOPE):
                return True, envelope()
    except _Cut:
        if whole:
            return False, None
    if whole and expect != "end":
        return False, None
    return True, envelope()


# --- the screen ------------------------------------------------------------------------------


def screen(line: bytes | Line) -> str | types.JSONRPCError | None:
    """One line off the wire: the message's text for the SDK, the error that answers it, or
    None for a blank line (framing between messages, not a message)."""
    read = line if isinstance(line, Line) else Line(line, False, len(line))
    data = read.data
    problem = line_problem(read, "one message")
    if problem is not None:
        return _refused(
            types.INVALID_REQUEST,
            f"Invalid Request: the message {problem}",
            request_id(data, whole=False),
        )
    if not data.strip():
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _refused(
            types.PARSE_ERROR,
            f"Parse error: the line is not UTF-8 (byte 0x{data[exc.start]:02x} at {exc.start})",
        )
    try:
        value = json.loads(text)
    except RecursionError:
        # Deeper than a parser goes: read without recursion, for whether it is JSON and its id.
        valid, request = _scan(data, True, 4 * MAX_LINE_ITEMS)
        if not valid:
            return _refused(types.PARSE_ERROR, "Parse error: not JSON")
        return _refused(
            types.INVALID_REQUEST,
            f"Invalid Request: nested more than {MAX_MESSAGE_DEPTH} levels deep",
            request,
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
    request = _id_of(value)
    if value.get("jsonrpc") != "2.0":
        return _refused(
            types.INVALID_REQUEST, 'Invalid Request: a message must say "jsonrpc": "2.0"'
        )
    if depth_exceeds(value, MAX_MESSAGE_DEPTH):
        return _refused(
            types.INVALID_REQUEST,
            f"Invalid Request: nested more than {MAX_MESSAGE_DEPTH} levels deep",
            request,
        )
    params = value.get("params", _MISSING)
    problem = lone_surrogate(params, "params") if params is not _MISSING else None
    if problem is not None:
        # The message is whole; what it asks with is not text: the call's own usage error.
        refusal = answers.refusal(answers.UsageError(problem))["error"]
        return _refused(types.INVALID_PARAMS, f"Invalid params: {problem}", request, data=refusal)
    problem = lone_surrogate({k: v for k, v in value.items() if k != "params"})
    if problem is not None:
        return _refused(types.INVALID_REQUEST, f"Invalid Request: {problem}", request)
    if isinstance(value.get("method"), str) and "id" in value and request is None:
        # The SDK would take it for a notification and answer nothing.
        return _refused(
            types.INVALID_REQUEST, "Invalid Request: a request's id is a string or an integer"
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
            request,
        )
    return text


class ScreenedLines:
    """The SDK's stdin: the lines `screen` passes, in order, read off `stream` with the cap
    of store.limits in a worker thread. A refused line is answered on the SDK's own write
    stream (its stdout writer owns the wire, so frames never tear) before the next line is
    read, so an answer is never lost to the end of input that follows it."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._answer: Callable[[SessionMessage], Awaitable[None]] | None = None
        self._ready = anyio.Event()

    def answer_through(self, send: Callable[[SessionMessage], Awaitable[None]]) -> None:
        """Where refusals go: the write stream the SDK's transport yields."""
        self._answer = send
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        await self._ready.wait()
        assert self._answer is not None
        while (line := await anyio.to_thread.run_sync(read_line, self._stream)) is not None:
            verdict = screen(line)
            if isinstance(verdict, str):
                yield verdict
            elif verdict is not None:
                await self._answer(SessionMessage(verdict))
