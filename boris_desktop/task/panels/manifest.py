"""What the model saw (issue 35 part M): a section beside an effect or a checkpoint.

The store (store.reads.manifests, via `model_saw` in the bundle) gives each context manifest
with what it led to, the task's configuration transitions with their changes in words, and
the intents planned under an older tool definition. The panels add rows and form fields from
it and judge nothing: which digests were seen and why an item was left out is the record's
word. Every text is shown as text (the form and the tree show no markup), so a note holding
HTML reads literally.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from boris_desktop.task.bundle import TaskBundle
from boris_desktop.task.panels.base import FormDetail
from boris_desktop.ui import text as t
from boris_desktop.ui.records import Node

if TYPE_CHECKING:
    from store.api import ContextItem, Manifest

SECTION = "What the model saw"


def leading_to(bundle: TaskBundle, kind: str, ref: str) -> list[Manifest]:
    """The manifests whose request led to this effect or checkpoint, oldest first."""
    return [
        m
        for m in bundle.model_saw.manifests
        if any(x.kind == kind and x.id == ref for x in m.links)
    ]


def _model(m: Manifest) -> str:
    return f"{m.model.provider} {m.model.model}"


def gist(m: Manifest) -> str:
    """One line: the model, how many items it saw, how many were left out and why."""
    why = sorted({i.reason for i in m.omitted if i.reason})
    left = f", {len(m.omitted)} left out ({', '.join(why)})" if m.omitted else ""
    return f"{_model(m)}: {t.count(len(m.included), 'item', 'items')} included{left}"


def _item(i: ContextItem) -> dict[str, Any]:
    """An item as the form shows it: what, by digest, and (if left out) why."""
    known = {"tokens": i.tokens, "left_out_because": i.reason, "note": i.note}
    return {"kind": i.kind, "ref": i.ref, "digest": i.digest, "size": t.size(i.size)} | {
        k: v for k, v in known.items() if v is not None and v != ""
    }


def manifest_form(m: Manifest) -> dict[str, Any]:
    """The manifest as a record for the form (its fields are the form's rows, in this
    order): model, what was included, what was not."""
    return {
        "id": m.manifest_id,  # also the row's label in a list of them
        "model": _model(m),
        "parameters_digest": m.model.parameters_digest,
        "purpose": m.purpose or None,
        "recorded_by": m.recorded_by,
        "recorded_at": m.at,
        "included": [_item(i) for i in m.included],
        "omitted": [_item(i) for i in m.omitted],
    }


def nodes(bundle: TaskBundle, kind: str, ref: str) -> list[Node]:
    """A row per manifest that led to this effect or checkpoint (under its row)."""
    return [
        Node(
            key=f"manifest:{m.manifest_id}",
            cells=(SECTION.lower(), m.manifest_id, "", gist(m), t.when(m.at)),
            icon_name="running",
            tip=f"{SECTION}: {gist(m)}",
            detail=FormDetail(manifest_form(m)),
        )
        for m in leading_to(bundle, kind, ref)
    ]


def section(bundle: TaskBundle, kind: str, ref: str) -> dict[str, Any]:
    """The form fields an effect's or a checkpoint's detail gains: for a checkpoint, the
    configuration changes there; what the model saw (each manifest that led to it)."""
    changes = [
        line
        for c in bundle.model_saw.configuration
        if kind == "checkpoint" and c.checkpoint_id == ref
        for line in c.changes
    ]
    seen = leading_to(bundle, kind, ref)
    return (
        {"configuration_changes": {f"change {i + 1}": x for i, x in enumerate(changes)}}
        if changes
        else {}
    ) | ({"what_the_model_saw": [manifest_form(m) for m in seen]} if seen else {})


def tool_drift(bundle: TaskBundle, effect_id: str) -> str:
    """The words for an intent planned under an older tool definition, or ""."""
    for d in bundle.model_saw.drift:
        if d.effect_id == effect_id:
            return f"{d.drift} (pinned {d.tool_digest}, now {d.current_digest or 'none'})"
    return ""
