"""Claude Code's approval moment as Boris's: the permission-prompt tool and the tool hooks.

Contracts followed (README "Claude Code" says where each was read):

- `claude -p --permission-prompt-tool mcp__boris__permission_prompt` calls the MCP tool with
  `{"tool_name", "input", "tool_use_id"?}` and reads one text content whose JSON is
  `{"behavior": "allow", "updatedInput": {...}}` or `{"behavior": "deny", "message": "..."}`.
- Command hooks get one JSON object on stdin: `session_id`, `transcript_path`, `cwd`,
  `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`, and after the run
  `tool_response` (PostToolUse) or `error` (PostToolUseFailure). Exit 0 with no output is
  "no decision"; exit 2 blocks a PreToolUse call; any other code is a non-blocking error.

Every tool call is one effect of kind `other` whose target is the destination
`claude-code://tools/<tool_name>` (so the task's scope says which tools may be asked about at
all: `--destination claude-code://tools/` admits every tool) and whose prepared object is the
call's input, exactly. The effect is keyed by `claude-code:<tool_use_id>`, so the permission
tool and the hooks of one call meet on one effect.

On a signed store (what `boris init` makes) every write is signed with the agent's key by the
one rule (`signing.keys.signer_for`): `--key` or BORIS_KEY. Without one the refusal's one line
(the `boris keys new` / `boris keys add` commands that fix it) is the permission prompt's deny
message and `boris hook`'s line on stderr.

Protocol-free: the MCP server (`store.mcp.server`) and `boris hook` (`store.cli.hook`) call
these functions. `answer_prompt` is the whole prompt, shared by the MCP tool and the Agent
SDK's `can_use_tool` callback (`claude_agent_sdk`); each brings its own wait on the person.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import sqlalchemy as sa

from .. import db, rules
from .. import schema as t
from ..canonical import canonical_json, digest_of
from ..commands import approvals as ap
from ..commands import effects as lg
from ..commands import tool_calls
from ..commands.core import RecordNote, new_id
from ..limits import lone_surrogate
from ..model import Actor
from ..services import answers
from ..services.answers import UsageError
from ..services.respond import answered_result
from ..store import Store
from . import claude_code_rules

logger = logging.getLogger(__name__)
#: Runs one piece of store work off the event loop (one at a time), and returns its result.
InStore = Callable[..., Awaitable[Any]]
#: Waits for a person on (task_id, approval_id, timeout): the approval as it stands then
#: (`approval_now`'s shape) and whether the wait ran out first.
WaitForPerson = Callable[[str, str, float], Awaitable[tuple[dict[str, Any], bool]]]

#: The MCP tool's name: `--permission-prompt-tool mcp__<server>__permission_prompt`.
PERMISSION_TOOL = "permission_prompt"
#: Where a tool call points: the task's scope admits it (`--destination claude-code://tools/`).
TARGET_PREFIX = tool_calls.CLAUDE_CODE_TOOLS
#: The policy every approval of a Claude Code tool call names.
POLICY = "Claude Code asks before this tool runs"
#: Tools that may be allowed without a person when configured (`boris mcp --auto-allow`):
#: the read-only ones Claude Code documents. None is by default: Claude Code asks about
#: them only when they reach outside its working directories, which a person should see.
READ_ONLY_TOOLS = ("Read", "Glob", "Grep", "LS")
#: How long an approval outlives the prompt's wait (the wait's end revokes it anyway).
EXPIRY_MARGIN_SECONDS = 60.0
#: The longest response kept whole in the record; a longer one is kept as digest and size.
MAX_KEPT_RESPONSE_BYTES = 64 * 1024

#: The result a person may give in a tool's place (`boris respond`, issue 42): the tool's
#: output as Claude reads it. Claude Code's only documented way to hand Claude a text instead
#: of running the tool is a deny whose message Claude reads (PermissionRequest's `message`,
#: PreToolUse's `permissionDecisionReason`, the Agent SDK's `PermissionResultDeny.message`),
#: so the answer is text, handed over in that message.
TOOL_RESULT_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "the tool's output as Claude will read it in place of running the call",
}

#: A tool name that is a plain path segment (MCP tools are `mcp__server__tool`).
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class HookInputRefused(UsageError):
    """What Claude Code sent is not the documented JSON: nothing was recorded."""

    code = "hook_input"


# --- the answers Claude Code reads -------------------------------------------------------


def allow(updated_input: dict[str, Any]) -> dict[str, Any]:
    """Run the tool with exactly this input (the person's edit when they made one)."""
    return {"behavior": "allow", "updatedInput": updated_input}


def deny(message: str) -> dict[str, Any]:
    """Do not run the tool; Claude reads the message."""
    return {"behavior": "deny", "message": message}


@dataclass(frozen=True)
class Host:
    """The agent whose tool calls these are: where they point, how they are worded and keyed,
    and whether its answer can carry a person's edit of the input."""

    name: str
    target_prefix: str
    key_prefix: str
    policy: str
    takes_edits: bool = True

    def consequence(self, tool_name: str, tool_input: dict[str, Any]) -> str:
        said = tool_calls.claude_code_consequence(tool_name, tool_input)
        return self.name + said.removeprefix("Claude Code")


#: Claude Code (the permission prompt, its hooks, the Agent SDK).
CLAUDE_CODE = Host("Claude Code", TARGET_PREFIX, "claude-code", POLICY)
#: OpenAI's Codex CLI, through its PermissionRequest hook, whose answer may not rewrite the
#: input (its schema: "PermissionRequest hooks currently fail closed if [updatedInput] is
#: present"): a person's edit is not run, Codex is told no with the person's input.
CODEX = Host("Codex", "codex://tools/", "codex", "Codex asks before this tool runs", False)


@dataclass(frozen=True)
class PromptSettings:
    """How `boris mcp` answers permission prompts: for which task, how long it waits for a
    person, and which tools it allows without one (still recorded); `host`, whose calls."""

    task_id: str | None = None
    timeout_seconds: float = 600.0
    auto_allow: frozenset[str] = frozenset()
    host: Host = CLAUDE_CODE


# --- one tool call as an effect ----------------------------------------------------------


def target_of(tool_name: str, host: Host = CLAUDE_CODE) -> str:
    if not _TOOL_NAME.match(tool_name):
        raise UsageError(f"tool_name {tool_name[:80]!r} is not a tool name {host.name} sends")
    return host.target_prefix + tool_name


def key_of(tool_use_id: str | None, host: Host = CLAUDE_CODE) -> str | None:
    """The effect's idempotency key for one tool call, or None when Claude Code gave no id."""
    if not tool_use_id:
        return None
    key = f"{host.key_prefix}:{tool_use_id}"
    return key if len(key) <= 128 else f"{host.key_prefix}:" + digest_of(tool_use_id)


def executor_of(tool_name: str, host: Host = CLAUDE_CODE) -> str:
    return f"{host.key_prefix}:{tool_name}"[:128]


#: One line a reviewer agrees to: the tool and what it acts on. Worded in the command layer
#: (store.commands.tool_calls), so that a person's edit of the input, decided in any process,
#: revises the consequence to the edit's.
consequence_of = tool_calls.claude_code_consequence

#: A destination's intended state as the store can know it: the call with this input.
_intended = tool_calls.call_intended


def _plan(
    effect_id: str,
    task_id: str,
    tool_name: str,
    tool_input: dict[str, Any],
    key: str | None,
    *,
    requires_approval: bool,
    host: Host = CLAUDE_CODE,
) -> lg.PlanEffect:
    return lg.PlanEffect(
        task_id=task_id,
        effect_id=effect_id,
        kind="other",
        target=target_of(tool_name, host),
        consequence=host.consequence(tool_name, tool_input),
        intended=_intended(tool_input),
        prepared=tool_input,
        requires_approval=requires_approval,
        policy=host.policy if requires_approval else "",
        idempotency_key=key,
        # A person asked may answer in the tool's place (`boris respond`).
        result_schema=TOOL_RESULT_SCHEMA if requires_approval else None,
    )


def find_effect(store: Store, task_id: str, key: str) -> Any:
    """The effect one tool call made, by its key; None when there is none yet."""
    with store.read() as conn:
        return conn.execute(
            sa.select(t.effects).where(
                t.effects.c.task_id == task_id, t.effects.c.idempotency_key == key
            )
        ).first()


def _open_attempt(store: Store, task_id: str, effect_id: str) -> Any:
    with store.read() as conn:
        return conn.execute(
            sa.select(t.attempts)
            .where(
                t.attempts.c.task_id == task_id,
                t.attempts.c.effect_id == effect_id,
                t.attempts.c.ended_at.is_(None),
            )
            .order_by(t.attempts.c.attempt_no.desc())
            .limit(1)
        ).first()


def _find_by_input(
    store: Store, task_id: str, tool_name: str, digest: str, *, keyless: bool = False
) -> Any:
    """Without a tool_use_id: the latest effect for this tool and exactly this input whose
    attempt is still waiting for its response (`keyless`: only among the effects recorded
    without a tool_use_id, as a PermissionRequest hook records them)."""
    with store.read() as conn:
        rows = conn.execute(
            sa.select(t.effects)
            .where(t.effects.c.task_id == task_id, t.effects.c.target == target_of(tool_name))
            .order_by(t.effects.c.position.desc())
        ).all()
    for row in rows:
        if keyless and str(row.idempotency_key or "").startswith("claude-code:"):
            continue  # a call with its own tool_use_id: another one
        if dict(row.intent).get("prepared_digest") == digest and _open_attempt(
            store, task_id, str(row.effect_id)
        ):
            return row
    return None


# --- the permission-prompt tool ------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """A tool call waiting for a person: its effect and the approval bound to its digest.
    `decision` is set instead when the answer needs no person (auto-allowed, refused)."""

    effect_id: str | None = None
    approval_id: str | None = None
    digest: str | None = None
    decision: dict[str, Any] | None = None
    host: Host = CLAUDE_CODE


def prompt_arguments(arguments: dict[str, Any]) -> tuple[str, dict[str, Any], str | None]:
    """The documented input of the permission-prompt tool: tool_name, input, tool_use_id."""
    tool_name = arguments.get("tool_name")
    tool_input = arguments.get("input")
    tool_use_id = arguments.get("tool_use_id")
    if not isinstance(tool_name, str) or not tool_name:
        raise UsageError("permission_prompt needs tool_name: the tool Claude Code would run")
    if not isinstance(tool_input, dict):
        raise UsageError("permission_prompt needs input: the tool's input, a JSON object")
    if tool_use_id is not None and not isinstance(tool_use_id, str):
        raise UsageError("tool_use_id must be a string")
    return tool_name, tool_input, tool_use_id or None


def ask(store: Store, actor: Actor, settings: PromptSettings, arguments: dict[str, Any]) -> Asked:
    """Record the call's intent and ask a person to approve exactly its input. A tool in
    `settings.auto_allow` is planned and dispatched at once, without a person."""
    store.sign_as(actor)  # the agent's key by the one rule (signing.keys.signer_for)
    if not settings.task_id:
        return Asked(
            decision=deny(
                "Boris has no task to record this call in: start `boris mcp` with --task ID "
                "(or BORIS_TASK); nothing was run"
            )
        )
    task_id = settings.task_id
    host = settings.host
    tool_name, tool_input, tool_use_id = prompt_arguments(arguments)
    key = key_of(tool_use_id, host)
    digest = digest_of(tool_input)
    existing = find_effect(store, task_id, key) if key else None
    if existing is not None:
        # The same call asked again (a retried prompt): wait on the approval it already has.
        pending = _pending_approval(store, task_id, str(existing.effect_id))
        if pending is not None and lg.intent_open(existing):
            return Asked(str(existing.effect_id), pending, digest, host=host)
        return Asked(
            decision=deny(
                f"Boris already recorded tool call {tool_use_id} as effect {existing.effect_id} "
                f"({existing.stage}): with --permission-prompt-tool, configure only the "
                "PostToolUse hooks, not PreToolUse; nothing was run"
            )
        )
    effect_id = new_id("eff")
    if tool_name in settings.auto_allow:
        store.execute_all(
            [
                _plan(
                    effect_id,
                    task_id,
                    tool_name,
                    tool_input,
                    key,
                    requires_approval=False,
                    host=host,
                ),
                lg.DispatchEffect(
                    task_id=task_id,
                    effect_id=effect_id,
                    executor=executor_of(tool_name, host),
                    inputs=tool_input,
                ),
            ],
            actor,
        )
        return Asked(effect_id, None, digest, decision=allow(tool_input), host=host)
    approval_id = new_id("apr")
    commands: list[Any] = [
        _plan(effect_id, task_id, tool_name, tool_input, key, requires_approval=True, host=host),
        ap.RequestApproval(
            task_id=task_id,
            approval_id=approval_id,
            effect_id=effect_id,
            policy=host.policy,
            # Alive a little past the wait, so a decision made as the wait ends can still
            # be used; the wait's end cancels the effect, which revokes it.
            expires_in_seconds=settings.timeout_seconds + EXPIRY_MARGIN_SECONDS,
        ),
    ]
    store.execute_all(commands, actor)
    # Claude Code's own "always" answers for the call, kept beside it as the Boris rules a
    # person may grant instead (store.adapters.claude_code_rules): only while a person is
    # asked (a standing rule may have decided it as it was asked).
    offered = claude_code_rules.offer_note(
        task_id, approval_id, tool_name, tool_input, suggestions_of(arguments), host.name
    )
    if offered is not None and not approval_as_it_stands(store, task_id, approval_id)["decided"]:
        try:
            store.execute(RecordNote(task_id=task_id, text=offered), actor)
        except Exception:  # the offer is a convenience: the call waits for a person anyway
            logger.exception("the offer of Claude Code's 'always' answers was not recorded")
    return Asked(effect_id, approval_id, digest, host=host)


def suggestions_of(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The "always" answers Claude Code offered for a call (`permission_suggestions`, its
    PermissionUpdate objects), as far as they are JSON objects."""
    given = arguments.get("permission_suggestions")
    if not isinstance(given, list):
        return []
    return [dict(s) for s in given if isinstance(s, dict)]


def _pending_approval(store: Store, task_id: str, effect_id: str) -> str | None:
    with store.read() as conn:
        row = conn.execute(
            sa.select(t.approvals.c.approval_id)
            .where(
                t.approvals.c.task_id == task_id,
                t.approvals.c.effect_id == effect_id,
                t.approvals.c.state == "pending",
            )
            .order_by(t.approvals.c.requested_at.desc())
            .limit(1)
        ).first()
    return None if row is None else str(row.approval_id)


def _who(decided_by: Any) -> str:
    if isinstance(decided_by, dict):
        return str(decided_by.get("name") or decided_by.get("id") or "a person")
    return "a person"


@dataclass(frozen=True)
class Verdict:
    """What Boris answers one tool call, before it is worded for Claude Code: `allowed` with
    exactly `run_input` (the person's edit when they made one, `edited`), or not, with the
    `message` Claude reads. `undecided`: nobody decided in time. `stopped`: the task's run
    was stopped in Boris (the hooks interrupt Claude where the contract lets them)."""

    allowed: bool
    message: str
    run_input: dict[str, Any] | None = None
    edited: bool = False
    undecided: bool = False
    stopped: bool = False
    #: Boris could not record the attempt: nothing may run (the message says so already).
    unrecorded: bool = False
    #: A person answered in the tool's place: the message is their result, for Claude.
    answered: bool = False

    @property
    def said(self) -> str:
        """The message Claude reads: why it was not run (the message as it is where it says
        so already, or is the person's answer in the tool's place)."""
        if self.unrecorded or self.answered:
            return self.message
        return self.message + "; it was not run"


def run_stopped(store: Store, task_id: str) -> bool:
    """Whether the task's run was stopped in Boris (`boris stop`, the window's Stop)."""
    with store.read() as conn:
        status = conn.execute(
            sa.select(t.tasks.c.status).where(t.tasks.c.task_id == task_id)
        ).scalar()
    return status == rules.RunStatus.STOPPED


def judge(
    store: Store,
    actor: Actor,
    task_id: str,
    asked: Asked,
    now: dict[str, Any],
    *,
    tool_name: str,
    tool_input: dict[str, Any],
    timed_out: bool,
    waited_for: float,
) -> Verdict:
    """The verdict from the approval as it stands (`now`, as `approval_as_it_stands` reads
    it). Approved: the attempt is recorded (consuming the approval) before the verdict hands
    the approved object over. Anything else: the effect is cancelled, so a late decision
    cannot approve a call nobody will run, and the verdict says why."""
    assert asked.effect_id is not None and asked.approval_id is not None
    state = str(now["state"])
    who = _who(now.get("decided_by"))
    note = str(now.get("note") or "").strip()
    if state == rules.ApprovalState.APPROVED:
        payload = now["payload"]
        if not asked.host.takes_edits and digest_of(payload) != digest_of(tool_input):
            return _edit_not_taken(store, actor, task_id, asked, tool_name, who, payload)
        try:
            store.execute(
                lg.DispatchEffect(
                    task_id=task_id,
                    effect_id=asked.effect_id,
                    executor=executor_of(tool_name, asked.host),
                    inputs=payload,
                    approval_id=asked.approval_id,
                ),
                actor,
            )
        except Exception as exc:  # the record refused the attempt: do not run it
            why = f"Boris could not record the attempt, so it was not run: {exc}"
            return Verdict(False, why, unrecorded=True)
        said = f"{who} approved this {tool_name} call in Boris" + (f": {note}" if note else "")
        edited = digest_of(payload) != digest_of(tool_input)
        return Verdict(True, said, run_input=payload, edited=edited)
    if state == rules.ApprovalState.ANSWERED:
        return _answered(store, task_id, asked, tool_name)
    undecided = False
    if state == rules.ApprovalState.REJECTED:
        message = f"{who} rejected this {tool_name} call in Boris" + (f": {note}" if note else "")
    elif state == rules.ApprovalState.SENT_BACK:
        message = f"{who} sent this {tool_name} call back in Boris (changes requested): {note}"
    elif timed_out or state == rules.ApprovalState.EXPIRED:
        message = f"nobody decided this {tool_name} call in Boris within {waited_for:g} s"
        undecided = True
    else:
        message = f"the approval of this {tool_name} call is {state} in Boris"
    stopped = run_stopped(store, task_id)
    if stopped and not undecided:
        message += " (the run was stopped)"
    _cancel_quietly(store, actor, task_id, asked.effect_id, message)
    return Verdict(False, message, undecided=undecided, stopped=stopped)


def _answered(store: Store, task_id: str, asked: Asked, tool_name: str) -> Verdict:
    """A person answered the call in the tool's place (`boris respond`): it is not run (the
    store cancelled its effect with the answer), and Claude reads the person's result as the
    deny's message: Claude Code's documented way to give Claude a text for a call it does
    not run."""
    assert asked.approval_id is not None
    found = answered_result(store, task_id, asked.approval_id)
    assert found is not None  # an answered approval has its event
    result = found.result if isinstance(found.result, str) else canonical_json(found.result)
    who = found.answered_by.name or found.answered_by.id
    message = (
        f"{who} answered this {tool_name} call in Boris in the tool's place; it was not run. "
        f"The {tool_name} tool's result:\n{result}"
    )
    return Verdict(False, message, answered=True)


def _edit_not_taken(
    store: Store,
    actor: Actor,
    task_id: str,
    asked: Asked,
    tool_name: str,
    who: str,
    payload: Any,
) -> Verdict:
    """A person approved other input than the call's, and the host's answer cannot carry it:
    the call is not run (its effect cancelled, the approval revoked with it); the agent reads
    the person's input and may ask again with exactly it."""
    message = (
        f"{who} approved this {tool_name} call in Boris only with other input: "
        f"{canonical_json(payload)}. {asked.host.name} cannot run an edited call: "
        "ask again with exactly this input"
    )
    assert asked.effect_id is not None
    _cancel_quietly(store, actor, task_id, asked.effect_id, message)
    return Verdict(False, message)


def settle(
    store: Store,
    actor: Actor,
    task_id: str,
    asked: Asked,
    now: dict[str, Any],
    *,
    tool_name: str,
    timed_out: bool,
    waited_for: float,
    tool_input: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The permission prompt's answer (`allow` with the approved input, or `deny` with why)
    from the approval as it stands: `judge`'s verdict in the prompt's words."""
    verdict = judge(
        store,
        actor,
        task_id,
        asked,
        now,
        tool_name=tool_name,
        tool_input=tool_input if tool_input is not None else {},
        timed_out=timed_out,
        waited_for=waited_for,
    )
    if verdict.allowed:
        assert verdict.run_input is not None
        return allow(verdict.run_input)
    return deny(verdict.said)


def cancel_unanswered(store: Store, actor: Actor, task_id: str, asked: Asked) -> None:
    """Claude Code gave up on the prompt (the call was cancelled): nobody will run the call,
    so its effect is cancelled and its approval revoked."""
    if asked.effect_id is not None:
        why = "Claude Code cancelled the permission prompt before a person decided"
        _cancel_quietly(store, actor, task_id, asked.effect_id, why)


def _cancel_quietly(store: Store, actor: Actor, task_id: str, effect_id: str, why: str) -> None:
    """Cancel an effect that will not run; one already settled otherwise is left as it is."""
    try:
        store.execute(lg.CancelEffect(task_id=task_id, effect_id=effect_id, reason=why), actor)
    except Exception:  # decided meanwhile (a stop cancelled it): the record says so already
        return


# --- the whole prompt, protocol-free: MCP's permission_prompt and the Agent SDK's callback ---


async def answer_prompt(
    store: Store,
    actor: Actor,
    settings: PromptSettings,
    arguments: dict[str, Any],
    *,
    in_store: InStore,
    wait: WaitForPerson,
) -> dict[str, Any]:
    """One permission prompt, start to end: the call's intent recorded, an approval of
    exactly its input asked for, a person's decision waited for (at most
    `settings.timeout_seconds`), and the answer, `allow` with the approved input or `deny`
    with why. Never raises for the store's refusals: whatever fails denies, so nothing runs
    that Boris did not record. Cancelled while waiting: the effect is cancelled, then the
    cancellation goes on."""
    try:
        asked = await in_store(ask, store, actor, settings, arguments)
        if asked.decision is not None:
            return dict(asked.decision)
        task_id = str(settings.task_id)
        assert asked.approval_id is not None
        try:
            now, timed_out = await wait(task_id, asked.approval_id, settings.timeout_seconds)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):  # nobody will run it: say so in the record
                await in_store(cancel_unanswered, store, actor, task_id, asked)
            raise
        decide = functools.partial(
            settle,
            tool_name=str(arguments.get("tool_name")),
            timed_out=timed_out,
            waited_for=settings.timeout_seconds,
            tool_input=dict(arguments.get("input") or {}),
        )
        return dict(await in_store(decide, store, actor, task_id, asked, now))
    except Exception as exc:
        error = answers.refusal(exc)["error"]
        if error["category"] == "internal":
            logger.exception("permission prompt failed")
        return deny(f"Boris could not record this call, so it was not run: {error['message']}")


def approval_as_it_stands(store: Store, task_id: str, approval_id: str) -> dict[str, Any]:
    """What `settle` reads of an approval now: its state (`expired` judged by the database's
    clock), who decided, their note, and the approved object (a person's edit, if any)."""
    with store.read() as conn:
        now = db.database_now(conn)
        row = conn.execute(
            sa.select(t.approvals).where(
                t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id
            )
        ).first()
    if row is None:
        raise UsageError(f"task {task_id} has no approval {approval_id!r}")
    state = str(rules.approval_state(str(row.state), row.expires_at, now))
    return {
        "approval_id": approval_id,
        "state": state,
        "decided": state != rules.ApprovalState.PENDING,
        "decided_by": row.decided_by,
        "note": row.note,
        "payload": row.payload if state == rules.ApprovalState.APPROVED else None,
    }


async def poll_for_person(
    in_store: InStore,
    store: Store,
    task_id: str,
    approval_id: str,
    timeout: float,
    *,
    every: float = 0.2,
) -> tuple[dict[str, Any], bool]:
    """Look at the approval until a person decides it (or it expires, is revoked) or
    `timeout` seconds pass: the approval as it stands then, and whether time ran out."""
    started = anyio.current_time()
    while True:
        now = await in_store(approval_as_it_stands, store, task_id, approval_id)
        waited = anyio.current_time() - started
        if now["decided"] or waited >= timeout:
            return dict(now), not now["decided"]
        await anyio.sleep(min(every, max(timeout - waited, 0.0)))


# --- the hooks --------------------------------------------------------------------------

#: The hook events `boris hook` records (and answers: PermissionRequest, and PreToolUse with
#: `--decide`, in `claude_code_permission`), by their command-line names.
HOOK_EVENTS = {
    "pre-tool-use": "PreToolUse",
    "permission-request": "PermissionRequest",
    "post-tool-use": "PostToolUse",
    "post-tool-use-failure": "PostToolUseFailure",
}


@dataclass(frozen=True)
class HookCall:
    """One hook input, as the hooks reference documents it (what Boris reads of it)."""

    event: str
    session_id: str
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str | None
    tool_response: Any = None
    error: str | None = None
    duration_ms: float | None = None
    #: PermissionRequest's `permission_suggestions`: the dialog's "always" options.
    suggestions: tuple[dict[str, Any], ...] = ()


def parse_hook_input(raw: bytes, event: str) -> HookCall:
    """The hook's stdin, checked against the documented schema; a one-line refusal else."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise HookInputRefused(
            f"the {event} hook input on stdin is not JSON ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else 'empty'}); nothing was recorded"
        ) from None
    if not isinstance(value, dict):
        raise HookInputRefused(f"the {event} hook input must be a JSON object; nothing recorded")
    problem = lone_surrogate(value)  # valid JSON (`\ud800`), but no text the record holds
    if problem is not None:
        raise HookInputRefused(f"the {event} hook input's {problem}; nothing was recorded")
    said = value.get("hook_event_name")
    if said is not None and said != event:
        raise HookInputRefused(
            f"this is a {said!r} hook input, not {event!r}: check the hook's settings; "
            "nothing was recorded"
        )
    tool_name = value.get("tool_name")
    tool_input = value.get("tool_input")
    if not isinstance(tool_name, str) or not tool_name:
        raise HookInputRefused(f"the {event} hook input has no tool_name; nothing recorded")
    if not isinstance(tool_input, dict):
        raise HookInputRefused(
            f"the {event} hook input's tool_input is not a JSON object; nothing recorded"
        )
    tool_use_id = value.get("tool_use_id")
    duration = value.get("duration_ms")
    error = value.get("error")
    return HookCall(
        event=event,
        session_id=str(value.get("session_id") or ""),
        tool_name=tool_name,
        tool_input=tool_input,
        tool_use_id=tool_use_id if isinstance(tool_use_id, str) and tool_use_id else None,
        tool_response=value.get("tool_response"),
        error=error if isinstance(error, str) else None,
        duration_ms=duration if isinstance(duration, int | float) else None,
        suggestions=tuple(suggestions_of(value)),
    )


def pre_tool_use(store: Store, actor: Actor, task_id: str, call: HookCall) -> dict[str, Any]:
    """The call is about to run (unless a permission check stops it): its intent and its
    attempt, in one transaction. A denied call keeps an attempt whose outcome stays unknown:
    Boris was never told it did not run."""
    store.sign_as(actor)  # the agent's key by the one rule (signing.keys.signer_for)
    key = key_of(call.tool_use_id)
    if key is not None:
        existing = find_effect(store, task_id, key)
        if existing is not None:  # the same hook fired twice: recorded once
            return {"effect_id": str(existing.effect_id), "recorded": False}
    effect_id = new_id("eff")
    _, attempt = store.execute_all(
        [
            _plan(
                effect_id, task_id, call.tool_name, call.tool_input, key, requires_approval=False
            ),
            lg.DispatchEffect(
                task_id=task_id,
                effect_id=effect_id,
                executor=executor_of(call.tool_name),
                inputs=call.tool_input,
            ),
        ],
        actor,
    )
    return {"effect_id": effect_id, "attempt_no": attempt, "recorded": True}


def _kept_response(call: HookCall) -> dict[str, Any]:
    """Claude Code's report of the run: the tool's response whole when it is small, else its
    digest and size (a Read's response is the file's text)."""
    response: dict[str, Any] = {"tool_use_id": call.tool_use_id, "session_id": call.session_id}
    if call.duration_ms is not None:
        response["duration_ms"] = call.duration_ms
    if call.tool_response is not None:
        text = canonical_json(call.tool_response)
        response["tool_response_digest"] = digest_of(call.tool_response)
        response["tool_response_bytes"] = len(text.encode("utf-8"))
        if len(text.encode("utf-8")) <= MAX_KEPT_RESPONSE_BYTES:
            response["tool_response"] = call.tool_response
    return response


def post_tool_use(store: Store, actor: Actor, task_id: str, call: HookCall) -> dict[str, Any]:
    """The call ran: Claude Code's word on it becomes the attempt's response (its word, not
    evidence: the outcome stays unknown until someone reconciles). Matched by tool_use_id, or
    by tool name and input digest; a call Boris never saw before (a tool Claude Code runs
    without asking, no PreToolUse hook) is recorded now, intent and attempt with the response,
    and says so."""
    store.sign_as(actor)  # the agent's key by the one rule (signing.keys.signer_for)
    failed = call.event == "PostToolUseFailure"
    key = key_of(call.tool_use_id)
    digest = digest_of(call.tool_input)
    response = _kept_response(call)
    row = find_effect(store, task_id, key) if key is not None else None
    if row is None:
        # A call a PermissionRequest hook asked about (its input names no tool_use_id) is
        # found by tool name and input digest, its attempt still open.
        row = _find_by_input(store, task_id, call.tool_name, digest, keyless=key is not None)
    elif (
        row.stage == rules.EffectStage.CANCELLED
        and _open_attempt(store, task_id, str(row.effect_id)) is None
    ):
        # Boris answered no run (nobody decided in time: `--on-timeout ask` handed the call
        # to Claude Code's own prompt), and it ran: recorded anew, saying so.
        row, key = None, None
        response["allowed_outside_boris"] = True
    commands: list[Any] = []
    if row is None:
        effect_id = new_id("eff")
        response["recorded_after_the_run"] = True
        commands += [
            _plan(
                effect_id, task_id, call.tool_name, call.tool_input, key, requires_approval=False
            ),
            lg.DispatchEffect(
                task_id=task_id,
                effect_id=effect_id,
                executor=executor_of(call.tool_name),
                inputs=call.tool_input,
            ),
        ]
    else:
        effect_id = str(row.effect_id)
        if _open_attempt(store, task_id, effect_id) is None:
            raise UsageError(
                f"effect {effect_id} of tool call {call.tool_use_id or call.tool_name} has no "
                "attempt waiting for its response (it was not run, or was answered already)"
            )
    commands.append(
        lg.RecordResponse(
            task_id=task_id,
            effect_id=effect_id,
            reported="failed" if failed else "reported_success",
            response=response,
            error=(call.error or "the tool failed") if failed else None,
        )
    )
    results = store.execute_all(commands, actor)
    return {"effect_id": effect_id, "outcome": results[-1], "recorded": True}
