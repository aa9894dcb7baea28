"""`boris mcp` records the escalation that comes due while an agent waits (issue 42, routing).

The default signed store of a home (tests/signed_default.py: rita its root, the agent's key
trusted), ben with a key rita trusts. The agent asks through the official MCP client under a
policy rita routed to herself, escalating to ben after 0.02 minutes; nobody answers, nothing
else runs; once it is due the agent's `wait_for_approval` finds it recorded, in the agent's
name (an agent's key signs nothing in the store's), once."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from signed_default import PERSON, ROOT, signed_default_store

MAIL = {"kind": "send", "target": "mailto:team@example.org", "to": ["team@example.org"],
        "subject": "Week 49", "body": "All green."}  # fmt: skip


def test_an_agent_waiting_over_mcp_has_its_request_escalated_when_due(tmp_path: Path) -> None:
    signed = signed_default_store(tmp_path / "home", "agent:drafter")
    signed.trust_person("ben")
    signed.task("weekly", "mailto:team@example.org")
    signed.ok(
        "--actor", PERSON, "route", "set", "mail", "--decider", "person:rita",
        "--escalate-after", "0.02", "--escalate-to", "person:ben",
    )  # fmt: skip
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", "--actor", signed.agent],
        env=signed.env(agent=True),
        cwd=str(ROOT),
    )
    got: dict[str, Any] = {}

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            asked = await session.call_tool(
                "request_approval",
                {"task_id": "weekly", "payload": MAIL, "consequence": "mail", "policy": "mail"},
            )
            got["approval"] = approval = asked.structured_content["result"]
            await anyio.sleep(1.5)  # past its escalation time: due, and nobody ticked
            waited = await session.call_tool(
                "wait_for_approval",
                {"task_id": "weekly", "approval_id": approval, "timeout_seconds": 1},
            )
            got["waited"] = waited.structured_content

    anyio.run(scenario)
    assert got["waited"]["timed_out"] is True  # nobody answered: it waits on rita and ben
    events = signed.read("events", "weekly")
    escalated = [e for e in events if e["type"] == "approval.escalated"]
    assert [(e["payload"]["approval_id"], e["payload"]["to"]) for e in escalated] == [
        (got["approval"], ["ben"])
    ]
    assert escalated[0]["actor"]["id"] == "drafter"
    routed = next(e for e in events if e["type"] == "approval.routed")
    assert escalated[0]["at"] >= routed["payload"]["escalate_at"]  # never before its time
    mine = signed.read("--actor", "person:ben", "decisions", "--mine")["decisions"]
    assert [d["key"] for d in mine] == [got["approval"]]
    signed.assert_signed()
