"""What a program reads back from the store: one object per result, one per refusal, and an
exit code per kind of problem.

The CLI's `--json` and the MCP server both answer through here, so an agent reads the same
shapes whichever way it talks to the record. A refusal's `code`, `kind` and `rule` come from
the exception's type (`store.errors`), never from its message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import StoreError
from ..limits import not_utf8
from ..reads.read_model import ReadModel
from ..reads.read_row import ReadRow

if TYPE_CHECKING:
    from ..commands import Command
    from ..store import Store

#: Exit code per kind of answer, as `boris` documents them (README, `boris --help`).
EXIT_CODES: dict[str, int] = {
    "ok": 0,
    "refused": 1,  # the rules said no; nothing was written
    "usage": 2,  # the command line or the input is malformed
    "integrity": 3,  # the record is damaged (verify's problems, a bad blob, a corrupt file)
    "not_found": 4,  # no such task, store or file
    "busy": 5,  # another writer held the store; try again
    "environment": 6,  # the store cannot be used here (read-only, full, too new, unreachable)
    # The write's lease token is not the task's current one (taken over, released, lapsed and
    # acquired by another): the session stops working on the task; nothing was written.
    "lease_lost": 7,
    "internal": 70,  # a bug: report it
}

# Attributes some refusals carry that a program can act on (which criterion, which counter).
_DETAILS = (
    "task_id",
    "criteria",
    "pending",
    "counter",
    "observation_id",
    "effect_id",
    "digest",
    "where",
    "role",
    # A conflict (store.errors.Conflict): what changed, from which version to which, by whom.
    "subject_kind",
    "subject_id",
    "based_on",
    "current",
    "changed_by",
    "changed_at",
    "change",
    "evidence_ids",
    # A lease refusal (store.errors.LeaseHeld, LeaseLost): the token sent, the task's, who holds it.
    "lease_token",
    "current_token",
    "holder",
    "expires_at",
    # A final checkpoint on a fork (store.errors.ForkOpen): the heads, those left open.
    "heads",
    "left_open",
)


class UsageError(StoreError):
    """The caller's input is malformed (a bad flag value, JSON that is not an object)."""

    code = "usage"
    category = "usage"


def ok(value: Any, **extra: Any) -> dict[str, Any]:
    """A result: always an object, with what the command returned under `result`."""
    return {"ok": True, "result": jsonable(value), **jsonable(extra)}


def jsonable(value: Any) -> Any:
    """The value as JSON-ready data: a read model (or row) as its `to_json()` (the shape
    `boris schema` documents), inside lists, tuples and dicts too; anything else as it is."""
    if isinstance(value, ReadModel | ReadRow):
        return value.to_json()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def refusal(exc: BaseException) -> dict[str, Any]:
    """Any exception as the one refusal object a program reads:
    `{"ok": false, "error": {code, category, message, rule, exit_code, details}}`."""
    details: dict[str, Any] = {}
    if isinstance(exc, StoreError):
        code, kind, rule = exc.code, exc.category, exc.rule
        message = " ".join(str(exc).split())
        details = {a: getattr(exc, a) for a in _DETAILS if getattr(exc, a, None) is not None}
        report = getattr(exc, "report", None)
        if report is not None and hasattr(report, "to_json"):
            details["report"] = report.to_json()
    elif isinstance(exc, ValidationError):
        where, message = invalid(exc)
        code, kind, rule = "invalid_input", "usage", None
        details = {"field": where}
    elif isinstance(exc, FileNotFoundError):
        code, kind, rule = "file_not_found", "not_found", None
        message = f"cannot read {exc.filename}: {exc.strerror}"
        details = {"where": exc.filename}
    elif isinstance(exc, OSError):
        code, kind, rule = "os_error", "environment", None
        message = f"cannot read {exc.filename}: {exc.strerror}" if exc.filename else str(exc)
        if exc.filename:
            details = {"where": exc.filename}
    else:
        code, kind, rule = "internal", "internal", None
        message = f"{type(exc).__name__}: {exc}"
    return {
        "ok": False,
        "error": {
            "code": code,
            "category": kind,
            "message": " ".join(message.splitlines()),
            "rule": rule,
            "exit_code": exit_code(kind),
            "details": details,
        },
    }


def invalid(exc: ValidationError) -> tuple[str, str]:
    """A validation error's first problem as one line, and the field it names: a text
    pydantic could not read as a string (a lone surrogate) in the record's words."""
    first = exc.errors()[0]
    where = ".".join(str(x) for x in first["loc"])
    said = " ".join(str(first["msg"]).split())
    if first["type"] == "value_error":  # a validator's own words (store.limits), as they are
        said = said.removeprefix("Value error, ")
    if first["type"] == "string_unicode" and isinstance(first.get("input"), str):
        return where, not_utf8(first["input"], where or "the input") or said
    return where, f"{where + ': ' if where else ''}{said}"


def exit_code(kind: str) -> int:
    return EXIT_CODES.get(kind, EXIT_CODES["internal"])


def facts_after(store: Store, command: Command, value: Any) -> dict[str, Any]:
    """What an agent needs next after planning or revising an effect: its id and the digest
    of the prepared object that an approval will bind and a dispatch must match."""
    ctype = str(getattr(command, "type", ""))
    if ctype not in {"plan_effect", "revise_effect"}:
        return {}
    task_id = str(getattr(command, "task_id", ""))
    effect_id = value if ctype == "plan_effect" else getattr(command, "effect_id", None)
    import sqlalchemy as sa

    from .. import schema as t

    with store.read() as conn:
        row = conn.execute(
            sa.select(t.effects.c.intent).where(
                t.effects.c.task_id == task_id, t.effects.c.effect_id == effect_id
            )
        ).first()
    if row is None:  # pragma: no cover - it was written in the same call
        return {}
    return {"effect_id": effect_id, "prepared_digest": dict(row.intent)["prepared_digest"]}
