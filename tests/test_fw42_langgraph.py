"""LangGraph and issue 42: a batch of parallel calls decided in one pass, and a person's answer
in the tool's place, reach the graph in the middleware's documented shape.

The real LangChain agent (`create_agent`, the real `HumanInTheLoopMiddleware`) on the real
checkpointers (`SqliteSaver` with `invoke`, `AsyncSqliteSaver` with `ainvoke`), driven by a
scripted model that keeps what it was given (a `GenericFakeChatModel`), on the store
`boris init` makes (signed; the agent's key as BORIS_KEY). The person decides from their own
shell with the real `boris decide-batch` (docs/batches.md) and `boris respond`.

- One model turn makes 5 parallel gated calls; rita decides them 3 approve / 1 edit /
  1 reject in one `decide-batch`, in another order than the model's. Batched: one interrupt
  answered with `{"decisions": [...]}` in the model's order. Per call: five interrupts, one
  decision each, keyed by interrupt id. The tools ran with exactly the approved and edited
  args; the rejected one not at all; the model's next turn reads each call's result.
- `boris respond`: the middleware's `respond` decision, its message the person's result; the
  tool never runs; the model reads it as the tool's successful result.

LangGraph has no "always" answer of its own: its decisions are approve, edit, reject and
respond (`DecisionType` in langchain/agents/middleware/human_in_the_loop.py); a person's
"always" is a Boris standing rule (tests/test_langgraph_async_adapter.py covers it).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import Field
from signed_default import PERSON, Signed, signed_default_store
from test_langgraph_adapter import AGENT, ScriptedModel, _tools, config_of, ran_calls

from store import db
from store.adapters import langgraph as boris_lg
from store.canonical import digest_of
from store.reads.decision_views import ApprovalVerdict, approval_decision
from store.store import Store

# One model turn, five parallel gated calls: (tool, args, tool_call_id).
CALLS = [
    ("send_email", {"to": "ops@example.com", "subject": "4.2 tonight"}, "call_1"),
    ("delete_file", {"path": "tmp/a.log"}, "call_2"),
    ("send_email", {"to": "qa@example.com", "subject": "4.2 tonight"}, "call_3"),
    ("send_email", {"to": "all@example.com", "subject": "4.2 tonight"}, "call_4"),
    ("delete_file", {"path": "reports/q3.pdf"}, "call_5"),
]
EDITED = {"to": "leads@example.com", "subject": "4.2 tomorrow"}
# The person's verdict on each call, by tool_call_id.
VERDICTS = {
    "call_1": "approve",
    "call_2": "approve",
    "call_3": "approve",
    "call_4": "edit",
    "call_5": "reject",
}


class RecordingModel(ScriptedModel):
    """The scripted model, keeping the messages of each turn it is asked for."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def turn(*calls: tuple[str, dict[str, Any], str]) -> list[Any]:
    tool_calls = [{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in calls]
    return [AIMessage(content="", tool_calls=tool_calls), AIMessage(content="done")]


def _agent(model: RecordingModel, ran_log: Path, mode: str, saver: Any, gates: Any = None) -> Any:
    return create_agent(
        model,
        tools=_tools(ran_log),
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on=gates or {"send_email": True, "delete_file": True},
                interrupt_mode=mode,  # type: ignore[arg-type]
            )
        ],
        checkpointer=saver,
    )


@contextmanager
def sync_agent(
    checkpoints: Path, ran_log: Path, mode: str, model: RecordingModel, gates: Any = None
) -> Iterator[Any]:
    conn = sqlite3.connect(checkpoints, check_same_thread=False)
    try:
        yield _agent(model, ran_log, mode, SqliteSaver(conn), gates)
    finally:
        conn.close()


@asynccontextmanager
async def async_agent(
    checkpoints: Path, ran_log: Path, mode: str, model: RecordingModel
) -> AsyncIterator[Any]:
    async with AsyncSqliteSaver.from_conn_string(str(checkpoints)) as saver:
        yield _agent(model, ran_log, mode, saver)


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("fw42-lg") / "home", f"agent:{AGENT.id}")


def decide_batch(signed: Signed, task: str, asked: list[boris_lg.Asked]) -> dict[str, Any]:
    """Rita's one pass over the five calls, in another order than the model made them, with
    the real `boris decide-batch -` (the digests as `boris approvals --json` shows them)."""
    digests = {a["id"]: a["payload_digest"] for a in signed.read("approvals", task)}
    lines = []
    for a in reversed(asked):
        verdict = VERDICTS[str(a.action.tool_call_id)]
        item: dict[str, Any] = {
            "task_id": task,
            "approval_id": a.approval_id,
            "based_on": digests[a.approval_id],
            "verdict": "approve" if verdict == "edit" else verdict,
        }
        if verdict == "edit":
            item["edited"] = EDITED
        if verdict == "reject":
            item["note"] = "keep the quarterly report"
        lines.append(json.dumps(item))
    done = signed.boris(
        "--actor", PERSON, "decide-batch", "-", "--json", stdin="\n".join(lines).encode()
    )
    assert done.returncode == 0, done.stderr.decode()
    answer = json.loads(done.stdout)
    assert answer["recorded"] == 5 and answer["refused"] == 0, answer
    return dict(answer)


