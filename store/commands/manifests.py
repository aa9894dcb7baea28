"""What the model saw, and what it ran under (issue 35 part M).

- `record_manifest`: per model request or decision, the model and its configuration, the
  context items included and those left out with why, each by digest (the content stays
  wherever it lives), and what the request led to (an effect or a checkpoint), which
  `link_manifest` can name later. A manifest is a view for one decision: it changes no
  state and authorizes nothing; it is recorded while the record is open.
- `record_configuration`: a configuration transition at a checkpoint (model, provider,
  parameters, tool catalogue with each tool's definition digest). The same configuration
  again is not a transition: nothing is written.
- `migrate_effect_tool`: an intent planned under an older tool definition re-pinned to the
  current one after review; its open approvals bound the older reading and go stale.
"""

from __future__ import annotations

from typing import Any, Literal, Self

import sqlalchemy as sa
from pydantic import Field, model_validator

from .. import events as ev
from .. import rules
from .. import schema as t
from ..canonical import digest_of
from ..errors import CommandRejected, UnknownManifest
from ..limits import MAX_CONFIGURATION_TOOLS, MAX_MANIFEST_ITEMS
from ..model import Actor
from ..reads import manifests as reads
from ..tx import Tx
from .core import (
    Command,
    Ident,
    TaskCommand,
    _require_writable,
    handles,
    new_id,
    settle_status,
)
from .effects import effect_row, intent_open, open_approvals

#: `algorithm:hex`, as every digest in the record is written (sha256:…).
_DIGEST = r"^[a-z0-9-]{2,16}:[0-9a-f]{16,128}$"
_DIGEST_WORDS = "algorithm:hex, e.g. sha256:…"


class ItemIn(Command):
    """One context item by identity, never its content."""

    kind: str = Field(min_length=1, max_length=64, description="message, tool_result, file, …")
    ref: str = Field(min_length=1, max_length=1024, description="which one: an id, a path, …")
    digest: str = Field(pattern=_DIGEST, description=_DIGEST_WORDS)
    size: int = Field(ge=0)
    tokens: int | None = Field(default=None, ge=0)
    note: str = Field(default="", max_length=2048)


class OmittedIn(ItemIn):
    reason: Literal["budget", "policy", "stale", "retired"] = Field(
        description="why it was left out: " + ", ".join(rules.OMISSION_REASONS)
    )


class LedToIn(Command):
    kind: Literal["effect", "checkpoint"]
    id: Ident


class RecordManifest(TaskCommand):
    """Record what the model saw for one request: model, included and omitted items."""

    type: Literal["record_manifest"] = "record_manifest"
    manifest_id: Ident | None = None
    provider: str = Field(min_length=1, max_length=128)
    model: str = Field(min_length=1, max_length=256)
    parameters_digest: str | None = Field(default=None, pattern=_DIGEST, description=_DIGEST_WORDS)
    parameters: dict[str, Any] | None = Field(
        default=None,
        description="the request's parameters: only their digest is recorded "
        "(give this or parameters_digest)",
    )
    included: list[ItemIn] = Field(default_factory=list)
    omitted: list[OmittedIn] = Field(default_factory=list)
    led_to: LedToIn | None = None
    purpose: str = Field(default="", max_length=4096)

    @model_validator(mode="after")
    def _bounded(self) -> Self:
        n = len(self.included) + len(self.omitted)
        if n > MAX_MANIFEST_ITEMS:
            raise ValueError(
                f"a manifest names at most {MAX_MANIFEST_ITEMS} items (this one {n}): "
                "name groups of items by one digest"
            )
        if self.parameters is not None and self.parameters_digest is not None:
            raise ValueError("give parameters or parameters_digest, not both")
        return self


class LinkManifest(TaskCommand):
    """Name what a recorded manifest's request led to, once it is known."""

    type: Literal["link_manifest"] = "link_manifest"
    manifest_id: Ident
    led_to: LedToIn


class ToolIn(Command):
    name: str = Field(min_length=1, max_length=256)
    digest: str = Field(pattern=_DIGEST, description=_DIGEST_WORDS)


class RecordConfiguration(TaskCommand):
    """A configuration transition at a checkpoint: what the agent runs under from here on."""

    type: Literal["record_configuration"] = "record_configuration"
    checkpoint_id: Ident
    provider: str = Field(min_length=1, max_length=128)
    model: str = Field(min_length=1, max_length=256)
    parameters_digest: str | None = Field(default=None, pattern=_DIGEST, description=_DIGEST_WORDS)
    tools: list[ToolIn] = Field(default_factory=list, max_length=MAX_CONFIGURATION_TOOLS)
    tool_catalogue_digest: str | None = Field(
        default=None,
        pattern=_DIGEST,
        description="the catalogue's digest; computed from the tools when left out",
    )
    reason: str = Field(default="", max_length=4096)

    @model_validator(mode="after")
    def _tools_once(self) -> Self:
        names = [x.name for x in self.tools]
        if len(names) != len(set(names)):
            raise ValueError("each tool is named once in a configuration")
        return self


class MigrateEffectTool(TaskCommand):
    """Re-pin an intent planned under an older tool definition to the current one, after
    reviewing that the prepared object means the same under it (its approvals go stale)."""

    type: Literal["migrate_effect_tool"] = "migrate_effect_tool"
    effect_id: Ident
    reason: str = Field(min_length=1, max_length=4096)


