"""LangGraph's human-in-the-loop edges answered from Boris (issue 40).

The real `create_agent` with the real `HumanInTheLoopMiddleware` and a real SqliteSaver
checkpointer, driven by the scripted stand-in model of tests/test_langgraph_adapter.py; a
person decides with the real `boris` CLI in a process of its own. Three edges:

- a person's edit that does not fit the tool's arguments is caught before anything is
  recorded: no attempt for a call that will not run, the graph stays paused, and the person
  is asked again (the approval they gave is retired with the reason);
- where the graph allows no `reject`, a person's "no" is never sent as `respond` (which the
  model reads as the tool's successful result): Boris refuses to answer and the run waits;
- a tool's error (`ToolMessage(status="error")`) is its word, kept as the response with the
  outcome unknown until reconciled, never `failed`; and the middleware's own answer to a
  rejected call (no tool ran) is never filed as a tool's response.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool, ToolException
from langgraph.checkpoint.sqlite import SqliteSaver
from test_langgraph_adapter import (
    AGENT,
    ASKED,
    DELETE,
    EDITED,
    TASK,
    ScriptedModel,
    _tools,
    approval_of,
    boris,
    config_of,
    effect_of,
    first_turn,
    person,
    ran_calls,
    read_json,
)

from store.adapters import langgraph as boris_lg
from store.canonical import digest_of
from store.store import Store

#: A person's edit of send_email that leaves out a required argument (`subject`).
NO_SUBJECT = {"to": "ops@example.com"}
NOTE = {"channel": "#ops", "text": "4.2 ships tonight"}


def _more_tools(ran_log: Path) -> list[Any]:
    """A tool whose arguments are a JSON schema (no Pydantic model: LangGraph shows the
    schema in a per-call interrupt but does not check an edit against it), and a tool that
    fails with an error the model reads (`ToolMessage(status="error")`)."""

    def post_note(channel: str, text: str) -> str:
        with ran_log.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": "post_note", "args": {"channel": channel, "text": text}}))
            f.write("\n")
        return f"posted to {channel}"

    note = StructuredTool.from_function(
        func=post_note,
        name="post_note",
        description="Post a note to a channel.",
        args_schema={
            "type": "object",
            "properties": {"channel": {"type": "string"}, "text": {"type": "string"}},
            "required": ["channel", "text"],
        },
    )

    def restart_service(name: str) -> str:
        """Restart a service."""
        with ran_log.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": "restart_service", "args": {"name": name}}) + "\n")
        raise ToolException(f"{name}: restart timed out after 30s; state unknown")

    # A ToolException it handles becomes the ToolMessage's content, with status="error".
    restart = StructuredTool.from_function(func=restart_service, handle_tool_error=True)
    return [note, restart]


@contextmanager
def agent(
    checkpoints: Path,
    ran_log: Path,
    mode: str,
    script: list[Any],
    interrupt_on: dict[str, Any] | None = None,
) -> Iterator[Any]:
    """The agent as any process builds it; `interrupt_on` as the developer configured it."""
    gates: dict[str, Any] = interrupt_on or {
        "send_email": True,
        "delete_file": True,
        "post_note": True,
        "restart_service": True,
    }
    conn = sqlite3.connect(checkpoints, check_same_thread=False)
    try:
        yield create_agent(
            ScriptedModel(messages=iter(script)),
            tools=_tools(ran_log) + _more_tools(ran_log),
            middleware=[HumanInTheLoopMiddleware(interrupt_on=gates, interrupt_mode=mode)],  # type: ignore[arg-type]
            checkpointer=SqliteSaver(conn),
        )
    finally:
        conn.close()


class StateOnly:
    """What a client that reads the thread's state but not the graph's tools sees (a remote
    graph): the real graph's `get_state`, nothing else."""

    def __init__(self, graph: Any) -> None:
        self._graph = graph

    def get_state(self, config: Any) -> Any:
        return self._graph.get_state(config)


@pytest.fixture
def lg_store(store_dir: Path, store_url: str | None) -> Iterator[Store]:
    done = boris(
        store_dir,
        store_url,
        "create-task",
        "--id",
        TASK,
        "--title",
        "Tell ops about the deploy",
        "--owner",
        "rita",
        "--objective",
        "ops know when 4.2 ships",
        "--destination",
        "langgraph://tools/",
        "--actor",
        "agent:langgraph",
    )
    assert done.returncode == 0, done.stderr.decode()
    s = Store.open(store_dir, url=store_url)
    yield s
    s.close()


