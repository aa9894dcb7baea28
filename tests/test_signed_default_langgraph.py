"""The LangGraph adapter on the store `boris init` makes (signed by default).

A real LangChain agent with the real `HumanInTheLoopMiddleware` and checkpointer, driven by
the scripted stand-in model of tests/test_langgraph_adapter.py (its helpers); the store
opened as `Store.open(path)` with BORIS_KEY set; the person approves with the real
`boris approve` in a process of their own (rita's own key, by itself). Without BORIS_KEY,
asking is refused with the typed refusal whose one line names the next step.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from signed_default import Signed, one_line_refusal, signed_default_store
from test_langgraph_adapter import AGENT, ASKED, TASK, first_turn, ran_calls, resume_here, start

from store.canonical import digest_of
from store.signing.seal import SignatureRefused
from store.store import Store


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("signed") / "home", f"agent:{AGENT.id}")


def test_asked_approved_by_a_person_and_resumed_on_the_default_signed_store(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    signed.task(TASK, "langgraph://tools/")
    signed.use_here(monkeypatch)
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    script = first_turn(("send_email", ASKED, "call_1"))

    with Store.open(signed.store_dir) as store:
        (asked,) = start(store, checkpoints, ran_log, "batched", "t-1", script)
    (request,) = signed.pending(TASK)
    assert request["id"] == asked.approval_id and request["payload_digest"] == digest_of(ASKED)
    assert ran_calls(ran_log) == []

    signed.approve(TASK, asked.approval_id, "--note", "go ahead")
    with Store.open(signed.store_dir) as store:
        resumed = resume_here(store, checkpoints, ran_log, "batched", "t-1")
    assert resumed["resumed"] and len(resumed["answered"]) == 1
    assert ran_calls(ran_log) == [{"tool": "send_email", "args": ASKED}]
    (effect,) = signed.effects(TASK)
    assert effect["attempts"][0]["inputs"]["prepared_digest"] == digest_of(ASKED)
    signed.assert_signed()


def test_without_boris_key_asking_is_refused_with_the_next_step(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    signed.use_here(monkeypatch, key=False)
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    script = first_turn(("send_email", ASKED, "call_2"))
    with Store.open(signed.store_dir) as store, pytest.raises(SignatureRefused) as refused:
        start(store, checkpoints, ran_log, "batched", "t-2", script)
    assert refused.value.code == "signature_required"
    one_line_refusal(str(refused.value), f"agent:{AGENT.id}")
    assert ran_calls(ran_log) == []
