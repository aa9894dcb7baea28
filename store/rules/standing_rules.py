"""Standing rules: which calls a person's "allow calls like this" decides, and when it stops.

A rule is a person's signed event (`rule.granted`): a verdict for the calls its scope covers
(this task, one agent's calls, one session's), a tool (a glob over the tool's name), a target
(a glob over the effect's target) and, optionally, fields the call's payload must match (a
string is a glob, anything else must be equal). It decides a call only while it stands: from
its grant until its expiry or its revocation, both on the database clock. It never decides a
call its policy reserves for a person every time, nor one that needs several people (a rule
is one person's answer), nor one its own person asked for (no one decides their own request).

Pure functions over plain values: the command layer asks them when a request is made, the
dispatch when the approval is used, and `boris verify` when it replays the log.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

#: Where a tool call's target names its tool: `claude-code://tools/Bash`, `openai-agents://tools/x`.
TOOLS_MARK = "://tools/"
#: The longest a rule may stand (a year), and the most its constraint may name.
MAX_RULE_SECONDS = 366 * 86400


class RuleScope(StrEnum):
    TASK = "task"
    AGENT = "agent"
    SESSION = "session"

    @property
    def label(self) -> str:
        """Whose calls, as a person reads it."""
        return _SCOPE_LABELS[self]


class RuleVerdict(StrEnum):
    APPROVED = "approved"
    REJECTED = "rejected"

    @property
    def label(self) -> str:
        """What the rule does with a call it covers, as a person reads it."""
        return _VERDICT_LABELS[self]


class RuleStanding(StrEnum):
    """A rule as it stands now: deciding, expired (its time ran out) or revoked."""

    ACTIVE = "active"
    EXPIRED = "expired"
    REVOKED = "revoked"

    @property
    def label(self) -> str:
        return _STANDING_LABELS[self]


#: The rules' words as a person reads them (the Rules panel shows these, never the values).
_SCOPE_LABELS = {
    RuleScope.TASK: "this task's calls",
    RuleScope.AGENT: "one agent's calls",
    RuleScope.SESSION: "one session's calls",
}
_VERDICT_LABELS = {RuleVerdict.APPROVED: "approve", RuleVerdict.REJECTED: "reject"}
_STANDING_LABELS = {
    RuleStanding.ACTIVE: "active",
    RuleStanding.EXPIRED: "expired",
    RuleStanding.REVOKED: "revoked",
}


@dataclass(frozen=True)
class RuleTerms:
    """What a rule says, as its grant recorded it, and where it is."""

    rule_id: str
    task_id: str
    seq: int
    granted_by: str  # the person's id
    granted_at: str
    verdict: str
    scope: str
    agent: str | None
    session_id: str | None
    tool: str
    target: str
    payload: Mapping[str, Any] | None
    expires_at: str
    revoked_at: str | None = None
    revoked_by: str | None = None


@dataclass(frozen=True)
class CallAsked:
    """A request as a rule reads it: where, by whom, for what."""

    task_id: str
    requester_kind: str
    requester_id: str
    session_id: str | None
    tool: str
    target: str
    payload: Mapping[str, Any]
    policy: str
    needed: int
    reserved: bool


def tool_of(target: str, tool: str | None, kind: str) -> str:
    """The tool a call uses: the one its effect was planned under, else the name its target
    ends in (`…://tools/NAME`), else the effect's kind (a file write's `write_file`)."""
    if tool:
        return tool
    if TOOLS_MARK in target:
        return target.split(TOOLS_MARK, 1)[1]
    return kind


def standing(terms: RuleTerms, now: str) -> RuleStanding:
    if terms.revoked_at is not None and terms.revoked_at <= now:
        return RuleStanding.REVOKED
    if terms.expires_at <= now:
        return RuleStanding.EXPIRED
    return RuleStanding.ACTIVE


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, str):
        return isinstance(value, str) and fnmatch.fnmatchcase(value, wanted)
    return bool(value == wanted)


def payload_refusal(constraint: Mapping[str, Any] | None, payload: Mapping[str, Any]) -> str | None:
    for key, wanted in (constraint or {}).items():
        if key not in payload:
            return f"the call's payload has no {key!r}"
        if not _matches(payload[key], wanted):
            return f"the call's {key!r} does not match {wanted!r}"
    return None


def scope_refusal(terms: RuleTerms, call: CallAsked) -> str | None:
    if terms.scope == RuleScope.TASK and terms.task_id != call.task_id:
        return f"it covers task {terms.task_id}'s calls, not task {call.task_id}'s"
    if terms.scope == RuleScope.AGENT:
        asked = f"{call.requester_kind}:{call.requester_id}"
        if terms.agent != asked:
            return f"it covers {terms.agent}'s calls, not {asked}'s"
    if terms.scope == RuleScope.SESSION and (
        not call.session_id or terms.session_id != call.session_id
    ):
        return f"it covers session {terms.session_id}'s calls, not {call.session_id or 'none'}'s"
    return None


def why_not_deciding(terms: RuleTerms, call: CallAsked, at: str) -> str | None:
    """Why this rule does not decide this call at `at` (database clock); None when it does."""
    if terms.granted_at > at:
        return f"rule {terms.rule_id} was granted at {terms.granted_at}, after the call"
    now = standing(terms, at)
    if now == RuleStanding.REVOKED:
        return f"rule {terms.rule_id} was revoked at {terms.revoked_at} by {terms.revoked_by}"
    if now == RuleStanding.EXPIRED:
        return f"rule {terms.rule_id} expired at {terms.expires_at}"
    if call.reserved:
        return f"policy {call.policy!r} is reserved for a person every time"
    if call.needed > 1:
        return f"the call needs {call.needed} people; a rule is one person's answer"
    if call.requester_kind == "person" and call.requester_id == terms.granted_by:
        return f"{terms.granted_by} asked for this call; no one decides their own request"
    why = scope_refusal(terms, call)
    if why is None and not fnmatch.fnmatchcase(call.tool, terms.tool):
        why = f"the call's tool {call.tool!r} does not match {terms.tool!r}"
    if why is None and not fnmatch.fnmatchcase(call.target, terms.target):
        why = f"the call's target {call.target!r} does not match {terms.target!r}"
    if why is None:
        why = payload_refusal(terms.payload, call.payload)
    return None if why is None else f"rule {terms.rule_id} does not cover it: {why}"


def scope_words(terms: RuleTerms) -> str:
    """ "task t-1", "agent:drafter's calls", "session s-9": what a rule covers, in words."""
    if terms.scope == RuleScope.AGENT:
        return f"{terms.agent}'s calls"
    if terms.scope == RuleScope.SESSION:
        return f"session {terms.session_id}"
    return f"task {terms.task_id}"
