"""LangGraph's human-in-the-loop interrupt answered from Boris (store.adapters.langgraph).

A real LangChain agent (`create_agent`, langchain >= 1.0) with the real
`HumanInTheLoopMiddleware` and a real LangGraph checkpointer (`SqliteSaver`, a file), driven
by a scripted stand-in model (LangChain's `GenericFakeChatModel` replaying AIMessages that
carry tool_calls): the graph asks, Boris records the intent and an approval bound to the
digest of the args, a person decides in another process with the real `boris` CLI (approve,
approve an edit, reject, send back), and the graph resumes with exactly the answer the
middleware documents, in a new process where it says so. The tool writes down the args it
ran with: they must be the approved (or edited) ones, or it must not run at all, and the
effect, approval and attempt must carry the digest of what ran.

Run as a script (`python tests/test_langgraph_adapter.py resume ...`) it is the second agent
process that opens the same thread from its checkpoint and resumes it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from store.adapters import langgraph as boris_lg  # noqa: E402
from store.canonical import digest_of  # noqa: E402
from store.commands.checkpoints import WriteCheckpoint  # noqa: E402
from store.model import Actor  # noqa: E402
from store.store import Store  # noqa: E402

TASK = "lg-task"
AGENT = Actor(kind="agent", id="langgraph")
ASKED = {"to": "ops@example.com", "subject": "Deploy 4.2 tonight"}
EDITED = {"to": "ops@example.com", "subject": "Deploy 4.2 tomorrow"}
DELETE = {"path": "reports/q3.pdf"}


# --- the agent: a real graph, a scripted model, tools that say what they ran with ----------


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model; `create_agent` binds tools, which a script ignores."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def _tools(ran_log: Path) -> list[Any]:
    def ran(name: str, args: dict[str, Any]) -> None:
        with ran_log.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": name, "args": args}) + "\n")

    @tool
    def send_email(to: str, subject: str) -> str:
        """Send an email."""
        ran("send_email", {"to": to, "subject": subject})
        return f"sent to {to}: {subject}"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran("delete_file", {"path": path})
        return f"deleted {path}"

    return [send_email, delete_file]


def first_turn(*calls: tuple[str, dict[str, Any], str]) -> list[Any]:
    """The model's script: the tool calls, then (after the tools answered) a last word."""
    tool_calls = [{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in calls]
    return [AIMessage(content="", tool_calls=tool_calls), AIMessage(content="done")]


@contextmanager
def agent(checkpoints: Path, ran_log: Path, mode: str, script: list[Any]) -> Iterator[Any]:
    """The agent as any process builds it: the same checkpointer file, the same tools."""
    conn = sqlite3.connect(checkpoints, check_same_thread=False)
    try:
        yield create_agent(
            ScriptedModel(messages=iter(script)),
            tools=_tools(ran_log),
            middleware=[
                HumanInTheLoopMiddleware(
                    interrupt_on={"send_email": True, "delete_file": True},
                    interrupt_mode=mode,  # type: ignore[arg-type]
                )
            ],
            checkpointer=SqliteSaver(conn),
        )
    finally:
        conn.close()


def config_of(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def ran_calls(ran_log: Path) -> list[dict[str, Any]]:
    if not ran_log.exists():
        return []
    return [json.loads(line) for line in ran_log.read_text().splitlines()]


def resume_here(
    store: Store, checkpoints: Path, ran_log: Path, mode: str, thread: str
) -> dict[str, Any]:
    """Open the thread from its checkpoint, resume it with the person's decisions, record
    what the tools said. What the model saw comes back (its tool messages)."""
    config = config_of(thread)
    with agent(checkpoints, ran_log, mode, [AIMessage(content="done")]) as graph:
        command = boris_lg.resume_command(store, AGENT, TASK, graph, config)
        if command is None:
            return {"resumed": False}
        result = graph.invoke(command, config, version="v2")
        answered = boris_lg.record_results(store, AGENT, TASK, graph, config)
        tool_messages = [
            {"tool_call_id": m.tool_call_id, "status": m.status, "content": m.content}
            for m in result.value["messages"]
            if m.type == "tool"
        ]
        return {"resumed": True, "tool_messages": tool_messages, "answered": answered}


# --- the other processes -------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _store_args(store_dir: Path, store_url: str | None) -> list[str]:
    return ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])


