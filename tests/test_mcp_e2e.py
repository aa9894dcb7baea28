"""`boris mcp` end to end: the server as a subprocess, driven by the MCP SDK's own client over
stdio, through the loop "agent plans -> a person approves -> agent dispatches -> reconciles".

The reviewer is a real `boris approve` process run by a person while the agent's
`wait_for_approval` call is in flight; the "executor" is this test writing (or not writing)
the file between `dispatch_effect` and `record_response`.
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
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _store_args(store_dir: Path, store_url: str | None) -> list[str]:
    return ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])


@asynccontextmanager
async def mcp_session(
    store_dir: Path, store_url: str | None, actor: str = "agent:writer"
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", *_store_args(store_dir, store_url), "--actor", actor],
        env=_env(),
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


class Agent:
    """Calls tools and returns their answer objects; a refusal fails the test unless asked."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def __call__(self, tool: str, **arguments: Any) -> Any:
        answer = await self.refused(tool, expect_error=False, **arguments)
        assert answer["ok"] is True, answer
        return answer

    async def refused(self, tool: str, *, expect_error: bool = True, **arguments: Any) -> Any:
        result = await self.session.call_tool(tool, arguments)
        answer = result.structured_content
        # The text content carries the same object, for clients that only read text.
        assert json.loads(result.content[0].text) == answer  # type: ignore[union-attr]
        assert result.is_error is (not answer["ok"])
        if expect_error:
            assert result.is_error, answer
        return answer


