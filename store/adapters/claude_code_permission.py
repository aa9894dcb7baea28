"""Claude Code's interactive permission moments answered from Boris: the `PermissionRequest`
hook and PreToolUse's `permissionDecision` (`boris hook permission-request`,
`boris hook pre-tool-use --decide`).

Contract followed: Claude Code's hooks reference (https://code.claude.com/docs/en/hooks,
"PreToolUse decision control", "PermissionRequest decision control", "Exit code output",
"JSON output"; README "Claude Code" says which copy was read):

- A command hook gets one JSON object on stdin. PermissionRequest's carries `tool_name` and
  `tool_input` "like PreToolUse hooks, but without `tool_use_id`", and an optional
  `permission_suggestions` array (the dialog's "always allow" options); it fires when a
  permission dialog is about to be shown. PreToolUse's carries `tool_use_id` too, and fires
  before every matched call.
- Claude Code reads JSON on stdout only on exit 0. PermissionRequest answers with
  `{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {...}}}`:
  `behavior` `"allow"` (with `updatedInput`, which replaces the whole input) or `"deny"`
  (with `message`, which tells Claude why, and `interrupt`: true stops Claude). PreToolUse
  answers with `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
  "allow" | "deny" | "ask", "permissionDecisionReason": ..., "updatedInput"?: ...}}`: the
  reason is shown to Claude for `deny`, to the user for `allow` and `ask`; `ask` shows the
  permission prompt in the terminal. The universal `"continue": false` with `stopReason`
  stops Claude after any hook (PreToolUse's interrupt).
- A command hook runs at most its `timeout` (600 s by default); a hook Claude Code kills is a
  non-blocking error, so Boris answers before that (`DEFAULT_WAIT_SECONDS`).

Each call is asked exactly as the permission-prompt tool asks it (`claude_code.ask`): the
effect's intent recorded, an approval bound to the digest of exactly its input requested; a
person decides in Boris Desktop or with `boris approve` / `reject` / `send-back` / `stop`.
Approved: the attempt is recorded (consuming the approval) and Claude Code is told `allow`,
with `updatedInput` only when the person edited the input (an unchanged input is not
rewritten: under auto mode a rewrite makes the classifier give no verdict). Rejected or
sent back: `deny` with who and their note (Claude reads it). The task's run stopped in Boris:
`deny` with `interrupt` (PermissionRequest) or `continue: false` (PreToolUse), so Claude
stops. Nobody decided within the wait: the effect is cancelled (its approval revoked) and
the answer is `deny`, or with `on_timeout="ask"` the terminal's own prompt (PreToolUse's
`ask`; for PermissionRequest no decision, so Claude Code shows its dialog): a person decides
either way, never a silent allow. Whatever fails in Boris denies. Answered in the tool's
place (`boris respond`, a text: the effect declares `claude_code.TOOL_RESULT_SCHEMA`): `deny`
whose message is the person's result, no interrupt; the documented way to hand Claude a text
for a call it does not run (PreToolUse's reason for `deny` "is shown to Claude").

Codex's PermissionRequest hook (OpenAI's Codex CLI) takes the same answer, with this
difference (its hook schemas, `codex-rs/hooks/schema/generated/permission-request.command.
{input,output}.schema.json` in openai/codex): its input is `tool_name` "Bash" and
`tool_input` `{"command"}` with no `tool_use_id`, and its decision "currently fail[s] closed"
when `updatedInput` or `updatedPermissions` is present. So a Codex call is recorded as
`codex://tools/<tool>` (`claude_code.CODEX`), and a person's edit is not run: the call is
denied with the person's input, for Codex to ask again with exactly it.

"Always": a person answers it in Boris, as a standing rule (`boris rules add --from-approval`,
the window's Rules panel; the `permission_suggestions` Claude Code offers are kept beside the
call as the rules they map to, `claude_code_rules`), which decides each next call like it as the hook asks about it,
recorded as the rule's decision. Boris never answers with `updatedPermissions` (nor echoes a
`permission_suggestions` entry): that would write the rule into Claude Code's settings, the
calls it covers would no longer reach Boris (no dialog, no PermissionRequest), and revoking
or expiring the rule in Boris would stop none of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from ..model import Actor
from ..store import Store
from . import claude_code as cc

#: How long a hook waits for a person by default: under Claude Code's 600 s command-hook
#: timeout, so Boris answers before Claude Code gives up on the hook.
DEFAULT_WAIT_SECONDS = 540.0
#: The longest a hook may be told to wait (a day): Claude Code's hook `timeout` bounds it too.
MAX_WAIT_SECONDS = 86400.0
#: What a call nobody decided in time gets: Claude Code told no, or its own prompt shown.
OnTimeout = Literal["deny", "ask"]
ON_TIMEOUT: tuple[OnTimeout, ...] = ("deny", "ask")


def wait_for_person(
    store: Store,
    task_id: str,
    approval_id: str,
    timeout: float,
    *,
    every: float = 0.2,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[dict[str, Any], bool]:
    """Look at the approval until a person decides it (or it expires, is revoked) or
    `timeout` seconds pass: the approval as it stands then, and whether time ran out."""
    deadline = time.monotonic() + timeout
    while True:
        now = cc.approval_as_it_stands(store, task_id, approval_id)
        left = deadline - time.monotonic()
        if now["decided"] or left <= 0:
            return dict(now), not now["decided"]
        sleep(min(every, left))


def decide(
    store: Store,
    actor: Actor,
    task_id: str,
    call: cc.HookCall,
    *,
    wait_seconds: float = DEFAULT_WAIT_SECONDS,
    host: cc.Host = cc.CLAUDE_CODE,
) -> cc.Verdict:
    """One hook's call, start to end: asked in Boris, a person's decision waited for, the
    verdict. Ended while waiting (Claude Code killed the hook, the user answered in the
    terminal): the effect is cancelled, then the ending goes on. `host`: whose hook it is
    (Claude Code's, or Codex's PermissionRequest: `cc.CODEX`)."""
    settings = cc.PromptSettings(task_id=task_id, timeout_seconds=wait_seconds, host=host)
    arguments = {
        "tool_name": call.tool_name,
        "input": call.tool_input,
        "tool_use_id": call.tool_use_id,
        "permission_suggestions": list(call.suggestions),
    }
    asked = cc.ask(store, actor, settings, arguments)
    if asked.decision is not None:  # refused before anyone was asked (its words say so)
        return cc.Verdict(False, str(asked.decision["message"]), unrecorded=True)
    assert asked.approval_id is not None
    try:
        now, timed_out = wait_for_person(store, task_id, asked.approval_id, wait_seconds)
    except BaseException:
        cc.cancel_unanswered(store, actor, task_id, asked)
        raise
    return cc.judge(
        store,
        actor,
        task_id,
        asked,
        now,
        tool_name=call.tool_name,
        tool_input=call.tool_input,
        timed_out=timed_out,
        waited_for=wait_seconds,
    )


def _not_run(verdict: cc.Verdict) -> str:
    return verdict.said


def permission_request_output(verdict: cc.Verdict, on_timeout: OnTimeout) -> dict[str, Any] | None:
    """The PermissionRequest hook's stdout for a verdict; None for no decision (Claude Code
    shows its own permission dialog: `on_timeout="ask"` when nobody decided in Boris)."""
    if verdict.undecided and on_timeout == "ask":
        return None
    decision: dict[str, Any]
    if verdict.allowed:
        decision = {"behavior": "allow"}
        if verdict.edited:
            decision["updatedInput"] = verdict.run_input
    else:
        decision = {"behavior": "deny", "message": _not_run(verdict)}
        if verdict.stopped:
            decision["interrupt"] = True
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def pre_tool_use_output(verdict: cc.Verdict, on_timeout: OnTimeout) -> dict[str, Any]:
    """The PreToolUse hook's stdout for a verdict: `permissionDecision` allow, deny or ask
    (nobody decided in Boris and `on_timeout="ask"`: the terminal's permission prompt)."""
    specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if verdict.allowed:
        specific["permissionDecision"] = "allow"
        specific["permissionDecisionReason"] = verdict.message
        if verdict.edited:
            specific["updatedInput"] = verdict.run_input
    elif verdict.undecided and on_timeout == "ask":
        specific["permissionDecision"] = "ask"
        specific["permissionDecisionReason"] = verdict.message + ": asking here instead"
    else:
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = _not_run(verdict)
    output: dict[str, Any] = {"hookSpecificOutput": specific}
    if verdict.stopped and not verdict.allowed:
        output["continue"] = False
        output["stopReason"] = _not_run(verdict)
    return output


def refused_output(event: str, message: str) -> dict[str, Any]:
    """Boris failed (no store, no key, a refusal): the call is denied, saying why, so nothing
    runs that Boris did not record."""
    said = f"Boris could not record this call, so it was not run: {message}"
    if event == "PermissionRequest":
        decision = {"behavior": "deny", "message": said}
        return {"hookSpecificOutput": {"hookEventName": event, "decision": decision}}
    return {
        "hookSpecificOutput": {
            "hookEventName": event,
            "permissionDecision": "deny",
            "permissionDecisionReason": said,
        }
    }