def expected_decision(call_id: str) -> dict[str, Any]:
    verdict = VERDICTS[call_id]
    if verdict == "approve":
        return {"type": "approve"}
    if verdict == "edit":
        return {"type": "edit", "edited_action": {"name": "send_email", "args": EDITED}}
    return {"type": "reject", "message": "keep the quarterly report"}


def assert_ran_as_decided(signed: Signed, task: str, ran_log: Path, asked: Any) -> None:
    """The tools ran with exactly the approved and edited args (parallel: in any order); the
    rejected call not at all; each attempt binds the digest of what ran."""
    ran = sorted(json.dumps(r, sort_keys=True) for r in ran_calls(ran_log))
    expected = [
        {"tool": n, "args": EDITED if VERDICTS[i] == "edit" else a}
        for n, a, i in CALLS
        if VERDICTS[i] != "reject"
    ]
    assert ran == sorted(json.dumps(r, sort_keys=True) for r in expected)
    effects = {e["id"]: e for e in signed.effects(task)}
    for a in asked:
        call_id = str(a.action.tool_call_id)
        effect = effects[a.effect_id]
        if VERDICTS[call_id] == "reject":
            assert effect["stage"] == "cancelled" and effect["attempts"] == []
            continue
        (attempt,) = effect["attempts"]
        args = EDITED if VERDICTS[call_id] == "edit" else a.action.args
        assert attempt["inputs"]["prepared_digest"] == digest_of(args)
        assert attempt["response"]["tool_call_id"] == call_id


def assert_model_read_each_result(model: RecordingModel) -> None:
    """The model's next turn: one tool message per call, in its own words."""
    (after,) = model.seen[-1:]
    said = {m.tool_call_id: m for m in after if m.type == "tool"}  # type: ignore[attr-defined]
    assert set(said) == {i for _, _, i in CALLS}
    assert said["call_1"].content == "sent to ops@example.com: 4.2 tonight"
    assert said["call_2"].content == "deleted tmp/a.log"
    assert said["call_3"].content == "sent to qa@example.com: 4.2 tonight"
    # The edit: the middleware's notice that a person replaced the call, then its output.
    assert "replaced this tool call" in str(said["call_4"].content)
    assert str(said["call_4"].content).endswith("sent to leads@example.com: 4.2 tomorrow")
    assert said["call_5"].status == "error"
    assert "keep the quarterly report" in str(said["call_5"].content)


def ask_batched(
    signed: Signed, task: str, checkpoints: Path, ran_log: Path, config: Any
) -> tuple[Any, list[boris_lg.Asked]]:
    """The model's five parallel calls in one turn: the graph's one interrupt for the turn,
    and each call asked of Boris by the agent's process."""
    with sync_agent(
        checkpoints, ran_log, "batched", RecordingModel(messages=iter(turn(*CALLS)))
    ) as g:
        g.invoke({"messages": [{"role": "user", "content": "ship 4.2"}]}, config, version="v2")
        (interrupt,) = g.get_state(config).interrupts  # one interrupt for the model's turn
        with Store.open(signed.store_dir) as store:
            asked = boris_lg.ask(store, AGENT, task, g, config)
    return interrupt, asked


def resume_as_decided(
    signed: Signed,
    task: str,
    checkpoints: Path,
    ran_log: Path,
    config: Any,
    interrupt: Any,
    asked: list[boris_lg.Asked],
) -> list[str]:
    """The agent's process resumes the batched graph from Boris once the five are decided:
    the middleware's answer, what ran, what the model read, nothing pending, all signed.
    Returns the effects whose results were recorded."""
    model = RecordingModel(messages=iter([AIMessage(content="done")]))
    with (
        sync_agent(checkpoints, ran_log, "batched", model) as g,
        Store.open(signed.store_dir) as store,
    ):
        command = boris_lg.resume_command(store, AGENT, task, g, config)
        # The middleware's documented answer: one HITLResponse for the one interrupt, its
        # decisions in the order of its action_requests (the model's), whatever the batch's.
        assert command.resume == {
            interrupt.id: {"decisions": [expected_decision(i) for _, _, i in CALLS]}
        }
        result = g.invoke(command, config, version="v2")
        answered = boris_lg.record_results(store, AGENT, task, g, config)
    assert result.value["messages"][-1].content == "done"
    assert_ran_as_decided(signed, task, ran_log, asked)
    assert_model_read_each_result(model)
    assert signed.pending(task) == []
    signed.assert_signed()
    return list(answered)


