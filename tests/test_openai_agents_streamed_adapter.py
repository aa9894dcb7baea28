"""The OpenAI Agents SDK streamed (`Runner.run_streamed`), and a run the application started
itself handed to Boris (store.adapters.openai_agents: `run_streamed`, `resume_streamed`,
`record_run`, `hand_over`).

The real `openai-agents` package with its scripted stand-in model and the agent of
tests/test_openai_agents_adapter.py (`delete_path` asks before it runs and writes down the
arguments it ran with), on the store `boris init` makes (signed; the agent's key as
BORIS_KEY). A person decides from their own shell with the real `boris approve` / `reject`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agents import Runner
from signed_default import PERSON, Signed, signed_default_store
from test_openai_agents_adapter import ASKED, FINAL, NO_TRACING, asks, make_agent, outputs_seen, ran

from store.adapters import openai_agents as oa
from store.canonical import digest_of
from store.store import Store


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    home = tmp_path_factory.mktemp("oa-streamed") / "home"
    return signed_default_store(home, f"agent:{oa.DEFAULT_ACTOR.id}")


def effect(signed: Signed, task: str, call_id: str) -> dict[str, Any]:
    (found,) = [
        e for e in signed.effects(task) if e["idempotency_key"] == f"openai-agents:{call_id}"
    ]
    return found


def test_streamed_run_pauses_in_boris_and_a_streamed_resume_runs_the_persons_edit(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-streamed", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    ran_log = tmp_path / "ran.jsonl"
    other = {"path": "node_modules/"}
    edited = {"path": "dist/js"}

    async def first() -> tuple[list[str], oa.Outcome]:
        agent, _ = make_agent(ran_log, asks(("call_s1", ASKED), ("call_s2", other)))
        with Store.open(signed.store_dir) as store:
            streamed = oa.BorisApprovals(store, task).run_streamed(
                agent, "clean up", run_config=NO_TRACING
            )
            kinds = [event.type async for event in streamed.stream_events()]
            return kinds, await streamed.outcome()

    kinds, paused = asyncio.run(first())
    assert "run_item_stream_event" in kinds  # the SDK's own events, streamed through
    assert paused.paused and [a.call.call_id for a in paused.asked] == ["call_s1", "call_s2"]
    assert ran(ran_log) == []
    by_call = {a.call.call_id: a.approval_id for a in paused.asked}

    async def resume() -> tuple[oa.Outcome, dict[str, str]]:
        agent, model = make_agent(ran_log, [FINAL])
        with Store.open(signed.store_dir) as store:
            adapter = oa.BorisApprovals(store, task)
            streamed = await adapter.resume_streamed(agent, run_config=NO_TRACING)
            events = [event async for event in streamed.stream_events()]
            outcome = await streamed.outcome()
            if outcome.result is not None:
                assert events  # it ran, and streamed
            if model.last_call is None:  # the model was not asked for a next turn
                return outcome, {}
            return outcome, outputs_seen(model)

    # Nobody decided yet: nothing runs, nothing streams; both wait.
    waiting, _ = asyncio.run(resume())
    assert waiting.result is None
    assert [w.call.call_id for w in waiting.waiting] == ["call_s1", "call_s2"]

    # Only one call decided: it goes on (the SDK's partial resolution: the rejected call is
    # answered, nothing runs), and the run pauses again on the other one, the same request in
    # Boris; the model is not asked for a next turn.
    signed.ok("--actor", PERSON, "reject", task, by_call["call_s2"], "--note", "vendored")
    partial, seen = asyncio.run(resume())
    assert partial.result is not None and seen == {}
    assert [(a.call.call_id, a.approval_id) for a in partial.asked] == [
        ("call_s1", by_call["call_s1"])
    ]
    assert [d.state for d in partial.decided] == ["rejected"]

    signed.ok(
        "--actor", PERSON, "approve", task, by_call["call_s1"], "--edited-json", json.dumps(edited)
    )
    done, seen = asyncio.run(resume())
    assert done.result is not None and done.result.final_output == "done"
    assert [d.state for d in done.decided] == ["edited"]
    assert ran(ran_log) == [edited]  # the person's arguments; the rejected call not at all
    assert seen["call_s1"].endswith("Tool output:\ndeleted dist/js")
    assert seen["call_s2"].startswith("rita rejected this delete_path call in Boris: vendored")
    (attempt,) = effect(signed, task, "call_s1")["attempts"]
    assert attempt["inputs"]["prepared_digest"] == digest_of(edited)
    assert effect(signed, task, "call_s2")["stage"] == "cancelled"
    signed.assert_signed()


def test_a_run_the_application_ran_itself_is_handed_to_boris_and_resumed(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-handed", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    ran_log = tmp_path / "ran.jsonl"

    async def own_run() -> oa.Outcome:
        agent, _ = make_agent(ran_log, asks(("call_h1", ASKED)))
        with Store.open(signed.store_dir) as store:
            hooks = oa.BorisApprovals(store, task).run_hooks()
            # A streamed run still streaming is not handed over half-way.
            streaming = Runner.run_streamed(agent, "clean up", run_config=NO_TRACING, hooks=hooks)
            with pytest.raises(oa.ResumeRefused, match="has not ended"):
                oa.hand_over(store, task, streaming)
            streaming.cancel()
            # The application's own Runner.run, with Boris's hooks; the paused result handed
            # to Boris by the public function.
            result = await Runner.run(agent, "clean up", run_config=NO_TRACING, hooks=hooks)
            assert result.interruptions
            return oa.hand_over(store, task, result)

    handed = asyncio.run(own_run())
    (asked,) = handed.asked
    assert asked.call.arguments == ASKED
    (request,) = signed.pending(task)
    assert request["id"] == asked.approval_id and request["payload_digest"] == digest_of(ASKED)
    assert ran(ran_log) == []

    signed.approve(task, asked.approval_id)

    async def resume() -> oa.Outcome:
        agent, _ = make_agent(ran_log, [FINAL])
        with Store.open(signed.store_dir) as store:
            return await oa.BorisApprovals(store, task).resume(agent, run_config=NO_TRACING)

    done = asyncio.run(resume())
    assert done.result is not None and done.result.final_output == "done"
    assert ran(ran_log) == [ASKED]
    (attempt,) = effect(signed, task, "call_h1")["attempts"]
    assert attempt["inputs"]["prepared_digest"] == digest_of(ASKED)
    assert attempt["response"]["output"] == "deleted dist/"
