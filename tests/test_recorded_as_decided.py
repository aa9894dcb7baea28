"""What was decided is what is recorded (issue 40, the store's side), on both engines.

Each situation is built on a signed store as `boris init` makes one (the person's own key its
root, the agent's key made and trusted with `boris keys new` / `boris keys add`, handed to the
agent as BORIS_KEY), through the command line, in this process on the test's store (SQLite
or PostgreSQL, the `store` fixture):

- every agent write carries the lease token: `boris note`, `boris narrative --text` and
  `boris summary --record` are fenced as every other write is;
- re-pinning a changed tool definition (`migrate-effect-tool`) is a person's decision;
- a failure an executor reports is its word: the outcome stays unknown until reconciled;
- a person's edit revises the effect's whole intent: intended digest and consequence;
- a retired evidence item never counts toward completion, whoever else keeps its blob.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from store import Store
from store.cli import main

PERSON = "person:rita"
AGENT = "agent:drafter-7"


class Boris:
    """`boris` on the test's store, signed as `boris init` makes it: the person signs with
    their own key (no BORIS_KEY in their shell), the agent with BORIS_KEY."""

    def __init__(
        self,
        store_dir: Path,
        store_url: str | None,
        key: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        self.where = ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])
        self.key = key
        self.capsys = capsys
        self.monkeypatch = monkeypatch

    def run(self, *argv: str, agent: bool = False, **env: str) -> tuple[int, str, str]:
        """One command; `agent`: as the agent (BORIS_KEY, --actor agent:…), else as rita."""
        actor = ["--actor", AGENT if agent else PERSON]
        with self.monkeypatch.context() as m:
            if agent:
                m.setenv("BORIS_KEY", str(self.key))
            else:
                m.delenv("BORIS_KEY", raising=False)
            m.delenv("BORIS_LEASE_TOKEN", raising=False)
            for name, value in env.items():
                m.setenv(name, value)
            self.capsys.readouterr()
            rc = main([*argv, *actor, *self.where])
            out = self.capsys.readouterr()
        return rc, out.out, out.err

    def ok(self, *argv: str, agent: bool = False, **env: str) -> str:
        rc, out, err = self.run(*argv, agent=agent, **env)
        assert rc == 0, err
        return out

    def json(self, *argv: str, agent: bool = False, **env: str) -> Any:
        return json.loads(self.ok(*argv, "--json", agent=agent, **env))["result"]

    def refused(self, *argv: str, agent: bool = False, **env: str) -> tuple[int, dict[str, Any]]:
        """A refusal: its exit code and its error object (--json)."""
        rc, out, _ = self.run(*argv, "--json", agent=agent, **env)
        assert rc != 0, out
        return rc, json.loads(out)["error"]


@pytest.fixture
def boris(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Boris]:
    key = tmp_path / "agent.pem"
    b = Boris(store_dir, store_url, key, capsys, monkeypatch)
    assert "(signatures required)" in b.ok("init")
    b.ok("keys", "new", str(key))
    b.ok("keys", "add", str(key), "--for", AGENT)
    yield b


def _task(boris: Boris, task_id: str, *scope: str) -> str:
    boris.ok(
        "create-task", "--id", task_id, "--title", "Issue 40", "--owner", "rita",
        "--objective", "what was decided is what is recorded", *scope,
    )  # fmt: skip
    return task_id


def _signed(store: Store) -> None:
    """Every write verifies: signed by a trusted key, the agent's with its own."""
    from store.services.verify import verify

    report = verify(store)
    assert report.ok and report.signed, report.problems


# --- 1. every agent write carries the lease token -------------------------------------------

#: The writes that once dropped the token, as an agent runs them on task `t`.
NOTE_WRITES = (
    ("note", "{t}", "drafted the intro"),
    ("narrative", "{t}", "--text", "the intro is drafted"),
    ("summary", "{t}", "--record"),
)