def _led_to_exists(tx: Tx, task_id: str, led: LedToIn) -> ev.LedTo:
    table, column = (
        (t.effects, t.effects.c.effect_id)
        if led.kind == "effect"
        else (t.checkpoints, t.checkpoints.c.checkpoint_id)
    )
    found = tx.conn.execute(
        sa.select(column).where(table.c.task_id == task_id, column == led.id)
    ).first()
    if found is None:
        raise CommandRejected(f"task {task_id} has no {led.kind} {led.id!r}")
    return ev.LedTo(kind=led.kind, id=led.id)


def _items(given: list[ItemIn] | list[OmittedIn]) -> tuple[ev.ManifestItem, ...]:
    return tuple(ev.ManifestItem.model_validate(i.model_dump()) for i in given)


@handles(RecordManifest)
def _record_manifest(tx: Tx, cmd: RecordManifest, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    manifest_id = cmd.manifest_id or new_id("mf")
    if cmd.manifest_id is not None and reads.manifest_exists(tx.conn, cmd.task_id, manifest_id):
        raise CommandRejected(f"task {cmd.task_id} already has a context manifest {manifest_id!r}")
    params = cmd.parameters_digest
    if cmd.parameters is not None:
        params = digest_of(cmd.parameters)
    tx.emit(
        cmd.task_id,
        ev.ContextManifest(
            manifest_id=manifest_id,
            model=ev.ModelConfig(provider=cmd.provider, model=cmd.model, parameters_digest=params),
            included=_items(cmd.included),
            omitted=_items(cmd.omitted),
            led_to=None if cmd.led_to is None else _led_to_exists(tx, cmd.task_id, cmd.led_to),
            purpose=cmd.purpose,
        ),
        actor,
    )
    return manifest_id


@handles(LinkManifest)
def _link_manifest(tx: Tx, cmd: LinkManifest, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    if not reads.manifest_exists(tx.conn, cmd.task_id, cmd.manifest_id):
        raise UnknownManifest(cmd.task_id, cmd.manifest_id)
    led = _led_to_exists(tx, cmd.task_id, cmd.led_to)
    tx.emit(cmd.task_id, ev.ContextManifestLinked(manifest_id=cmd.manifest_id, led_to=led), actor)
    return cmd.manifest_id


def catalogue_digest(tools: list[ToolIn]) -> str:
    """The catalogue's digest: over its tools' names and definition digests, in name order."""
    return digest_of(sorted(([x.name, x.digest] for x in tools), key=lambda p: p[0]))


@handles(RecordConfiguration)
def _record_configuration(tx: Tx, cmd: RecordConfiguration, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    _led_to_exists(tx, cmd.task_id, LedToIn(kind="checkpoint", id=cmd.checkpoint_id))
    config = ev.Configuration(
        provider=cmd.provider,
        model=cmd.model,
        parameters_digest=cmd.parameters_digest,
        tool_catalogue_digest=cmd.tool_catalogue_digest or catalogue_digest(cmd.tools),
        tools=tuple(
            ev.ToolDefinition(name=x.name, digest=x.digest)
            for x in sorted(cmd.tools, key=lambda x: x.name)
        ),
    )
    current = reads.current_configuration(tx.conn, cmd.task_id)
    if current is not None and current["configuration"] == config.model_dump(mode="json"):
        return "unchanged"  # the same configuration again is no transition
    tx.emit(
        cmd.task_id,
        ev.ConfigurationChanged(
            checkpoint_id=cmd.checkpoint_id, configuration=config, reason=cmd.reason
        ),
        actor,
    )
    return "changed"


@handles(MigrateEffectTool)
def _migrate_effect_tool(tx: Tx, cmd: MigrateEffectTool, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    row = effect_row(tx, cmd.task_id, cmd.effect_id)
    if not intent_open(row):
        raise CommandRejected(
            f"effect {cmd.effect_id} is {row.stage}: only an intent not yet carried out "
            "can be migrated"
        )
    intent = dict(row.intent)
    tool, pinned = intent.get("tool"), intent.get("tool_digest")
    current = reads.current_tools(tx.conn, cmd.task_id)
    if tool is None or pinned is None:
        raise CommandRejected(f"effect {cmd.effect_id} was planned under no named tool")
    if rules.tool_drift(tool, pinned, current) is None:
        raise CommandRejected(
            f"effect {cmd.effect_id} is pinned to the current definition of {tool}: "
            "nothing to migrate"
        )
    assert current is not None
    now = current.get(tool)
    if now is None:
        raise CommandRejected(
            f"the current configuration has no tool {tool}: re-plan effect {cmd.effect_id} "
            "under a tool it has"
        )
    tx.emit(
        cmd.task_id,
        ev.EffectToolMigrated(
            effect_id=cmd.effect_id, tool=tool, from_digest=pinned, to_digest=now, reason=cmd.reason
        ),
        actor,
    )
    stale = open_approvals(tx, cmd.task_id, cmd.effect_id)
    if stale:
        tx.emit(
            cmd.task_id,
            ev.ApprovalRetired(
                approval_ids=tuple(stale),
                state="stale",
                reason=f"effect {cmd.effect_id} was migrated to a new definition of {tool}",
            ),
            actor,
        )
    settle_status(tx, cmd.task_id, actor)
    return now
