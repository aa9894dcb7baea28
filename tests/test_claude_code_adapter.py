"""Claude Code at its documented JSON boundaries (store.adapters.claude_code).

The permission-prompt tool is called through the official MCP client on a real `boris mcp`
subprocess, exactly as `claude -p --permission-prompt-tool mcp__boris__permission_prompt`
calls it; a person decides from another process with the real `boris` CLI (approve, approve
an edit, reject, send back) while the call waits. The answer must be one text content whose
JSON is exactly `{"behavior": "allow", "updatedInput": ...}` or `{"behavior": "deny",
"message": ...}`, and the store's effect, approval and attempt must carry the digest of
exactly what was allowed.

The hooks are the real `boris hook` fed the documented hook inputs verbatim
(tests/fixtures/claude_code/, see SOURCE.md there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from store.canonical import digest_of

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "claude_code"
TASK = "cc-task"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _store_args(store_dir: Path, store_url: str | None) -> list[str]:
    return ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])


def boris(
    store_dir: Path, store_url: str | None, *argv: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The real `boris`, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *_store_args(store_dir, store_url)],
        env=_env(),
        cwd=ROOT,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=120,
    )


def read_json(store_dir: Path, store_url: str | None, *argv: str) -> Any:
    done = boris(store_dir, store_url, *argv, "--json")
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)["result"]


def make_task(store_dir: Path, store_url: str | None, destination: str) -> None:
    done = boris(
        store_dir,
        store_url,
        "create-task",
        "--id",
        TASK,
        "--title",
        "Fix the failing tests",
        "--owner",
        "rita",
        "--objective",
        "npm test passes",
        "--destination",
        destination,
        "--actor",
        "agent:claude",
    )
    assert done.returncode == 0, done.stderr.decode()


@asynccontextmanager
async def claude_code_server(
    store_dir: Path, store_url: str | None, *options: str
) -> AsyncIterator[ClientSession]:
    """`boris mcp` as Claude Code starts it from .mcp.json, with the official client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "store.cli",
            "mcp",
            *_store_args(store_dir, store_url),
            "--actor",
            "agent:claude",
            *options,
        ],
        env=_env(),
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def prompt(session: ClientSession, arguments: dict[str, Any]) -> dict[str, Any]:
    """One permission prompt as Claude Code sends it; the decision as Claude Code reads it."""
    result = await session.call_tool("permission_prompt", arguments)
    assert result.is_error is False
    assert len(result.content) == 1
    block = result.content[0]
    assert block.type == "text"
    return dict(json.loads(block.text))  # type: ignore[union-attr]


async def pending_approval(store_dir: Path, store_url: str | None) -> dict[str, Any]:
    """The approval the waiting prompt asked for, once it is in the store."""
    for _ in range(300):
        rows = await anyio.to_thread.run_sync(
            lambda: read_json(store_dir, store_url, "approvals", TASK)
        )
        waiting = [r for r in rows if r["state"] == "pending"]
        if waiting:
            return dict(waiting[0])
        await anyio.sleep(0.1)
    raise AssertionError("the permission prompt asked for no approval")