@pytest.mark.parametrize("write", NOTE_WRITES, ids=lambda w: w[0])
def test_notes_narratives_and_summaries_carry_the_lease_token(
    boris: Boris, store: Store, write: tuple[str, ...]
) -> None:
    t = _task(boris, "t1")
    argv = [a.format(t=t) for a in write]
    token = boris.ok("lease", "acquire", t, "--ttl", "600", agent=True).strip()
    # The holder writes under its lease, with the flag or BORIS_LEASE_TOKEN.
    boris.ok(*argv, "--lease-token", token, agent=True)
    boris.ok(*argv, agent=True, BORIS_LEASE_TOKEN=token)
    # Taken over: the old token is refused as for every other write, exit 7, nothing written.
    boris.ok("take-over", t, "--reason", "I finish it")
    count = len(store.events(t))
    rc, error = boris.refused(*argv, agent=True, BORIS_LEASE_TOKEN=token)
    assert (rc, error["code"]) == (7, "lease_lost"), error
    rc, other = boris.refused(
        "add-criterion", t, "--text", "late", "--lease-token", token, agent=True
    )
    assert (rc, other["code"]) == (7, "lease_lost")
    assert len(store.events(t)) == count
    # Handed back (released): a stale token is still stale, never a write without one.
    boris.ok("lease", "release", t)
    count = len(store.events(t))
    rc, error = boris.refused(*argv, "--lease-token", token, agent=True)
    assert (rc, error["code"]) == (7, "lease_lost"), error
    assert len(store.events(t)) == count
    _signed(store)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("record_note", {"text": "drafted"}), ("record_narrative", {"text": "drafted"})],
)
def test_the_mcp_note_and_narrative_tools_carry_the_lease_token(
    boris: Boris, store: Store, tool: str, arguments: dict[str, Any]
) -> None:
    from store.mcp import tools
    from store.mcp.server import BorisServer
    from store.model import Actor
    from store.signing.keys import load_key

    t = _task(boris, "t1")
    spec = {s.name: s for s in tools.tool_specs(60)}[tool]
    assert "lease_token" in spec.input_schema["properties"]
    token = int(boris.ok("lease", "acquire", t, "--ttl", "600", agent=True))
    store.signer = load_key(boris.key)  # what `boris mcp` does with BORIS_KEY
    server = BorisServer(store, Actor.parse(AGENT))

    def call(**extra: Any) -> dict[str, Any]:
        return dict(anyio.run(server.call, tool, {"task_id": t, **arguments, **extra}))

    assert call(lease_token=token)["ok"] is True
    assert call()["error"]["code"] == "lease_held"
    boris.ok("take-over", t, "--reason", "I finish it")
    assert call(lease_token=token)["error"]["code"] == "lease_lost"
    _signed(store)


def test_every_write_of_the_command_line_carries_the_lease_token() -> None:
    """The cause of the three: subcommands that built and ran their command themselves,
    outside `_write`, without the token. Now each goes through `execute` (or names the token
    itself), and no subcommand calls the Store's execute directly but the lease's own."""
    import store.cli as cli

    here = Path(cli.__file__).parent
    direct = {
        p.name
        for p in here.glob("*.py")
        if "store.execute(" in p.read_text() and p.name not in {"output.py", "leases.py"}
    }
    assert direct == set()


# --- 2. re-pinning a changed tool definition is a person's decision -------------------------

V1 = "sha256:" + "1" * 64
V2 = "sha256:" + "2" * 64


def test_re_pinning_a_changed_tool_definition_is_a_persons(
    boris: Boris, store: Store, ws: Path
) -> None:
    from store.mcp import tools
    from store.services.resume import resume_brief

    t = _task(boris, "t2", "--scope", str(ws))
    boris.ok("checkpoint", t, "initial", "--id", "c1", agent=True)
    configure = ("record-configuration", t, "--provider", "openai", "--model", "gpt-a")
    boris.ok(*configure[:2], "c1", *configure[2:], "--tool", f"write_file={V1}", agent=True)
    boris.ok(
        "plan-effect", t, "--target", str(ws / "a.md"), "--consequence", "writes a.md",
        "--text", "# a", "--tool", "write_file", "--id", "ea", agent=True,
    )  # fmt: skip
    boris.ok("checkpoint", t, "milestone", "--id", "c2", agent=True)
    boris.ok(*configure[:2], "c2", *configure[2:], "--tool", f"write_file={V2}", agent=True)

    # The brief names the re-pin as a person's next action, never the agent's.
    (repin,) = [
        a for a in resume_brief(store, t)["next_actions"]
        if a["command"]["type"] == "migrate_effect_tool"
    ]  # fmt: skip
    assert repin["actor"] == "person"

    count = len(store.events(t))
    migrate = ("migrate-effect-tool", t, "ea", "--reason", "the same arguments mean the same")
    rc, error = boris.refused(*migrate, agent=True)
    assert (rc, error["code"], error["rule"]) == (1, "authority_refused", "tool_repin_is_a_persons")
    assert "only a person re-pins" in error["message"], error
    assert len(store.events(t)) == count
    # Not offered to an agent over MCP at all (only the commands an agent may run are tools).
    assert "migrate_effect_tool" not in {s.name for s in tools.tool_specs(60)}

    assert boris.ok(*migrate).strip() == V2
    (migrated,) = [e for e in store.events(t) if e["type"] == "effect.tool_migrated"]
    assert migrated["actor"]["id"] == "rita"
    _signed(store)


