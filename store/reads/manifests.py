"""What the model saw, and what it ran under: context manifests and configuration transitions.

Both are read from their events (the `(task_id, type)` index finds them), not from a
projection: a manifest changes no state, and a task records a configuration only at the
few checkpoints where it changes. Each event is decoded by `store.events.decode`, so a
manifest written in a format this program does not know is refused in one line, never
read with defaults.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import Field
from sqlalchemy.engine import Connection

from .. import events as ev
from .. import rules
from .. import schema as t
from .read_model import ReadModel


class ModelUsed(ReadModel):
    """The model a request went to: provider, model id, the digest of its parameters."""

    provider: str
    model: str
    parameters_digest: str | None = None


class ContextItem(ReadModel):
    """One item of context, by identity (store.events.ManifestItem): what kind, which
    (`ref`), its digest and size, tokens if known; `reason` why it was left out (only on an
    omitted item)."""

    kind: str
    ref: str
    digest: str
    size: int
    tokens: int | None = None
    reason: Literal["budget", "policy", "stale", "retired"] | None = None
    note: str = ""


class LedTo(ReadModel):
    """What a model request led to: an effect or a checkpoint of the task."""

    kind: Literal["effect", "checkpoint"]
    id: str


class Manifest(ReadModel):
    """A context manifest: what the model saw for one request, and what it led to."""

    manifest_id: str
    seq: int
    at: str
    recorded_by: str = Field(description="kind:id")
    model: ModelUsed
    included: list[ContextItem]
    omitted: list[ContextItem]
    led_to: LedTo | None = Field(description="the first effect or checkpoint it led to")
    links: list[LedTo] = Field(description="every effect or checkpoint it led to")
    purpose: str


class ToolUsed(ReadModel):
    """A tool of a configuration's catalogue, by its definition's digest."""

    name: str
    digest: str


class ConfigurationUsed(ReadModel):
    """What an agent runs under (store.events.Configuration)."""

    provider: str
    model: str
    parameters_digest: str | None = None
    tool_catalogue_digest: str
    tools: list[ToolUsed]


class ConfigurationTransition(ReadModel):
    """A configuration transition at a checkpoint, with what it changed in words."""

    checkpoint_id: str
    seq: int
    at: str
    recorded_by: str = Field(description="kind:id")
    reason: str
    configuration: ConfigurationUsed
    changes: list[str]


class ToolDrift(ReadModel):
    """An intent not yet dispatched pinned to a tool definition other than the current one."""

    effect_id: str
    tool: str
    tool_digest: str | None
    current_digest: str | None
    drift: str | None = Field(description="rules.tool_drift's words")


class ModelSaw(ReadModel):
    """For the window, in one read: the task's manifests, its configuration transitions and
    the intents planned under an older tool definition."""

    manifests: list[Manifest]
    configuration: list[ConfigurationTransition]
    drift: list[ToolDrift]


class ConfigurationRead(ReadModel):
    """`boris configuration TASK --json`: the transitions, the configuration now (None:
    none recorded) and the intents planned under an older tool definition."""

    task_id: str
    transitions: list[ConfigurationTransition]
    current: ConfigurationUsed | None
    drift: list[ToolDrift]


_MANIFEST_TYPES = (ev.ContextManifest.TYPE, ev.ContextManifestLinked.TYPE)


def _events(conn: Connection, task_id: str, types: tuple[str, ...]) -> list[Any]:
    q = (
        sa.select(
            t.events.c.seq,
            t.events.c.type,
            t.events.c.format,
            t.events.c.payload,
            t.events.c.at,
            t.events.c.actor_kind,
            t.events.c.actor_id,
        )
        .where(t.events.c.task_id == task_id, t.events.c.type.in_(types))
        .order_by(t.events.c.seq)
    )
    return list(conn.execute(q))


def _payload(row: Any) -> ev.Payload:
    data = json.loads(row.payload) if isinstance(row.payload, str) else row.payload
    return ev.decode(str(row.type), int(row.format), data)


def _item(i: ev.ManifestItem) -> dict[str, Any]:
    return i.model_dump(mode="json")


def manifests(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    """The task's context manifests, oldest first, each with what it led to (as recorded
    with it or linked later): `manifest_id`, `seq`, `at`, `recorded_by`, `model`
    (provider, model, parameters_digest), `included`, `omitted` (each with its `reason`),
    `led_to` ({kind, id} or None), `links` (every effect or checkpoint it led to), `purpose`."""
    out: dict[str, dict[str, Any]] = {}
    for row in _events(conn, task_id, _MANIFEST_TYPES):
        p = _payload(row)
        if isinstance(p, ev.ContextManifest):
            out[p.manifest_id] = {
                "manifest_id": p.manifest_id,
                "seq": int(row.seq),
                "at": row.at,
                "recorded_by": f"{row.actor_kind}:{row.actor_id}",
                "model": p.model.model_dump(mode="json"),
                "included": [_item(i) for i in p.included],
                "omitted": [_item(i) for i in p.omitted],
                "led_to": p.led_to.model_dump(mode="json") if p.led_to else None,
                "links": [p.led_to.model_dump(mode="json")] if p.led_to else [],
                "purpose": p.purpose,
            }
        elif isinstance(p, ev.ContextManifestLinked) and p.manifest_id in out:
            # One request may lead to several effects (an answer with several calls): the
            # first is its `led_to`, every one is in `links`.
            m = out[p.manifest_id]
            led = p.led_to.model_dump(mode="json")
            if led not in m["links"]:
                m["links"].append(led)
            m["led_to"] = m["links"][0]
    return list(out.values())


def manifests_leading_to(
    conn: Connection, task_id: str, kind: str, ref: str
) -> list[dict[str, Any]]:
    """The manifests whose request led to this effect or checkpoint, oldest first."""
    return [m for m in manifests(conn, task_id) if {"kind": kind, "id": ref} in m["links"]]


def manifest_exists(conn: Connection, task_id: str, manifest_id: str) -> bool:
    """Whether the task recorded manifest `manifest_id` (the id is an Ident: no JSON
    escaping, so its text in the canonical payload is exact; LIKE narrows, the parse decides)."""
    q = sa.select(t.events.c.payload).where(
        t.events.c.task_id == task_id,
        t.events.c.type == ev.ContextManifest.TYPE,
        t.events.c.payload.like(f'%"manifest_id":"{manifest_id}"%'),
    )
    for (payload,) in conn.execute(q):
        data = json.loads(payload) if isinstance(payload, str) else payload
        if data.get("manifest_id") == manifest_id:
            return True
    return False


# --- configuration transitions ---------------------------------------------------------------


def _config_row(p: ev.ConfigurationChanged, row: Any) -> dict[str, Any]:
    return {
        "checkpoint_id": p.checkpoint_id,
        "seq": int(row.seq),
        "at": row.at,
        "recorded_by": f"{row.actor_kind}:{row.actor_id}",
        "reason": p.reason,
        "configuration": p.configuration.model_dump(mode="json"),
    }


def changes_between(
    before: dict[str, Any] | None, after: dict[str, Any], checkpoint: str
) -> list[str]:
    """What a transition changed, in words: "model changed from X to Y at checkpoint C"."""
    at = f"at checkpoint {checkpoint}"
    if before is None:
        return [f"configuration first recorded {at}: {after['provider']} {after['model']}"]
    out: list[str] = []
    for field in ("provider", "model", "parameters_digest", "tool_catalogue_digest"):
        old, new = before.get(field), after.get(field)
        if old != new:
            words = field.replace("_", " ")
            out.append(f"{words} changed from {old or '(none)'} to {new or '(none)'} {at}")
    old_tools = {x["name"]: x["digest"] for x in before.get("tools", [])}
    new_tools = {x["name"]: x["digest"] for x in after.get("tools", [])}
    for name in sorted(old_tools.keys() | new_tools.keys()):
        if name not in new_tools:
            out.append(f"tool {name} removed {at}")
        elif name not in old_tools:
            out.append(f"tool {name} added {at}")
        elif old_tools[name] != new_tools[name]:
            out.append(
                f"tool {name} definition changed from {old_tools[name]} to {new_tools[name]} {at}"
            )
    return out


def configuration_history(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    """Every configuration transition, oldest first, each with its `changes` in words."""
    out: list[dict[str, Any]] = []
    before: dict[str, Any] | None = None
    for row in _events(conn, task_id, (ev.ConfigurationChanged.TYPE,)):
        p = _payload(row)
        assert isinstance(p, ev.ConfigurationChanged)
        entry = _config_row(p, row)
        entry["changes"] = changes_between(before, entry["configuration"], p.checkpoint_id)
        before = entry["configuration"]
        out.append(entry)
    return out


def current_configuration(conn: Connection, task_id: str) -> dict[str, Any] | None:
    """The configuration the task runs under now (the last transition's), or None."""
    q = (
        sa.select(
            t.events.c.seq,
            t.events.c.type,
            t.events.c.format,
            t.events.c.payload,
            t.events.c.at,
            t.events.c.actor_kind,
            t.events.c.actor_id,
        )
        .where(t.events.c.task_id == task_id, t.events.c.type == ev.ConfigurationChanged.TYPE)
        .order_by(t.events.c.seq.desc())
        .limit(1)
    )
    row = conn.execute(q).first()
    if row is None:
        return None
    p = _payload(row)
    assert isinstance(p, ev.ConfigurationChanged)
    return _config_row(p, row)


def current_tools(conn: Connection, task_id: str) -> dict[str, str] | None:
    """Tool name -> definition digest under the current configuration (None: none recorded)."""
    config = current_configuration(conn, task_id)
    if config is None:
        return None
    return {x["name"]: x["digest"] for x in config["configuration"]["tools"]}


def pinned_tool(intent: dict[str, Any], current: dict[str, str] | None) -> dict[str, Any] | None:
    """An intent's pinned tool as readers see it: `tool`, `tool_digest`, `current_digest`,
    and `drift` (the words of rules.tool_drift, or None), or None when it pinned none."""
    tool = intent.get("tool")
    if tool is None:
        return None
    pinned = intent.get("tool_digest")
    return {
        "tool": tool,
        "tool_digest": pinned,
        "current_digest": None if current is None else current.get(tool),
        "drift": rules.tool_drift(tool, pinned, current),
    }


def intent_drift(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    """Intents not yet dispatched whose pinned tool definition is not the current one."""
    current = current_tools(conn, task_id)
    if current is None:
        return []
    out: list[dict[str, Any]] = []
    q = (
        sa.select(t.effects.c.effect_id, t.effects.c.intent, t.effects.c.stage)
        .where(t.effects.c.task_id == task_id, t.effects.c.stage.in_(("planned", "approved")))
        .order_by(t.effects.c.position)
    )
    for effect_id, intent, _stage in conn.execute(q):
        data = json.loads(intent) if isinstance(intent, str) else dict(intent)
        pin = pinned_tool(data, current)
        if pin is not None and pin["drift"] is not None:
            out.append({"effect_id": effect_id, **pin})
    return out


# --- for the CLI and the MCP server ------------------------------------------------------------


# The reads below answer the models above, validated from the rows the functions above
# build (plain data, which the commands and the resume brief read too): a task's manifests
# are few, so validating them costs nothing a reader waits for.


def read_manifests(
    store: Any, task_id: str, *, effect: str | None = None, checkpoint: str | None = None
) -> list[Manifest]:
    """`boris manifests`, the MCP tool `list_manifests`: all, or those leading to one."""
    from .queries import task_row

    with store.read() as conn:
        task_row(conn, task_id)  # an unknown task is refused, not an empty list
        if effect is not None:
            rows = manifests_leading_to(conn, task_id, "effect", effect)
        elif checkpoint is not None:
            rows = manifests_leading_to(conn, task_id, "checkpoint", checkpoint)
        else:
            rows = manifests(conn, task_id)
        return [Manifest.model_validate(m) for m in rows]


def read_configuration(store: Any, task_id: str) -> ConfigurationRead:
    """`boris configuration`: the transitions (with their changes in words), the current
    configuration, and intents planned under an older tool definition (`drift`)."""
    from .queries import task_row

    with store.read() as conn:
        task_row(conn, task_id)
        history = configuration_history(conn, task_id)
        return ConfigurationRead.model_validate(
            {
                "task_id": task_id,
                "transitions": history,
                "current": history[-1]["configuration"] if history else None,
                "drift": intent_drift(conn, task_id),
            }
        )


def model_saw(store: Any, task_id: str) -> ModelSaw:
    """For the window, in one read: the task's manifests, its configuration transitions
    (with their changes in words) and the intents planned under an older tool definition."""
    with store.read() as conn:
        return ModelSaw.model_validate(
            {
                "manifests": manifests(conn, task_id),
                "configuration": configuration_history(conn, task_id),
                "drift": intent_drift(conn, task_id),
            }
        )
