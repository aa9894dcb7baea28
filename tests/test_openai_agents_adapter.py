"""The OpenAI Agents SDK's human-in-the-loop answered from Boris (store.adapters.openai_agents).

The real `openai-agents` package with its own scripted stand-in model (`agents.testing.
ScriptedModel`: a function call, then a final text; no network). A tool declared with
`needs_approval=True` pauses the run; a person decides from another process with the real
`boris` CLI (approve, approve an edit, reject, send back); the run resumes from the RunState
Boris kept, in a NEW Python process where it matters (this file run as a script: ask, exit,
resume). Asserted: the tool ran exactly with the approved arguments or not at all, the model
read the rejection, and the effect, approval and attempt carry the digest of what ran.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the checkout's store, not an installed one
    sys.path.insert(0, str(ROOT))

from agents import Agent, RunConfig, Runner, RunState, function_tool  # noqa: E402
from agents.exceptions import UserError  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from store.adapters import openai_agents as oa  # noqa: E402
from store.canonical import digest_of  # noqa: E402
from store.errors import CommandRejected  # noqa: E402
from store.store import Store  # noqa: E402

TASK = "oa-task"
ASKED = {"path": "dist/"}
NO_TRACING = RunConfig(tracing_disabled=True)


# --- the agent: one tool that asks, a scripted model -------------------------------------------


def make_agent(ran_log: Path, steps: list[Any]) -> tuple[Agent[Any], ScriptedModel]:
    """The same agent in every process: `delete_path` asks before it runs and writes down
    exactly the arguments it ran with."""

    @function_tool(needs_approval=True)
    def delete_path(path: str) -> str:
        """Delete a file or directory of the project."""
        with ran_log.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"path": path}) + "\n")
        return f"deleted {path}"

    model = ScriptedModel(steps)
    return Agent(name="cleaner", model=model, tools=[delete_path]), model


def asks(*calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """The model's first turn: these function calls (call id, arguments)."""
    return [[function_call("delete_path", args, call_id=call_id) for call_id, args in calls]]


FINAL = [assistant_message("done")]


def ran(ran_log: Path) -> list[dict[str, Any]]:
    if not ran_log.exists():
        return []
    return [json.loads(line) for line in ran_log.read_text(encoding="utf-8").splitlines()]


def outputs_seen(model: ScriptedModel) -> dict[str, str]:
    """What the model read as each call's output on its last turn."""
    assert model.last_call is not None
    return {
        str(item["call_id"]): str(item["output"])
        for item in model.last_call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


# --- the store, the person: the real `boris` -----------------------------------------------------


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _store_args(store_dir: Path, store_url: str | None) -> list[str]:
    return ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])


def boris(store_dir: Path, store_url: str | None, *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *_store_args(store_dir, store_url)],
        env=_env(),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )


def read_json(store_dir: Path, store_url: str | None, *argv: str) -> Any:
    done = boris(store_dir, store_url, *argv, "--json")
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)["result"]


def make_task(store_dir: Path, store_url: str | None) -> None:
    done = boris(
        store_dir,
        store_url,
        "create-task",
        "--id",
        TASK,
        "--title",
        "Clean the build",
        "--owner",
        "rita",
        "--objective",
        "dist/ holds no stale files",
        "--destination",
        "openai-agents://tools/",
        "--actor",
        "person:rita",
    )
    assert done.returncode == 0, done.stderr.decode()


def person(store_dir: Path, store_url: str | None, verb: str, approval_id: str, *rest: str) -> None:
    """A person decides, from a process of their own."""
    done = boris(store_dir, store_url, verb, TASK, approval_id, *rest, "--actor", "person:rita")
    assert done.returncode == 0, done.stderr.decode()


def pending(store_dir: Path, store_url: str | None) -> list[dict[str, Any]]:
    rows = read_json(store_dir, store_url, "approvals", TASK)
    return [r for r in rows if r["state"] == "pending"]


def effect_of(store_dir: Path, store_url: str | None, call_id: str) -> dict[str, Any]:
    effects = read_json(store_dir, store_url, "effects", TASK)
    found = [e for e in effects if e["idempotency_key"] == f"openai-agents:{call_id}"]
    assert len(found) == 1, effects
    return dict(found[0])


def approval_of(store_dir: Path, store_url: str | None, effect_id: str) -> dict[str, Any]:
    rows = [r for r in read_json(store_dir, store_url, "approvals", TASK)]
    found = [r for r in rows if r["effect_id"] == effect_id]
    assert len(found) == 1, rows
    return dict(found[0])