def boris(store_dir: Path, store_url: str | None, *argv: str) -> subprocess.CompletedProcess[bytes]:
    """The real `boris`, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *_store_args(store_dir, store_url)],
        env=_env(),
        cwd=ROOT,
        input=b"",
        capture_output=True,
        timeout=120,
    )


def read_json(store_dir: Path, store_url: str | None, *argv: str) -> Any:
    done = boris(store_dir, store_url, *argv, "--json")
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)["result"]


def person(store_dir: Path, store_url: str | None, verb: str, approval_id: str, *rest: str) -> None:
    done = boris(store_dir, store_url, verb, TASK, approval_id, *rest, "--actor", "person:rita")
    assert done.returncode == 0, done.stderr.decode()


def resume_in_new_process(
    store_dir: Path, store_url: str | None, checkpoints: Path, ran_log: Path, mode: str, thread: str
) -> dict[str, Any]:
    argv = [str(store_dir), store_url or "-", str(checkpoints), str(ran_log), mode, thread]
    done = subprocess.run(
        [sys.executable, "-W", "error", __file__, "resume", *argv],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr.decode()
    return dict(json.loads(done.stdout))


def main(argv: list[str]) -> int:
    verb, store_dir, store_url, checkpoints, ran_log, mode, thread = argv
    assert verb == "resume"
    store = Store.open(Path(store_dir), url=None if store_url == "-" else store_url)
    try:
        answer = resume_here(store, Path(checkpoints), Path(ran_log), mode, thread)
    except boris_lg.ResumeRefused as exc:
        answer = {"refused": str(exc)}
    finally:
        store.close()
    print(json.dumps(answer))
    return 0


# --- fixtures --------------------------------------------------------------------------------


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
    store: Store, checkpoints: Path, ran_log: Path, mode: str, thread: str, script: list[Any]
) -> list[boris_lg.Asked]:
    """The first agent process: run until the middleware interrupts, ask Boris, return."""
    config = config_of(thread)
    with agent(checkpoints, ran_log, mode, script) as graph:
        result = graph.invoke(
            {"messages": [{"role": "user", "content": "tell ops"}]}, config, version="v2"
        )
        assert result.interrupts  # the graph stopped on the middleware's interrupt
        asked = boris_lg.ask(store, AGENT, TASK, graph, config)
        # Asked again (a restarted agent): the same effects and approvals, nothing new.
        assert boris_lg.ask(store, AGENT, TASK, graph, config) == asked
    return asked


def effect_of(store_dir: Path, store_url: str | None, effect_id: str) -> dict[str, Any]:
    effects = read_json(store_dir, store_url, "effects", TASK)
    (found,) = [e for e in effects if e["id"] == effect_id]
    return dict(found)


def approval_of(store_dir: Path, store_url: str | None, approval_id: str) -> dict[str, Any]:
    (found,) = [
        r for r in read_json(store_dir, store_url, "approvals", TASK) if r["id"] == approval_id
    ]
    return dict(found)


def assert_ran_exactly(
    store_dir: Path, store_url: str | None, asked: boris_lg.Asked, ran: dict[str, Any]
) -> None:
    """The effect's prepared object was what the model asked; the approval, the attempt and
    the run all bind the digest of what ran (a person's edit where they made one)."""
    digest = digest_of(ran)
    effect = effect_of(store_dir, store_url, asked.effect_id)
    assert effect["target"] == f"langgraph://tools/{asked.action.tool_name}"
    assert effect["stage"] == "dispatched"
    approval = approval_of(store_dir, store_url, asked.approval_id)
    assert approval["payload"] == ran
    assert approval["payload_digest"] == digest
    assert approval["state"] == "consumed"
    (attempt,) = effect["attempts"]
    assert attempt["approval_id"] == asked.approval_id
    assert attempt["inputs"]["prepared_digest"] == digest
    assert attempt["executor"] == f"langgraph:{asked.action.tool_name}"
    assert attempt["response"]["tool_call_id"] == asked.action.tool_call_id
    assert attempt["response"]["status"] == "success"


def assert_not_run(store_dir: Path, store_url: str | None, asked: boris_lg.Asked) -> None:
    effect = effect_of(store_dir, store_url, asked.effect_id)
    assert effect["stage"] == "cancelled"
    assert effect["attempts"] == []


# --- the tests -------------------------------------------------------------------------------


def test_approved_as_asked_resumes_in_a_new_process_and_runs_exactly_that(
    lg_store: Store, store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    script = first_turn(("send_email", ASKED, "call_mail"))
    (asked,) = start(lg_store, checkpoints, ran_log, "batched", "t-approve", script)
    assert asked.action.tool_call_id == "call_mail"  # matched from the model's message
    assert asked.digest == digest_of(ASKED)
    approval = approval_of(store_dir, store_url, asked.approval_id)
    assert approval["state"] == "pending"
    assert approval["payload_digest"] == digest_of(ASKED)
    assert approval["consequence"].startswith("LangGraph runs send_email: ")

    # Nobody decided yet: no answer, nothing dispatched, nothing ran.
    waiting = resume_in_new_process(
        store_dir, store_url, checkpoints, ran_log, "batched", "t-approve"
    )
    assert waiting == {"resumed": False}
    assert effect_of(store_dir, store_url, asked.effect_id)["attempts"] == []

    person(store_dir, store_url, "approve", asked.approval_id, "--note", "go")
    done = resume_in_new_process(store_dir, store_url, checkpoints, ran_log, "batched", "t-approve")
    assert done["resumed"] is True
    assert done["answered"] == [asked.effect_id]
    assert ran_calls(ran_log) == [{"tool": "send_email", "args": ASKED}]
    (message,) = done["tool_messages"]
    assert message == {
        "tool_call_id": "call_mail",
        "status": "success",
        "content": f"sent to {ASKED['to']}: {ASKED['subject']}",
    }
    assert_ran_exactly(store_dir, store_url, asked, ASKED)

    # The thread is answered: a third process finds nothing to resume and runs nothing.
    again = resume_in_new_process(
        store_dir, store_url, checkpoints, ran_log, "batched", "t-approve"
    )
    assert again == {"resumed": False}
    assert len(ran_calls(ran_log)) == 1


@pytest.mark.parametrize("mode", ["per_call", "batched"])
def test_an_edit_runs_exactly_the_persons_args(
    lg_store: Store, store_dir: Path, store_url: str | None, tmp_path: Path, mode: str
) -> None:
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    script = first_turn(("send_email", ASKED, "call_mail"))
    (asked,) = start(lg_store, checkpoints, ran_log, mode, "t-edit", script)
    assert asked.action.args == ASKED
    person(
        store_dir,
        store_url,
        "approve",
        asked.approval_id,
        "--edited-json",
        json.dumps(EDITED),
        "--note",
        "not tonight",
    )
    edit = {"type": "edit", "edited_action": {"name": "send_email", "args": EDITED}}
    with agent(checkpoints, ran_log, mode, [AIMessage(content="done")]) as graph:
        # The value the middleware documents for an edit, from the person's decision.
        command = boris_lg.resume_command(lg_store, AGENT, TASK, graph, config_of("t-edit"))
        assert isinstance(command, Command)
        assert command.resume == {
            asked.action.interrupt_id: edit if mode == "per_call" else {"decisions": [edit]}
        }
        result = graph.invoke(command, config_of("t-edit"), version="v2")
        assert boris_lg.record_results(lg_store, AGENT, TASK, graph, config_of("t-edit")) == [
            asked.effect_id
        ]
    assert ran_calls(ran_log) == [{"tool": "send_email", "args": EDITED}]
    (message,) = [m for m in result.value["messages"] if m.type == "tool"]
    assert "a human reviewer replaced this tool call" in message.content
    assert_ran_exactly(store_dir, store_url, asked, EDITED)
    effect = effect_of(store_dir, store_url, asked.effect_id)
    assert effect["intent"]["prepared_digest"] == digest_of(EDITED)  # the person's revision


def test_reject_and_send_back_reach_the_model_and_nothing_runs(
    lg_store: Store, store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    # One turn, two gated calls, one batched interrupt: each decided on its own in Boris.
    script = first_turn(("send_email", ASKED, "call_mail"), ("delete_file", DELETE, "call_rm"))
    mail, rm = start(lg_store, checkpoints, ran_log, "batched", "t-no", script)
    assert (mail.action.index, rm.action.index) == (0, 1)
    assert (mail.action.tool_call_id, rm.action.tool_call_id) == ("call_mail", "call_rm")
    assert mail.action.interrupt_id == rm.action.interrupt_id

    person(store_dir, store_url, "reject", rm.approval_id, "--note", "keep the Q3 report")
    # One of two decided: the run does not resume with half its answers.
    assert resume_here(lg_store, checkpoints, ran_log, "batched", "t-no") == {"resumed": False}
    assert effect_of(store_dir, store_url, rm.effect_id)["stage"] == "planned"
    person(store_dir, store_url, "send-back", mail.approval_id, "--note", "say which region first")
    # A resumer answered both and died before the graph took the answer: the next one says
    # the same "no" again (the effects are cancelled: nothing can run).
    with agent(checkpoints, ran_log, "batched", []) as graph:
        first = boris_lg.resume_value(lg_store, AGENT, TASK, graph, config_of("t-no"))
    assert first is not None
    ((_, answer),) = first.items()
    assert [d["type"] for d in answer["decisions"]] == ["reject", "reject"]
    assert_not_run(store_dir, store_url, mail)
    done = resume_in_new_process(store_dir, store_url, checkpoints, ran_log, "batched", "t-no")
    assert done["resumed"] is True
    assert ran_calls(ran_log) == []  # neither tool ran
    by_id = {m["tool_call_id"]: m for m in done["tool_messages"]}
    # What the middleware tells the model for `reject` with a message: the note, as the reason.
    assert by_id["call_rm"]["status"] == "error"
    assert by_id["call_rm"]["content"] == (
        "User rejected the tool call for `delete_file` with reason: keep the Q3 report"
    )
    assert by_id["call_mail"]["status"] == "error"
    assert "changes requested" in by_id["call_mail"]["content"]
    assert "say which region first" in by_id["call_mail"]["content"]
    assert done["answered"] == []
    assert_not_run(store_dir, store_url, mail)
    assert_not_run(store_dir, store_url, rm)


def test_an_unknown_outcome_is_not_resumed_blindly(
    lg_store: Store, store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    script = first_turn(("send_email", ASKED, "call_mail"))
    (asked,) = start(lg_store, checkpoints, ran_log, "per_call", "t-lost", script)
    person(store_dir, store_url, "approve", asked.approval_id)
    # The resumer recorded the attempt and died before the graph ran (or while it ran).
    with agent(checkpoints, ran_log, "per_call", []) as graph:
        value = boris_lg.resume_value(lg_store, AGENT, TASK, graph, config_of("t-lost"))
    assert value == {asked.action.interrupt_id: {"type": "approve"}}
    # A new process finds the interrupt still pending in the graph, and Boris's attempt
    # without a response: it refuses to hand the call over again.
    again = resume_in_new_process(store_dir, store_url, checkpoints, ran_log, "per_call", "t-lost")
    assert "dispatched" in again["refused"]
    assert "reconcile" in again["refused"]
    assert ran_calls(ran_log) == []
    effect = effect_of(store_dir, store_url, asked.effect_id)
    assert effect["stage"] == "dispatched"
    (attempt,) = effect["attempts"]
    assert attempt["response"] is None


def test_boris_checkpoint_keeps_the_graphs_checkpoint_identity(
    lg_store: Store, store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    checkpoints, ran_log = tmp_path / "graph.sqlite", tmp_path / "ran.jsonl"
    script = first_turn(("send_email", ASKED, "call_mail"))
    start(lg_store, checkpoints, ran_log, "batched", "t-ck", script)
    with agent(checkpoints, ran_log, "batched", []) as graph:
        paused = graph.get_state(config_of("t-ck"))
        cid = boris_lg.keep_checkpoint(
            lg_store, AGENT, TASK, graph, config_of("t-ck"), note="paused for rita"
        )
    (kept,) = boris_lg.graph_checkpoints(lg_store, TASK)
    assert kept["checkpoint_id"] == cid
    ids = paused.config["configurable"]
    assert kept["external"] == {
        "framework": "langgraph",
        "thread_id": "t-ck",
        "checkpoint_id": ids["checkpoint_id"],
    }
    # The config Boris kept opens the graph at that very checkpoint, from any process.
    with agent(checkpoints, ran_log, "batched", []) as graph:
        there = graph.get_state(kept["config"])
    assert there.config["configurable"]["checkpoint_id"] == ids["checkpoint_id"]
    assert [i.id for i in there.interrupts] == [i.id for i in paused.interrupts]

    # The CLI shows the checkpoint, and the record with the new field still verifies.
    listed = read_json(store_dir, store_url, "checkpoints", TASK)
    assert cid in json.dumps(listed)
    verified = boris(store_dir, store_url, "verify", TASK, "--json")
    assert verified.returncode == 0, verified.stdout.decode() + verified.stderr.decode()

    # A checkpoint without external ids is the event it always was (no `external` member).
    plain = lg_store.execute(WriteCheckpoint(task_id=TASK, reason="milestone"), AGENT)
    (event,) = [
        e
        for e in lg_store.events(TASK, types=["checkpoint.written"])
        if e["payload"]["checkpoint_id"] == plain
    ]
    assert "external" not in event["payload"]


def test_external_ids_are_few_and_short(lg_store: Store) -> None:
    from pydantic import ValidationError

    for bad in ({}, {f"k{i}": "v" for i in range(17)}, {"thread_id": "x" * 257}, {"": "x"}):
        with pytest.raises(ValidationError):
            WriteCheckpoint(task_id=TASK, reason="milestone", external=bad)
    ids = {"framework": "langgraph", "thread_id": "t", "checkpoint_id": "x" * 256}
    assert WriteCheckpoint(task_id=TASK, reason="milestone", external=ids).external == ids


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
