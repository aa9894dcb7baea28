"""What any input may hold, defined once for every path into the record.

The CLI, the MCP server, `boris ingest` and the Python API all build the same command models,
which check their values here; export writes what the commands accepted; import reads a
package with limits derived from these (store.services.archive.common), so whatever a command
accepted can be exported and imported again. Three rules, the same on SQLite and PostgreSQL
so a record can move between them:

- numbers are finite and within `MAX_NUMBER` (no inf, -inf, nan, nor 1e400, which JSON
  parsers turn into inf): a budget, a hash-chained payload and a PostgreSQL column all hold
  them the same way;
- text holds no NUL character (PostgreSQL's text cannot store one) and is UTF-8: no lone
  surrogate, which JSON can escape (`"\\ud800"`) and Python makes of a byte that is not
  UTF-8 in an argument, a file name or stdin (`\\udcff`), and which no UTF-8 record holds;
- sizes: one text at most `MAX_TEXT_BYTES`, one command at most `MAX_COMMAND_BYTES` of JSON
  (its encoded size, as `json_cost` counts it) and `MAX_COMMAND_ITEMS` JSON values, a
  content carried as a blob at most `MAX_BLOB_BYTES`.

Input read off a stream (a line of `boris ingest`, an MCP message, a JSON file) is read with
a cap before any parser sees it (`read_line`, `read_capped`): at most `MAX_LINE_BYTES` and
`MAX_LINE_ITEMS` JSON values, so a line beyond them is refused having held about the limit,
never the line, and no parse of it costs more than its limit does.
"""

from __future__ import annotations

import json
import math
import re
from typing import IO, Any, NamedTuple

MiB = 1024 * 1024

#: One text (a title, a criterion, a note, a string inside a free-form payload), in UTF-8.
MAX_TEXT_BYTES = 1 * MiB
#: One command as JSON (every text in it, escaped as the record stores it).
MAX_COMMAND_BYTES = 3 * MiB
#: JSON values one command may build, counted as import counts them: its `,` `:` `{` `[`.
MAX_COMMAND_ITEMS = 200_000
#: What the store adds to a command's values in its event (ids, digests, producer, actor,
#: time) and what the exported line adds around the payload, at most.
EVENT_OVERHEAD_BYTES = 1 * MiB
EVENT_OVERHEAD_ITEMS = 50_000
#: One line of an exported events.jsonl: the payload is a JSON string inside the line, so
#: each of its quotes and backslashes is escaped once more (at most twice its size).
MAX_EVENT_LINE_BYTES = 2 * (MAX_COMMAND_BYTES + EVENT_OVERHEAD_BYTES)
MAX_EVENT_LINE_ITEMS = MAX_COMMAND_ITEMS + EVENT_OVERHEAD_ITEMS
#: One line of JSON read off a stream (a line of `boris ingest`, one MCP message, a JSON file
#: such as a manifest): a command and the content it carries inline (text or base64), which
#: is what may make a line larger than a command. A larger content is recorded from its
#: file (`path`, `--file`), streamed, up to `MAX_BLOB_BYTES`.
MAX_LINE_BYTES = 32 * MiB
#: JSON values one line may build, counted before it is parsed (its `,` `:` `{` `[` outside
#: strings): a command's, and the few of the message around it.
MAX_LINE_ITEMS = MAX_COMMAND_ITEMS + 1_000
#: One content stored as a blob (an artifact's or an effect's): one member of a package.
MAX_BLOB_BYTES = 512 * MiB
#: Numbers: a PostgreSQL bigint holds every integer within it (a larger one was a DataError
#: there and not on SQLite), and a sum of budget charges stays finite.
MAX_NUMBER = 2**63 - 1
#: Objects and arrays inside one another: a deeper input is refused before anything walks it
#: recursively (here, in pydantic, in a JSON encoder).
MAX_DEPTH = 100
#: A checkpoint's identities in another system (`WriteCheckpoint.external`: a LangGraph
#: thread and checkpoint id): a few short names and ids, never a state.
MAX_EXTERNAL_IDS = 16
MAX_EXTERNAL_ID_CHARS = 256
#: A context manifest (store.commands.manifests): items included plus omitted, each named by
#: digest, never the content; and a configuration's tool catalogue. A request of a large
#: model holds thousands of messages at most; more is a dump, not a manifest.
MAX_MANIFEST_ITEMS = 5_000
MAX_CONFIGURATION_TOOLS = 1_000

_JSON_STRING = json.JSONEncoder(ensure_ascii=False).encode
_SEPARATORS = (",", ":", "{", "[")


def json_cost(value: Any) -> tuple[int, int]:
    """What `value` costs as JSON: its size in bytes as the record writes it (UTF-8, no
    insignificant white space: `canonical_json`'s length, exactly) and the JSON values it
    builds, counted as import counts them (its `,` `:` `{` `[`, in strings too). A value the
    rules refuse is counted up to the first problem."""
    tally = _Tally(True)
    _walk(value, "", tally)
    return tally.bytes, tally.items


