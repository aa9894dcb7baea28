"""A tool call as an effect: what of its intent is made from the call's input alone.

An adapter records one tool call as one effect (store.adapters): its prepared object is the
call's input exactly, its intended state is that input's digest (the call with this input is
what is intended: the store cannot read a tool's target), and its consequence is one line
worded from the tool's name and input. Both are made from the prepared object, so when the
object changes (a person's edit before approving it, an agent's revision) they are made
again from the new one (`revised_intent`): the record then says what will run, never the
call as first asked. What an actor wrote themselves (a consequence of their own words, a
file's content) is theirs, and stays.

Here, in the command layer, so that every process deciding an approval (`boris approve`,
the window, an MCP client) words the consequence as the adapter that planned it did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import events as ev
from ..canonical import canonical_json, digest_of

#: Where a Claude Code tool call points (store.adapters.claude_code).
CLAUDE_CODE_TOOLS = "claude-code://tools/"

#: Which input field says best, in one line, what a built-in Claude Code tool will do.
_SUMMARY_FIELDS = ("command", "file_path", "url", "pattern", "query", "path", "prompt")


def claude_code_consequence(tool_name: str, tool_input: dict[str, Any]) -> str:
    """One line a reviewer agrees to: the tool and what it acts on."""
    for field in _SUMMARY_FIELDS:
        value = tool_input.get(field)
        if isinstance(value, str) and value.strip():
            what = value
            break
    else:
        what = canonical_json(tool_input)
    what = " ".join(what.split())
    if len(what) > 200:
        what = what[:199] + "…"
    return f"Claude Code runs {tool_name}: {what}"


#: Target prefix -> how the adapter that plans calls there words a call's consequence from
#: the tool's name (the rest of the target) and its input.
CONSEQUENCES: dict[str, Callable[[str, dict[str, Any]], str]] = {
    CLAUDE_CODE_TOOLS: claude_code_consequence,
}


def call_intended(tool_input: dict[str, Any]) -> ev.FileState:
    """A tool call's intended state as the store can know it: the call with this input."""
    return ev.FileState(exists=True, digest=digest_of(tool_input))


def consequence_of_call(target: str, prepared: dict[str, Any]) -> str | None:
    """The consequence the adapter of `target` words for this prepared object; None when
    the target is no tool call's."""
    for prefix, words in CONSEQUENCES.items():
        if target.startswith(prefix):
            return words(target[len(prefix) :], prepared)
    return None


def revised_intent(
    target: str,
    old: dict[str, Any],
    old_consequence: str,
    prepared: dict[str, Any],
    intended: ev.FileState | None,
    consequence: str | None,
) -> tuple[ev.FileState, str]:
    """The intended state and consequence of an intent (`old`, the effect's as recorded)
    revised to `prepared`. Given ones are kept. Otherwise what the old intent made from its
    prepared object is made again from the new one: an intended state that was the object's
    digest becomes the new object's; a consequence that was the adapter's wording of the old
    object (`consequence_of_call`) is its wording of the new one. Anything else stays."""
    was = ev.FileState.model_validate(old["intended"])
    if intended is None:
        intended = was
        if was.exists and was.digest == old["prepared_digest"]:
            intended = was.model_copy(update={"digest": digest_of(prepared)})
    if consequence is None:
        consequence = old_consequence
        worded = consequence_of_call(target, old["prepared"])
        if worded is not None and " ".join(worded.split()) == old_consequence:
            consequence = consequence_of_call(target, prepared) or old_consequence
    return intended, consequence