# --- 3. a reported failure leaves the outcome unknown ---------------------------------------

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude_code"


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def _hook(boris: Boris, event: str, fixture: str, task: str) -> None:
    """`boris hook EVENT --task T` as Claude Code runs it: the documented JSON on stdin."""
    with boris.monkeypatch.context() as m:
        m.setattr(sys, "stdin", _Stdin((FIXTURES / fixture).read_bytes()))
        rc, _, err = boris.run("hook", event, "--task", task, agent=True)
    assert rc == 0, err


def _effect(boris: Boris, task: str, effect_id: str | None = None) -> dict[str, Any]:
    effects = boris.json("effects", task)
    return effects[-1] if effect_id is None else next(e for e in effects if e["id"] == effect_id)


def _assert_unknown_until_reconciled(
    boris: Boris, store: Store, t: str, eid: str, error: str
) -> None:
    from store.services.resume import resume_brief

    effect = _effect(boris, t, eid)
    assert (effect["stage"], effect["outcome"]) == ("dispatched", "unknown"), effect
    (attempt,) = effect["attempts"]
    assert attempt["outcome"] == "unknown"
    assert attempt["response"]["reported"] == "failed" and attempt["error"] == error
    # No blind retry: a new attempt is refused until someone reconciles.
    count = len(store.events(t))
    rc, refused = boris.refused("dispatch", t, eid, "--executor", "again", agent=True)
    assert rc == 1 and "reconcile it against the target" in refused["message"], refused
    assert len(store.events(t)) == count
    brief = resume_brief(store, t)
    assert eid in {b.get("effect_id") for b in brief["blockers"]}
    assert [f for f in brief["forbidden"] if f["command"].get("effect_id") == eid]


def test_a_reported_failure_is_the_executors_word_until_reconciled(
    boris: Boris, store: Store, ws: Path
) -> None:
    # Claude Code's PostToolUseFailure hook.
    t = _task(boris, "t3", "--destination", "claude-code://tools/")
    _hook(boris, "pre-tool-use", "pre_tool_use.json", t)
    _hook(boris, "post-tool-use-failure", "post_tool_use_failure.json", t)
    eid = _effect(boris, t)["id"]
    _assert_unknown_until_reconciled(
        boris, store, t, eid, "Exit code 1\nError: Cannot find module 'express'"
    )
    # A tool call's target holds no state to compare with its intent: the agent's
    # reconciliation finds a conflict, a person decides it by hand (the call did not take),
    # and only then may it be tried again.
    seen = boris.ok("observe", t, eid, "--state-json", '{"exists": false}', agent=True).strip()
    assert boris.ok("reconcile", t, eid, "--observation", seen, agent=True).strip() == "conflict"
    decided = ("--decision", "absent", "--note", "npm test did not run: express is missing")
    assert boris.ok("reconcile", t, eid, "--observation", seen, *decided).strip() == "absent"
    assert _effect(boris, t, eid)["outcome"] == "absent"
    assert boris.ok("dispatch", t, eid, "--executor", "claude-code:Bash", agent=True).strip() == "2"

    # `boris record-response … failed`: the same word, the same rule.
    t = _task(boris, "t3b", "--scope", str(ws))
    eid = boris.ok(
        "plan-effect", t, "--target", str(ws / "out.txt"), "--consequence", "writes out.txt",
        "--text", "out", agent=True,
    ).strip()  # fmt: skip
    boris.ok("dispatch", t, eid, "--executor", "writer", agent=True)
    boris.ok("record-response", t, eid, "failed", "--error", "disk full", agent=True)
    _assert_unknown_until_reconciled(boris, store, t, eid, "disk full")
    assert boris.ok("reconcile", t, eid, agent=True).strip() == "absent"
    assert boris.ok("dispatch", t, eid, "--executor", "writer", agent=True).strip() == "2"
    _signed(store)


