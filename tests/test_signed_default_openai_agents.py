"""The OpenAI Agents SDK adapter on the store `boris init` makes (signed by default).

The real `openai-agents` package and its scripted stand-in model (the helpers of
tests/test_openai_agents_adapter.py); the store opened as the README says, `Store.open()`
with BORIS_STORE and BORIS_KEY set; the person approves with the real `boris approve` in a
process of their own, signed with rita's own key by itself. Without BORIS_KEY the run is
refused before the SDK runs anything: `BorisApprovals.run` raises the typed refusal whose
one line names the next step (never a traceback from inside the SDK's hooks).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from signed_default import Signed, one_line_refusal, signed_default_store
from test_openai_agents_adapter import ASKED, FINAL, NO_TRACING, asks, make_agent, outputs_seen, ran

from store.adapters import openai_agents as oa
from store.canonical import digest_of
from store.signing.seal import SignatureRefused
from store.store import Store

AGENT = "agent:openai-agents"  # oa.DEFAULT_ACTOR


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("signed") / "home", AGENT)


def test_asked_approved_by_a_person_and_resumed_on_the_default_signed_store(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-signed", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    monkeypatch.setenv("BORIS_STORE", str(signed.store_dir))
    ran_log = tmp_path / "ran.jsonl"

    agent, _ = make_agent(ran_log, asks(("call_1", ASKED)))
    with Store.open() as store:
        first = asyncio.run(
            oa.BorisApprovals(store, task).run(agent, "clean up", run_config=NO_TRACING)
        )
    (asked,) = first.asked
    (request,) = signed.pending(task)
    assert request["id"] == asked.approval_id and request["payload_digest"] == digest_of(ASKED)
    assert ran(ran_log) == []

    signed.approve(task, asked.approval_id, "--note", "fine")
    later, model = make_agent(ran_log, [FINAL])
    with Store.open() as store:
        done = asyncio.run(oa.BorisApprovals(store, task).resume(later, run_config=NO_TRACING))
    assert done.result is not None and done.result.final_output == "done"
    assert [d.state for d in done.decided] == ["approved"]
    assert outputs_seen(model) == {"call_1": "deleted dist/"}
    assert ran(ran_log) == [ASKED]
    (effect,) = signed.effects(task)
    assert effect["attempts"][0]["inputs"]["prepared_digest"] == digest_of(ASKED)
    signed.assert_signed()


def test_without_boris_key_the_run_is_refused_up_front_with_the_next_step(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-no-key", "openai-agents://tools/")
    signed.use_here(monkeypatch, key=False)
    agent, model = make_agent(tmp_path / "ran.jsonl", asks(("call_1", ASKED)))
    with Store.open() as store, pytest.raises(SignatureRefused) as refused:
        asyncio.run(oa.BorisApprovals(store, task).run(agent, "clean up", run_config=NO_TRACING))
    assert refused.value.code == "signature_required"
    one_line_refusal(str(refused.value), AGENT)
    assert model.calls == ()  # the SDK never ran: no model request, no hook half-way
    assert signed.effects(task) == []
