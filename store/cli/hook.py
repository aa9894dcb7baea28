"""`boris hook EVENT`: Claude Code's tool hooks, recorded in a task (store.adapters.claude_code).

Claude Code runs the command with the hook's JSON on stdin. `pre-tool-use` records the call's
intent and its attempt before the tool runs; `post-tool-use` and `post-tool-use-failure`
record what Claude Code reported as that attempt's response (matched by `tool_use_id`).

`permission-request`, and `pre-tool-use --decide`, answer instead of only recording
(store.adapters.claude_code_permission): the call is asked in Boris, the hook waits for a
person's decision (`--wait`), and prints Claude Code's documented JSON on stdout with exit 0:
allow (the approved input), deny (why; interrupting Claude when the run was stopped), or,
when nobody decided in time, deny or with `--on-timeout ask` the terminal's own prompt.
Boris failing denies the call (the reason on stdout's JSON and stderr).

The exit codes are Claude Code's, not the rest of `boris`'s: 0 with nothing on stdout is
"recorded, no decision" (the normal permission flow applies); a failure of Boris (no store,
a refusal) or an input that is not the documented JSON is one line on stderr and exit 1, a
non-blocking error: the agent goes on. With `--block-on-failure` a failure of Boris exits 2,
which blocks a PreToolUse call (nothing runs that Boris could not record) and shows the line
to Claude after a PostToolUse. A usage error on this command line exits 1 too, never 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from ..adapters import claude_code
from ..adapters import claude_code_permission as decides
from ..limits import line_problem, read_capped
from ..services import answers
from ..services.answers import UsageError
from ..store import Store
from . import keys
from .mcp import agent_actor

Add = Callable[[str, Any], argparse.ArgumentParser]

#: Claude Code's codes: 0 success, 2 blocking error, anything else a non-blocking error.
RECORDED = 0
NOT_RECORDED = 1
BLOCKED = 2

#: Whose hook this is (`--for`): Claude Code's by default, or Codex's PermissionRequest.
HOSTS = {"claude-code": claude_code.CLAUDE_CODE, "codex": claude_code.CODEX}

RECORDERS = {
    "pre-tool-use": claude_code.pre_tool_use,
    "post-tool-use": claude_code.post_tool_use,
    "post-tool-use-failure": claude_code.post_tool_use,
}


def _say(message: str) -> None:
    print(f"boris hook: {message}", file=sys.stderr, flush=True)


class _Ended(Exception):
    """Claude Code ended the hook while it waited for a person."""


def _ended(signum: int, frame: Any) -> None:
    raise _Ended(f"signal {signum}")


def _answers(args: argparse.Namespace) -> bool:
    return args.event == "permission-request" or (
        args.event == "pre-tool-use" and bool(args.decide)
    )


def _answer(opened: Store, actor: Any, task_id: str, call: Any, args: argparse.Namespace) -> None:
    """Ask a person in Boris and print Claude Code's answer (nothing for no decision)."""
    if not (math.isfinite(args.wait) and 0 < args.wait <= decides.MAX_WAIT_SECONDS):
        raise UsageError(
            f"--wait must be a number of seconds above 0, at most {decides.MAX_WAIT_SECONDS:g}"
        )
    signal.signal(signal.SIGTERM, _ended)  # the hook's timeout: cancel the call, then end
    host = HOSTS[args.host]
    verdict = decides.decide(opened, actor, task_id, call, wait_seconds=args.wait, host=host)
    if args.event == "permission-request":
        output = decides.permission_request_output(verdict, args.on_timeout)
    else:
        output = decides.pre_tool_use_output(verdict, args.on_timeout)
    if output is not None:
        print(json.dumps(output, ensure_ascii=False), flush=True)