async def decided_by_person(
    session: ClientSession,
    store_dir: Path,
    store_url: str | None,
    arguments: dict[str, Any],
    *decision: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Claude Code's prompt in flight; a person decides it with `boris DECISION ...`."""
    answer: dict[str, Any] = {}

    async def ask() -> None:
        answer.update(await prompt(session, arguments))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        approval = await pending_approval(store_dir, store_url)
        assert not answer  # Claude Code is still waiting for the person
        verb, *rest = decision
        done = await anyio.to_thread.run_sync(
            lambda: boris(
                store_dir, store_url, verb, TASK, approval["id"], *rest, "--actor", "person:rita"
            )
        )
        assert done.returncode == 0, done.stderr.decode()
    return answer, approval


def effect_of(store_dir: Path, store_url: str | None, key: str) -> dict[str, Any]:
    effects = read_json(store_dir, store_url, "effects", TASK)
    found = [e for e in effects if e["idempotency_key"] == key]
    assert len(found) == 1, effects
    return dict(found[0])


def approval_of(store_dir: Path, store_url: str | None, effect_id: str) -> dict[str, Any]:
    rows = read_json(store_dir, store_url, "approvals", TASK)
    found = [r for r in rows if r["effect_id"] == effect_id]
    assert len(found) == 1, rows
    return dict(found[0])


def assert_allowed_exactly(
    store_dir: Path, store_url: str | None, key: str, allowed: dict[str, Any]
) -> None:
    """The effect, its approval and its one attempt all bind the digest of what ran."""
    digest = digest_of(allowed)
    effect = effect_of(store_dir, store_url, key)
    assert effect["intent"]["prepared"] == allowed
    assert effect["intent"]["prepared_digest"] == digest
    assert effect["stage"] == "dispatched"
    approval = approval_of(store_dir, store_url, effect["id"])
    assert approval["payload"] == allowed
    assert approval["payload_digest"] == digest
    assert approval["state"] == "consumed"
    (attempt,) = effect["attempts"]
    assert attempt["approval_id"] == approval["id"]
    assert attempt["inputs"]["prepared_digest"] == digest
    assert attempt["executor"] == "claude-code:Bash"


def test_permission_prompt_answers_the_persons_decision_exactly(
    store_dir: Path, store_url: str | None
) -> None:
    make_task(store_dir, store_url, "claude-code://tools/")
    asked = {"command": "rm -rf dist/", "description": "Clean the build"}
    edited = {"command": "rm -rf dist/js", "description": "Clean only the scripts"}

    async def scenario() -> None:
        async with claude_code_server(store_dir, store_url, "--task", TASK) as session:
            # Approved as asked: allow with the input as it was.
            call = {"tool_name": "Bash", "input": asked, "tool_use_id": "toolu_approve"}
            answer, approval = await decided_by_person(
                session, store_dir, store_url, call, "approve", "--note", "fine"
            )
            assert answer == {"behavior": "allow", "updatedInput": asked}
            assert approval["consequence"] == "Claude Code runs Bash: rm -rf dist/"
            assert approval["payload_digest"] == digest_of(asked)
            assert_allowed_exactly(store_dir, store_url, "claude-code:toolu_approve", asked)

            # Approved with the person's edit: updatedInput is exactly the edited object.
            call = {"tool_name": "Bash", "input": asked, "tool_use_id": "toolu_edit"}
            answer, _ = await decided_by_person(
                session,
                store_dir,
                store_url,
                call,
                "approve",
                "--edited-json",
                json.dumps(edited),
                "--note",
                "only the scripts",
            )
            assert answer == {"behavior": "allow", "updatedInput": edited}
            assert_allowed_exactly(store_dir, store_url, "claude-code:toolu_edit", edited)

            # Rejected: deny with the person's note; nothing was dispatched.
            call = {"tool_name": "Bash", "input": asked, "tool_use_id": "toolu_reject"}
            answer, _ = await decided_by_person(
                session, store_dir, store_url, call, "reject", "--note", "not in this repo"
            )
            assert set(answer) == {"behavior", "message"}
            assert answer["behavior"] == "deny"
            assert "rejected" in answer["message"]
            assert "not in this repo" in answer["message"]
            effect = effect_of(store_dir, store_url, "claude-code:toolu_reject")
            assert effect["stage"] == "cancelled"
            assert effect["attempts"] == []

            # Sent back: deny carrying the note, so Claude can revise and ask again.
            call = {"tool_name": "Bash", "input": asked, "tool_use_id": "toolu_back"}
            answer, _ = await decided_by_person(
                session,
                store_dir,
                store_url,
                call,
                "send-back",
                "--note",
                "keep dist/css, it is checked in",
            )
            assert set(answer) == {"behavior", "message"}
            assert answer["behavior"] == "deny"
            assert "keep dist/css, it is checked in" in answer["message"]
            effect = effect_of(store_dir, store_url, "claude-code:toolu_back")
            assert effect["stage"] == "cancelled"
            assert effect["attempts"] == []

    anyio.run(scenario)


def test_permission_prompt_denies_what_nobody_decided_or_boris_cannot_record(
    store_dir: Path, store_url: str | None
) -> None:
    # Only Bash is in the task's scope: any other tool is refused before anyone is asked.
    make_task(store_dir, store_url, "claude-code://tools/Bash")

    async def scenario() -> None:
        options = ("--task", TASK, "--permission-timeout", "1", "--auto-allow", "Bash")
        async with claude_code_server(store_dir, store_url, *options) as session:
            # Auto-allowed: no person, but intent and attempt are recorded all the same.
            ran = {"command": "ls"}
            answer = await prompt(
                session, {"tool_name": "Bash", "input": ran, "tool_use_id": "toolu_ls"}
            )
            assert answer == {"behavior": "allow", "updatedInput": ran}
            effect = effect_of(store_dir, store_url, "claude-code:toolu_ls")
            assert effect["stage"] == "dispatched"
            assert effect["attempts"][0]["inputs"]["prepared_digest"] == digest_of(ran)

            # Outside the task's scope: denied, naming why; nothing recorded.
            answer = await prompt(
                session,
                {"tool_name": "WebFetch", "input": {"url": "https://x.test"}, "tool_use_id": "t"},
            )
            assert answer["behavior"] == "deny"
            assert "scope" in answer["message"]

        async with claude_code_server(
            store_dir, store_url, "--task", TASK, "--permission-timeout", "1"
        ) as session:
            # Nobody decides in time: denied, and the effect is cancelled (its approval
            # revoked), so a late decision cannot approve a call nobody will run.
            started = time.monotonic()
            answer = await prompt(
                session,
                {"tool_name": "Bash", "input": {"command": "make"}, "tool_use_id": "toolu_late"},
            )
            assert time.monotonic() - started >= 1.0
            assert answer["behavior"] == "deny"
            assert "nobody decided" in answer["message"]
            effect = effect_of(store_dir, store_url, "claude-code:toolu_late")
            assert effect["stage"] == "cancelled"
            assert approval_of(store_dir, store_url, effect["id"])["state"] == "revoked"

        # A PreToolUse hook recorded the call's attempt before the prompt (both configured):
        # the prompt will not approve what already counts as dispatched; it says why.
        pre = json.loads((FIXTURES / "pre_tool_use.json").read_bytes())
        recorded = await anyio.to_thread.run_sync(
            lambda: hook(store_dir, store_url, "pre-tool-use", json.dumps(pre).encode())
        )
        assert recorded.returncode == 0, recorded.stderr.decode()
        async with claude_code_server(store_dir, store_url, "--task", TASK) as session:
            answer = await prompt(
                session,
                {
                    "tool_name": pre["tool_name"],
                    "input": pre["tool_input"],
                    "tool_use_id": pre["tool_use_id"],
                },
            )
            assert answer["behavior"] == "deny"
            assert "PreToolUse" in answer["message"]

        async with claude_code_server(store_dir, store_url) as session:
            # No task configured: denied with how to configure one.
            answer = await prompt(session, {"tool_name": "Bash", "input": {"command": "ls"}})
            assert answer["behavior"] == "deny"
            assert "--task" in answer["message"]

    anyio.run(scenario)


# --- hooks -----------------------------------------------------------------------------


def hook(
    store_dir: Path, store_url: str | None, event: str, stdin: bytes, *options: str
) -> subprocess.CompletedProcess[bytes]:
    return boris(
        store_dir,
        store_url,
        "hook",
        event,
        "--task",
        TASK,
        "--actor",
        "agent:claude",
        *options,
        stdin=stdin,
    )


def test_hooks_record_the_documented_inputs_as_attempts_and_responses(
    store_dir: Path, store_url: str | None
) -> None:
    make_task(store_dir, store_url, "claude-code://tools/")
    pre = (FIXTURES / "pre_tool_use.json").read_bytes()
    failure = (FIXTURES / "post_tool_use_failure.json").read_bytes()
    documented = json.loads(pre)

    done = hook(store_dir, store_url, "pre-tool-use", pre)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""  # no decision: Claude Code's own permission flow applies
    effect = effect_of(store_dir, store_url, "claude-code:toolu_01ABC123...")
    assert effect["target"] == "claude-code://tools/Bash"
    assert effect["intent"]["prepared"] == documented["tool_input"]
    (attempt,) = effect["attempts"]
    assert attempt["inputs"]["prepared_digest"] == digest_of(documented["tool_input"])
    assert attempt["ended_at"] is None  # it may be running: no word on it yet

    # The same hook again (a retried call): recorded once.
    assert hook(store_dir, store_url, "pre-tool-use", pre).returncode == 0
    assert len(read_json(store_dir, store_url, "effects", TASK)) == 1

    # The documented failure of that call (same tool_use_id): the attempt's response, its
    # word: the outcome stays unknown until someone reconciles (no blind retry before).
    done = hook(store_dir, store_url, "post-tool-use-failure", failure)
    assert done.returncode == 0, done.stderr.decode()
    effect = effect_of(store_dir, store_url, "claude-code:toolu_01ABC123...")
    (attempt,) = effect["attempts"]
    assert (attempt["outcome"], attempt["response"]["reported"]) == ("unknown", "failed")
    assert effect["outcome"] == "unknown"
    assert attempt["error"] == "Exit code 1\nError: Cannot find module 'express'"
    assert attempt["response"]["duration_ms"] == 4187

    # A second report of the same call finds no attempt waiting: a non-blocking error.
    again = hook(store_dir, store_url, "post-tool-use-failure", failure)
    assert again.returncode == 1
    assert b"no attempt waiting" in again.stderr


def test_post_tool_use_records_the_response_by_tool_use_id_or_by_input(
    store_dir: Path, store_url: str | None
) -> None:
    make_task(store_dir, store_url, "claude-code://tools/")
    post = (FIXTURES / "post_tool_use.json").read_bytes()
    documented = json.loads(post)

    # A call Boris never saw before (allowed without asking, no PreToolUse hook): intent,
    # attempt and response land together, saying they were recorded after the run.
    done = hook(store_dir, store_url, "post-tool-use", post)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    effect = effect_of(store_dir, store_url, "claude-code:toolu_01ABC123...")
    (attempt,) = effect["attempts"]
    assert attempt["response"]["tool_response"] == documented["tool_response"]
    assert attempt["response"]["tool_response_digest"] == digest_of(documented["tool_response"])
    assert attempt["response"]["recorded_after_the_run"] is True
    # Claude Code's word is not evidence: the outcome stays unknown until reconciled.
    assert effect["outcome"] == "unknown"

    # Without tool_use_id the response finds its attempt by tool name and input digest.
    call = {k: v for k, v in documented.items() if k not in {"tool_use_id", "tool_response"}}
    call["hook_event_name"] = "PreToolUse"
    call["tool_input"] = {"file_path": "/path/to/other.txt", "content": "other"}
    assert hook(store_dir, store_url, "pre-tool-use", json.dumps(call).encode()).returncode == 0
    call["hook_event_name"] = "PostToolUse"
    call["tool_response"] = {"filePath": "/path/to/other.txt", "type": "create"}
    done = hook(store_dir, store_url, "post-tool-use", json.dumps(call).encode())
    assert done.returncode == 0, done.stderr.decode()
    effects = read_json(store_dir, store_url, "effects", TASK)
    assert len(effects) == 2
    other = next(e for e in effects if e["intent"]["prepared"] == call["tool_input"])
    (attempt,) = other["attempts"]
    assert attempt["response"]["tool_response"] == call["tool_response"]
    assert "recorded_after_the_run" not in attempt["response"]


def test_hooks_never_block_the_agent_unless_told_to(store_dir: Path, store_url: str | None) -> None:
    make_task(store_dir, store_url, "claude-code://tools/")
    pre = (FIXTURES / "pre_tool_use.json").read_bytes()

    # Not the documented JSON: one line on stderr, exit 1 (non-blocking), nothing recorded.
    for bad in (b"{not json", b"[]", b'{"hook_event_name": "PreToolUse"}'):
        done = hook(store_dir, store_url, "pre-tool-use", bad)
        assert done.returncode == 1, done.stderr.decode()
        assert len(done.stderr.decode().strip().splitlines()) == 1
        assert done.stderr.startswith(b"boris hook: ")
    # The wrong event's input (a PostToolUse hook wired to pre-tool-use) is refused too.
    wrong = hook(
        store_dir, store_url, "pre-tool-use", (FIXTURES / "post_tool_use.json").read_bytes()
    )
    assert wrong.returncode == 1
    assert b"PostToolUse" in wrong.stderr
    assert read_json(store_dir, store_url, "effects", TASK) == []

    # Boris failing (no such task): a non-blocking error by default...
    lost = boris(
        store_dir,
        store_url,
        "hook",
        "pre-tool-use",
        "--task",
        "no-such-task",
        "--actor",
        "agent:claude",
        stdin=pre,
    )
    assert lost.returncode == 1
    assert lost.stderr.decode().startswith("boris hook: Bash call not recorded:")
    # ...and a block (exit 2, the reason on stderr) when configured so.
    blocked = boris(
        store_dir,
        store_url,
        "hook",
        "pre-tool-use",
        "--task",
        "no-such-task",
        "--actor",
        "agent:claude",
        "--block-on-failure",
        stdin=pre,
    )
    assert blocked.returncode == 2
    assert b"not recorded" in blocked.stderr

    # A usage error on the hook's own command line never exits 2 (which would block).
    typo = boris(store_dir, store_url, "hook", "pre-tool-use", "--tsak", TASK, stdin=pre)
    assert typo.returncode == 1
    assert read_json(store_dir, store_url, "effects", TASK) == []


@pytest.mark.parametrize("name", ["pre_tool_use", "post_tool_use", "post_tool_use_failure"])
def test_the_fixtures_are_the_documented_shape(name: str) -> None:
    value = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    common = {"session_id", "transcript_path", "cwd", "hook_event_name"}
    assert common <= set(value)
    assert {"tool_name", "tool_input", "tool_use_id"} <= set(value)
    assert value["hook_event_name"] == "".join(p.title() for p in name.split("_"))
