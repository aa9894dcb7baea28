"""A team store deployed as docs/team-store.md says, signed (rita's key its root): an agent
asks through `boris mcp` on the agents' login, a call rita's standing rule covers; that login
may not write the rule's decision, so the call waits; rita's `boris route escalate` (what cron
runs, and her window's timer and `boris serve` tick the same) decides it by her rule, signed
by her key, and the agent's `wait_for_approval` (the official MCP client) receives the
approval. After rita revokes the rule, her tick decides the next call no more. `boris verify`
passes (issue 42, team stores).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from test_team_deployment import ROOT, Deployment, _clean_env, deployment  # noqa: F401

TOOLS = "claude-code://tools/"


def _boris(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv],
        env=_clean_env(BORIS_RESIDENT="off"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _ok(*argv: str) -> Any:
    done = _boris(*argv, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)["result"]


def test_the_agent_waiting_over_mcp_receives_the_approval_ritas_tick_gives_by_her_rule(
    deployment: Deployment,  # noqa: F811
    tmp_path: Path,
) -> None:
    rita = ["--url", deployment.url_as(deployment.rita_login), "--store", str(tmp_path / "rita")]
    as_rita = ["--actor", "person:rita", *rita]
    key = tmp_path / "agent-builder.pem"
    _ok("keys", "new", str(key))
    _ok("keys", "add", str(key), "--for", "agent:builder", *as_rita)
    task = "weekly"
    _ok(
        "create-task", "--id", task, "--title", "Week 49", "--owner", "rita", "--objective",
        "run the checks", "--destination", TOOLS, *as_rita,
    )  # fmt: skip
    rule = _ok("rules", "add", task, "--tool", "Bash", *as_rita)["id"]

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", "--actor", "agent:builder", "--store", str(tmp_path / "a")],
        env=_clean_env(
            BORIS_STORE_URL=deployment.url_as(deployment.server_login),
            BORIS_KEY=str(key),
            BORIS_RESIDENT="off",
        ),
        cwd=str(ROOT),
    )
    got: dict[str, Any] = {}

    async def call(session: ClientSession, tool: str, **arguments: Any) -> str:
        answer = (await session.call_tool(tool, arguments)).structured_content
        assert answer is not None and answer["ok"], answer
        return str(answer["result"])

    async def ask(session: ClientSession, n: int) -> str:
        """A Bash call planned and asked for, as an adapter does."""
        effect = await call(
            session, "plan_effect", task_id=task, kind="other", target=TOOLS + "Bash",
            prepared={"command": f"make check {n}"}, requires_approval=True,
            consequence="runs make check", idempotency_key=f"bash-{n}",
            intended={"exists": True, "digest": "sha256:" + "0" * 64},
        )  # fmt: skip
        return await call(
            session, "request_approval", task_id=task, effect_id=effect, policy="tools"
        )

    async def wait(session: ClientSession, approval: str, seconds: float) -> dict[str, Any]:
        waited = await session.call_tool(
            "wait_for_approval",
            {"task_id": task, "approval_id": approval, "timeout_seconds": seconds},
        )
        assert waited.structured_content is not None, waited
        return dict(waited.structured_content)

    async def ritas_tick() -> None:
        await anyio.sleep(1.0)  # the agent waits already
        got["tick"] = await anyio.to_thread.run_sync(lambda: _ok("route", "escalate", *as_rita))

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            got["first"] = first = await ask(session, 1)
            got["pending"] = await wait(session, first, 0)
            got["dry"] = await anyio.to_thread.run_sync(
                lambda: _ok("route", "escalate", "--dry-run", *as_rita)
            )
            async with anyio.create_task_group() as tg:
                tg.start_soon(ritas_tick)
                got["waited"] = await wait(session, first, 60)
            # Rita revokes the rule: her next tick decides the next call no more.
            await anyio.to_thread.run_sync(
                lambda: _ok("rules", "revoke", rule, "--reason", "enough checks", *as_rita)
            )
            got["second"] = second = await ask(session, 2)
            got["tick_after"] = await anyio.to_thread.run_sync(
                lambda: _ok("route", "escalate", *as_rita)
            )
            got["second_waited"] = await wait(session, second, 1)

    anyio.run(scenario)
    assert got["pending"]["timed_out"] is True  # asked through the agents' login: it waits
    assert got["dry"] == [f"{task}/{got['first']}"]  # listed, not decided
    assert got["tick"] == [f"{task}/{got['first']}"]
    assert got["waited"]["timed_out"] is False
    assert got["waited"]["result"]["state"] == "approved"
    assert got["tick_after"] == []
    assert got["second_waited"]["timed_out"] is True
    assert got["second_waited"]["result"]["state"] == "pending"

    events = _ok("events", task, *rita)
    [ruled] = [e for e in events if e["type"] == "approval.ruled"]
    assert ruled["payload"]["approval_id"] == got["first"]
    assert ruled["payload"]["rule_id"] == rule
    assert (ruled["actor"]["kind"], ruled["actor"]["id"]) == ("person", "rita")
    listed = {r["id"]: r for r in _ok("rules", "list", *rita)["rules"]}
    assert listed[rule]["decided"] == 1 and listed[rule]["standing"] == "revoked"
    verified = _boris("verify", "--json", *rita)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["result"]["signed"]
