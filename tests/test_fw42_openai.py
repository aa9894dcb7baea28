"""The OpenAI Agents SDK and issue 42: a batch of parallel calls decided in one pass, a
person's answer in the tool's place, and the SDK's own "always" answers as Boris standing
rules (store.adapters.openai_agents).

The real `openai-agents` package with its scripted model (`agents.testing.ScriptedModel`, no
network) and the agent of tests/test_openai_agents_adapter.py (`delete_path` asks before it
runs and writes down the arguments it ran with), on the store `boris init` makes (signed; the
agent's key as BORIS_KEY). The person decides with the real `boris decide-batch`, `boris
respond`, `boris rules revoke|reserve`, or answers in the application's own approval UI on
the SDK's `RunState` (`approve(..., always_approve=True)`, `reject(..., always_reject=True)`),
handed to Boris in their name with `record_answers`.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, RunState, function_tool
from agents.exceptions import UserError
from agents.testing import ScriptedModel, function_call
from signed_default import PERSON, Signed, signed_default_store
from test_openai_agents_adapter import FINAL, NO_TRACING, asks, make_agent, outputs_seen, ran

from store.adapters import openai_agents as oa
from store.canonical import digest_of
from store.signing.seal import SignatureRefused
from store.store import Store

PATHS = ["dist/", "build/", "tmp/", "cache/", "src/", "docs/_build/"]
CALLS = [(f"call_{i + 1}", {"path": p}) for i, p in enumerate(PATHS)]
EDITED = {"path": "cache/old/"}
# The person's verdict on each call; call_6 is left undecided in the batch.
VERDICTS = {"call_1": "approve", "call_2": "approve", "call_3": "approve", "call_4": "edit"}
VERDICTS["call_5"] = "reject"


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    home = tmp_path_factory.mktemp("fw42-oa") / "home"
    return signed_default_store(home, f"agent:{oa.DEFAULT_ACTOR.id}")


def effect(signed: Signed, task: str, call_id: str) -> dict[str, Any]:
    key = f"openai-agents:{call_id}"
    (found,) = [e for e in signed.effects(task) if e["idempotency_key"] == key]
    return found


def approval(signed: Signed, task: str, approval_id: str) -> dict[str, Any]:
    (found,) = [a for a in signed.read("approvals", task) if a["id"] == approval_id]
    return found


def run(signed: Signed, task: str, ran_log: Path, steps: list[Any], resume: bool = False) -> Any:
    agent, model = make_agent(ran_log, steps)
    with Store.open(signed.store_dir) as store:
        adapter = oa.BorisApprovals(store, task)
        if resume:
            return asyncio.run(adapter.resume(agent, run_config=NO_TRACING)), model
        return asyncio.run(adapter.run(agent, "clean up", run_config=NO_TRACING)), model


def test_five_of_six_parallel_calls_decided_in_one_batch_the_sixth_left_pending(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-batch", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    ran_log = tmp_path / "ran.jsonl"

    first, _ = run(signed, task, ran_log, asks(*CALLS))
    assert [a.call.call_id for a in first.asked] == [c for c, _ in CALLS]
    by_call = {a.call.call_id: a for a in first.asked}

    # Rita decides five of the six in one pass (3 approve, 1 edit, 1 reject) and leaves one.
    digests = {a["id"]: a["payload_digest"] for a in signed.read("approvals", task)}
    lines = []
    for call_id, verdict in reversed(VERDICTS.items()):
        asked = by_call[call_id]
        item: dict[str, Any] = {
            "task_id": task,
            "approval_id": asked.approval_id,
            "based_on": digests[asked.approval_id],
            "verdict": "approve" if verdict == "edit" else verdict,
        }
        if verdict == "edit":
            item["edited"] = EDITED
        if verdict == "reject":
            item["note"] = "src/ is the code"
        lines.append(json.dumps(item))
    done = signed.boris(
        "--actor", PERSON, "decide-batch", "-", "--json", stdin="\n".join(lines).encode()
    )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["recorded"] == 5

    # Resumed, streamed: the decided calls go on as the SDK documents a partial resolution
    # (approved and edited ones run, the rejected one not), and the undecided one stays in
    # the run's interruptions, still the same request in Boris; the model is not asked yet.
    async def resume_streamed() -> tuple[oa.Outcome, Any, list[str]]:
        agent, model = make_agent(ran_log, [FINAL])
        with Store.open(signed.store_dir) as store:
            streamed = await oa.BorisApprovals(store, task).resume_streamed(
                agent, run_config=NO_TRACING
            )
            kinds = [event.type async for event in streamed.stream_events()]
            return await streamed.outcome(), model, kinds

    partial, model, kinds = asyncio.run(resume_streamed())
    assert kinds and partial.result is not None and model.calls == ()
    (still,) = partial.asked
    assert (still.call.call_id, still.approval_id) == ("call_6", by_call["call_6"].approval_id)
    assert [w["call_id"] for w in oa_waiting(signed, task)] == ["call_6"]
    assert sorted(d.asked.call.call_id for d in partial.decided) == sorted(VERDICTS)
    ran_now = sorted(r["path"] for r in ran(ran_log))
    assert ran_now == sorted(["dist/", "build/", "tmp/", EDITED["path"]])

    signed.approve(task, by_call["call_6"].approval_id)
    finished, model = run(signed, task, ran_log, [FINAL], resume=True)
    assert finished.result is not None and finished.result.final_output == "done"
    seen = outputs_seen(model)  # what the model read next: every call's output
    assert seen["call_1"] == "deleted dist/" and seen["call_3"] == "deleted tmp/"
    assert seen["call_4"].startswith("A person in Boris approved this delete_path call")
    assert seen["call_4"].endswith("Tool output:\ndeleted cache/old/")
    assert (
        seen["call_5"]
        == "rita rejected this delete_path call in Boris: src/ is the code. It was not run."
    )
    assert seen["call_6"] == "deleted docs/_build/"
    assert sorted(r["path"] for r in ran(ran_log)) == sorted([*ran_now, "docs/_build/"])
    (attempt,) = effect(signed, task, "call_4")["attempts"]
    assert attempt["inputs"]["prepared_digest"] == digest_of(EDITED)
    assert effect(signed, task, "call_5")["stage"] == "cancelled"
    assert signed.pending(task) == []
    signed.assert_signed()


def oa_waiting(signed: Signed, task: str) -> list[dict[str, Any]]:
    with Store.open(signed.store_dir) as store:
        return list(oa.waiting_calls(store, task))


def test_a_persons_answer_reaches_the_model_as_the_calls_output_and_nothing_runs(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-respond", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    ran_log = tmp_path / "ran.jsonl"
    first, _ = run(signed, task, ran_log, asks(("call_q", {"path": "dist/"})))
    (asked,) = first.asked
    said = "dist/ was already removed by the release job"
    answered = signed.boris(
        "--actor", PERSON, "respond", task, asked.approval_id, "--result-json", json.dumps(said)
    )
    assert answered.returncode == 0, answered.stderr.decode()

    done, model = run(signed, task, ran_log, [FINAL], resume=True)
    assert done.result is not None and done.result.final_output == "done"
    assert [d.state for d in done.decided] == ["answered"]
    assert outputs_seen(model) == {"call_q": said}
    assert ran(ran_log) == []
    gone = effect(signed, task, "call_q")
    assert gone["stage"] == "cancelled" and gone["attempts"] == []
    assert approval(signed, task, asked.approval_id)["state"] == "answered"
    signed.assert_signed()


def answer_in_the_app(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, task: str, outcome: oa.Outcome, **how: Any
) -> list[oa.Answer]:
    """The application's own approval UI: the person answers on the SDK's RunState, and the
    application hands the answers to Boris in their name (their process: no BORIS_KEY, their
    own key from their config directory)."""
    assert outcome.result is not None
    state: RunState[Any, Any] = outcome.result.to_state()
    (item,) = state.get_interruptions()
    if how.pop("reject", False):
        state.reject(item, always_reject=True, rejection_message="never delete dist/")
    else:
        state.approve(item, always_approve=True)
    signed.use_here(monkeypatch, key=False)
    try:
        with Store.open(signed.store_dir) as store:
            return oa.record_answers(store, task, state, PERSON, **how)
    finally:
        signed.use_here(monkeypatch)


def test_always_approve_becomes_a_standing_rule_until_reserved_or_revoked(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-always-approve", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    ran_log = tmp_path / "ran.jsonl"
    first, _ = run(signed, task, ran_log, asks(("call_a1", {"path": "dist/"})))
    (answer,) = answer_in_the_app(signed, monkeypatch, task, first)
    assert answer.always and answer.verdict == "approved" and answer.rule_id
    (rule,) = [r for r in signed.read("rules", "list")["rules"] if r["id"] == answer.rule_id]
    assert rule["origin"] == "openai-agents:always_approve" and rule["granted_by"]["id"] == "rita"
    assert rule["verdict"] == "approved" and rule["answered"] == first.asked[0].approval_id
    assert approval(signed, task, first.asked[0].approval_id)["state"] == "approved"

    # The next call of the tool (other arguments: the SDK's "always" is per tool) is decided
    # by the rule as it is asked, recorded as the rule's, and the run goes on at once.
    done, _ = run(signed, task, ran_log, [*asks(("call_a2", {"path": "tmp/"})), FINAL], True)
    assert done.result is not None and done.result.final_output == "done"
    assert ran(ran_log) == [{"path": "dist/"}, {"path": "tmp/"}]
    ruled = effect(signed, task, "call_a2")
    (by_rule,) = [a for a in signed.read("approvals", task) if a["effect_id"] == ruled["id"]]
    assert answer.rule_id in by_rule["note"] and by_rule["state"] == "consumed"

    # A policy reserved for a person: the rule does not decide it, a person does.
    signed.ok("--actor", PERSON, "rules", "reserve", oa.POLICY)
    try:
        held, _ = run(signed, task, ran_log, [*asks(("call_a3", {"path": "x/"})), FINAL])
    finally:
        signed.ok("--actor", PERSON, "rules", "reserve", oa.POLICY, "--off")
    assert held.paused and [a.call.call_id for a in held.asked] == ["call_a3"]
    assert approval(signed, task, held.asked[0].approval_id)["state"] == "pending"
    signed.ok("--actor", PERSON, "reject", task, held.asked[0].approval_id, "--note", "no")
    run(signed, task, ran_log, [FINAL], resume=True)

    # Revoked: it decides nothing after.
    signed.ok("--actor", PERSON, "rules", "revoke", answer.rule_id, "--reason", "enough")
    later, _ = run(signed, task, ran_log, [*asks(("call_a4", {"path": "y/"})), FINAL])
    assert later.paused and [a.call.call_id for a in later.asked] == ["call_a4"]
    assert approval(signed, task, later.asked[0].approval_id)["state"] == "pending"
    assert ran(ran_log) == [{"path": "dist/"}, {"path": "tmp/"}]
    signed.assert_signed()


def test_always_reject_becomes_a_rule_that_decides_nothing_after_its_expiry(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-always-reject", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    ran_log = tmp_path / "ran.jsonl"
    first, _ = run(signed, task, ran_log, asks(("call_r1", {"path": "dist/"})))
    (answer,) = answer_in_the_app(
        signed, monkeypatch, task, first, reject=True, fields=["path"], expires_in_seconds=6
    )
    assert answer.always and answer.verdict == "rejected" and answer.message
    started = time.monotonic()

    # The model asks for the same path again: the rule rejects it as it is asked; the model
    # reads both refusals, nothing ran.
    steps = [*asks(("call_r2", {"path": "dist/"})), FINAL]
    done, model = run(signed, task, ran_log, steps, resume=True)
    assert time.monotonic() - started < 6, "the machine was too slow to see the rule decide"
    assert done.result is not None and done.result.final_output == "done"
    seen = outputs_seen(model)
    assert seen["call_r1"].startswith("rita rejected this delete_path call in Boris: never delete")
    assert f"by standing rule {answer.rule_id}" in seen["call_r2"]
    assert seen["call_r2"].endswith("It was not run.")
    assert ran(ran_log) == []
    (rule,) = [r for r in signed.read("rules", "list")["rules"] if r["id"] == answer.rule_id]
    assert rule["origin"] == "openai-agents:always_reject" and rule["payload"] == {"path": "dist/"}

    # Expired on the database clock: the same call waits for a person.
    time.sleep(max(0.0, 6.2 - (time.monotonic() - started)))
    later, _ = run(signed, task, ran_log, [*asks(("call_r3", {"path": "dist/"})), FINAL])
    assert later.paused and [a.call.call_id for a in later.asked] == ["call_r3"]
    assert approval(signed, task, later.asked[0].approval_id)["state"] == "pending"
    (rule,) = [r for r in signed.read("rules", "list")["rules"] if r["id"] == answer.rule_id]
    assert rule["standing"] == "expired"
    signed.assert_signed()


def test_an_always_answer_is_a_persons_never_the_agents(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-always-agent", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    first, _ = run(signed, task, tmp_path / "ran.jsonl", asks(("call_x", {"path": "dist/"})))
    assert first.result is not None
    state: RunState[Any, Any] = first.result.to_state()
    (item,) = state.get_interruptions()
    state.approve(item, always_approve=True)
    # The agent's own process (its key as BORIS_KEY) cannot hand over a person's "always".
    with Store.open(signed.store_dir) as store, pytest.raises(SignatureRefused):
        oa.record_answers(store, task, state, PERSON)
    assert all(r["task_id"] != task for r in signed.read("rules", "list")["rules"])
    assert approval(signed, task, first.asked[0].approval_id)["state"] == "pending"


def test_the_apps_own_run_on_the_sdks_sticky_always_goes_only_as_far_as_the_rule(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The application answers "always" on the RunState, hands it to Boris, then runs on
    itself with `Runner.run(agent, state, hooks=run_hooks())`: the SDK lets the next call of
    the tool through unasked (its sticky flag), Boris asks it as it starts, and only the
    person's rule lets it run; once revoked, the same sticky flag runs nothing."""
    signed.use_here(monkeypatch)
    for revoked in (False, True):
        task = signed.task(f"oa-own-run-{int(revoked)}", "openai-agents://tools/")
        ran_log = tmp_path / f"ran-{int(revoked)}.jsonl"
        steps = [*asks(("call_o1", {"path": "dist/"})), *asks(("call_o2", {"path": "tmp/"}))]
        agent, _ = make_agent(ran_log, [*steps, FINAL])
        with Store.open(signed.store_dir) as store:
            adapter = oa.BorisApprovals(store, task)
            first = asyncio.run(adapter.run(agent, "clean up", run_config=NO_TRACING))
            assert first.result is not None
            state: RunState[Any, Any] = first.result.to_state()
            (item,) = state.get_interruptions()
            state.approve(item, always_approve=True)
            signed.use_here(monkeypatch, key=False)  # the person's process hands it over
            with Store.open(signed.store_dir) as theirs:
                (answer,) = oa.record_answers(theirs, task, state, PERSON)
            signed.use_here(monkeypatch)
            if revoked:
                signed.ok(
                    "--actor", PERSON, "rules", "revoke", str(answer.rule_id), "--reason", "x"
                )
            own = Runner.run(agent, state, hooks=adapter.run_hooks(), run_config=NO_TRACING)
            if not revoked:
                assert asyncio.run(own).final_output == "done"
            else:
                with pytest.raises(UserError, match="no usable approval"):
                    asyncio.run(own)
        if not revoked:
            assert ran(ran_log) == [{"path": "dist/"}, {"path": "tmp/"}]
            (by_rule,) = [
                a for a in signed.read("approvals", task) if answer.rule_id in (a["note"] or "")
            ]
            assert by_rule["state"] == "consumed" and by_rule["payload"] == {"path": "tmp/"}
        else:
            # The call the SDK let through ran nothing and left nothing half-recorded.
            assert ran(ran_log) == [{"path": "dist/"}]
            keys = [e["idempotency_key"] for e in signed.effects(task)]
            assert keys == ["openai-agents:call_o1"]
    signed.assert_signed()


