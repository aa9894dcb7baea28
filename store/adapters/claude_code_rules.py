"""Claude Code's "always" answers as Boris standing rules (issue 42).

When Claude Code asks about a call it offers its own "always" answers: the permission
dialog's "Yes, and don't ask again for …" options, handed to a PermissionRequest hook as
`permission_suggestions` and to the Agent SDK's `can_use_tool` as `ToolPermissionContext.
suggestions` (`PermissionUpdate`; on the wire `{"type": "addRules", "rules": [{"toolName",
"ruleContent"?}], "behavior": "allow" | "deny" | "ask", "destination": "session" |
"localSettings" | "projectSettings" | "userSettings"}`). Answered back to Claude Code
(`updatedPermissions`, `PermissionResultAllow.updated_permissions`) such a rule would be
written into Claude Code's settings: the calls it covers would no longer reach Boris, and
revoking it in Boris would stop none of them. So Boris answers none back; a person picks the
offered answer in Boris instead, and it becomes a standing rule there (`rule_from_suggestion`,
or the `boris rules add --from-approval` line the call's offer note names), signed by the
person, revocable, expiring, recorded as the decider of each call it covers, never covering a
policy reserved for a person.

The mapping, and where Boris is narrower than Claude Code:

- `behavior` `allow` is a rule that approves, `deny` one that rejects; `ask` decides nothing
  (refused). Only `addRules` is a rule; `setMode`, `addDirectories` and the rest change
  Claude Code's mode or directories, which a Boris rule does not (refused, saying so).
- A rule entry without `ruleContent` (the whole tool, `mcp__github`'s tools, `WebSearch`)
  covers every call of the tool. With `ruleContent` (`Bash(npm test:*)`,
  `Read(//repo/docs/**)`, `WebFetch(domain:example.com)`) it covers calls whose key field is
  exactly this call's: `command`, `file_path`, `url`… A pattern over a shell command or a
  path would cover more than it says (`npm test; rm -rf ~` starts with `npm test`,
  `/repo/docs/../../etc/passwd` is under `/repo/docs/`), and Boris's rule matching has
  globs, not Claude Code's shell and path parsing.
- `destination` `userSettings` (every project of this user) is a rule on this agent's calls
  on any task; `session`, `localSettings` and `projectSettings` are a rule on this task's.
  Every rule expires (8 hours unless the person says otherwise); none stands for good.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model import Actor
from ..reads.standing_rules import StandingRule
from ..services import standing_rules as service
from ..services.answers import UsageError
from ..store import Store

#: The input field a tool's `ruleContent` speaks of, by Claude Code's tool names.
KEY_FIELDS: dict[str, tuple[str, ...]] = {
    "Bash": ("command",),
    "Read": ("file_path",),
    "Write": ("file_path",),
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "WebFetch": ("url",),
    "WebSearch": ("query",),
    "Glob": ("pattern", "path"),
    "Grep": ("pattern", "path"),
}
#: Where Claude Code would keep the rule, as a Boris rule's scope.
SCOPES: dict[str, service.Scope] = {
    "session": "task",
    "localSettings": "task",
    "projectSettings": "task",
    "userSettings": "agent",
}
VERDICTS: dict[str, service.Verdict] = {"allow": "approved", "deny": "rejected"}
#: The most offered answers an offer note lists, and the longest words it keeps for one.
MAX_OFFERED = 4
MAX_WORDS = 160


class SuggestionRefused(UsageError):
    """An offered answer that is no Boris rule (its words say why): nothing was written."""

    code = "suggestion"


@dataclass(frozen=True)
class SuggestedRule:
    """The Boris rule an offered answer is: what `rule_from_answer` is given."""

    verdict: service.Verdict
    scope: service.Scope
    fields: tuple[str, ...]
    #: Claude Code's own words for it: `allow Bash(npm test:*) [localSettings]`.
    words: str


def _words(suggestion: Mapping[str, Any]) -> str:
    rules = suggestion.get("rules") or []
    said = ", ".join(
        str(r.get("toolName"))
        + (f"({r['ruleContent']})" if r.get("ruleContent") is not None else "")
        for r in rules
        if isinstance(r, Mapping)
    )
    kind = suggestion.get("type")
    if kind != "addRules":
        said = f"{kind} {suggestion.get('mode') or suggestion.get('directories') or ''}".strip()
    words = f"{suggestion.get('behavior') or ''} {said} [{suggestion.get('destination')}]"
    # One line, printable, bounded: a ruleContent is Claude Code's text, and a newline in it
    # must not make a line of its own in the offer note a person reads and runs.
    words = " ".join("".join(c if c.isprintable() else " " for c in words).split())
    return words if len(words) <= MAX_WORDS else words[: MAX_WORDS - 1] + "…"


def suggested_rule(
    suggestion: Mapping[str, Any], tool_name: str, tool_input: Mapping[str, Any]
) -> SuggestedRule:
    """The rule one offered answer is for this call (`tool_name` with `tool_input`);
    SuggestionRefused when it is none (the module's docstring says which are)."""
    if not isinstance(suggestion, Mapping):
        raise SuggestionRefused(
            "an offered answer is a JSON object (Claude Code's PermissionUpdate)"
        )
    words = _words(suggestion)
    if suggestion.get("type") != "addRules":
        raise SuggestionRefused(
            f"{words!r} changes Claude Code's {suggestion.get('type')}, not a rule: Boris "
            "records rules only (boris rules add)"
        )
    verdict = VERDICTS.get(str(suggestion.get("behavior")))
    if verdict is None:
        raise SuggestionRefused(f"{words!r} decides nothing (its behavior is not allow or deny)")
    scope = SCOPES.get(str(suggestion.get("destination") or "session"))
    if scope is None:
        raise SuggestionRefused(f"{words!r} names no destination Claude Code documents")
    entries = [
        r
        for r in (suggestion.get("rules") or [])
        if isinstance(r, Mapping) and r.get("toolName") == tool_name
    ]
    if not entries:
        raise SuggestionRefused(f"{words!r} is about other tools than this {tool_name} call")
    if any(r.get("ruleContent") in (None, "") for r in entries):
        fields: tuple[str, ...] = ()  # the whole tool
    else:
        known = KEY_FIELDS.get(tool_name)
        fields = tuple(
            f for f in (known if known is not None else sorted(tool_input)) if f in tool_input
        )
        if not fields:
            raise SuggestionRefused(
                f"{words!r} speaks of a part of the call its input does not have"
            )
    return SuggestedRule(verdict=verdict, scope=scope, fields=fields, words=words)


def rule_from_suggestion(
    store: Store,
    person: Actor | str,
    task_id: str,
    approval_id: str,
    suggestion: Mapping[str, Any],
    *,
    expires_in_seconds: float = service.DEFAULT_RULE_SECONDS,
    note: str = "",
    decide_this_one: bool = True,
) -> StandingRule:
    """A person picks Claude Code's offered "always" answer (`suggestion`, the wire form) for
    the call approval `approval_id` asked about: the call is decided by them now (unless
    `decide_this_one` is false) and the rule it maps to is granted, in one transaction
    signed by the person (`standing_rules.rule_from_answer`)."""
    draft = service.rule_draft(store, task_id, approval_id)
    tool_name = draft.tool.replace("[*]", "*").replace("[?]", "?").replace("[[]", "[")
    rule = suggested_rule(suggestion, tool_name, draft.payload)
    return service.rule_from_answer(
        store,
        person,
        task_id,
        approval_id,
        verdict=rule.verdict,
        scope=rule.scope,
        fields=rule.fields,
        expires_in_seconds=expires_in_seconds,
        origin=f"Claude Code's suggestion: {rule.words}"[:120],
        note=note,
        decide_this_one=decide_this_one,
    )


def command_line(task_id: str, approval_id: str, rule: SuggestedRule) -> str:
    """The `boris rules add` line that grants `rule` as the person (who adds `--actor`)."""
    argv = ["boris", "rules", "add", task_id, "--from-approval", approval_id]
    for field in rule.fields:
        argv += ["--field", field]
    if rule.scope != "task":
        argv += ["--scope", rule.scope]
    if rule.verdict == "rejected":
        argv.append("--reject")
    return shlex.join(argv)


def offer_note(
    task_id: str,
    approval_id: str,
    tool_name: str,
    tool_input: Mapping[str, Any],
    suggestions: Sequence[Any],
    host_name: str = "Claude Code",
) -> str | None:
    """The note kept beside a call Claude Code offered "always" answers for: each one as
    the `boris rules add` line that makes it a Boris rule (or why it is none). None when
    nothing was offered."""
    if not suggestions:
        return None
    lines = [
        f"{host_name} offers 'always' for this {tool_name} call (approval {approval_id}); "
        "in Boris each is a standing rule you can revoke, answering it now:"
    ]
    for suggestion in list(suggestions)[:MAX_OFFERED]:
        try:
            rule = suggested_rule(suggestion, tool_name, tool_input)
        except SuggestionRefused as refused:
            lines.append(f"- not a rule: {refused}")
            continue
        exactly = f" (exactly this call's {', '.join(rule.fields)})" if rule.fields else ""
        lines.append(f"- {rule.words}{exactly}: {command_line(task_id, approval_id, rule)}")
    if len(suggestions) > MAX_OFFERED:
        lines.append(f"- and {len(suggestions) - MAX_OFFERED} more")
    return "\n".join(lines)
