"""Answering in the tool's place ("respond", issue 42): when a request allows it, and what
result fits.

A request allows a person to answer with the tool's result when its payload says so: a
`result_schema` (the JSON Schema of the tool's result, as an MCP tool's `outputSchema` or an
interrupt's response schema), or `allowed_decisions` naming `respond` (LangGraph's review
config). A framework adapter whose payload is exactly the call's arguments (LangGraph's,
the OpenAI Agents SDK's) declares it on the effect instead (`PlanEffect.result_schema`, kept in
its intent): `declared` below. The result is checked against `result_schema` where there is
one (JSON Schema, with the `jsonschema` package); without one, any JSON value is the tool's
answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The payload's key holding the JSON Schema a person's result must fit.
RESULT_SCHEMA_KEY = "result_schema"
#: The payload's key listing the answers the asker accepts (LangGraph's review config).
ALLOWED_DECISIONS_KEY = "allowed_decisions"
#: The word for "respond" in `allowed_decisions`.
RESPOND = "respond"
#: The largest result kept in the log, as canonical JSON (a larger one is refused).
MAX_RESULT_BYTES = 64 * 1024


def declared_schema(intent: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The result schema an effect's intent declares (`PlanEffect.result_schema`), or None."""
    schema = (intent or {}).get(RESULT_SCHEMA_KEY)
    return dict(schema) if isinstance(schema, Mapping) else None


def result_schema(
    payload: Mapping[str, Any], declared: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The JSON Schema the request declares for the tool's result (its payload's, else the
    one its effect declares: `declared`), or None."""
    schema = payload.get(RESULT_SCHEMA_KEY)
    if isinstance(schema, Mapping):
        return dict(schema)
    return dict(declared) if declared is not None else None


def respond_allowed(payload: Mapping[str, Any], declared: Mapping[str, Any] | None = None) -> bool:
    """Whether this request may be answered with the tool's result by a person."""
    if result_schema(payload, declared) is not None:
        return True
    allowed = payload.get(ALLOWED_DECISIONS_KEY)
    return isinstance(allowed, list | tuple) and RESPOND in allowed


def why_not_respondable(
    payload: Mapping[str, Any], needed: int, declared: Mapping[str, Any] | None = None
) -> str | None:
    """Why a person may not answer this request in the tool's place (None: they may)."""
    if not respond_allowed(payload, declared):
        return (
            "the request does not accept an answer in the tool's place (its payload carries "
            f"no {RESULT_SCHEMA_KEY} and its {ALLOWED_DECISIONS_KEY} do not name {RESPOND})"
        )
    if needed > 1:
        return (
            f"it needs {needed} people to approve; an answer in the tool's place is one "
            "person's, so approve or reject it instead"
        )
    return None


def result_problem(schema: Mapping[str, Any] | None, result: Any) -> str | None:
    """Why `result` does not fit `schema`, in one line (None: it fits, or there is none)."""
    if schema is None:
        return None
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - installed with the mcp package
        return _shape_problem(schema, result)
    try:
        validator = jsonschema.validators.validator_for(schema)
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"the request's {RESULT_SCHEMA_KEY} is not a JSON Schema: {exc.message}"
    error = jsonschema.exceptions.best_match(validator(schema).iter_errors(result))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"the result does not fit the tool's schema at /{where}: {error.message}"


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _shape_problem(schema: Mapping[str, Any], result: Any) -> str | None:
    """Without jsonschema: the declared type and an object's required fields."""
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _TYPES and not isinstance(result, _TYPES[kind]):
        return f"the result does not fit the tool's schema: it is not of type {kind!r}"
    if isinstance(result, dict):
        missing = [f for f in schema.get("required") or () if f not in result]
        if missing:
            return f"the result does not fit the tool's schema: {missing[0]!r} is required"
    return None
