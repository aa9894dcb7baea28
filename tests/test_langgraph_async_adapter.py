"""LangGraph run with `ainvoke` on an async checkpointer, answered from Boris
(store.adapters.langgraph's `aask`, `aresume_command`, `arecord_results`, `akeep_checkpoint`).

The real LangChain agent of tests/test_langgraph_adapter.py (`create_agent`, the real
`HumanInTheLoopMiddleware`, its scripted stand-in model and tools that write down what they
ran with) on the real `AsyncSqliteSaver` (aiosqlite, a file), driven only through the graph's
async API, on the store `boris init` makes (signed; the agent's key as BORIS_KEY). A person
decides from their own shell with the real `boris approve` / `reject`; the thread is opened
again on a new checkpointer connection and resumed with `await graph.ainvoke(command, ...)`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from signed_default import PERSON, Signed, signed_default_store
from test_langgraph_adapter import (
    AGENT,
    ASKED,
    DELETE,
    EDITED,
    ScriptedModel,
    _tools,
    config_of,
    first_turn,
    ran_calls,
)

from store.adapters import langgraph as boris_lg
from store.canonical import digest_of
from store.store import Store


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("lg-async") / "home", f"agent:{AGENT.id}")


@asynccontextmanager
async def agent(
    checkpoints: Path, ran_log: Path, mode: str, script: list[Any]
) -> AsyncIterator[Any]:
    """The agent as any process builds it, on an async checkpointer over the same file."""
    async with AsyncSqliteSaver.from_conn_string(str(checkpoints)) as saver:
        yield create_agent(
            ScriptedModel(messages=iter(script)),
            tools=_tools(ran_log),
            middleware=[
                HumanInTheLoopMiddleware(
                    interrupt_on={"send_email": True, "delete_file": True},
                    interrupt_mode=mode,  # type: ignore[arg-type]
                )
            ],
            checkpointer=saver,
        )


def effect(signed: Signed, task: str, effect_id: str) -> dict[str, Any]:
    (found,) = [e for e in signed.effects(task) if e["id"] == effect_id]
    return found


def test_batched_calls_asked_edited_rejected_and_resumed_with_ainvoke(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("lg-async-batched", "langgraph://tools/")
    signed.use_here(monkeypatch)
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    config = config_of("t-async")
    script = first_turn(("send_email", ASKED, "call_mail"), ("delete_file", DELETE, "call_rm"))

    async def first() -> list[boris_lg.Asked]:
        async with agent(checkpoints, ran_log, "batched", script) as graph:
            # The sync read is not the async checkpointer's: what the async functions avoid.
            with pytest.raises(asyncio.InvalidStateError):
                graph.get_state(config)
            user = {"messages": [{"role": "user", "content": "tell ops, clean up"}]}
            result = await graph.ainvoke(user, config, version="v2")
            assert result.interrupts  # the middleware paused the run before either tool
            with Store.open(signed.store_dir) as store:
                asked = await boris_lg.aask(store, AGENT, task, graph, config)
                # Asked again (a restarted agent): the same effects and approvals.
                assert await boris_lg.aask(store, AGENT, task, graph, config) == asked
                # Nobody decided yet: nothing to resume with.
                assert await boris_lg.aresume_command(store, AGENT, task, graph, config) is None
            return asked

    mail, rm = anyio.run(first)
    assert (mail.action.tool_call_id, rm.action.tool_call_id) == ("call_mail", "call_rm")
    assert (mail.digest, rm.digest) == (digest_of(ASKED), digest_of(DELETE))
    assert ran_calls(ran_log) == []

    signed.ok(
        "--actor", PERSON, "approve", task, mail.approval_id, "--edited-json", json.dumps(EDITED)
    )
    signed.ok("--actor", PERSON, "reject", task, rm.approval_id, "--note", "keep the report")

    async def resume() -> dict[str, Any]:
        last = [AIMessage(content="done")]
        async with agent(checkpoints, ran_log, "batched", last) as graph:
            with Store.open(signed.store_dir) as store:
                command = await boris_lg.aresume_command(store, AGENT, task, graph, config)
                assert command is not None
                result = await graph.ainvoke(command, config, version="v2")
                answered = await boris_lg.arecord_results(store, AGENT, task, graph, config)
                kept = await boris_lg.akeep_checkpoint(store, AGENT, task, graph, config)
                found = boris_lg.graph_checkpoints(store, task)
        messages = [m for m in result.value["messages"] if m.type == "tool"]
        return {"answered": answered, "kept": kept, "found": found, "tools": messages}

    done = anyio.run(resume)
    # Exactly the person's edit ran; the rejected call did not run at all.
    assert ran_calls(ran_log) == [{"tool": "send_email", "args": EDITED}]
    assert done["answered"] == [mail.effect_id]
    by_id = {m.tool_call_id: m for m in done["tools"]}
    # The model reads the tool's output after the middleware's word that a person replaced
    # its call (langchain's own note for an `edit` decision).
    said = str(by_id["call_mail"].content)
    assert said.endswith(f"sent to {EDITED['to']}: {EDITED['subject']}")
    assert "replaced this tool call" in said
    assert "keep the report" in str(by_id["call_rm"].content)
    sent = effect(signed, task, mail.effect_id)
    (attempt,) = sent["attempts"]
    assert attempt["inputs"]["prepared_digest"] == digest_of(EDITED)
    assert attempt["response"]["tool_call_id"] == "call_mail"
    assert effect(signed, task, rm.effect_id)["stage"] == "cancelled"
    # Boris's checkpoint names the graph's, with the config that opens it there.
    (kept,) = done["found"]
    assert kept["checkpoint_id"] == done["kept"]
    assert kept["config"]["configurable"]["thread_id"] == "t-async"
    assert kept["external"]["checkpoint_id"]
    signed.assert_signed()


def test_per_call_interrupt_approved_as_asked_resumes_with_ainvoke(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("lg-async-per-call", "langgraph://tools/")
    signed.use_here(monkeypatch)
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    config = config_of("t-per-call")
    script = first_turn(("send_email", ASKED, "call_1"))

    async def first() -> boris_lg.Asked:
        async with agent(checkpoints, ran_log, "per_call", script) as graph:
            user = {"messages": [{"role": "user", "content": "tell ops"}]}
            await graph.ainvoke(user, config, version="v2")
            (action,) = await boris_lg.apending_actions(graph, config)
            assert (action.index, action.tool_call_id) == (None, "call_1")
            with Store.open(signed.store_dir) as store:
                (asked,) = await boris_lg.aask(store, AGENT, task, graph, config)
            return asked

    asked = anyio.run(first)
    signed.approve(task, asked.approval_id, "--note", "go")

    async def resume() -> list[str]:
        async with agent(checkpoints, ran_log, "per_call", [AIMessage(content="done")]) as graph:
            with Store.open(signed.store_dir) as store:
                command = await boris_lg.aresume_command(store, AGENT, task, graph, config)
                await graph.ainvoke(command, config, version="v2")
                answered = await boris_lg.arecord_results(store, AGENT, task, graph, config)
                # The thread is answered: nothing more to resume.
                assert await boris_lg.aresume_command(store, AGENT, task, graph, config) is None
        return answered

    assert anyio.run(resume) == [asked.effect_id]
    assert ran_calls(ran_log) == [{"tool": "send_email", "args": ASKED}]
    (attempt,) = effect(signed, task, asked.effect_id)["attempts"]
    assert attempt["inputs"]["prepared_digest"] == digest_of(ASKED)
    assert attempt["response"]["status"] == "success"


def test_a_standing_rule_answers_the_next_interrupt_like_it_at_once(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("lg-async-rule", "langgraph://tools/")
    signed.use_here(monkeypatch)
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    first_call = first_turn(("send_email", ASKED, "call_r1"))

    async def ask(thread: str, script: list[Any]) -> boris_lg.Asked:
        async with agent(checkpoints, ran_log, "per_call", script) as graph:
            user = {"messages": [{"role": "user", "content": "tell ops"}]}
            await graph.ainvoke(user, config_of(thread), version="v2")
            with Store.open(signed.store_dir) as store:
                (asked,) = await boris_lg.aask(store, AGENT, task, graph, config_of(thread))
            return asked

    async def resume(thread: str) -> list[str] | None:
        async with agent(checkpoints, ran_log, "per_call", [AIMessage(content="done")]) as graph:
            config = config_of(thread)
            with Store.open(signed.store_dir) as store:
                command = await boris_lg.aresume_command(store, AGENT, task, graph, config)
                if command is None:
                    return None
                await graph.ainvoke(command, config, version="v2")
                return await boris_lg.arecord_results(store, AGENT, task, graph, config)

    asked = anyio.run(ask, "t-rule-1", first_call)
    said = signed.ok(
        "--actor", PERSON, "rules", "add", task, "--from-approval", asked.approval_id,
        "--field", "to", "--json",
    )  # fmt: skip
    rule = json.loads(said)["result"]["id"]
    assert anyio.run(resume, "t-rule-1") == [asked.effect_id]

    # Another thread asks the same tool for the same recipient: the rule has decided it as
    # it was asked (recorded as the rule's), so the graph resumes at once, nobody asked.
    again = anyio.run(ask, "t-rule-2", first_turn(("send_email", EDITED, "call_r2")))
    assert signed.pending(task) == []
    assert anyio.run(resume, "t-rule-2") == [again.effect_id]
    ruled = [a for a in signed.read("approvals", task) if rule in (a["note"] or "")]
    assert [a["id"] for a in ruled] == [again.approval_id]
    assert ran_calls(ran_log) == [
        {"tool": "send_email", "args": ASKED},
        {"tool": "send_email", "args": EDITED},
    ]
