"""The MCP tools without the protocol: which commands are tools, their schemas, and refusals
as typed objects (the same server object `boris mcp` runs, called in process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from store import Actor, Store, rules
from store import commands as c
from store.errors import CommandRejected
from store.mcp import tools
from store.mcp.server import BorisServer

AGENT = Actor(kind="agent", id="bot")


def _call(server: BorisServer, name: str, **arguments: Any) -> dict[str, Any]:
    return anyio.run(server.call, name, arguments)


def test_every_command_an_agent_may_run_is_a_tool_with_its_models_schema() -> None:
    specs = {s.name: s for s in tools.tool_specs(60)}
    for cls in c.command_classes():
        ctype = str(cls.model_fields["type"].default)
        agent_may = rules.ActorKind.AGENT in rules.authority_of(ctype).kinds
        agent_may = agent_may and ctype not in tools.SERVER_COMMANDS  # boris mcp's own
        assert (ctype in specs) is agent_may, ctype
        if not agent_may:
            continue
        schema = specs[ctype].input_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        model = cls.model_json_schema()
        assert "type" not in schema["properties"]
        assert set(schema["properties"]) == set(model["properties"]) - {"type"}
        assert set(schema.get("required", [])) == set(model.get("required", [])) - {"type"}
        assert specs[ctype].description
    assert "decide_approval" not in specs
    # The cases that are a person's are said in the tool's description, from the rules.
    assert "status is waived" in specs["judge_criterion"].description


def test_a_tool_call_validates_by_the_model_and_runs_through_the_command_layer(
    store: Store, ws: Path
) -> None:
    server = BorisServer(store, AGENT)
    created = _call(
        server, "create_task", title="T", owner="o", objective="x", scope_paths=[str(ws)]
    )
    assert created["ok"] is True
    task = created["result"]
    outside = _call(
        server,
        "plan_effect",
        task_id=task,
        target="/etc/passwd",
        consequence="overwrite it",
        content={"text": "x"},
    )
    assert outside["ok"] is False
    assert outside["error"]["code"] == "scope_violation"
    assert outside["error"]["rule"] == "within_scope"
    assert outside["error"]["category"] == "refused"
    assert store.task(task)["effects"] == []
    extra = _call(server, "add_criterion", task_id=task, text="c", colour="red")
    assert extra["error"]["code"] == "invalid_input"
    assert extra["error"]["details"]["field"] == "colour"
    unknown = _call(server, "decide_approval", task_id=task, approval_id="a", decision="approved")
    assert unknown["error"]["code"] == "usage"
    planned = _call(
        server,
        "plan_effect",
        task_id=task,
        target=str(ws / "out.txt"),
        consequence="write out.txt",
        content={"text": "hello"},
    )
    revised = _call(
        server,
        "revise_effect",
        task_id=task,
        effect_id=planned["result"],
        reason="typo",
        content={"text": "hello!"},
    )
    assert revised["prepared_digest"] == revised["result"] != planned["prepared_digest"]
    # The actor of every event is the server's agent.
    assert {e["actor"]["id"] for e in store.events(task)} == {"bot"}


@pytest.mark.parametrize("kind", ["person", "system"])
def test_the_server_acts_only_for_an_agent(store: Store, kind: str) -> None:
    with pytest.raises(CommandRejected, match="acts for an agent"):
        BorisServer(store, Actor(kind=kind, id="x"))  # type: ignore[arg-type]


def test_on_a_signed_store_the_servers_writes_are_signed_with_the_agents_key(
    store: Store, ws: Path
) -> None:
    from store.signing.check import task_signatures
    from store.signing.keys import SigningKey
    from store.signing.trust import add_key, require

    root, bot = SigningKey.generate(), SigningKey.generate()
    require(store, root, Actor(kind="person", id="rita"))
    add_key(store, root, bot.public_raw, AGENT)
    server = BorisServer(store, AGENT)
    refused = _call(server, "create_task", title="T", owner="o", objective="x")
    assert refused["ok"] is False and refused["error"]["code"] == "signature_required"
    store.signer = bot  # what `boris mcp` does with --key / BORIS_KEY
    created = _call(server, "create_task", title="T", owner="o", objective="x")
    with store.read() as conn:
        sigs = task_signatures(conn, created["result"])
    assert [s["key_id"] for s in sigs["signatures"].values()] == [bot.key_id]
