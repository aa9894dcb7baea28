"""The Claude Agent SDK and a stop in Boris (issue 42, "a deny interrupts Claude when the run
was stopped in Boris"), audited on the store `boris init` makes: tests/test_claude_agent_sdk_adapter.py
proves it on a store that signs nothing, through the SDK's internal query; here through the
SDK's public client (`ClaudeSDKClient`, over the scripted `claude` CLI of
tests/fw42_scripted_cli.py), the agent's key as BORIS_KEY, rita stopping the run with the real
`boris stop` from her own shell while two parallel calls wait. What the CLI reads for each is
`{"behavior": "deny", "message", "interrupt": true}`; neither call runs; verify is clean.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from fw42_scripted_cli import Call, ScriptedCli, client_for, run_turn
from signed_default import PERSON, Signed, signed_default_store
from test_fw42_claude_batch import all_pending

from store.adapters.claude_agent_sdk import boris_can_use_tool
from store.store import Store

AGENT = "agent:claude"


@pytest.fixture
def signed(tmp_path: Path) -> Signed:
    return signed_default_store(tmp_path / "home", AGENT)


def test_a_stop_in_boris_denies_each_waiting_call_with_interrupt(
    signed: Signed, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = signed.task("i42-sdk-stop", "claude-code://tools/")
    signed.use_here(monkeypatch)
    calls = [
        Call("toolu_s1", "Bash", {"command": "make deploy", "description": "deploy"}),
        Call("toolu_s2", "Bash", {"command": "git push", "description": "push"}),
    ]
    cli = ScriptedCli([calls])

    async def scenario(store: Store) -> None:
        callback = boris_can_use_tool(store, AGENT, task, timeout_seconds=120)
        async with client_for(callback, cli) as client, anyio.create_task_group() as tg:
            tg.start_soon(run_turn, client)
            await anyio.to_thread.run_sync(all_pending, signed, task, 2)
            assert not cli.turns[0].answers  # the CLI waits on both
            await anyio.to_thread.run_sync(
                lambda: signed.ok("--actor", PERSON, "stop", task, "--reason", "wrong branch")
            )

    with Store.open() as store:
        anyio.run(scenario, store)
    turn = cli.turns[0]
    for call in calls:
        answer = turn.answers[call.tool_use_id]
        assert set(answer) == {"behavior", "message", "interrupt"}, answer
        assert (answer["behavior"], answer["interrupt"]) == ("deny", True)
        assert "the run was stopped" in answer["message"]
        assert turn.results[call.tool_use_id]["is_error"] is True
    effects = signed.effects(task)
    assert len(effects) == 2
    assert all(e["stage"] == "cancelled" and e["attempts"] == [] for e in effects)
    signed.assert_signed()
