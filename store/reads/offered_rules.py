"""The "always" answers a framework offered for a pending call, as the rules a person may grant.

Claude Code (and the Agent SDK) offer their own "always" answers with a permission prompt; the
adapters keep them beside the call as a note of the requester's
(`store.adapters.claude_code_rules.offer_note`): a first line naming the approval, then one
line per offered answer, `- WORDS (exactly this call's FIELDS): boris rules add TASK
--from-approval APR [--field F]... [--scope agent] [--reject]`. This read turns those lines
back into what each would allow, for the Approve dialog (`ApprovalDecision.offered`). The
values a rule would match are this call's own (its payload's fields, as exact globs), never
the note's words: the note names only which fields, the scope and the verdict, and the person
reads the rule in the Rules form and grants it, signed, or does not.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import schema as t
from ..rules.standing_rules import RuleScope, RuleVerdict

#: Where a line's command begins (the words before it are the framework's own).
_COMMAND = ": boris rules add "
_EXACTLY = " (exactly this call's "
#: The most offers read for one call (the adapter keeps four).
MAX_OFFERS = 8


@dataclass(frozen=True)
class OfferedRule:
    """One offered "always" answer as a Boris standing rule on this call.

    `words`: the framework's own name for it (`allow Bash(npm test) [localSettings]`);
    `allows`: what the rule would decide, in a sentence; `verdict`, `scope` and `payload_json`
    (the fields to match, exact globs of this call's values, as JSON; None: any payload) fill
    the Rules form."""

    host: str
    words: str
    allows: str
    verdict: RuleVerdict
    scope: RuleScope
    fields: tuple[str, ...]
    payload_json: str | None


def _literal(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    return "".join(f"[{c}]" if c in "*?[" else c for c in value)


def _parse_line(line: str) -> tuple[str, tuple[str, ...], RuleScope, RuleVerdict] | None:
    """One `- WORDS…: boris rules add …` line: its words, fields, scope, verdict."""
    if not line.startswith("- ") or _COMMAND not in line:
        return None
    words, command = line[2:].rsplit(_COMMAND, 1)
    if _EXACTLY in words:
        words = words.split(_EXACTLY, 1)[0]
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    fields: list[str] = []
    scope, verdict = RuleScope.TASK, RuleVerdict.APPROVED
    for n, arg in enumerate(argv):
        following = argv[n + 1] if n + 1 < len(argv) else ""
        if arg == "--field":
            fields.append(following)
        elif arg == "--scope":
            try:
                scope = RuleScope(following)
            except ValueError:
                return None
        elif arg == "--reject":
            verdict = RuleVerdict.REJECTED
    return words, tuple(fields), scope, verdict


def _allows(
    verdict: RuleVerdict, scope: RuleScope, tool: str, fields: Mapping[str, Any], who: str
) -> str:
    doing = "approve" if verdict is RuleVerdict.APPROVED else "reject"
    whose = f"{who}'s calls on any task" if scope is RuleScope.AGENT else "calls on this task"
    if scope is RuleScope.SESSION:
        whose = "calls in this session"
    exactly = " and ".join(f"{f} is exactly {json.dumps(v)}" for f, v in fields.items())
    return f"{doing} {whose} of {tool}" + (f" whose {exactly}" if exactly else " (any input)")


def offered_rules(
    conn: Connection, task_id: str, approval_id: str, payload: Mapping[str, Any], requester: str
) -> tuple[OfferedRule, ...]:
    """The rules the requester's offer note for this approval names (none: nothing offered)."""
    kind, _, who = requester.partition(":")
    rows = conn.execute(
        sa.select(t.events.c.payload)
        .where(
            t.events.c.task_id == task_id,
            t.events.c.type == "note.recorded",
            t.events.c.actor_kind == kind,
            t.events.c.actor_id == who,
            t.events.c.payload.contains(f"(approval {approval_id})", autoescape=True),
        )
        .order_by(t.events.c.seq.desc())
        .limit(1)
    ).first()
    if rows is None:
        return ()
    text = str(json.loads(rows.payload).get("text") or "")
    head, _, rest = text.partition("\n")
    host, marker, _tail = head.partition(" offers 'always' for this ")
    if not marker or f"(approval {approval_id})" not in head:
        return ()
    tool = _tool_of(head)
    found: list[OfferedRule] = []
    for line in rest.splitlines()[:MAX_OFFERS]:
        parsed = _parse_line(line)
        if parsed is None:
            continue
        words, fields, scope, verdict = parsed
        if any(f not in payload for f in fields):
            continue  # names a part of the call it does not have: no rule
        values = {f: payload[f] for f in fields}
        exact = {f: _literal(v) for f, v in values.items()}
        found.append(
            OfferedRule(
                host=host,
                words=words,
                allows=_allows(verdict, scope, tool, values, requester),
                verdict=verdict,
                scope=scope,
                fields=fields,
                payload_json=json.dumps(exact, sort_keys=True) if exact else None,
            )
        )
    return tuple(found)


def _tool_of(head: str) -> str:
    """The tool the offer's first line names ("… for this Bash call (approval …)")."""
    _, _, after = head.partition(" offers 'always' for this ")
    return after.split(" call (", 1)[0] or "the tool"