def test_a_callable_rule_is_asked_again_when_the_sdks_sticky_always_lets_a_call_through(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`needs_approval` as a callable (outside tmp/ asks): after the application's sticky
    always, the SDK lets every call through unasked; Boris asks the callable again as each
    starts, so a call it would have asked about is asked in Boris (here, with the rule
    revoked, refused) and not recorded as one the tool's own policy lets through."""
    task = signed.task("oa-own-run-callable", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    deleted: list[str] = []

    async def outside_tmp(_ctx: Any, params: dict[str, Any], _call_id: str) -> bool:
        return not str(params.get("path", "")).startswith("tmp/")

    @function_tool(needs_approval=outside_tmp)
    def delete_path(path: str) -> str:
        """Delete a file or directory of the project."""
        deleted.append(path)
        return f"deleted {path}"

    turns = [("call_c1", "dist/"), ("call_c2", "tmp/x"), ("call_c3", "build/")]
    model = ScriptedModel(
        [[function_call("delete_path", {"path": p}, call_id=c)] for c, p in turns] + [FINAL]
    )
    agent = Agent(name="cleaner", model=model, tools=[delete_path])
    with Store.open(signed.store_dir) as store:
        adapter = oa.BorisApprovals(store, task)
        first = asyncio.run(adapter.run(agent, "clean up", run_config=NO_TRACING))
        assert first.result is not None and [a.call.call_id for a in first.asked] == ["call_c1"]
        state: RunState[Any, Any] = first.result.to_state()
        (item,) = state.get_interruptions()
        state.approve(item, always_approve=True)
        signed.use_here(monkeypatch, key=False)
        with Store.open(signed.store_dir) as theirs:
            (answer,) = oa.record_answers(theirs, task, state, PERSON)
        signed.use_here(monkeypatch)
        signed.ok("--actor", PERSON, "rules", "revoke", str(answer.rule_id), "--reason", "x")
        with pytest.raises(UserError, match="no usable approval"):
            asyncio.run(Runner.run(agent, state, hooks=adapter.run_hooks(), run_config=NO_TRACING))
    assert deleted == ["dist/", "tmp/x"]  # build/ did not run
    by_key = {e["idempotency_key"]: e for e in signed.effects(task)}
    assert set(by_key) == {"openai-agents:call_c1", "openai-agents:call_c2"}
    (through,) = by_key["openai-agents:call_c2"]["attempts"]
    assert through["approval_id"] is None  # tmp/: the tool's own policy asks nobody
    signed.assert_signed()


def test_a_streamed_run_stops_at_a_pause_a_rule_decided_and_resume_streamed_goes_on(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("oa-streamed-rule", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    ran_log = tmp_path / "ran.jsonl"
    first, _ = run(signed, task, ran_log, asks(("call_t1", {"path": "dist/"})))
    said = signed.ok(
        "--actor", PERSON, "rules", "add", task, "--from-approval", first.asked[0].approval_id,
        "--json",
    )  # fmt: skip
    rule = json.loads(said)["result"]["id"]

    async def resume_streamed(steps: list[Any]) -> tuple[oa.Outcome, list[str]]:
        agent, _ = make_agent(ran_log, steps)
        with Store.open(signed.store_dir) as store:
            streamed = await oa.BorisApprovals(store, task).resume_streamed(
                agent, run_config=NO_TRACING
            )
            kinds = [event.type async for event in streamed.stream_events()]
            return await streamed.outcome(), kinds

    # Streamed: the first call runs; the model's next call is decided by the rule as it is
    # asked, and the stream (the application's to read) ends at that pause.
    paused, kinds = asyncio.run(resume_streamed([*asks(("call_t2", {"path": "tmp/"})), FINAL]))
    assert kinds and paused.paused and [a.call.call_id for a in paused.asked] == ["call_t2"]
    assert approval(signed, task, paused.asked[0].approval_id)["state"] == "approved"
    assert rule in approval(signed, task, paused.asked[0].approval_id)["note"]
    assert signed.pending(task) == [] and ran(ran_log) == [{"path": "dist/"}]
    # resume_streamed again goes on from there, nobody deciding by hand.
    done, kinds = asyncio.run(resume_streamed([FINAL]))
    assert kinds and done.result is not None and done.result.final_output == "done"
    assert ran(ran_log) == [{"path": "dist/"}, {"path": "tmp/"}]
