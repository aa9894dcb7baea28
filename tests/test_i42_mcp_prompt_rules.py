"""Claude Code's `--permission-prompt-tool` through `boris mcp` and a person's standing rule
(issue 42's Done-when, audited for MCP): "always" answered in Boris to a prompt's request
(`boris rules add --from-approval`) decides the next prompt like it at once, recorded as the
rule's (`approval.ruled` naming it); it decides none of a policy a person reserved, nothing
after its revocation and nothing after its expiry: each of those waits for a person.

The real `boris mcp` over stdio with the official MCP client, the prompt as Claude Code sends
it (`tool_name`, `input`, `tool_use_id`) and read back as the text content Claude Code reads
(tests/test_claude_code_adapter.py `prompt`), on the store `boris init` makes (signed; the
agent's key as BORIS_KEY); rita answers from her own shell with the real `boris`.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from signed_default import PERSON, Signed, signed_default_store
from test_claude_code_adapter import prompt
from test_fw42_claude_batch import all_pending
from test_fw42_mcp_answers import AGENT, boris_mcp

from store.adapters.claude_code import POLICY

NPM_TEST = {"command": "npm test", "description": "Run the tests"}
LINT = {"command": "npm run lint", "description": "Lint"}


@pytest.fixture
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("i42-mcp-rules") / "home", AGENT)


def ruled(signed: Signed, task: str) -> list[str]:
    """The rules the record says decided this task's requests, in order."""
    return [
        e["payload"]["rule_id"]
        for e in signed.read("events", task)
        if e["type"] == "approval.ruled"
    ]


class Prompts:
    def __init__(self, signed: Signed, task: str, session: ClientSession) -> None:
        self.signed, self.task, self.session, self.n = signed, task, session, 0

    async def asked_of_a_person(self, tool_input: dict[str, Any], answer: Any) -> dict[str, Any]:
        """A prompt that waits for a person; `answer(approval)` is what they do."""
        self.n += 1
        said: list[dict[str, Any]] = []
        arguments = {"tool_name": "Bash", "input": tool_input, "tool_use_id": f"toolu_{self.n}"}

        async def ask() -> None:
            said.append(await prompt(self.session, arguments))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            (asked,) = await anyio.to_thread.run_sync(all_pending, self.signed, self.task, 1)
            await anyio.to_thread.run_sync(answer, asked)
        return said[0]

    async def at_once(self, tool_input: dict[str, Any]) -> dict[str, Any]:
        """A prompt nobody is asked about (a rule decides it): answered within seconds."""
        self.n += 1
        arguments = {"tool_name": "Bash", "input": tool_input, "tool_use_id": f"toolu_{self.n}"}
        with anyio.fail_after(20):
            return await prompt(self.session, arguments)


def test_a_rule_from_a_prompt_decides_the_next_until_reserved_revoked_or_expired(
    signed: Signed,
) -> None:
    task = signed.task("i42-mcp-rules", "claude-code://tools/")
    rules: dict[str, str] = {}

    def always(name: str, *extra: str) -> Any:
        def answer(asked: dict[str, Any]) -> None:
            said = signed.ok(
                "--actor", PERSON, "rules", "add", task, "--from-approval", asked["id"],
                "--field", "command", *extra, "--json",
            )  # fmt: skip
            rules[name] = json.loads(said)["result"]["id"]

        return answer

    def reject(asked: dict[str, Any]) -> None:
        signed.ok("--actor", PERSON, "reject", task, asked["id"], "--note", "not now")

    async def scenario() -> None:
        async with boris_mcp(signed, "--task", task, "--permission-timeout", "60") as session:
            p = Prompts(signed, task, session)
            allow = {"behavior": "allow", "updatedInput": NPM_TEST}

            # "Always" for npm test: this prompt allowed (by rita), the next by the rule.
            assert await p.asked_of_a_person(NPM_TEST, always("test")) == allow
            assert await p.at_once(NPM_TEST) == allow
            assert ruled(signed, task) == [rules["test"]]

            # Reserved for a person: asked of one (rita says no), not the rule's.
            signed.ok("--actor", PERSON, "rules", "reserve", POLICY)
            denied = await p.asked_of_a_person(NPM_TEST, reject)
            assert denied["behavior"] == "deny" and "not now" in denied["message"]
            signed.ok("--actor", PERSON, "rules", "reserve", POLICY, "--off")

            # Revoked: asked of a person again.
            signed.ok("--actor", PERSON, "rules", "revoke", rules["test"], "--reason", "enough")
            assert (await p.asked_of_a_person(NPM_TEST, reject))["behavior"] == "deny"

            # A rule for three seconds: the rule's while it stands, a person's after.
            lint = {"behavior": "allow", "updatedInput": LINT}
            assert await p.asked_of_a_person(LINT, always("lint", "--expires-in", "3s")) == lint
            granted = time.monotonic()
            assert await p.at_once(LINT) == lint
            assert time.monotonic() - granted < 3, "too slow to see the rule decide"
            await anyio.sleep(max(0.0, 3.3 - (time.monotonic() - granted)))
            assert (await p.asked_of_a_person(LINT, reject))["behavior"] == "deny"

    anyio.run(scenario)
    assert ruled(signed, task) == [rules["test"], rules["lint"]]
    listed = {r["id"]: r["standing"] for r in signed.read("rules", "list")["rules"]}
    assert (listed[rules["test"]], listed[rules["lint"]]) == ("revoked", "expired")
    signed.assert_signed()
