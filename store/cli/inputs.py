"""What `boris` reads from its command line, files and stdin, checked before it is built into a
command: a path the record keeps, a JSON flag, a JSON file, content on stdin, a line of
`boris ingest`. Each problem is one line, a usage error (exit 2); nothing is written.

A path the record keeps must be UTF-8 text, as every text in it (store.limits): a file whose
name holds a byte that is not UTF-8 is named with that byte shown (`\\xff`), so that the
person can find and rename it. JSON is read with the caps of store.limits before it is parsed.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from pydantic import ValidationError

from ..limits import MAX_BLOB_BYTES, MAX_DEPTH, line_problem, lone_surrogate, read_capped
from ..services import answers
from ..services.answers import UsageError
from .output import here


def shown_path(path: str) -> str:
    """A path as a person can read it in one line, a byte that is not UTF-8 as `\\xff`."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def recorded_path(path: str, flag: str) -> str:
    """A path given with `flag` that the record keeps (a --file, a --scope, a --target),
    taken from the current directory (`here`): refused when its name is not UTF-8."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raw = os.fsencode(path)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            byte = f"byte 0x{raw[exc.start]:02x} at byte {exc.start}"
        else:  # pragma: no cover - a surrogate given as such, not from a byte
            byte = "a lone surrogate"
        raise UsageError(
            f"{flag} {shown_path(path)}: the name is not UTF-8 ({byte}); the record keeps "
            "paths as UTF-8 text: rename the file or folder"
        ) from None
    return here(path)


def parse_json(text: str | bytes | bytearray, what: str) -> Any:
    """JSON given on the command line or in a file, parsed; one usage line when it is not
    JSON or nests deeper than a parser goes (a lone surrogate it holds, `\\ud800`, and more
    than `MAX_DEPTH` levels are refused by the command it goes into, naming where)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise UsageError(
            f"{what} is nested too deep (more than {MAX_DEPTH} levels are refused)"
        ) from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} is not UTF-8 text (byte {exc.start}): not JSON") from None
    except ValueError as exc:
        raise UsageError(f"{what} is not valid JSON: {exc}") from None
    return value


def json_object(text: str | None, flag: str) -> dict[str, Any] | None:
    """A JSON object flag (`--payload-json`, `--edited-json`, …), or None when not given."""
    if text is None:
        return None
    value = parse_json(text, flag)
    if not isinstance(value, dict):
        raise UsageError(f"{flag} must be a JSON object, not {type(value).__name__}")
    return value


def json_file(source: str) -> Any:
    """The JSON in a file, or stdin for `-`, read with the caps of a line (store.limits)."""
    try:
        if source == "-":
            read = read_capped(sys.stdin.buffer)
        else:
            with open(source, "rb") as f:
                read = read_capped(f)
    except OSError as exc:
        raise UsageError(f"cannot read {shown_path(source)}: {exc.strerror}") from None
    problem = line_problem(read, "one JSON input")
    if problem is not None:
        raise UsageError(f"{shown_path(source)} {problem}")
    return parse_json(read.data, shown_path(source))


def stdin_text() -> str:
    """Content given on stdin: UTF-8 text, at most `MAX_BLOB_BYTES` (a binary file is
    given with --file, whose bytes are recorded as they are)."""
    read = read_capped(sys.stdin.buffer, MAX_BLOB_BYTES)
    if read.over:
        raise UsageError(
            f"the content on stdin is more than the limit of {MAX_BLOB_BYTES} bytes for one content"
        )
    try:
        return read.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"the content on stdin is not UTF-8 text (byte 0x{read.data[exc.start]:02x} at "
            f"byte {exc.start}): give a binary file with --file"
        ) from None


def ingest_refusal(n: int, text: str, exc: ValidationError) -> UsageError:
    """Line `n` of `boris ingest` refused by its command model, in one line. A line the
    model's JSON reader refuses but that is JSON (a lone surrogate such as `\\ud800`, which
    JSON may escape and no UTF-8 text holds) names the string that holds it."""
    first = exc.errors()[0]
    if first["type"] == "json_invalid":
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            value = None
        problem = lone_surrogate(value) if value is not None else None
        if problem is not None:
            return UsageError(f"line {n}: {problem}; nothing was written")
    _, message = answers.invalid(exc)
    return UsageError(f"line {n}: {message}; nothing was written")