def cmd_hook(store: Store | None, args: argparse.Namespace) -> int:
    event = claude_code.HOOK_EVENTS[args.event]
    try:
        read = read_capped(sys.stdin.buffer)  # at most MAX_LINE_BYTES + 1 bytes held
        problem = line_problem(read, "a hook's input")
        if problem is not None:
            raise claude_code.HookInputRefused(
                f"the {event} hook input on stdin {problem}; nothing was recorded"
            )
        call = claude_code.parse_hook_input(bytes(read.data), event)
    except claude_code.HookInputRefused as exc:
        _say(str(exc))  # Claude Code's input, not Boris failing: never blocks
        return NOT_RECORDED
    try:
        actor = agent_actor(args.actor)
        task_id = args.task or os.environ.get("BORIS_TASK")
        if not task_id:
            raise UsageError("boris hook needs the task it records in: --task ID or BORIS_TASK")
        if args.host != "claude-code" and args.event != "permission-request":
            raise UsageError(f"--for {args.host} answers permission-request only")
        with Store.open(args.store, url=args.url, create=False, signer=args.key) as opened:
            keys.sign_as(opened, actor)
            if _answers(args):
                _answer(opened, actor, task_id, call, args)
            else:
                RECORDERS[args.event](opened, actor, task_id, call)
    except _Ended:
        _say(f"{call.tool_name} call: Claude Code ended the hook before a person decided")
        return NOT_RECORDED
    except Exception as exc:
        error = answers.refusal(exc)["error"]
        _say(f"{call.tool_name} call not recorded: {error['message']}")
        if error["category"] == "internal":
            traceback.print_exception(exc, file=sys.stderr)
        if _answers(args):  # whatever fails in Boris denies: nothing runs it did not record
            print(json.dumps(decides.refused_output(event, error["message"])), flush=True)
            return RECORDED
        return BLOCKED if args.block_on_failure else NOT_RECORDED
    return RECORDED


def invoked(argv: Sequence[str]) -> bool:
    """Whether this command line runs `boris hook EVENT` (its usage errors must not exit 2,
    which would block the agent's tool call)."""
    return "hook" in argv and any(e in argv for e in claude_code.HOOK_EVENTS)


def register(add: Add) -> None:
    sp = add(
        "hook",
        cmd_hook,
    )
    sp.add_argument(
        "event",
        choices=sorted(claude_code.HOOK_EVENTS),
        help="the hook event: pre-tool-use (PreToolUse), permission-request "
        "(PermissionRequest: answered with a person's decision), post-tool-use (PostToolUse) "
        "or post-tool-use-failure (PostToolUseFailure)",
    )
    sp.add_argument("--task", help="the task the calls are recorded in (else BORIS_TASK)")
    sp.add_argument(
        "--block-on-failure",
        action="store_true",
        help="when Boris cannot record the call, exit 2: Claude Code blocks a PreToolUse "
        "call (default: exit 1, a non-blocking error; the agent goes on)",
    )
    sp.add_argument(
        "--decide",
        action="store_true",
        help="pre-tool-use: answer the call with a person's decision in Boris "
        "(permissionDecision allow / deny / ask) instead of only recording it",
    )
    sp.add_argument(
        "--wait",
        type=float,
        default=decides.DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help="permission-request, pre-tool-use --decide: how long to wait for a person "
        "(default %(default)g; keep it under the hook's timeout in Claude Code's settings)",
    )
    sp.add_argument(
        "--on-timeout",
        choices=decides.ON_TIMEOUT,
        default="deny",
        help="permission-request, pre-tool-use --decide: when nobody decided in time, deny "
        "the call (default) or ask: hand it to Claude Code's own permission prompt",
    )
    sp.add_argument(
        "--for",
        dest="host",
        choices=sorted(HOSTS),
        default="claude-code",
        help="whose hook: claude-code (default), or codex: Codex CLI's PermissionRequest "
        "hook (its calls recorded as codex://tools/<tool>; a person's edit is not run, "
        "Codex's answer cannot carry it)",
    )
    sp.set_defaults(storeless=True)  # it opens the store itself, to answer in hook codes
