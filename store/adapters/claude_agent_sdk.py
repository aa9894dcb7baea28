"""The Claude Agent SDK's approval moment as Boris's: a `can_use_tool` callback.

Contract followed (claude-agent-sdk 0.2.190, `claude_agent_sdk.types`): the SDK awaits
`can_use_tool(tool_name: str, input: dict[str, Any], context: ToolPermissionContext)` and
expects a `PermissionResultAllow` (`updated_input`: what runs; None would run the input as
asked) or a `PermissionResultDeny` (`message`: what Claude reads). The SDK turns these into
Claude Code's `{"behavior": "allow", "updatedInput": …}` / `{"behavior": "deny", "message":
…}`, the same answer `boris mcp`'s permission_prompt gives, so the behaviour is that tool's,
shared (`claude_code.answer_prompt`): the call's intent recorded before anything runs, an
approval bound to the digest of exactly its input, a person's decision from Boris Desktop or
the `boris` CLI, and the attempt recorded (consuming the approval) before the approved input,
a person's edit when they made one, is handed back. The Agent SDK runs Claude Code, so a call
is the same effect as under Claude Code: target `claude-code://tools/<tool_name>`, keyed by
`claude-code:<tool_use_id>` (the context's `tool_use_id`).

A deny carries `interrupt=True` (the SDK's "stop Claude") when the task's run was stopped in
Boris. A call a person answered in the tool's place (`boris respond`) is a deny whose message
is their result: the tool result Claude reads for a call that is not run. The context's `suggestions` (Claude Code's "always" options) are kept beside the call as the
Boris standing rules they map to (`claude_code_rules`: a note naming the `boris rules add
--from-approval` line of each, `rule_from_suggestion` for an app): the person picks one in
Boris, and the rule decides each next call like it as it is asked, recorded as the rule's.
They are never answered back as `updated_permissions`: in Claude Code's settings a rule would
take those calls out of Boris, and revoking it would stop none of them.

On a signed store (what `boris init` makes) the calls are signed with the agent's key by the
one rule (`signing.keys.signer_for`): the store's `signer` if given, else BORIS_KEY's. Without
one each call is denied with the refusal's one line, which names the `boris keys new` /
`boris keys add` commands that give the agent a trusted key.

Import this module only with the checkout's extra installed (`.venv/bin/pip install -e
'.[claude-agent-sdk]'` in the Boris checkout): it imports `claude_agent_sdk`, which the core
does not need.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import anyio
import anyio.to_thread
from claude_agent_sdk import (
    HookContext,
    HookInput,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ToolPermissionContext,
)
from claude_agent_sdk.types import HookEvent, SyncHookJSONOutput

from ..model import Actor
from ..services.answers import UsageError
from ..store import Store
from . import claude_code

CanUseTool = Callable[
    [str, dict[str, Any], ToolPermissionContext],
    Awaitable[PermissionResultAllow | PermissionResultDeny],
]


def boris_can_use_tool(
    store: Store,
    actor: Actor | str,
    task_id: str,
    *,
    timeout_seconds: float = 600.0,
    auto_allow: Iterable[str] = (),
    poll_seconds: float = 0.2,
) -> CanUseTool:
    """A `can_use_tool` callback for `ClaudeAgentOptions(can_use_tool=...)` that asks Boris.

    `actor` is the agent the calls are recorded for (`agent:ID`; a person decides, never the
    agent's process). `task_id` names the task the calls are recorded in; its scope must admit
    the tools (`--destination claude-code://tools/` admits every one). A person has
    `timeout_seconds` to decide, after which the call is denied and its effect cancelled.
    Tools in `auto_allow` are recorded and allowed without a person."""
    who = Actor.parse(actor) if isinstance(actor, str) else actor
    if who.kind != "agent":
        raise UsageError(
            f"the Agent SDK's calls are recorded for an agent, not a {who.kind} ({who}): "
            "people decide in Boris Desktop or with the boris CLI"
        )
    if not timeout_seconds > 0:
        raise UsageError("timeout_seconds must be a positive number of seconds")
    store.sign_as(who)  # the agent's key, given or BORIS_KEY's: never a person's
    settings = claude_code.PromptSettings(
        task_id=task_id, timeout_seconds=timeout_seconds, auto_allow=frozenset(auto_allow)
    )
    # Store work off the event loop, one piece at a time, as in `boris mcp`.
    one = anyio.CapacityLimiter(1)

    async def in_store(fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args, limiter=one)

    async def wait(task: str, approval_id: str, timeout: float) -> tuple[dict[str, Any], bool]:
        return await claude_code.poll_for_person(
            in_store, store, task, approval_id, timeout, every=poll_seconds
        )

    async def can_use_tool(
        tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        arguments: dict[str, Any] = {"tool_name": tool_name, "input": tool_input}
        if context.tool_use_id:
            arguments["tool_use_id"] = context.tool_use_id
        # Claude Code's "always" options, offered to the person in Boris as standing rules.
        arguments["permission_suggestions"] = _wire(context.suggestions)
        answer = await claude_code.answer_prompt(
            store, who, settings, arguments, in_store=in_store, wait=wait
        )
        result = as_permission_result(answer)
        if isinstance(result, PermissionResultDeny) and task_id:
            # The run was stopped in Boris: the SDK's deny may interrupt, so Claude stops.
            result.interrupt = bool(await in_store(claude_code.run_stopped, store, task_id))
        return result

    return can_use_tool


def boris_hooks(
    store: Store, actor: Actor | str, task_id: str
) -> dict[HookEvent, list[HookMatcher]]:
    """`ClaudeAgentOptions(hooks=...)`: the SDK's PostToolUse / PostToolUseFailure hooks make
    what Claude Code reported the attempt's response (`claude_code.post_tool_use`): its word,
    so the outcome stays unknown until someone reconciles it. A call the callback never saw
    (one Claude Code ran without asking) is recorded then, intent and attempt with it. A
    failure of Boris does not stop the agent: the hook answers with a `systemMessage`."""
    who = Actor.parse(actor) if isinstance(actor, str) else actor
    store.sign_as(who)
    one = anyio.CapacityLimiter(1)

    async def record(
        given: HookInput, tool_use_id: str | None, context: HookContext
    ) -> SyncHookJSONOutput:
        hook_input: dict[str, Any] = dict(given)
        event = str(hook_input.get("hook_event_name") or "")
        try:
            call = claude_code.HookCall(
                event=event,
                session_id=str(hook_input.get("session_id") or ""),
                tool_name=str(hook_input["tool_name"]),
                tool_input=dict(hook_input["tool_input"]),
                tool_use_id=hook_input.get("tool_use_id") or tool_use_id or None,
                tool_response=hook_input.get("tool_response"),
                error=hook_input.get("error"),
                duration_ms=hook_input.get("duration_ms"),
            )
            await anyio.to_thread.run_sync(
                claude_code.post_tool_use, store, who, task_id, call, limiter=one
            )
        except Exception as exc:  # never the agent's failure: say so, go on
            return SyncHookJSONOutput(
                systemMessage=f"Boris could not record this {event} call: {exc}"
            )
        return SyncHookJSONOutput()

    return {
        "PostToolUse": [HookMatcher(hooks=[record])],
        "PostToolUseFailure": [HookMatcher(hooks=[record])],
    }


def _wire(suggestions: list[PermissionUpdate]) -> list[dict[str, Any]]:
    """The SDK's suggestions as Claude Code sent them (`PermissionUpdate.to_dict`); one this
    SDK cannot write back is left out."""
    wire = []
    for suggestion in suggestions:
        try:
            wire.append(suggestion.to_dict())
        except ValueError:
            continue
    return wire


def as_permission_result(answer: dict[str, Any]) -> PermissionResultAllow | PermissionResultDeny:
    """Claude Code's answer object as the SDK's result class."""
    if answer.get("behavior") == "allow":
        # Always the object that was approved and recorded, never None (which would run the
        # input as asked, not a person's edit).
        return PermissionResultAllow(updated_input=dict(answer["updatedInput"]))
    return PermissionResultDeny(message=str(answer.get("message") or "Boris denied this call"))
