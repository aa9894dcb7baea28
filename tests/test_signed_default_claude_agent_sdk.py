"""The Claude Agent SDK's `can_use_tool` callback on the store `boris init` makes (signed).

The callback is called by the SDK's own control-request handler as the `claude` CLI asks it
(the `Sdk` harness of tests/test_claude_agent_sdk_adapter.py); the store is opened with
`Store.open()` (the user data directory's, as the CLI) with BORIS_KEY set; the person
approves with the real `boris approve` in a process of their own while the SDK waits.
Without BORIS_KEY the SDK's answer is a deny whose message carries the refusal's one line.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny
from signed_default import Signed, one_line_refusal, signed_default_store
from test_claude_agent_sdk_adapter import Sdk

from store.adapters.claude_agent_sdk import boris_can_use_tool
from store.canonical import digest_of
from store.store import Store

AGENT = "agent:sdk"
ASKED = {"command": "rm -rf dist/", "description": "Clean the build"}


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("signed") / "home", AGENT)


def test_asked_and_allowed_by_a_person_on_the_default_signed_store(
    signed: Signed, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = signed.task("sdk-signed", "claude-code://tools/")
    signed.use_here(monkeypatch)
    answer: list[Any] = []

    async def scenario(store: Store) -> None:
        async with Sdk(boris_can_use_tool(store, AGENT, task, timeout_seconds=60)) as sdk:

            async def ask() -> None:
                answer.append(await sdk.ask("Bash", ASKED, "toolu_1"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                for _ in range(300):
                    waiting = await anyio.to_thread.run_sync(signed.pending, task)
                    if waiting:
                        break
                    await anyio.sleep(0.1)
                assert waiting and not answer  # the SDK waits for the person
                await anyio.to_thread.run_sync(signed.approve, task, waiting[0]["id"])

    with Store.open() as store:
        anyio.run(scenario, store)
    wire, result = answer[0]
    assert result == PermissionResultAllow(updated_input=ASKED)
    assert wire == {"behavior": "allow", "updatedInput": ASKED}
    (effect,) = signed.effects(task)
    assert effect["intent"]["prepared_digest"] == digest_of(ASKED)
    assert effect["attempts"][0]["inputs"]["prepared_digest"] == digest_of(ASKED)
    signed.assert_signed()


def test_without_boris_key_the_call_is_denied_with_the_next_step(
    signed: Signed, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = signed.task("sdk-no-key", "claude-code://tools/")
    signed.use_here(monkeypatch, key=False)

    async def scenario(store: Store) -> Any:
        async with Sdk(boris_can_use_tool(store, AGENT, task, timeout_seconds=60)) as sdk:
            return await sdk.ask("Bash", ASKED, "toolu_2")

    with Store.open() as store:
        wire, result = anyio.run(scenario, store)
    assert isinstance(result, PermissionResultDeny)
    assert wire == {"behavior": "deny", "message": result.message}
    assert result.message.startswith("Boris could not record this call, so it was not run: ")
    one_line_refusal(result.message, AGENT)
    assert signed.effects(task) == []
