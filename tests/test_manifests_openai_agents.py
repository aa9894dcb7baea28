"""The OpenAI Agents SDK adapter records what the model saw (issue 35 part M).

The real `openai-agents` package with its scripted stand-in model (`agents.testing.
ScriptedModel`, no network), as tests/test_openai_agents_adapter.py drives it: each model
request becomes a context manifest (the system prompt, every input item and each tool
definition the model was shown, by digest), linked to the effect of the call it answered
with; the effect pins that tool definition's digest, so a configuration recorded later with a
changed definition flags it in the resume brief. Both engines (the `store` fixture).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from test_openai_agents_adapter import ASKED, NO_TRACING, asks, make_agent

from store import Actor, Store
from store import commands as c
from store.adapters import openai_agents as oa
from store.commands import manifests as m
from store.reads import manifests as reads
from store.services.resume import resume_brief

TASK = "oa-task"
RITA = Actor(kind="person", id="rita")


def test_each_model_request_is_a_manifest_linked_to_the_call_it_made(
    store: Store, tmp_path: Path
) -> None:
    store.execute(
        c.CreateTask(
            task_id=TASK, title="Clean the build", owner="rita", objective="dist/ is clean",
            destinations=["openai-agents://tools/"],
        ),
        RITA,
    )  # fmt: skip
    agent, _model = make_agent(tmp_path / "ran.jsonl", asks(("call_1", ASKED)))
    agent.instructions = "You clean build directories."
    adapter = oa.BorisApprovals(store, TASK)
    outcome = asyncio.run(adapter.run(agent, "clean up", run_config=NO_TRACING))
    (asked,) = outcome.asked

    (manifest,) = reads.read_manifests(store, TASK, effect=asked.effect_id)
    assert manifest["model"]["provider"] == "ScriptedModel"
    assert manifest["recorded_by"] == f"{oa.DEFAULT_ACTOR.kind}:{oa.DEFAULT_ACTOR.id}"
    kinds = [(i["kind"], i["ref"]) for i in manifest["included"]]
    assert ("instruction", "system_prompt") in kinds
    assert ("tool_definition", "delete_path") in kinds
    assert any(k == "message" for k, _ in kinds)  # the user's "clean up"
    assert all(i["digest"].startswith("sha256:") for i in manifest["included"])
    assert manifest["omitted"] == []  # the SDK does not say what it left out

    # The effect is pinned to the definition the model was shown.
    (tool_item,) = [i for i in manifest["included"] if i["kind"] == "tool_definition"]
    (effect,) = [e for e in store.task(TASK)["effects"] if e["effect_id"] == asked.effect_id]
    assert (effect["intent"]["tool"], effect["intent"]["tool_digest"]) == (
        "delete_path",
        tool_item["digest"],
    )

    # A later configuration whose delete_path is another definition flags the intent.
    store.execute(
        c.WriteCheckpoint(task_id=TASK, reason="milestone", checkpoint_id="c1", note="new model"),
        RITA,
    )
    store.execute(
        m.RecordConfiguration(
            task_id=TASK, checkpoint_id="c1", provider="openai", model="gpt-b",
            tools=[m.ToolIn(name="delete_path", digest="sha256:" + "ab" * 32)],
        ),
        RITA,
    )  # fmt: skip
    flagged = [
        b for b in resume_brief(store, TASK)["blockers"] if b["kind"] == "tool_definition_changed"
    ]
    assert [b["effect_id"] for b in flagged] == [asked.effect_id]
