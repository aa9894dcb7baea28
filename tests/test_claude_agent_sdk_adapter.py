"""The Claude Agent SDK's `can_use_tool` callback (store.adapters.claude_agent_sdk).

The SDK runs a query through the `claude` CLI and a model, neither of which a test can run
here, so the callback is called as the SDK calls it: by the SDK's own control-request handler
(`claude_agent_sdk._internal.query.Query`, over a transport that records what it would send
to the CLI) with a `can_use_tool` request as the CLI sends it. The callback receives the
SDK's real `ToolPermissionContext` and must return the SDK's real `PermissionResultAllow` /
`PermissionResultDeny`; the CLI must receive exactly `{"behavior": "allow", "updatedInput":
…}` or `{"behavior": "deny", "message": …}`. A person decides from another process with the
real `boris` CLI while the callback waits; the store's effect, approval and attempt must carry
the digest of exactly what was allowed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext
from claude_agent_sdk._internal.query import Query
from claude_agent_sdk._internal.transport import Transport

from store.adapters.claude_agent_sdk import boris_can_use_tool, boris_hooks
from store.canonical import digest_of
from store.services.answers import UsageError
from store.store import Store

ROOT = Path(__file__).resolve().parent.parent
TASK = "sdk-task"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def boris(store_dir: Path, store_url: str | None, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real `boris`, in a process of its own."""
    where = ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *where],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def read_json(store_dir: Path, store_url: str | None, *argv: str) -> Any:
    done = boris(store_dir, store_url, *argv, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["result"]


class CliSide(Transport):
    """Where the SDK writes its answers to the `claude` CLI: kept, to be read by the test."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def connect(self) -> None:
        return None

    async def write(self, data: str) -> None:
        self.sent.append(json.loads(data))

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        raise NotImplementedError

    async def close(self) -> None:
        return None

    def is_ready(self) -> bool:
        return True

    async def end_input(self) -> None:
        return None


class Sdk:
    """The SDK's query, answering the CLI's `can_use_tool` requests with the callback."""

    def __init__(self, callback: Any) -> None:
        self.seen: list[tuple[Any, Any]] = []

        async def spy(name: str, tool_input: dict[str, Any], context: Any) -> Any:
            result = await callback(name, tool_input, context)
            self.seen.append((context, result))
            return result

        self.cli = CliSide()
        self.query = Query(transport=self.cli, is_streaming_mode=True, can_use_tool=spy)

    async def __aenter__(self) -> Sdk:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.query.close()
        # The query's message streams are the read loop's, which this test never starts.
        self.query._message_send.close()
        self.query._message_receive.close()

    async def ask(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str) -> Any:
        """One permission request as the CLI sends it; the answer as the CLI reads it."""
        request_id = f"req_{tool_use_id}"
        await self.query._handle_control_request(
            {
                "type": "control_request",
                "request_id": request_id,
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": tool_name,
                    "input": tool_input,
                    "permission_suggestions": [],
                    "tool_use_id": tool_use_id,
                    "blocked_path": None,
                },
            }
        )
        (sent,) = [m for m in self.cli.sent if m["response"]["request_id"] == request_id]
        assert sent["type"] == "control_response"
        assert sent["response"]["subtype"] == "success", sent
        context, result = self.seen[-1]
        assert type(context) is ToolPermissionContext
        assert context.tool_use_id == tool_use_id
        assert isinstance(result, PermissionResultAllow | PermissionResultDeny)
        return sent["response"]["response"], result


@pytest.fixture
def task(store: Store, store_dir: Path, store_url: str | None) -> str:
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
        "claude-code://tools/",
        "--actor",
        "agent:sdk",
    )
    assert done.returncode == 0, done.stderr
    return TASK


async def pending_approval(store_dir: Path, store_url: str | None) -> dict[str, Any]:
    for _ in range(300):
        rows = await anyio.to_thread.run_sync(
            lambda: read_json(store_dir, store_url, "approvals", TASK)
        )
        waiting = [r for r in rows if r["state"] == "pending"]
        if waiting:
            return dict(waiting[0])
        await anyio.sleep(0.1)
    raise AssertionError("the callback asked for no approval")


async def decided_by_person(
    sdk: Sdk,
    store_dir: Path,
    store_url: str | None,
    call: tuple[str, dict[str, Any], str],
    *decision: str,
) -> tuple[dict[str, Any], Any]:
    """The SDK waiting in can_use_tool; a person decides with `boris DECISION …`."""
    answer: list[Any] = []

    async def ask() -> None:
        answer.append(await sdk.ask(*call))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        approval = await pending_approval(store_dir, store_url)
        assert not answer  # the SDK is still waiting for the person
        verb, *rest = decision
        done = await anyio.to_thread.run_sync(
            lambda: boris(
                store_dir, store_url, verb, TASK, approval["id"], *rest, "--actor", "person:rita"
            )
        )
        assert done.returncode == 0, done.stderr
    wire, result = answer[0]
    return dict(wire), result


def effect_of(store_dir: Path, store_url: str | None, key: str) -> dict[str, Any]:
    found = [
        e for e in read_json(store_dir, store_url, "effects", TASK) if e["idempotency_key"] == key
    ]
    assert len(found) == 1
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
    (approval,) = [
        r
        for r in read_json(store_dir, store_url, "approvals", TASK)
        if r["effect_id"] == effect["id"]
    ]
    assert approval["payload_digest"] == digest
    assert approval["state"] == "consumed"
    assert approval["decided_by"]["kind"] == "person"
    (attempt,) = effect["attempts"]
    assert attempt["approval_id"] == approval["id"]
    assert attempt["inputs"]["prepared_digest"] == digest
    assert attempt["executor"] == "claude-code:Bash"


def test_can_use_tool_answers_the_persons_decision_exactly(
    store: Store, task: str, store_dir: Path, store_url: str | None
) -> None:
    asked = {"command": "rm -rf dist/", "description": "Clean the build"}
    edited = {"command": "rm -rf dist/js", "description": "Clean only the scripts"}
    callback = boris_can_use_tool(store, "agent:sdk", task, timeout_seconds=60)

    async def scenario() -> None:
        async with Sdk(callback) as sdk:
            await decisions(sdk)

    async def decisions(sdk: Sdk) -> None:
        # Approved as asked: the SDK's allow, carrying the input that was approved.
        wire, result = await decided_by_person(
            sdk, store_dir, store_url, ("Bash", asked, "toolu_ok"), "approve", "--note", "fine"
        )
        assert result == PermissionResultAllow(updated_input=asked)
        assert wire == {"behavior": "allow", "updatedInput": asked}
        assert_allowed_exactly(store_dir, store_url, "claude-code:toolu_ok", asked)

        # The tool ran: the SDK's PostToolUse hook makes Claude Code's report the attempt's
        # response, its word: the outcome stays unknown until someone reconciles it.
        (post,) = boris_hooks(store, "agent:sdk", task)["PostToolUse"]
        answered = await post.hooks[0](
            {
                "session_id": "s-1",
                "transcript_path": "/tmp/t.jsonl",
                "cwd": "/repo",
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_input": asked,
                "tool_response": {"stdout": "", "exit_code": 0},
                "tool_use_id": "toolu_ok",
            },
            "toolu_ok",
            {"signal": None},
        )
        assert answered == {}
        effect = effect_of(store_dir, store_url, "claude-code:toolu_ok")
        (attempt,) = effect["attempts"]
        assert attempt["response"]["tool_response"] == {"stdout": "", "exit_code": 0}
        assert effect["outcome"] == "unknown"

        # Approved with the person's edit: updated_input is exactly the edited object.
        wire, result = await decided_by_person(
            sdk,
            store_dir,
            store_url,
            ("Bash", asked, "toolu_edit"),
            "approve",
            "--edited-json",
            json.dumps(edited),
        )
        assert result == PermissionResultAllow(updated_input=edited)
        assert wire == {"behavior": "allow", "updatedInput": edited}
        assert_allowed_exactly(store_dir, store_url, "claude-code:toolu_edit", edited)

        # Rejected: the SDK's deny with the person's note; nothing was dispatched.
        wire, result = await decided_by_person(
            sdk,
            store_dir,
            store_url,
            ("Bash", asked, "toolu_no"),
            "reject",
            "--note",
            "not in this repo",
        )
        assert isinstance(result, PermissionResultDeny)
        assert "rejected" in result.message and "not in this repo" in result.message
        assert wire == {"behavior": "deny", "message": result.message}
        effect = effect_of(store_dir, store_url, "claude-code:toolu_no")
        assert effect["stage"] == "cancelled"
        assert effect["attempts"] == []

        # Sent back: deny carrying the note, so Claude can revise and ask again.
        wire, result = await decided_by_person(
            sdk,
            store_dir,
            store_url,
            ("Bash", asked, "toolu_back"),
            "send-back",
            "--note",
            "keep dist/css, it is checked in",
        )
        assert isinstance(result, PermissionResultDeny)
        assert "keep dist/css, it is checked in" in result.message
        assert wire == {"behavior": "deny", "message": result.message}
        effect = effect_of(store_dir, store_url, "claude-code:toolu_back")
        assert effect["stage"] == "cancelled"
        assert effect["attempts"] == []

    anyio.run(scenario)


def test_can_use_tool_denies_what_nobody_decided_in_time(
    store: Store, task: str, store_dir: Path, store_url: str | None
) -> None:
    callback = boris_can_use_tool(store, "agent:sdk", task, timeout_seconds=1, auto_allow=["Read"])
    context = ToolPermissionContext(tool_use_id="toolu_late")

    async def scenario() -> None:
        started = time.monotonic()
        result = await callback("Bash", {"command": "make deploy"}, context)
        assert isinstance(result, PermissionResultDeny)
        assert "nobody decided" in result.message
        assert time.monotonic() - started < 30
        effect = effect_of(store_dir, store_url, "claude-code:toolu_late")
        assert effect["stage"] == "cancelled"

        # Auto-allowed: no person, but intent and attempt are recorded all the same.
        read = {"file_path": "/repo/README.md"}
        result = await callback("Read", read, ToolPermissionContext(tool_use_id="toolu_read"))
        assert result == PermissionResultAllow(updated_input=read)
        effect = effect_of(store_dir, store_url, "claude-code:toolu_read")
        assert effect["attempts"][0]["inputs"]["prepared_digest"] == digest_of(read)

    anyio.run(scenario)


def test_can_use_tool_is_an_agents_never_a_persons(store: Store) -> None:
    with pytest.raises(UsageError, match="agent"):
        boris_can_use_tool(store, "person:rita", TASK)


def test_a_stop_in_boris_denies_with_interrupt(
    store: Store, task: str, store_dir: Path, store_url: str | None
) -> None:
    callback = boris_can_use_tool(store, "agent:sdk", task, timeout_seconds=60)
    answer: list[Any] = []

    async def scenario() -> None:
        async with Sdk(callback) as sdk:

            async def ask() -> None:
                answer.append(await sdk.ask("Bash", {"command": "make deploy"}, "toolu_stop"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                await pending_approval(store_dir, store_url)
                done = await anyio.to_thread.run_sync(
                    lambda: boris(
                        store_dir,
                        store_url,
                        "stop",
                        TASK,
                        "--reason",
                        "wrong branch",
                        "--actor",
                        "person:rita",
                    )
                )
                assert done.returncode == 0, done.stderr

    anyio.run(scenario)
    ((wire, result),) = answer
    assert isinstance(result, PermissionResultDeny) and result.interrupt is True
    assert "the run was stopped" in result.message
    assert wire == {"behavior": "deny", "message": result.message, "interrupt": True}
    assert effect_of(store_dir, store_url, "claude-code:toolu_stop")["stage"] == "cancelled"