def start(
    store: Store,
    checkpoints: Path,
    ran_log: Path,
    mode: str,
    thread: str,
    script: list[Any],
    interrupt_on: dict[str, Any] | None = None,
) -> list[boris_lg.Asked]:
    with agent(checkpoints, ran_log, mode, script, interrupt_on) as graph:
        result = graph.invoke(
            {"messages": [{"role": "user", "content": "tell ops"}]},
            config_of(thread),
            version="v2",
        )
        assert result.interrupts
        return boris_lg.ask(store, AGENT, TASK, graph, config_of(thread))


def approvals_of_effect(store_dir: Path, store_url: str | None, effect_id: str) -> list[Any]:
    rows = read_json(store_dir, store_url, "approvals", TASK)
    return [r for r in rows if r.get("effect_id") == effect_id]


def interrupt_ids(graph: Any, thread: str) -> list[str]:
    return [i.id for i in graph.get_state(config_of(thread)).interrupts]


# --- 1. an edit that does not fit the tool's arguments ---------------------------------------


@pytest.mark.parametrize("mode", ["per_call", "batched"])
def test_an_edit_missing_a_required_argument_records_no_attempt_and_asks_again(
    lg_store: Store, store_dir: Path, store_url: str | None, tmp_path: Path, mode: str
) -> None:
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    script = first_turn(("send_email", ASKED, "call_mail"))
    (asked,) = start(lg_store, checkpoints, ran_log, mode, "t-bad-edit", script)
    person(
        store_dir, store_url, "approve", asked.approval_id, "--edited-json", json.dumps(NO_SUBJECT)
    )
    with agent(checkpoints, ran_log, mode, [AIMessage(content="done")]) as graph:
        paused = interrupt_ids(graph, "t-bad-edit")
        # The edit would not be taken (per call, LangGraph refuses the resume value; batched,
        # the tool refuses its args): no answer, the graph stays paused on the same interrupt.
        assert (
            boris_lg.resume_command(lg_store, AGENT, TASK, graph, config_of("t-bad-edit")) is None
        )
        assert interrupt_ids(graph, "t-bad-edit") == paused
    assert ran_calls(ran_log) == []
    effect = effect_of(store_dir, store_url, asked.effect_id)
    assert effect["attempts"] == []  # no attempt recorded for a call that would not run
    assert effect["stage"] == "planned"
    # Back to the model's args, the call the graph waits on; the person's edit stays in the log.
    assert effect["intent"]["prepared_digest"] == digest_of(ASKED)
    assert approval_of(store_dir, store_url, asked.approval_id)["state"] == "stale"
    (again,) = [
        a
        for a in approvals_of_effect(store_dir, store_url, asked.effect_id)
        if a["state"] == "pending"
    ]
    assert again["payload_digest"] == digest_of(ASKED)
    # The person sees why they are asked again: their edit, what did not fit.
    assert "asked again: rita's edit of this send_email call does not fit" in again["consequence"]
    assert "subject: Field required" in again["consequence"]
    (revised,) = [
        e
        for e in lg_store.events(TASK, types=["effect.revised"])
        if "does not fit" in e["payload"]["reason"]
    ]
    assert revised["payload"]["prepared"] == ASKED

    # Asked again about the same call (a restarted agent): the new approval, nothing new.
    with agent(checkpoints, ran_log, mode, []) as graph:
        (asked_again,) = boris_lg.ask(lg_store, AGENT, TASK, graph, config_of("t-bad-edit"))
    assert asked_again.approval_id == again["id"]
    assert asked_again.effect_id == asked.effect_id

    # The person decides again, with an edit that fits: exactly that runs.
    person(store_dir, store_url, "approve", again["id"], "--edited-json", json.dumps(EDITED))
    with agent(checkpoints, ran_log, mode, [AIMessage(content="done")]) as graph:
        command = boris_lg.resume_command(lg_store, AGENT, TASK, graph, config_of("t-bad-edit"))
        assert command is not None
        graph.invoke(command, config_of("t-bad-edit"), version="v2")
        assert boris_lg.record_results(lg_store, AGENT, TASK, graph, config_of("t-bad-edit")) == [
            asked.effect_id
        ]
    assert ran_calls(ran_log) == [{"tool": "send_email", "args": EDITED}]
    (attempt,) = effect_of(store_dir, store_url, asked.effect_id)["attempts"]
    assert attempt["inputs"]["prepared_digest"] == digest_of(EDITED)
    assert attempt["approval_id"] == again["id"]