# --- a process of its own: ask, or resume --------------------------------------------------------


def stage(argv: list[str]) -> None:
    """`python tests/test_openai_agents_adapter.py ask|resume STORE URL|- WORKDIR`: one step of
    the run in a fresh interpreter; what it came to is printed as JSON."""
    step, store_dir, url, work = argv
    work_dir = Path(work)
    steps = asks(("call_1", ASKED)) if step == "ask" else [FINAL]
    agent, model = make_agent(work_dir / "ran.jsonl", steps)
    store = Store.open(store_dir, url=None if url == "-" else url)
    try:
        adapter = oa.BorisApprovals(store, TASK)
        if step == "ask":
            outcome = asyncio.run(adapter.run(agent, "clean up", run_config=NO_TRACING))
        else:
            outcome = asyncio.run(adapter.resume(agent, run_config=NO_TRACING))
    finally:
        store.close()
    print(
        json.dumps(
            {
                "asked": [a.approval_id for a in outcome.asked],
                "decided": [d.state for d in outcome.decided],
                "final_output": None if outcome.result is None else outcome.result.final_output,
                "seen": outputs_seen(model) if model.last_call is not None else {},
                "state_version": outcome.state_version,
            }
        )
    )


def in_a_new_process(
    step: str, store_dir: Path, store_url: str | None, work: Path
) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, step, str(store_dir), store_url or "-", str(work)],
        env=_env(),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr.decode()
    return dict(json.loads(done.stdout.decode().strip().splitlines()[-1]))


# --- the tests ----------------------------------------------------------------------------------


