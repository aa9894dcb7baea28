"""Context manifests and configuration: why an item was left out, and tool drift.

An intent planned under an older tool definition is not dispatched: its approval was of what
that definition did with the prepared object.
"""

from __future__ import annotations

from collections.abc import Mapping

from .states import Refusal

#: Why an item was left out of a model's context (store.events.ManifestItem.reason).
OMISSION_REASONS = ("budget", "policy", "stale", "retired")


def tool_drift(
    tool: str | None, pinned: str | None, current: Mapping[str, str] | None
) -> str | None:
    """Whether an intent pinned to `tool`'s definition `pinned` was planned under an older
    definition than the task's current configuration's (`current`: tool -> digest; None
    while no configuration is recorded): the words to show, or None. A tool the current
    catalogue no longer has is drift too: the intent names something the agent cannot run."""
    if tool is None or pinned is None or current is None:
        return None
    now = current.get(tool)
    if now == pinned:
        return None
    gone = " (the current configuration has no such tool)" if now is None else ""
    return f"planned under an older definition of {tool}{gone}: migrate or re-plan before dispatch"


def pinned_tool_refusal(
    tool: str | None, pinned: str | None, current: Mapping[str, str] | None
) -> Refusal | None:
    """Dispatch of an intent planned under an older tool definition is refused: the
    approval and the person's reading of the intent were of what that definition did with
    the prepared object; the same object handed to a changed tool may do something else.
    `migrate_effect_tool` (a reviewed re-pin, which makes its approvals stale) or a new plan
    lets it go on."""
    drift = tool_drift(tool, pinned, current)
    if drift is None:
        return None
    return Refusal("tool_definition_changed", f"the intent was {drift}")