def _reviewer(
    store_dir: Path, store_url: str | None, *argv: str
) -> subprocess.CompletedProcess[str]:
    """A person deciding through the CLI, in a process of their own."""
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *_store_args(store_dir, store_url)],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def _plan_and_get_approved(
    agent: Agent, store_dir: Path, store_url: str | None, ws: Path, note: Path
) -> tuple[str, str]:
    task = (
        await agent(
            "create_task",
            title="Save the weekly project note",
            owner="rita",
            objective="Write this week's note to NOTE.md",
            scope_paths=[str(ws)],
        )
    )["result"]
    assert (await agent("add_criterion", task_id=task, text="NOTE.md holds the note"))[
        "result"
    ] == "C1"
    planned = await agent(
        "plan_effect",
        task_id=task,
        kind="file_write",
        target=str(note),
        consequence="overwrite NOTE.md with this week's note",
        content={"text": "# Week 49\nAll green.\n"},
        requires_approval=True,
        policy="file writes need a reviewer",
    )
    effect = planned["result"]
    assert planned["effect_id"] == effect
    assert planned["prepared_digest"].startswith("sha256:")
    approval = (await agent("request_approval", task_id=task, effect_id=effect, policy="review"))[
        "result"
    ]

    # Dispatching before the decision is refused with the ledger's reason, nothing written.
    early = await agent.refused("dispatch_effect", task_id=task, effect_id=effect, executor="fs")
    assert early["error"]["code"] == "rejected"
    assert early["error"]["category"] == "refused"
    assert "approval" in early["error"]["message"]

    waited: dict[str, Any] = {}

    async def wait() -> None:
        waited.update(
            await agent("wait_for_approval", task_id=task, approval_id=approval, timeout_seconds=60)
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        await anyio.sleep(0.6)  # the agent is waiting; then the person decides
        assert not waited
        decided = await anyio.to_thread.run_sync(
            lambda: _reviewer(
                store_dir,
                store_url,
                "approve",
                task,
                approval,
                "--note",
                "fine to save",
                "--actor",
                "person:rita",
            )
        )
        assert decided.returncode == 0, decided.stderr
    assert waited["timed_out"] is False
    assert waited["waited_seconds"] >= 0.5
    assert waited["result"]["state"] == "approved"
    assert waited["result"]["decided_by"]["id"] == "rita"
    assert waited["result"]["note"] == "fine to save"
    return task, effect


def test_whole_loop_over_stdio_ends_final(
    tmp_path: Path, store_dir: Path, store_url: str | None, ws: Path
) -> None:
    note = ws / "NOTE.md"
    note.write_text("# Week 48\n")

    async def scenario() -> None:
        async with mcp_session(store_dir, store_url) as session:
            agent = Agent(session)
            task, effect = await _plan_and_get_approved(agent, store_dir, store_url, ws, note)
            attempt = await agent("dispatch_effect", task_id=task, effect_id=effect, executor="fs")
            assert attempt["result"] == 1
            note.write_text("# Week 49\nAll green.\n")  # the executor does its work
            reported = await agent(
                "record_response",
                task_id=task,
                effect_id=effect,
                reported="reported_success",
                response={"path": str(note)},
            )
            assert reported["result"] == "unknown"  # its word is not evidence
            obs = await agent("observe_effect", task_id=task, effect_id=effect)
            assert obs["result"].startswith("obs-")
            verdict = await agent(
                "reconcile_effect", task_id=task, effect_id=effect, observation_id=obs["result"]
            )
            assert verdict["result"] == "present"

            art = await agent(
                "record_artifact",
                task_id=task,
                name="NOTE.md",
                role="output",
                content={"path": str(note)},
            )
            ev = await agent(
                "attach_evidence",
                task_id=task,
                criterion_id="C1",
                kind="command_output",
                content={"text": f"observation {obs['result']}: present"},
            )
            await agent(
                "judge_criterion",
                task_id=task,
                criterion_id="C1",
                status="satisfied",
                artifact_id=art["result"]["artifact_id"],
                evidence_ids=[ev["result"]],
            )
            final = await agent("write_checkpoint", task_id=task, reason="final")
            assert final["result"].startswith("ckpt-")

            state = (await agent("task_state", task_id=task))["result"]
            (eff,) = state["effects"]
            assert (eff["stage"], eff["outcome"]) == ("reconciled", "succeeded")
            assert [a["attempt_no"] for a in eff["attempts"]] == [1]
            # The resources: the state and the brief, as JSON.
            listed = {str(r.uri) for r in (await session.list_resources()).resources}
            assert f"boris://tasks/{task}/brief" in listed
            brief = await session.read_resource(f"boris://tasks/{task}/brief")
            assert json.loads(brief.contents[0].text)["task_id"] == task  # type: ignore[union-attr]

        # Who did what, as the record has it: the agent planned and dispatched, the person
        # approved; nothing was written as anyone else.
        shown = _reviewer(store_dir, store_url, "events", task, "--json")
        actors = {
            (e["type"], e["actor"]["kind"], e["actor"]["id"])
            for e in json.loads(shown.stdout)["result"]
        }
        assert ("effect.planned", "agent", "writer") in actors
        assert ("approval.decided", "person", "rita") in actors
        assert ("attempt.dispatched", "agent", "writer") in actors

    anyio.run(scenario)


def test_reported_success_on_an_unchanged_file_leaves_it_unresolved_and_final_refused(
    tmp_path: Path, store_dir: Path, store_url: str | None, ws: Path
) -> None:
    note = ws / "NOTE.md"
    note.write_text("# Week 48\n")

    async def scenario() -> None:
        async with mcp_session(store_dir, store_url) as session:
            agent = Agent(session)
            task, effect = await _plan_and_get_approved(agent, store_dir, store_url, ws, note)
            await agent("dispatch_effect", task_id=task, effect_id=effect, executor="fs")
            # The tool says it saved; the file is untouched.
            await agent(
                "record_response",
                task_id=task,
                effect_id=effect,
                reported="reported_success",
                response={"saved": True},
            )
            # No blind retry while the outcome is unknown.
            again = await agent.refused(
                "dispatch_effect", task_id=task, effect_id=effect, executor="fs"
            )
            assert again["error"]["code"] == "rejected"
            obs = await agent("observe_effect", task_id=task, effect_id=effect)
            verdict = await agent(
                "reconcile_effect", task_id=task, effect_id=effect, observation_id=obs["result"]
            )
            assert verdict["result"] == "absent"

            refused = await agent.refused("write_checkpoint", task_id=task, reason="final")
            error = refused["error"]
            assert error["code"] == "pending_work"
            assert error["rule"] == "final_has_no_pending_work"
            assert error["exit_code"] == 1
            assert any(effect in p for p in error["details"]["pending"])

            state = (await agent("task_state", task_id=task))["result"]
            (eff,) = state["effects"]
            assert (eff["stage"], eff["outcome"]) == ("reconciled", "absent")
            assert note.read_text() == "# Week 48\n"
            assert state["checkpoints"]["checkpoints"] == []
            # A handoff is what the agent can write instead; the brief names the effect.
            await agent("write_checkpoint", task_id=task, reason="handoff", note="save failed")
            brief = (await agent("resume_brief", task_id=task))["result"]
            assert effect in json.dumps(brief)

    anyio.run(scenario)


def test_agent_cannot_decide_or_waive_and_wait_times_out(
    tmp_path: Path, store_dir: Path, store_url: str | None, ws: Path
) -> None:
    async def scenario() -> None:
        async with mcp_session(store_dir, store_url) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            assert "decide_approval" not in names  # a person's, by store.rules.AUTHORITY
            assert {"plan_effect", "wait_for_approval", "resume_brief"} <= names
            agent = Agent(session)
            task = (
                await agent(
                    "create_task", title="T", owner="o", objective="x", scope_paths=[str(ws)]
                )
            )["result"]
            await agent("add_criterion", task_id=task, text="c")
            waive = await agent.refused(
                "judge_criterion", task_id=task, criterion_id="C1", status="waived", note="meh"
            )
            assert waive["error"]["code"] == "authority_refused"
            assert waive["error"]["rule"] == "waiver_is_a_persons"
            bad = await agent.refused("add_criterion", task_id=task)
            assert (bad["error"]["code"], bad["error"]["category"]) == ("invalid_input", "usage")
            missing = await agent.refused("task_state", task_id="nope")
            assert (missing["error"]["code"], missing["error"]["category"]) == (
                "unknown_task",
                "not_found",
            )
            apr = (
                await agent(
                    "request_approval",
                    task_id=task,
                    payload={"send": "x"},
                    consequence="send x",
                    policy="p",
                )
            )["result"]
            started = time.monotonic()
            timed = await agent(
                "wait_for_approval", task_id=task, approval_id=apr, timeout_seconds=0.5
            )
            assert timed["timed_out"] is True
            assert timed["result"]["state"] == "pending"
            assert 0.4 <= time.monotonic() - started < 10
            # A client that asks for progress hears from a long wait every few seconds.
            heard: list[tuple[float, float | None, str | None]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                heard.append((done, total, message))

            waited = await session.call_tool(
                "wait_for_approval",
                {"task_id": task, "approval_id": apr, "timeout_seconds": 2.5},
                progress_callback=on_progress,
            )
            assert waited.structured_content["timed_out"] is True
            assert heard and heard[0][1] == 2.5 and heard[0][2] == f"approval {apr} is pending"
            too_long = await agent.refused(
                "wait_for_approval", task_id=task, approval_id=apr, timeout_seconds=10**6
            )
            assert too_long["error"]["category"] == "usage"

            # A cancelled wait (the client gives up) leaves the server answering at once.
            with pytest.raises(MCPError):
                await session.call_tool(
                    "wait_for_approval",
                    {"task_id": task, "approval_id": apr, "timeout_seconds": 120},
                    read_timeout_seconds=0.5,
                )
            started = time.monotonic()
            await agent("list_tasks")
            assert time.monotonic() - started < 5

    anyio.run(scenario)


@pytest.mark.parametrize("actor", [None, "person:rita"])
def test_the_server_needs_an_agent_identity(tmp_path: Path, actor: str | None) -> None:
    argv = [sys.executable, "-m", "store.cli", "mcp", "--store", str(tmp_path / "s")]
    if actor:
        argv += ["--actor", actor]
    done = subprocess.run(
        argv,
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "--actor agent:ID" in done.stderr or "acts for an agent" in done.stderr


def test_streamable_http_on_loopback(tmp_path: Path, ws: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client

    store_dir = tmp_path / "store"
    argv = [sys.executable, "-m", "store.cli", "mcp", "--store", str(store_dir)]
    argv += ["--actor", "agent:team-bot", "--http", "--port", "0"]
    proc = subprocess.Popen(
        argv, env=_env(), cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # "boris mcp: streamable HTTP at http://127.0.0.1:PORT/mcp"
        assert "streamable HTTP at http://127.0.0.1:" in line, line
        url = line.rsplit(" ", 1)[1].strip()

        async def scenario() -> None:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                created = await session.call_tool(
                    "create_task",
                    {"title": "T", "owner": "o", "objective": "x", "scope_paths": [str(ws)]},
                )
                assert created.structured_content["ok"] is True
                task = created.structured_content["result"]
                state = await session.read_resource(f"boris://tasks/{task}")
                assert json.loads(state.contents[0].text)["id"] == task  # type: ignore[union-attr]

        anyio.run(scenario)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    shown = _reviewer(store_dir, None, "tasks", "--json")
    assert len(json.loads(shown.stdout)["result"]) == 1


def test_http_is_refused_off_loopback(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "store.cli", "mcp", "--store", str(tmp_path / "s")]
    argv += ["--actor", "agent:a", "--http", "--host", "0.0.0.0"]
    done = subprocess.run(
        argv,
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "loopback only" in done.stderr
