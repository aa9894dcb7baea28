"""What any input may hold, defined once for every path into the record.

The CLI, the MCP server, `boris ingest` and the Python API all build the same command models,
which check their values here; export writes what the commands accepted; import reads a
package with limits derived from these (store.services.archive.common), so whatever a command
accepted can be exported and imported again. Three rules, the same on SQLite and PostgreSQL
so a record can move between them:

- numbers are finite and within `MAX_NUMBER` (no inf, -inf, nan, nor 1e400, which JSON
  parsers turn into inf): a budget, a hash-chained payload and a PostgreSQL column all hold
  them the same way;
- text holds no NUL character (PostgreSQL's text cannot store one);
- sizes: one text at most `MAX_TEXT_BYTES`, one command at most `MAX_COMMAND_BYTES` of JSON
  and `MAX_COMMAND_ITEMS` JSON values, a content carried as a blob at most `MAX_BLOB_BYTES`.
"""

from __future__ import annotations

import json
import math
from typing import Any

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


class InputRefused(ValueError):
    """An input value breaks one of the rules above; the message says which, and where.

    A ValueError so that pydantic reports it from a validator as a validation error: the one
    line every caller shows for malformed input."""


def _text_problem(text: str, where: str, sizes: bool) -> str | None:
    if "\x00" in text:
        return f"{where} contains a NUL character (\\u0000), which no text in the record may hold"
    size = len(text.encode("utf-8", "surrogatepass")) if sizes else 0
    if size > MAX_TEXT_BYTES:
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
    if value is None or isinstance(value, bool):
        tally.bytes += 5
        return None
    if isinstance(value, str):
        problem = _text_problem(value, where, tally.sizes)
        if problem is None and tally.sizes:
            tally.bytes += len(_JSON_STRING(value).encode("utf-8", "surrogatepass"))
            tally.items += sum(value.count(c) for c in _SEPARATORS)
        return problem
    if isinstance(value, int | float):
        tally.bytes += 24
        return _number_problem(value, where)
    fields = getattr(type(value), "model_fields", None)
    if fields is not None:  # a pydantic model: its fields, but not those carried as blobs
        bulk: frozenset[str] = getattr(type(value), "BULK", frozenset())
        value = {k: getattr(value, k) for k in fields if k not in bulk}
    if isinstance(value, dict):
        tally.bytes += 2 + 2 * len(value)
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
        tally.bytes += 2 + len(value)
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
            f"the input is about {tally.bytes} bytes as JSON, more than the limit of "
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