# --- 4. a person's edit revises the effect's intent to the edit -----------------------------

ASKED = {"command": "rm -rf dist/", "description": "Clean the build"}
EDITED = {"command": "rm -rf dist/js", "description": "Clean only the scripts"}


def test_a_persons_edit_of_a_claude_code_call_revises_the_whole_intent(
    boris: Boris, store: Store
) -> None:
    from store.adapters import claude_code as cc
    from store.canonical import digest_of
    from store.model import Actor
    from store.signing.keys import load_key

    t = _task(boris, "t4", "--destination", "claude-code://tools/")
    agent = Actor.parse(AGENT)
    store.signer = load_key(boris.key)  # what `boris mcp` does with BORIS_KEY
    settings = cc.PromptSettings(task_id=t, timeout_seconds=60)
    call = {"tool_name": "Bash", "input": ASKED, "tool_use_id": "toolu_edit"}
    asked = cc.ask(store, agent, settings, call)
    assert asked.approval_id is not None and asked.effect_id is not None
    before = _effect(boris, t, asked.effect_id)
    assert before["consequence"] == "Claude Code runs Bash: rm -rf dist/"

    boris.ok(
        "approve", t, asked.approval_id, "--edited-json", json.dumps(EDITED),
        "--note", "only the scripts",
    )  # fmt: skip
    now = cc.approval_as_it_stands(store, t, asked.approval_id)
    answer = cc.settle(
        store, agent, t, asked, now, tool_name="Bash", timed_out=False, waited_for=60
    )
    assert answer == {"behavior": "allow", "updatedInput": EDITED}

    # The effect's intent is the edit, all of it: what runs is what the record says.
    effect = _effect(boris, t, asked.effect_id)
    intent = effect["intent"]
    assert intent["prepared"] == EDITED
    assert intent["prepared_digest"] == digest_of(EDITED)
    assert intent["intended"] == {"exists": True, "digest": digest_of(EDITED), "size": None}
    assert effect["consequence"] == cc.consequence_of("Bash", EDITED)
    assert effect["consequence"] == "Claude Code runs Bash: rm -rf dist/js"
    assert effect["target"] == "claude-code://tools/Bash"  # the tool is not the input's
    (attempt,) = effect["attempts"]
    assert attempt["inputs"]["prepared_digest"] == digest_of(EDITED)
    (approval,) = boris.json("approvals", t)
    assert approval["payload_digest"] == digest_of(EDITED)
    # The revision is the person's, in the log, the agent's version before it.
    (revised,) = [e for e in store.events(t) if e["type"] == "effect.revised"]
    assert revised["actor"]["id"] == "rita"
    assert revised["payload"]["consequence"] == "Claude Code runs Bash: rm -rf dist/js"
    assert revised["payload"]["intended"]["digest"] == digest_of(EDITED)
    # What a reviewer reconciling it reads is the command that ran.
    state = store.task(t)
    (e,) = state["effects"]
    assert e["consequence"] == "Claude Code runs Bash: rm -rf dist/js"
    assert e["intent"]["intended"]["digest"] == digest_of(EDITED)
    _signed(store)