def test_a_json_schema_tools_edit_is_checked_against_the_interrupts_schema(
    lg_store: Store, store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    """A tool whose arguments are a JSON schema: LangGraph shows it in the per-call
    interrupt's `response_schema` and does not enforce it. Read from the interrupt alone (a
    client that has the thread's state, not the graph's tools), the edit is still checked."""
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    script = first_turn(("post_note", NOTE, "call_note"))
    (asked,) = start(lg_store, checkpoints, ran_log, "per_call", "t-json", script)
    person(
        store_dir,
        store_url,
        "approve",
        asked.approval_id,
        "--edited-json",
        json.dumps({"channel": "#ops", "text": 42}),
    )
    with agent(checkpoints, ran_log, "per_call", []) as graph:
        value = boris_lg.resume_value(lg_store, AGENT, TASK, StateOnly(graph), config_of("t-json"))
    assert value is None
    effect = effect_of(store_dir, store_url, asked.effect_id)
    assert effect["attempts"] == []
    assert effect["stage"] == "planned"
    assert approval_of(store_dir, store_url, asked.approval_id)["state"] == "stale"
    (again,) = [
        a
        for a in approvals_of_effect(store_dir, store_url, asked.effect_id)
        if a["state"] == "pending"
    ]
    assert again["payload_digest"] == digest_of(NOTE)
    assert "text: 42 is not of type 'string'" in again["consequence"]
    assert ran_calls(ran_log) == []


# --- 2. no `reject` allowed: a "no" is never sent as a success --------------------------------


@pytest.mark.parametrize("mode", ["per_call", "batched"])
def test_a_rejection_is_never_sent_as_respond(
    lg_store: Store, store_dir: Path, store_url: str | None, tmp_path: Path, mode: str
) -> None:
    """`respond` reaches the model as a ToolMessage with status="success" (the middleware's
    `_answer_message`): the model would read the person's "no" as the tool's result."""
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    gates = {"send_email": True, "delete_file": {"allowed_decisions": ["approve", "respond"]}}
    script = first_turn(("send_email", ASKED, "call_mail"), ("delete_file", DELETE, "call_rm"))
    mail, rm = start(lg_store, checkpoints, ran_log, mode, "t-respond", script, gates)
    assert rm.action.allowed == ("approve", "respond")
    person(store_dir, store_url, "approve", mail.approval_id)
    person(store_dir, store_url, "reject", rm.approval_id, "--note", "keep the Q3 report")
    with agent(checkpoints, ran_log, mode, [AIMessage(content="done")], gates) as graph:
        paused = interrupt_ids(graph, "t-respond")
        with pytest.raises(boris_lg.ResumeRefused) as refused:
            boris_lg.resume_command(lg_store, AGENT, TASK, graph, config_of("t-respond"))
        # Every resume says the same, and the run stays paused where it was.
        with pytest.raises(boris_lg.ResumeRefused):
            boris_lg.resume_command(lg_store, AGENT, TASK, graph, config_of("t-respond"))
        assert interrupt_ids(graph, "t-respond") == paused
    why = str(refused.value)
    assert "delete_file" in why
    assert "reject" in why and "respond" in why
    assert "success" in why
    # Nothing was handed over: not the refused call, and not the approved one beside it
    # (a run resumes with all of its answers or none).
    assert ran_calls(ran_log) == []
    assert effect_of(store_dir, store_url, mail.effect_id)["attempts"] == []
    assert effect_of(store_dir, store_url, mail.effect_id)["stage"] != "dispatched"
    assert effect_of(store_dir, store_url, rm.effect_id)["attempts"] == []
    assert approval_of(store_dir, store_url, mail.approval_id)["state"] == "approved"


# --- 3. a tool's error is its word; the middleware's own answer is no tool's ----------------


def test_a_tool_error_is_a_response_with_the_outcome_unknown(
    lg_store: Store, store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    script = first_turn(("restart_service", {"name": "api"}, "call_restart"))
    (asked,) = start(lg_store, checkpoints, ran_log, "per_call", "t-error", script)
    person(store_dir, store_url, "approve", asked.approval_id)
    with agent(checkpoints, ran_log, "per_call", [AIMessage(content="done")]) as graph:
        command = boris_lg.resume_command(lg_store, AGENT, TASK, graph, config_of("t-error"))
        result = graph.invoke(command, config_of("t-error"), version="v2")
        (message,) = [m for m in result.value["messages"] if m.type == "tool"]
        assert message.status == "error"  # the tool ran, and said it failed
        assert boris_lg.record_results(lg_store, AGENT, TASK, graph, config_of("t-error")) == [
            asked.effect_id
        ]
    assert ran_calls(ran_log) == [{"tool": "restart_service", "args": {"name": "api"}}]
    effect = effect_of(store_dir, store_url, asked.effect_id)
    # The tool's word, not evidence: what became of the restart is for reconciliation.
    assert effect["stage"] == "dispatched"
    assert effect["outcome"] == "unknown"
    (attempt,) = effect["attempts"]
    assert attempt["outcome"] == "unknown"
    assert attempt["response"]["status"] == "error"
    assert attempt["response"]["reported"] == "failed"  # its word, as `boris hook` keeps it
    assert "restart timed out" in attempt["response"]["content"]
    assert "restart timed out" in (attempt["error"] or "")


def test_the_middlewares_rejection_is_not_filed_as_the_tools_response(
    lg_store: Store, store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    """An attempt recorded and never taken by the graph (the resumer died), reconciled absent
    by a person: the graph, resumed, gets a "no", and the message the middleware makes for
    it (no tool ran) is not the attempt's response; the reconciliation stands."""
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    script = first_turn(("send_email", ASKED, "call_mail"))
    (asked,) = start(lg_store, checkpoints, ran_log, "per_call", "t-synthetic", script)
    person(store_dir, store_url, "approve", asked.approval_id)
    with agent(checkpoints, ran_log, "per_call", []) as graph:
        value = boris_lg.resume_value(lg_store, AGENT, TASK, graph, config_of("t-synthetic"))
    assert value == {asked.action.interrupt_id: {"type": "approve"}}  # handed over, never taken
    with (
        agent(checkpoints, ran_log, "per_call", []) as graph,
        pytest.raises(boris_lg.ResumeRefused),
    ):
        boris_lg.resume_command(lg_store, AGENT, TASK, graph, config_of("t-synthetic"))
    # A person looked: no such mail went out (the store cannot read the destination itself).
    seen = read_json(
        store_dir,
        store_url,
        "observe",
        TASK,
        asked.effect_id,
        "--state-json",
        json.dumps({"exists": False}),
        "--actor",
        "person:rita",
    )
    done = boris(
        store_dir,
        store_url,
        "reconcile",
        TASK,
        asked.effect_id,
        "--observation",
        str(seen),
        "--decision",
        "absent",
        "--note",
        "no mail in the outbox",
        "--actor",
        "person:rita",
    )
    assert done.returncode == 0, done.stderr.decode()
    with agent(checkpoints, ran_log, "per_call", [AIMessage(content="done")]) as graph:
        command = boris_lg.resume_command(lg_store, AGENT, TASK, graph, config_of("t-synthetic"))
        assert command is not None
        (decision,) = command.resume.values()
        assert decision["type"] == "reject"
        result = graph.invoke(command, config_of("t-synthetic"), version="v2")
        (message,) = [m for m in result.value["messages"] if m.type == "tool"]
        assert message.status == "error"
        assert boris_lg.record_results(lg_store, AGENT, TASK, graph, config_of("t-synthetic")) == []
    assert ran_calls(ran_log) == []
    effect = effect_of(store_dir, store_url, asked.effect_id)
    assert effect["outcome"] != "unknown"  # not reopened by a message no tool sent
    (attempt,) = effect["attempts"]
    assert attempt["response"] is None
