"""What the model saw (issue 35 part M): context manifests, configuration transitions, pinned
tool definitions. Every test runs on SQLite and PostgreSQL (the `store` fixture).

A manifest is recorded through the real `boris record-manifest` and the real MCP client and
read back beside the effect it led to; a configuration transition reads "model changed from X
to Y at checkpoint C"; an intent planned under a tool definition that a later configuration
changed is flagged by the resume brief and its dispatch refused until it is migrated or
re-planned; an effect planned without a tool hashes as before; a newer manifest format, and a
manifest read by a program that does not know the type, are refused in one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import sqlalchemy as sa
from cli_args import store_args
from mcp import ClientSession, StdioServerParameters, stdio_client
from pydantic import ValidationError

from store import Actor, Store
from store import commands as c
from store import events as ev
from store import schema as t
from store.canonical import canonical_json
from store.commands import approvals as ap
from store.commands import manifests as m
from store.errors import (
    AuthorityRefused,
    CommandRejected,
    ToolDefinitionChanged,
    UnknownEventFormat,
)
from store.limits import MAX_MANIFEST_ITEMS
from store.reads import manifests as reads
from store.services.resume import brief_markdown, resume_brief
from store.services.verify import verify

ROOT = Path(__file__).resolve().parent.parent
AGENT = Actor(kind="agent", id="drafter-7")
RITA = Actor(kind="person", id="rita")
TID = "report"


def _d(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


WRITE_V1, WRITE_V2, SEARCH = _d("write_file v1"), _d("write_file v2"), _d("search v1")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _boris(store: Store, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real `boris`, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *store_args(store)],
        env=_env(),
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tid(store: Store, ws: Path) -> str:
    store.execute(
        c.CreateTask(
            task_id=TID, title="Write the report", owner="rita", objective="A report",
            scope_paths=[str(ws)],
        ),
        AGENT,
    )  # fmt: skip
    store.execute(c.WriteCheckpoint(task_id=TID, reason="initial", checkpoint_id="c1"), AGENT)
    return TID


def _configure(store: Store, checkpoint: str, model: str, write_digest: str) -> Any:
    return store.execute(
        m.RecordConfiguration(
            task_id=TID, checkpoint_id=checkpoint, provider="openai", model=model,
            tools=[m.ToolIn(name="write_file", digest=write_digest),
                   m.ToolIn(name="search", digest=SEARCH)],
        ),
        AGENT,
    )  # fmt: skip


def _plan(store: Store, ws: Path, eid: str, **extra: Any) -> str:
    return str(
        store.execute(
            c.PlanEffect(
                task_id=TID, effect_id=eid, target=str(ws / f"{eid}.md"),
                consequence=f"writes {eid}.md", content=c.Content(text=f"# {eid}\n"),
                **{"tool": "write_file", **extra},
            ),
            AGENT,
        )
    )  # fmt: skip


MANIFEST: dict[str, Any] = {
    "provider": "openai",
    "model": "gpt-a",
    "parameters": {"temperature": 0, "max_tokens": 2000},
    "purpose": "choose how to write the report",
    "included": [
        {"kind": "instruction", "ref": "objective@1", "digest": _d("obj"), "size": 9, "tokens": 3},
        {"kind": "tool_result", "ref": "search#4", "digest": _d("res"), "size": 812},
    ],
    "omitted": [
        {"kind": "file", "ref": "build.log", "digest": _d("log"), "size": 99_000,
         "reason": "budget", "note": "<b>too long</b> for the window"},
        {"kind": "message", "ref": "msg-2", "digest": _d("old"), "size": 40, "reason": "stale"},
    ],
}  # fmt: skip


# --- recorded via the CLI and MCP, read beside what it led to --------------------------------


def test_a_manifest_recorded_by_the_cli_is_read_beside_its_effect(
    store: Store, tid: str, ws: Path, tmp_path: Path
) -> None:
    _plan(store, ws, "e1")
    source = tmp_path / "manifest.json"
    source.write_text(json.dumps({**MANIFEST, "led_to": {"kind": "effect", "id": "e1"}}))
    run = _boris(store, "--actor", "agent:drafter-7", "record-manifest", tid, str(source))
    assert run.returncode == 0, run.stderr
    mid = run.stdout.strip()
    # From stdin, linked later to the checkpoint it led to.
    run = _boris(store, "--actor", "agent:drafter-7", "record-manifest", tid, "-",
                 stdin=json.dumps({**MANIFEST, "model": "gpt-b", "manifest_id": "m2"}))  # fmt: skip
    assert (run.returncode, run.stdout.strip()) == (0, "m2"), run.stderr
    run = _boris(
        store, "--actor", "agent:drafter-7", "link-manifest", tid, "m2", "--checkpoint", "c1"
    )
    assert run.returncode == 0, run.stderr

    run = _boris(store, "--json", "manifests", tid, "--effect", "e1")
    assert run.returncode == 0, run.stderr
    (got,) = json.loads(run.stdout)["result"]
    assert got["manifest_id"] == mid and got["led_to"] == {"kind": "effect", "id": "e1"}
    assert got["model"] == {
        "provider": "openai",
        "model": "gpt-a",
        "parameters_digest": _d(canonical_json({"temperature": 0, "max_tokens": 2000})),
    }
    assert [i["ref"] for i in got["included"]] == ["objective@1", "search#4"]
    assert [(i["ref"], i["reason"]) for i in got["omitted"]] == [
        ("build.log", "budget"), ("msg-2", "stale"),
    ]  # fmt: skip
    assert got["recorded_by"] == "agent:drafter-7"
    human = _boris(store, "manifests", tid, "--checkpoint", "c1")
    assert "m2" in human.stdout and "-> checkpoint c1" in human.stdout
    assert "build.log" in human.stdout and "left out (budget)" in human.stdout
    # The parameters themselves are not in the record: only their digest.
    assert "max_tokens" not in json.dumps([e.to_json() for e in store.events(tid)])
    assert verify(store).ok


def test_an_agent_records_and_lists_a_manifest_over_mcp(store: Store, tid: str, ws: Path) -> None:
    _plan(store, ws, "e1")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", *store_args(store), "--actor", "agent:drafter-7"],
        env=_env(),
        cwd=str(ROOT),
    )

    async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
        return (await session.call_tool(tool, arguments)).structured_content

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {x.name for x in (await session.list_tools()).tools}
            assert {"record_manifest", "link_manifest", "list_manifests"} <= names
            recorded = await call(session, "record_manifest", task_id=tid, manifest_id="m1",
                                  **MANIFEST)  # fmt: skip
            assert recorded == {"ok": True, "result": "m1"}
            linked = await call(session, "link_manifest", task_id=tid, manifest_id="m1",
                                led_to={"kind": "effect", "id": "e1"})  # fmt: skip
            assert linked["ok"] is True
            listed = await call(session, "list_manifests", task_id=tid, effect_id="e1")
            assert [x["manifest_id"] for x in listed["result"]] == ["m1"]
            bad = await call(
                session,
                "record_manifest",
                task_id=tid,
                **{**MANIFEST, "omitted": [{**MANIFEST["omitted"][0], "reason": "felt like it"}]},
            )
            assert bad["ok"] is False

    anyio.run(scenario)
    (got,) = reads.read_manifests(store, tid, effect="e1")
    assert got["manifest_id"] == "m1" and got["recorded_by"] == "agent:drafter-7"


def test_a_manifest_is_bounded_and_names_only_what_the_task_has(store: Store, tid: str) -> None:
    count = len(store.events(tid))
    item = MANIFEST["included"][0]
    with pytest.raises(ValidationError, match=f"at most {MAX_MANIFEST_ITEMS} items"):
        m.RecordManifest(task_id=tid, provider="p", model="x",
                         included=[item] * (MAX_MANIFEST_ITEMS + 1))  # fmt: skip
    with pytest.raises(ValidationError, match="digest"):
        m.RecordManifest(task_id=tid, provider="p", model="x",
                         included=[{**item, "digest": "not a digest"}])  # fmt: skip
    with pytest.raises(CommandRejected, match="has no effect 'nope'"):
        store.execute(
            m.RecordManifest(task_id=tid, provider="p", model="x",
                             led_to=m.LedToIn(kind="effect", id="nope")),
            AGENT,
        )  # fmt: skip
    store.execute(m.RecordManifest(task_id=tid, provider="p", model="x", manifest_id="m1"), AGENT)
    with pytest.raises(CommandRejected, match="already has a context manifest 'm1'"):
        store.execute(
            m.RecordManifest(task_id=tid, provider="p", model="y", manifest_id="m1"), AGENT
        )
    with pytest.raises(CommandRejected, match="no context manifest 'm9'"):
        store.execute(
            m.LinkManifest(task_id=tid, manifest_id="m9",
                           led_to=m.LedToIn(kind="checkpoint", id="c1")),
            AGENT,
        )  # fmt: skip
    assert len(store.events(tid)) == count + 1


# --- configuration transitions and pinned tools ----------------------------------------------


def test_a_model_change_at_a_checkpoint_reads_as_a_transition(store: Store, tid: str) -> None:
    assert _configure(store, "c1", "gpt-a", WRITE_V1) == "changed"
    assert _configure(store, "c1", "gpt-a", WRITE_V1) == "unchanged"  # nothing written
    store.execute(c.WriteCheckpoint(task_id=tid, reason="milestone", checkpoint_id="c2"), AGENT)
    assert _configure(store, "c2", "gpt-b", WRITE_V2) == "changed"
    read = reads.read_configuration(store, tid)
    assert [x["checkpoint_id"] for x in read["transitions"]] == ["c1", "c2"]
    changes = read["transitions"][1]["changes"]
    assert "model changed from gpt-a to gpt-b at checkpoint c2" in changes
    assert (
        f"tool write_file definition changed from {WRITE_V1} to {WRITE_V2} at checkpoint c2"
        in changes
    )
    assert not any("search" in x for x in changes)
    run = _boris(store, "configuration", tid)
    assert "model changed from gpt-a to gpt-b at checkpoint c2" in run.stdout, run.stderr
    with pytest.raises(CommandRejected, match="has no checkpoint 'c9'"):
        _configure(store, "c9", "gpt-c", WRITE_V2)


def test_an_intent_whose_tool_changed_is_flagged_and_not_dispatched(
    store: Store, tid: str, ws: Path
) -> None:
    _configure(store, "c1", "gpt-a", WRITE_V1)
    _plan(store, ws, "e1", requires_approval=True, policy="writes need a person")
    _plan(store, ws, "e2")  # re-planned later
    _plan(store, ws, "e3")  # under no drift: still dispatchable
    (planned,) = [e for e in store.events(tid) if e["payload"].get("effect_id") == "e1"][:1]
    assert (planned["payload"]["tool"], planned["payload"]["tool_digest"]) == (
        "write_file",
        WRITE_V1,
    )
    approval = store.execute(
        ap.RequestApproval(task_id=tid, effect_id="e1", policy="writes need a person"), AGENT
    )
    store.execute(ap.DecideApproval(task_id=tid, approval_id=approval, decision="approved"), RITA)
    brief = resume_brief(store, tid)
    assert not [b for b in brief["blockers"] if b["kind"] == "tool_definition_changed"]

    store.execute(c.WriteCheckpoint(task_id=tid, reason="milestone", checkpoint_id="c2"), AGENT)
    _configure(store, "c2", "gpt-a", WRITE_V2)
    words = "planned under an older definition of write_file: migrate or re-plan before dispatch"
    brief = resume_brief(store, tid)
    flagged = {
        b["effect_id"]: b for b in brief["blockers"] if b["kind"] == "tool_definition_changed"
    }
    assert set(flagged) == {"e1", "e2", "e3"}
    assert flagged["e1"]["message"] == f"effect e1: {words}"
    assert (flagged["e1"]["pinned_digest"], flagged["e1"]["current_digest"]) == (WRITE_V1, WRITE_V2)
    assert f"dispatch effect e1: {words}" in brief_markdown(brief)
    assert not [a for a in brief["next_actions"] if a["command"]["type"] == "dispatch_effect"]
    assert {e["id"]: e.get("tool_drift", {}).get("drift") for e in brief["effects"]}["e2"] == words

    count = len(store.events(tid))
    with pytest.raises(ToolDefinitionChanged, match=words) as refused:
        store.execute(c.DispatchEffect(task_id=tid, effect_id="e1", executor="writer"), AGENT)
    assert refused.value.rule == "tool_definition_changed"
    assert len(store.events(tid)) == count

    # Migrated after review: re-pinned, its approval (of the older reading) stale.
    assert (
        store.execute(m.MigrateEffectTool(task_id=tid, effect_id="e1", reason="same args"), RITA)
        == WRITE_V2
    )
    (a,) = [x for x in store.task(tid)["approvals"] if x["approval_id"] == approval]
    assert a["state"] == "stale"
    # Re-planned: the old intent cancelled, a new one pinned to the current definition.
    store.execute(c.CancelEffect(task_id=tid, effect_id="e2", reason="tool changed"), AGENT)
    _plan(store, ws, "e2b")
    # Re-pinning is a person's judgement: an agent's is refused (issue 40).
    with pytest.raises(AuthorityRefused, match="only a person re-pins") as refused_repin:
        store.execute(m.MigrateEffectTool(task_id=tid, effect_id="e3", reason="same args"), AGENT)
    assert refused_repin.value.rule == "tool_repin_is_a_persons"
    store.execute(m.MigrateEffectTool(task_id=tid, effect_id="e3", reason="same args"), RITA)
    assert reads.read_configuration(store, tid)["drift"] == []
    assert store.execute(c.DispatchEffect(task_id=tid, effect_id="e2b", executor="w"), AGENT) == 1
    with pytest.raises(CommandRejected, match="nothing to migrate"):
        store.execute(m.MigrateEffectTool(task_id=tid, effect_id="e3", reason="again"), RITA)
    assert verify(store).ok


def test_the_cli_pins_and_refuses_like_the_api(store: Store, tid: str, ws: Path) -> None:
    agent = ("--actor", "agent:drafter-7")
    run = _boris(store, *agent, "record-configuration", tid, "c1", "--provider", "openai",
                 "--model", "gpt-a", "--tool", f"write_file={WRITE_V1}")  # fmt: skip
    assert (run.returncode, run.stdout.strip()) == (0, "changed"), run.stderr
    run = _boris(store, *agent, "plan-effect", tid, "--target", str(ws / "a.md"),
                 "--consequence", "writes a.md", "--text", "# a", "--tool", "write_file",
                 "--id", "ea")  # fmt: skip
    assert run.returncode == 0, run.stderr
    store.execute(c.WriteCheckpoint(task_id=tid, reason="milestone", checkpoint_id="c2"), AGENT)
    run = _boris(store, *agent, "record-configuration", tid, "c2", "--provider", "openai",
                 "--model", "gpt-a", "--tool", f"write_file={WRITE_V2}")  # fmt: skip
    assert run.returncode == 0, run.stderr
    run = _boris(store, *agent, "--json", "dispatch", tid, "ea", "--executor", "w")
    assert run.returncode != 0
    assert json.loads(run.stdout)["error"]["code"] == "tool_definition_changed"
    assert len(run.stderr.strip().splitlines()) == 1
    assert (
        "effect ea: planned under an older definition" in _boris(store, "configuration", tid).stdout
    )
    run = _boris(store, *agent, "--json", "migrate-effect-tool", tid, "ea", "--reason", "same")
    assert run.returncode == 1
    assert json.loads(run.stdout)["error"]["rule"] == "tool_repin_is_a_persons"
    person = ("--actor", "person:rita")
    run = _boris(store, *person, "migrate-effect-tool", tid, "ea", "--reason", "same args")
    assert (run.returncode, run.stdout.strip()) == (0, WRITE_V2), run.stderr


# --- the record format ------------------------------------------------------------------------


def test_an_effect_planned_without_a_tool_hashes_as_before() -> None:
    old = {
        "effect_id": "e1", "kind": "file_write", "target": "/w/a.md", "idempotency_key": "t:e1",
        "pre_state": None, "intended": {"exists": True, "digest": _d("a"), "size": 1},
        "prepared": {"kind": "file_write"}, "prepared_digest": _d("p"),
        "consequence": "writes a.md", "requires_approval": False, "policy": "",
    }  # fmt: skip
    read = ev.decode("effect.planned", 1, old)
    assert canonical_json(read.model_dump(mode="json")) == canonical_json(old)
    pinned = ev.decode("effect.planned", 1, {**old, "tool": "w", "tool_digest": _d("w")})
    assert isinstance(pinned, ev.EffectPlanned) and pinned.tool_digest == _d("w")


def test_old_records_still_verify_and_a_newer_manifest_format_is_refused(
    store: Store, tid: str, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plan(store, ws, "e0", tool=None)  # an intent as every older program wrote it
    store.execute(m.RecordManifest(task_id=tid, provider="p", model="x", manifest_id="m1"), AGENT)
    assert verify(store).ok
    # A program that does not know the type refuses it by name, in one line.
    monkeypatch.delitem(ev._REGISTRY, "context.manifest")
    with pytest.raises(UnknownEventFormat) as unknown:
        reads.read_manifests(store, tid)
    assert str(unknown.value) == "unknown event type 'context.manifest'"
    monkeypatch.undo()
    # A format newer than this program's (as a newer program would append it): refused in
    # one line, never read with defaults.
    last = store.events(tid)[-1]
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(t.events).values(
                task_id=tid, seq=last["seq"] + 1, type="context.manifest", format=2,
                payload=json.dumps({"manifest_id": "m2", "window": {"tokens": 1}}),
                actor_kind="agent", actor_id="newer", actor_name="", at=last["at"],
                prev_hash=last["hash"], hash="0" * 64,
            )
        )  # fmt: skip
    run = _boris(store, "manifests", tid)
    assert run.returncode != 0
    (line,) = run.stderr.strip().splitlines()
    assert "'context.manifest' is in format 2; this program reads up to format 1" in line
