"""Send back, seen by an agent waiting over MCP: the real client, a reviewer's own process
(`boris send-back`), the agent revising and asking again under a new digest (issue 32)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from test_mcp_e2e import Agent, _reviewer, mcp_session


def test_an_agent_waiting_receives_changes_requested(
    store_dir: Path, store_url: str | None, ws: Path
) -> None:
    async def scenario() -> None:
        async with mcp_session(store_dir, store_url) as session:
            agent = Agent(session)
            task = (
                await agent(
                    "create_task",
                    title="Mail the weekly note",
                    owner="rita",
                    objective="Tell the team",
                    scope_paths=[str(ws)],
                    destinations=["mailto:team@example.org"],
                )
            )["result"]
            mail = {"to": ["team@example.org"], "subject": "Week 49", "body": "All green."}
            effect = (
                await agent(
                    "plan_effect",
                    task_id=task,
                    kind="send",
                    target="mailto:team@example.org",
                    consequence="mail the team",
                    intended={"exists": True},
                    prepared=mail,
                    requires_approval=True,
                    policy="mail is reviewed",
                )
            )["result"]
            first = (
                await agent("request_approval", task_id=task, effect_id=effect, policy="review")
            )["result"]
            waited: dict[str, Any] = {}

            async def wait() -> None:
                waited.update(
                    await agent(
                        "wait_for_approval", task_id=task, approval_id=first, timeout_seconds=60
                    )
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                await anyio.sleep(0.6)
                assert not waited  # still waiting when the person answers
                sent = await anyio.to_thread.run_sync(
                    lambda: _reviewer(
                        store_dir,
                        store_url,
                        "send-back",
                        task,
                        first,
                        "--note",
                        "Mention Tuesday's outage",
                        "--actor",
                        "person:rita",
                    )
                )
                assert sent.returncode == 0, sent.stderr
            got = waited["result"]
            assert waited["timed_out"] is False
            assert got["state"] == "sent_back" and got["changes_requested"] is True
            assert got["note"] == "Mention Tuesday's outage"
            assert got["decided_by"]["id"] == "rita" and got["payload"] is None
            # Neither approved nor rejected: dispatch is still refused.
            refused = await agent.refused(
                "dispatch_effect", task_id=task, effect_id=effect, executor="smtp"
            )
            assert "approval" in refused["error"]["message"]
            brief = (await agent("resume_brief", task_id=task))["result"]
            assert any(b["kind"] == "changes_requested" for b in brief["blockers"])
            # The agent revises; the revised payload asks again under a new digest.
            revised = {**mail, "body": "All green after Tuesday's outage."}
            digest = (
                await agent(
                    "revise_effect",
                    task_id=task,
                    effect_id=effect,
                    reason="as asked",
                    prepared=revised,
                )
            )["result"]
            second = (
                await agent("request_approval", task_id=task, effect_id=effect, policy="review")
            )["result"]
            assert second != first and digest != got["payload_digest"]
            again = await agent(
                "wait_for_approval", task_id=task, approval_id=second, timeout_seconds=0
            )
            assert again["timed_out"] is True
            assert again["result"]["payload_digest"] == digest

    anyio.run(scenario)