def test_five_parallel_calls_decided_in_one_batch_reach_the_batched_interrupt_in_order(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("lg-batch-5", "langgraph://tools/")
    signed.use_here(monkeypatch)
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    config = config_of("t-batch")

    interrupt, asked = ask_batched(signed, task, checkpoints, ran_log, config)
    assert [a.action.tool_call_id for a in asked] == [i for _, _, i in CALLS]
    assert [a.action.index for a in asked] == [0, 1, 2, 3, 4]
    assert ran_calls(ran_log) == []

    decide_batch(signed, task, asked)

    answered = resume_as_decided(signed, task, checkpoints, ran_log, config, interrupt, asked)
    assert sorted(answered) == sorted(
        a.effect_id for a in asked if VERDICTS[str(a.action.tool_call_id)] != "reject"
    )


def test_five_per_call_interrupts_decided_in_one_batch_resume_with_ainvoke_keyed_by_id(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("lg-batch-5-per-call", "langgraph://tools/")
    signed.use_here(monkeypatch)
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    config = config_of("t-per-call")

    async def first() -> tuple[list[str], list[boris_lg.Asked]]:
        model = RecordingModel(messages=iter(turn(*CALLS)))
        async with async_agent(checkpoints, ran_log, "per_call", model) as g:
            user = {"messages": [{"role": "user", "content": "ship 4.2"}]}
            await g.ainvoke(user, config, version="v2")
            ids = [i.id for i in (await g.aget_state(config)).interrupts]
            with Store.open(signed.store_dir) as store:
                return ids, await boris_lg.aask(store, AGENT, task, g, config)

    interrupt_ids, asked = anyio.run(first)
    assert len(set(interrupt_ids)) == 5  # one interrupt per gated call
    assert sorted(str(a.action.tool_call_id) for a in asked) == sorted(i for _, _, i in CALLS)
    assert all(a.action.index is None for a in asked)

    decide_batch(signed, task, asked)

    model = RecordingModel(messages=iter([AIMessage(content="done")]))

    async def resume() -> tuple[Any, Any, list[str]]:
        async with async_agent(checkpoints, ran_log, "per_call", model) as g:
            with Store.open(signed.store_dir) as store:
                command = await boris_lg.aresume_command(store, AGENT, task, g, config)
                result = await g.ainvoke(command, config, version="v2")
                answered = await boris_lg.arecord_results(store, AGENT, task, g, config)
        return command, result, answered

    command, result, answered = anyio.run(resume)
    # The documented per-call answer: one decision per interrupt, keyed by its id.
    assert command.resume == {
        a.action.interrupt_id: expected_decision(str(a.action.tool_call_id)) for a in asked
    }
    assert set(command.resume) == set(interrupt_ids)
    assert result.value["messages"][-1].content == "done"
    assert len(answered) == 4
    assert_ran_as_decided(signed, task, ran_log, asked)
    assert_model_read_each_result(model)
    signed.assert_signed()


def respond(signed: Signed, task: str, approval_id: str, result: Any) -> Any:
    return signed.boris(
        "--actor", PERSON, "respond", task, approval_id, "--result-json", json.dumps(result),
        "--note", "I know the answer", "--json",
    )  # fmt: skip


def assert_answered_not_run(signed: Signed, task: str, asked: boris_lg.Asked) -> None:
    (effect,) = [e for e in signed.effects(task) if e["id"] == asked.effect_id]
    assert effect["stage"] == "cancelled" and effect["attempts"] == []
    (approval,) = [a for a in signed.read("approvals", task) if a["id"] == asked.approval_id]
    assert approval["state"] == "answered"


def test_a_persons_answer_reaches_the_model_as_the_tools_result_and_nothing_runs(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("lg-respond", "langgraph://tools/")
    signed.use_here(monkeypatch)
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    config = config_of("t-respond")
    ask_call = ("delete_file", {"path": "reports/q3.pdf"}, "call_r")

    model = RecordingModel(messages=iter(turn(ask_call)))
    with sync_agent(checkpoints, ran_log, "per_call", model) as g:
        g.invoke({"messages": [{"role": "user", "content": "tidy up"}]}, config, version="v2")
        with Store.open(signed.store_dir) as store:
            (asked,) = boris_lg.ask(store, AGENT, task, g, config)

    # The decision view offers the answer, with what it must be (the middleware's message).
    with Store.open(signed.store_dir) as store, store.read() as conn:
        view = approval_decision(conn, store.blobs, task, asked.approval_id, db.database_now(conn))
    assert ApprovalVerdict.RESPOND in view.verdicts
    assert json.loads(str(view.result_schema_json))["type"] == "string"
    # Not a string: refused by the store, naming the schema; nothing recorded.
    refused = respond(signed, task, asked.approval_id, {"deleted": True})
    assert refused.returncode != 0 and "schema" in refused.stdout.decode()
    said = "already deleted by the nightly job (2026-12-06 02:00)"
    assert respond(signed, task, asked.approval_id, said).returncode == 0

    model = RecordingModel(messages=iter([AIMessage(content="done")]))
    with (
        sync_agent(checkpoints, ran_log, "per_call", model) as g,
        Store.open(signed.store_dir) as store,
    ):
        command = boris_lg.resume_command(store, AGENT, task, g, config)
        assert command.resume == {asked.action.interrupt_id: {"type": "respond", "message": said}}
        g.invoke(command, config, version="v2")
        # The middleware's message is no tool's word: no response recorded; nothing waits.
        assert boris_lg.record_results(store, AGENT, task, g, config) == []
        assert boris_lg.resume_command(store, AGENT, task, g, config) is None
    (tool_message,) = [m for m in model.seen[-1] if m.type == "tool"]
    assert (tool_message.content, tool_message.status) == (said, "success")  # type: ignore[attr-defined]
    assert ran_calls(ran_log) == []
    assert_answered_not_run(signed, task, asked)
    signed.assert_signed()


def test_an_answer_in_the_tools_place_resumes_a_batched_graph_with_ainvoke(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("lg-respond-async", "langgraph://tools/")
    signed.use_here(monkeypatch)
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    config = config_of("t-respond-async")
    mail = ("send_email", {"to": "ops@example.com", "subject": "status?"}, "call_m")
    rm = ("delete_file", {"path": "tmp/b.log"}, "call_d")

    async def first() -> list[boris_lg.Asked]:
        async with async_agent(
            checkpoints, ran_log, "batched", RecordingModel(messages=iter(turn(mail, rm)))
        ) as g:
            await g.ainvoke({"messages": [{"role": "user", "content": "x"}]}, config, version="v2")
            with Store.open(signed.store_dir) as store:
                return await boris_lg.aask(store, AGENT, task, g, config)

    by_call = {a.action.tool_call_id: a for a in anyio.run(first)}
    answer = {"status": "green", "since": "09:00"}  # not a string: sent as its JSON text
    assert respond(signed, task, by_call["call_m"].approval_id, json.dumps(answer)).returncode == 0
    signed.approve(task, by_call["call_d"].approval_id)

    model = RecordingModel(messages=iter([AIMessage(content="done")]))

    async def resume() -> Any:
        async with async_agent(checkpoints, ran_log, "batched", model) as g:
            with Store.open(signed.store_dir) as store:
                command = await boris_lg.aresume_command(store, AGENT, task, g, config)
                await g.ainvoke(command, config, version="v2")
                await boris_lg.arecord_results(store, AGENT, task, g, config)
                return command

    command = anyio.run(resume)
    (decisions,) = command.resume.values()
    assert decisions == {
        "decisions": [{"type": "respond", "message": json.dumps(answer)}, {"type": "approve"}]
    }
    said = {m.tool_call_id: m for m in model.seen[-1] if m.type == "tool"}  # type: ignore[attr-defined]
    assert (said["call_m"].content, said["call_m"].status) == (json.dumps(answer), "success")
    assert said["call_d"].content == "deleted tmp/b.log"
    assert ran_calls(ran_log) == [{"tool": "delete_file", "args": rm[1]}]
    assert_answered_not_run(signed, task, by_call["call_m"])
    signed.assert_signed()


def test_no_answer_in_the_tools_place_where_the_graph_does_not_take_one(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("lg-no-respond", "langgraph://tools/")
    signed.use_here(monkeypatch)
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    config = config_of("t-no-respond")
    gates = {"delete_file": {"allowed_decisions": ["approve", "reject"]}}
    model = RecordingModel(messages=iter(turn(("delete_file", {"path": "a"}, "call_n"))))
    with sync_agent(checkpoints, ran_log, "per_call", model, gates) as g:
        g.invoke({"messages": [{"role": "user", "content": "x"}]}, config, version="v2")
        with Store.open(signed.store_dir) as store:
            (asked,) = boris_lg.ask(store, AGENT, task, g, config)
            with store.read() as conn:
                now = db.database_now(conn)
                view = approval_decision(conn, store.blobs, task, asked.approval_id, now)
    assert ApprovalVerdict.RESPOND not in view.verdicts and view.result_schema_json is None
    refused = respond(signed, task, asked.approval_id, "it is gone")
    assert refused.returncode != 0
    assert "does not accept an answer in the tool's place" in refused.stdout.decode()
    (approval,) = [a for a in signed.read("approvals", task) if a["id"] == asked.approval_id]
    assert approval["state"] == "pending"