class InputRefused(ValueError):
    """An input value breaks one of the rules above; the message says which, and where.

    A ValueError so that pydantic reports it from a validator as a validation error: the one
    line every caller shows for malformed input."""


def not_utf8(text: str, where: str) -> str | None:
    """What is wrong with `text` as UTF-8 text, in one line (a lone surrogate: where it is
    and where it may have come from), or None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return _surrogate(text, exc.start, where)
    return None


def _surrogate(text: str, at: int, where: str) -> str:
    code = ord(text[at])
    if 0xDC80 <= code <= 0xDCFF:  # how Python carries a byte that is not UTF-8
        origin = (
            f"byte 0x{code - 0xDC00:02x}, which is not UTF-8, from an argument, a file name "
            f"or stdin; or a \\u{code:04x} escape in JSON"
        )
    else:
        origin = f"a \\u{code:04x} escape in JSON without the other half of its pair"
    return (
        f"{where or 'the input'} is not UTF-8 text: character {at} is a lone surrogate "
        f"U+{code:04X} ({origin}), which no text in the record may hold"
    )


def lone_surrogate(value: Any, where: str = "") -> str | None:
    """The first lone surrogate in a parsed JSON value's strings and keys, in one line, or
    None. Without recursion, so that no depth a parser accepted exhausts the stack."""
    pending: list[tuple[Any, str]] = [(value, where)]
    while pending:
        item, here = pending.pop()
        if isinstance(item, str):
            problem = not_utf8(item, here)
            if problem is not None:
                return problem
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                path = f"{here}.{key}" if here else str(key)
                pending.append((child, path))
                pending.append((str(key), f"a key in {here or 'the input'}"))
        elif isinstance(item, list):
            pending.extend((item[n], f"{here}[{n}]") for n in reversed(range(len(item))))
    return None


def _text_problem(text: str, where: str, sizes: bool) -> str | None:
    if "\x00" in text:
        return f"{where} contains a NUL character (\\u0000), which no text in the record may hold"
    if text.isascii():
        size = len(text)
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            return _surrogate(text, exc.start, where)
    if sizes and size > MAX_TEXT_BYTES:
        return (
            f"{where} is {size} bytes, more than the limit of {MAX_TEXT_BYTES} bytes for one text"
        )
    return None


def _number_problem(value: float, where: str) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return (
            f"{where} is {value!r}: numbers must be finite (no inf, -inf, nan, nor a value "
            "too large for a float such as 1e400)"
        )
    if abs(value) > MAX_NUMBER:
        return f"{where} is out of range: numbers are at most {MAX_NUMBER} in size"
    return None


class _Tally:
    """The size and JSON values of a command, counted while it is checked."""

    def __init__(self, sizes: bool) -> None:
        self.sizes = sizes
        self.bytes = 0
        self.items = 0


def _walk(value: Any, where: str, tally: _Tally, depth: int = 0) -> str | None:
    """The first rule `value` breaks, or None; `tally` grows by its JSON size and values."""
    if depth > MAX_DEPTH:
        return f"{where or 'the input'} is nested more than {MAX_DEPTH} levels deep"
    if value is None or value is True:  # null, true
        tally.bytes += 4
        return None
    if value is False:
        tally.bytes += 5
        return None
    if isinstance(value, str):
        problem = _text_problem(value, where, tally.sizes)
        if problem is None and tally.sizes:
            encoded = _JSON_STRING(value)
            tally.bytes += len(encoded) if encoded.isascii() else len(encoded.encode("utf-8"))
            tally.items += sum(value.count(c) for c in _SEPARATORS)
        return problem
    if isinstance(value, int | float):
        problem = _number_problem(value, where)
        if problem is None:  # as JSON writes it: 7 is one byte, 0.1 three
            shown = float.__repr__(value) if isinstance(value, float) else int.__repr__(value)
            tally.bytes += len(shown)
        return problem
    fields = getattr(type(value), "model_fields", None)
    if fields is not None:  # a pydantic model: its fields, but not those carried as blobs
        bulk: frozenset[str] = getattr(type(value), "BULK", frozenset())
        for k in bulk:  # a blob is any bytes, but one given as text is UTF-8 text
            carried = getattr(value, k, None)
            if isinstance(carried, str):
                problem = not_utf8(carried, f"{where}.{k}" if where else k)
                if problem is not None:
                    return problem
        value = {k: getattr(value, k) for k in fields if k not in bulk}
    if isinstance(value, dict):
        # {} and, for n members, n colons and n - 1 commas
        tally.bytes += 2 + max(2 * len(value) - 1, 0)
        tally.items += 1 + 2 * len(value)
        for key, item in value.items():
            here = f"{where}.{key}" if where else str(key)
            problem = _walk(str(key), f"a key in {where or 'the input'}", tally) or _walk(
                item, here, tally, depth + 1
            )
            if problem is not None:
                return problem
        return None
    if isinstance(value, list | tuple | set | frozenset):
        tally.bytes += 2 + max(len(value) - 1, 0)
        tally.items += 1 + len(value)
        for n, item in enumerate(value):
            problem = _walk(item, f"{where}[{n}]", tally, depth + 1)
            if problem is not None:
                return problem
    return None


def input_problem(value: Any, where: str = "", *, sizes: bool = True) -> str | None:
    """What is wrong with an input (a command, a payload), in one line, or None: a NUL in a
    text, a number that is not finite or out of range, a text, the whole or its structure
    larger than its limit. Pydantic models are walked by their fields, except those a model
    names in `BULK` (content that becomes a blob and is bounded by `MAX_BLOB_BYTES`).
    Without `sizes`, only what no engine may hold (NUL, a number out of range): a stored
    event's payload, whose size the line it came in bounds."""
    tally = _Tally(sizes)
    problem = _walk(value, where, tally)
    if problem is not None or not sizes:
        return problem
    if tally.bytes > MAX_COMMAND_BYTES:
        return (
            f"the input is {tally.bytes} bytes as JSON, more than the limit of "
            f"{MAX_COMMAND_BYTES} bytes for one command"
        )
    if tally.items > MAX_COMMAND_ITEMS:
        return (
            f"the input holds {tally.items} JSON values (counted by its , : {{ and [), more "
            f"than the limit of {MAX_COMMAND_ITEMS} for one command"
        )
    return None


