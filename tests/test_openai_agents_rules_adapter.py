"""The OpenAI Agents SDK and a person's standing rule (issue 42): "always" answered in Boris to
a call the run paused on decides the next calls like it as they are asked, recorded as the
rule's, and the run goes on without anyone resuming it by hand; revoked, it decides nothing.

The real `openai-agents` package with its scripted model and the agent of
tests/test_openai_agents_adapter.py, on the store `boris init` makes; the person answers with
the real `boris rules add --from-approval` and `boris rules revoke`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from signed_default import PERSON, Signed, signed_default_store
from test_openai_agents_adapter import ASKED, FINAL, NO_TRACING, asks, make_agent, ran

from store.adapters import openai_agents as oa
from store.store import Store


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    home = tmp_path_factory.mktemp("oa-rules") / "home"
    return signed_default_store(home, f"agent:{oa.DEFAULT_ACTOR.id}")


def test_a_standing_rule_decides_the_next_call_and_the_run_goes_on(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-always", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    ran_log = tmp_path / "ran.jsonl"

    def run(steps: list[object], resume: bool = False) -> oa.Outcome:
        agent, _ = make_agent(ran_log, steps)
        with Store.open(signed.store_dir) as store:
            adapter = oa.BorisApprovals(store, task)
            if resume:
                return asyncio.run(adapter.resume(agent, run_config=NO_TRACING))
            return asyncio.run(adapter.run(agent, "clean up", run_config=NO_TRACING))

    first = run(asks(("call_a1", ASKED)))
    (asked,) = first.asked
    said = signed.ok(
        "--actor", PERSON, "rules", "add", task, "--from-approval", asked.approval_id,
        "--field", "path", "--json",
    )  # fmt: skip
    rule = json.loads(said)["result"]["id"]

    # Resumed: the first call runs; the model calls the tool again with the same path, the
    # rule decides that call as it is asked, and the run goes on to its end in this one
    # resume: nobody decided it by hand.
    done = run([*asks(("call_a2", ASKED)), FINAL], resume=True)
    assert done.result is not None and done.result.final_output == "done"
    assert [d.asked.call.call_id for d in done.decided] == ["call_a1", "call_a2"]
    assert ran(ran_log) == [ASKED, ASKED]
    by_rule = [a for a in signed.read("approvals", task) if rule in (a["note"] or "")]
    assert [a["state"] for a in by_rule] == ["consumed"]
    assert signed.pending(task) == []

    # Revoked: the next call like it waits for a person; the run stays paused.
    signed.ok("--actor", PERSON, "rules", "revoke", rule, "--reason", "enough")
    later = run([*asks(("call_a3", ASKED)), FINAL])
    assert later.paused and later.result is not None
    assert [a.call.call_id for a in later.asked] == ["call_a3"]
    (pending,) = signed.pending(task)
    assert pending["id"] == later.asked[0].approval_id
    assert ran(ran_log) == [ASKED, ASKED]
    signed.assert_signed()