def test_approved_in_boris_the_run_resumes_in_a_new_process_with_exactly_that_call(
    store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    make_task(store_dir, store_url)
    ran_log = tmp_path / "ran.jsonl"

    # The agent asks; its process ends with the run paused and kept in Boris.
    asked = in_a_new_process("ask", store_dir, store_url, tmp_path)
    assert asked["final_output"] is None and len(asked["asked"]) == 1
    (request,) = pending(store_dir, store_url)
    assert request["id"] == asked["asked"][0]
    assert request["payload"] == ASKED
    assert request["payload_digest"] == digest_of(ASKED)
    assert request["consequence"] == 'The agent runs delete_path: {"path":"dist/"}'
    assert ran(ran_log) == []  # nothing ran before a person decided
    artifacts = read_json(store_dir, store_url, "show", TASK)["artifacts"]
    (state,) = [a for a in artifacts if a["artifact_id"] == oa.STATE_ARTIFACT]
    assert state["current"]["media_type"] == "application/json"
    assert state["current"]["note"] == "paused: delete_path (call_1) wait for a person"
    assert asked["state_version"] == state["current_version"] == 1

    # A person approves from another process; a new process resumes the stored run.
    person(store_dir, store_url, "approve", request["id"], "--note", "fine")
    resumed = in_a_new_process("resume", store_dir, store_url, tmp_path)
    assert resumed["final_output"] == "done"
    assert resumed["decided"] == ["approved"]
    assert resumed["seen"] == {"call_1": "deleted dist/"}
    assert ran(ran_log) == [ASKED]  # exactly once, exactly the approved arguments
    assert resumed["state_version"] == 2  # the run as it ended, kept beside the paused one

    digest = digest_of(ASKED)
    effect = effect_of(store_dir, store_url, "call_1")
    assert effect["target"] == "openai-agents://tools/delete_path"
    assert effect["intent"]["prepared"] == ASKED
    assert effect["intent"]["prepared_digest"] == digest
    approval = approval_of(store_dir, store_url, effect["id"])
    assert approval["state"] == "consumed"
    assert approval["payload_digest"] == digest
    (attempt,) = effect["attempts"]
    assert attempt["approval_id"] == approval["id"]
    assert attempt["inputs"]["prepared_digest"] == digest
    assert attempt["executor"] == "openai-agents:delete_path"
    assert attempt["response"]["output"] == "deleted dist/"
    # The SDK's word is not evidence: unknown until a person reconciles it.
    assert effect["outcome"] == "unknown"

    # The run went on to its end: nothing is left to resume, and nothing runs twice.
    again = subprocess.run(
        [sys.executable, __file__, "resume", str(store_dir), store_url or "-", str(tmp_path)],
        env=_env(),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=180,
    )
    assert again.returncode != 0
    assert b"NothingToResume" in again.stderr
    assert ran(ran_log) == [ASKED]


def test_rejected_and_sent_back_the_model_reads_the_persons_note_and_nothing_runs(
    store_dir: Path, store_url: str | None, open_store: Callable[..., Store], tmp_path: Path
) -> None:
    make_task(store_dir, store_url)
    ran_log = tmp_path / "ran.jsonl"
    other = {"path": "node_modules/"}
    agent, _ = make_agent(ran_log, asks(("call_r", ASKED), ("call_b", other)))
    store = open_store()
    try:
        adapter = oa.BorisApprovals(store, TASK)
        first = asyncio.run(adapter.run(agent, "clean up", run_config=NO_TRACING))
        assert first.paused and [a.call.call_id for a in first.asked] == ["call_r", "call_b"]
        by_call = {a.call.call_id: a.approval_id for a in first.asked}
        # A new run while this one waits would orphan its calls: refused.
        with pytest.raises(oa.PausedRunWaiting, match="call_r, call_b"):
            asyncio.run(adapter.run(agent, "clean up", run_config=NO_TRACING))
        waiting = oa.waiting_calls(store, TASK)
        assert {w["call_id"]: w["arguments"] for w in waiting} == {
            "call_r": ASKED,
            "call_b": other,
        }

        # Nobody decided yet: nothing runs, nothing changes.
        later, model = make_agent(ran_log, [FINAL])
        still = asyncio.run(adapter.resume(later, run_config=NO_TRACING))
        assert still.result is None and still.paused
        assert [w.call.call_id for w in still.waiting] == ["call_r", "call_b"]
        # Only one of two decided: it goes on (the SDK's partial resolution), and the run
        # pauses again on the other, the same request in Boris; the model is not asked.
        person(store_dir, store_url, "reject", by_call["call_r"], "--note", "not in this repo")
        partial = asyncio.run(adapter.resume(later, run_config=NO_TRACING))
        assert partial.result is not None and partial.paused
        assert [(a.call.call_id, a.approval_id) for a in partial.asked] == [
            ("call_b", by_call["call_b"])
        ]
        assert [d.state for d in partial.decided] == ["rejected"]
        assert model.calls == ()

        person(
            store_dir,
            store_url,
            "send-back",
            by_call["call_b"],
            "--note",
            "keep node_modules, it is vendored",
        )
        done = asyncio.run(adapter.resume(later, run_config=NO_TRACING))
    finally:
        store.close()
    assert done.result is not None and done.result.final_output == "done"
    assert [d.state for d in done.decided] == ["sent_back"]
    seen = outputs_seen(model)
    assert seen == {
        "call_r": "rita rejected this delete_path call in Boris: not in this repo. It was not run.",
        "call_b": "rita sent this delete_path call back in Boris (changes requested): "
        "keep node_modules, it is vendored. It was not run.",
    }
    assert ran(ran_log) == []
    for call_id in ("call_r", "call_b"):
        effect = effect_of(store_dir, store_url, call_id)
        assert effect["stage"] == "cancelled"
        assert effect["attempts"] == []


def test_an_edit_runs_with_the_persons_arguments_in_a_new_process(
    store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    make_task(store_dir, store_url)
    ran_log = tmp_path / "ran.jsonl"
    edited = {"path": "dist/js"}
    asked = in_a_new_process("ask", store_dir, store_url, tmp_path)
    person(
        store_dir,
        store_url,
        "approve",
        asked["asked"][0],
        "--edited-json",
        json.dumps(edited),
        "--note",
        "only the scripts",
    )
    # The call the model made runs once, with exactly the person's arguments (not rejected
    # and asked again); the model reads that a person changed them, then the tool's output.
    resumed = in_a_new_process("resume", store_dir, store_url, tmp_path)
    assert resumed["decided"] == ["edited"]
    assert resumed["final_output"] == "done"
    assert ran(ran_log) == [edited]
    assert resumed["seen"]["call_1"] == (
        "A person in Boris approved this delete_path call with other arguments, and it ran "
        'with them: {"path":"dist/js"}\n\nTool output:\ndeleted dist/js'
    )
    digest = digest_of(edited)
    effect = effect_of(store_dir, store_url, "call_1")
    assert effect["stage"] == "dispatched"
    assert effect["intent"]["prepared_digest"] == digest  # the intent revised by the edit
    approval = approval_of(store_dir, store_url, effect["id"])
    assert (approval["state"], approval["payload_digest"]) == ("consumed", digest)
    (attempt,) = effect["attempts"]
    assert attempt["approval_id"] == approval["id"]
    assert attempt["inputs"]["prepared_digest"] == digest
    assert attempt["response"]["output"].endswith("deleted dist/js")


def test_a_call_approved_outside_boris_is_refused_and_does_not_run(
    store_dir: Path, store_url: str | None, open_store: Callable[..., Store], tmp_path: Path
) -> None:
    make_task(store_dir, store_url)
    ran_log = tmp_path / "ran.jsonl"
    agent, _ = make_agent(ran_log, [*asks(("call_x", ASKED)), FINAL])
    store = open_store()
    try:
        adapter = oa.BorisApprovals(store, TASK)
        first = asyncio.run(adapter.run(agent, "clean up", run_config=NO_TRACING))
        assert first.result is not None
        # The application approves in the SDK itself, not in Boris, and runs on with Boris's
        # hooks: the attempt is refused (no person approved that digest), so the tool does not run.
        state: RunState[Any, Any] = first.result.to_state()
        state.approve(state.get_interruptions()[0])
        with pytest.raises(UserError, match="no usable approval") as refused:
            asyncio.run(Runner.run(agent, state, hooks=adapter.run_hooks(), run_config=NO_TRACING))
    finally:
        store.close()
    assert isinstance(refused.value.__cause__, CommandRejected)
    assert ran(ran_log) == []
    effect = effect_of(store_dir, store_url, "call_x")
    assert effect["attempts"] == []
    assert approval_of(store_dir, store_url, effect["id"])["state"] == "pending"


def test_a_call_its_own_policy_lets_through_is_recorded_without_a_person(
    store_dir: Path, store_url: str | None, open_store: Callable[..., Store], tmp_path: Path
) -> None:
    make_task(store_dir, store_url)
    listed: list[str] = []

    async def only_outside_tmp(_ctx: Any, params: dict[str, Any], _call_id: str) -> bool:
        return not str(params.get("path", "")).startswith("tmp/")

    @function_tool(needs_approval=only_outside_tmp)
    def delete_path(path: str) -> str:
        """Delete a file or directory of the project."""
        listed.append(path)
        return f"deleted {path}"

    model = ScriptedModel([[function_call("delete_path", {"path": "tmp/x"}, call_id="c")], FINAL])
    agent = Agent(name="cleaner", model=model, tools=[delete_path])
    store = open_store()
    try:
        outcome = asyncio.run(
            oa.BorisApprovals(store, TASK).run(agent, "clean up", run_config=NO_TRACING)
        )
    finally:
        store.close()
    assert not outcome.paused and listed == ["tmp/x"]
    effect = effect_of(store_dir, store_url, "c")
    assert effect["intent"]["prepared"] == {"path": "tmp/x"}
    assert pending(store_dir, store_url) == []
    (attempt,) = effect["attempts"]
    assert attempt["approval_id"] is None
    assert attempt["inputs"]["prepared_digest"] == digest_of({"path": "tmp/x"})
    assert attempt["response"]["output"] == "deleted tmp/x"


def test_an_approval_nobody_decided_in_time_reaches_the_model_as_a_rejection(
    store_dir: Path, store_url: str | None, open_store: Callable[..., Store], tmp_path: Path
) -> None:
    make_task(store_dir, store_url)
    ran_log = tmp_path / "ran.jsonl"
    agent, model = make_agent(ran_log, [*asks(("call_t", ASKED)), FINAL])
    store = open_store()
    try:
        adapter = oa.BorisApprovals(store, TASK, expires_in_seconds=1)
        asyncio.run(adapter.run(agent, "clean up", run_config=NO_TRACING))
        time.sleep(1.2)
        done = asyncio.run(adapter.resume(agent, run_config=NO_TRACING))
    finally:
        store.close()
    assert [d.state for d in done.decided] == ["expired"]
    assert outputs_seen(model)["call_t"] == (
        "nobody decided this delete_path call in Boris before its approval expired. It was not run."
    )
    assert ran(ran_log) == []
    assert effect_of(store_dir, store_url, "call_t")["stage"] == "cancelled"


def test_the_store_imports_without_the_sdk() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['agents'] = None\n"
            "import store, store.cli.app, store.adapters.openai_agents as oa\n"
            "try:\n"
            "    oa._sdk()\n"
            "except oa.CommandRejected as e:\n"
            "    print(e)\n",
        ],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"pip install '.[openai-agents]'" in done.stdout


if __name__ == "__main__":
    stage(sys.argv[1:])