def check_input(value: Any, where: str = "") -> None:
    """Raise InputRefused naming the first rule `value` breaks (see `input_problem`)."""
    problem = input_problem(value, where)
    if problem is not None:
        raise InputRefused(problem)


# --- reading input with a cap ----------------------------------------------------------------

#: How much of a line is read at a time.
_CHUNK = 64 * 1024
#: How much of an over-long line's head is kept, to say what it was (an MCP request's id).
HEAD_BYTES = 64 * 1024
#: A JSON string, escapes and all (what the JSON values of a line are counted outside of).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_VALUE_MARKS = (b",", b":", b"{", b"[")


class Line(NamedTuple):
    """One line read with a cap (`read_line`), its newline kept."""

    #: The line; when `over`, only its head (its first `HEAD_BYTES`).
    data: bytes | bytearray
    #: Whether the line was longer than the limit.
    over: bool
    #: Its size in bytes; None for a line over the limit that was not read to its end.
    size: int | None


def read_line(stream: IO[bytes], limit: int = MAX_LINE_BYTES, *, skip: bool = True) -> Line | None:
    """The next line of `stream`, or None at its end, read a chunk at a time into one buffer
    that never holds more than limit + 1 bytes of it (a line read whole would be held twice,
    in its chunks and joined). A longer line comes back `over`, with its head only. With
    `skip`, the rest of such a line is read and dropped up to its newline (so the next read
    starts at the next line); without, it is left unread (the caller stops reading)."""
    data = bytearray()
    while len(data) <= limit:
        chunk = stream.readline(min(_CHUNK, limit + 1 - len(data)))
        data += chunk
        if not chunk or chunk.endswith(b"\n"):
            break
    if not data:
        return None
    if len(data) <= limit or data.endswith(b"\n"):
        return Line(data, False, len(data))
    size = len(data)
    del data[HEAD_BYTES:]
    while skip:
        chunk = stream.readline(_CHUNK)
        size += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            break
    return Line(data, True, size if skip else None)


def read_capped(stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> Line:
    """All of `stream` (a JSON file, stdin) up to limit + 1 bytes: `over` when there was
    more, which is left unread."""
    data = stream.read(limit + 1)
    over = len(data) > limit
    return Line(data, over, None if over else len(data))


def too_many_values(data: bytes | bytearray, limit: int = MAX_LINE_ITEMS) -> bool:
    """Whether the JSON text `data` builds more than `limit` values, counted without parsing
    or copying it: its `,` `:` `{` `[` outside strings (a parser's cost is in what they
    build). Between two strings of an array or object is one of them, so the count passes
    the limit within about `limit` strings: the time is bounded too."""
    if sum(data.count(mark) for mark in _VALUE_MARKS) <= limit:
        return False  # counted in strings too, and still within: the common case, at once
    count = start = 0
    for string in _STRING.finditer(data):
        count += sum(data.count(mark, start, string.start()) for mark in _VALUE_MARKS)
        if count > limit:
            return True
        start = string.end()
    return count + sum(data.count(mark, start) for mark in _VALUE_MARKS) > limit


def line_problem(line: Line, what: str = "one line") -> str | None:
    """What is wrong with a line's size before it is parsed, to follow its name ("line 3 …",
    "the message …"), or None: more than `MAX_LINE_BYTES`, or more than `MAX_LINE_ITEMS`
    JSON values."""
    if line.over:
        size = "is" if line.size is None else f"is {line.size} bytes,"
        return (
            f"{size} more than the limit of {MAX_LINE_BYTES} bytes for {what} (a command and "
            "the content it carries inline: record a larger content from its file)"
        )
    if too_many_values(line.data):
        return (
            f"holds more than the limit of {MAX_LINE_ITEMS} JSON values for {what} (counted "
            "by its , : { and [ outside strings)"
        )
    return None