def test_an_agents_revision_of_a_call_revises_what_is_made_from_it(
    boris: Boris, store: Store
) -> None:
    """The same rule for the agent's own revision (revise_effect with a new prepared
    object): the intended digest and the adapter's wording follow; a consequence the agent
    gives is its own, and kept."""
    from store.adapters import claude_code as cc
    from store.canonical import digest_of
    from store.mcp.server import BorisServer
    from store.model import Actor
    from store.signing.keys import load_key

    t = _task(boris, "t4b", "--destination", "claude-code://tools/")
    agent = Actor.parse(AGENT)
    store.signer = load_key(boris.key)
    asked = cc.ask(
        store, agent, cc.PromptSettings(task_id=t), {"tool_name": "Bash", "input": ASKED}
    )
    server = BorisServer(store, agent)

    def revise(**extra: Any) -> None:
        done = anyio.run(
            server.call,
            "revise_effect",
            {"task_id": t, "effect_id": asked.effect_id, "reason": "narrower", **extra},
        )
        assert done["ok"] is True, done

    revise(prepared=EDITED)
    effect = _effect(boris, t, asked.effect_id)
    assert effect["intent"]["intended"]["digest"] == digest_of(EDITED)
    assert effect["consequence"] == "Claude Code runs Bash: rm -rf dist/js"
    revise(prepared=ASKED, consequence="cleans the whole build output")
    effect = _effect(boris, t, asked.effect_id)
    assert effect["intent"]["intended"]["digest"] == digest_of(ASKED)
    assert effect["consequence"] == "cleans the whole build output"
    # A consequence of the agent's own words stays the agent's when the object changes.
    revise(prepared=EDITED)
    assert _effect(boris, t, asked.effect_id)["consequence"] == "cleans the whole build output"
    _signed(store)


# --- 5. a retired item never counts toward completion ---------------------------------------


def test_retired_evidence_never_counts_whoever_keeps_its_blob(boris: Boris, store: Store) -> None:
    from store.services.resume import resume_brief

    t, other = _task(boris, "t5"), _task(boris, "t5b")
    for task in (t, other):
        boris.ok("add-criterion", task, "--text", "the tests pass", "--id", "C1", agent=True)
    boris.ok("record-artifact", t, "report.md", "--text", "# Report\n", agent=True)
    # The same log attached here to be kept a moment only, and in another task for good.
    log = ("attach-evidence", "C1", "--kind", "command_output", "--text", "12 passed")
    boris.ok(log[0], t, *log[1:], "--id", "ev1", "--retain", "0h", agent=True)
    boris.ok(log[0], other, *log[1:], "--id", "kept", agent=True)
    boris.ok("judge", t, "C1", "satisfied", "--artifact", "report.md", "--evidence", "ev1",
             agent=True)  # fmt: skip

    done = boris.json("expire", "--task", t)
    assert [x["item_id"] for x in done["retired"]] == ["ev1"]
    assert done["blobs_removed"] == []  # the other task still keeps the bytes: still readable

    # Retired is retired: no final checkpoint counts it, no completion ...
    count = len(store.events(t))
    rc, refused = boris.refused("checkpoint", t, "final", agent=True)
    assert (rc, refused["code"]) == (1, "evidence_missing"), refused
    assert refused["details"]["criteria"] == ["C1"]
    rc, refused = boris.refused("set-status", t, "completed", agent=True)
    assert rc == 1 and "ev1 (retired)" in refused["message"], refused
    assert len(store.events(t)) == count and store.task(t)["status"] != "completed"
    # ... as the record says: retired, the criterion's evidence missing, the brief blocked.
    (c1,) = store.task(t)["criteria"]
    assert (c1["status"], c1["state"], c1["evidence_missing"]) == (
        "satisfied", "evidence_missing", ["ev1"],
    )  # fmt: skip
    brief = resume_brief(store, t)
    assert "ev1" in {b.get("id") for b in brief["blockers"] if b["kind"] == "retired_required"}
    (complete,) = [a for a in brief["forbidden"] if a["action"] == "complete the task"]
    assert "ev1 (retired)" in complete["reason"]
    assert not [a for a in brief["next_actions"] if a["action"] == "complete the task"]
    # The other task's item is live: its criterion, judged on it, completes.
    boris.ok("record-artifact", other, "report.md", "--text", "# Report\n", agent=True)
    boris.ok("judge", other, "C1", "satisfied", "--artifact", "report.md", "--evidence", "kept",
             agent=True)  # fmt: skip
    boris.ok("checkpoint", other, "final", agent=True)
    assert store.task(other)["status"] == "completed"
    _signed(store)
