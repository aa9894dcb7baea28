"""Answer as the tool ("respond", issue 42): a person supplies the call's result.

On a signed store as `boris init` makes it, on both engines: the agent asks as an adapter does
(signed with its trusted key); the person answers with the real `boris respond` (signed with
their own key). The result is checked against the request's result schema, recorded as
answered by the person (`approval.answered`), never run: no attempt, the effect cancelled, no
dispatch possible; the decision view offers `respond` only where the request allows it, and
`boris verify` passes on the record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_args import store_args

from store import Store
from store import commands as c
from store.canonical import digest_of
from store.cli import main as cli
from store.commands import approvals as ap
from store.commands import effects as lg
from store.commands.respond import RespondToApproval
from store.errors import CommandRejected
from store.events import ApprovalAnswered, FileState
from store.model import Actor
from store.reads.decision_views import ApprovalVerdict, approval_decision
from store.services.respond import answered_result
from store.signing.keys import load_key

BOT = Actor(kind="agent", id="bot")
TOOLS = "langgraph://tools/"
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"temperature_c": {"type": "number"}, "sky": {"type": "string"}},
    "required": ["temperature_c"],
    "additionalProperties": False,
}


class Signed:
    """The test's store, signed as `boris init --actor person:rita` makes it, with the
    agent's key trusted by rita (`boris keys new`, `boris keys add`)."""

    def __init__(self, store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.store = store
        self.capsys = capsys
        self.args = store_args(store)
        agent_key = tmp_path / "agent.pem"
        self.run("--actor", "person:rita", "init")
        self.run("--actor", "person:rita", "keys", "new", str(agent_key))
        self.run("--actor", "person:rita", "keys", "add", str(agent_key), "--for", "agent:bot")
        self.store.signer = load_key(agent_key)
        self.n = 0

    def run(self, *argv: str, stdin: str | None = None) -> tuple[int, str, str]:
        self.capsys.readouterr()
        rc = cli([*self.args, *argv])
        out, err = self.capsys.readouterr()
        return rc, out, err

    def ok(self, *argv: str) -> Any:
        rc, out, err = self.run(*argv, "--json")
        assert rc == 0, err or out
        return json.loads(out)

    def refused(self, *argv: str) -> dict[str, Any]:
        rc, out, _ = self.run(*argv, "--json")
        assert rc != 0, out
        answer = json.loads(out)
        assert answer["ok"] is False
        return dict(answer["error"])

    def task(self, task_id: str) -> str:
        self.store.execute(
            c.CreateTask(
                task_id=task_id, title="T", owner="rita", objective="x", destinations=[TOOLS]
            ),
            BOT,
        )
        return task_id

    def ask(self, task_id: str, tool: str, payload: dict[str, Any], **kw: Any) -> str:
        """The agent plans a tool call and asks for its approval (as store.adapters do)."""
        self.n += 1
        effect_id, approval_id = f"eff-{task_id}-{self.n}", f"apr-{task_id}-{self.n}"
        self.store.execute_all(
            [
                lg.PlanEffect(
                    task_id=task_id,
                    effect_id=effect_id,
                    kind="other",
                    target=TOOLS + tool,
                    prepared=payload,
                    intended=FileState(exists=True, digest="sha256:" + "0" * 64),
                    requires_approval=True,
                    consequence=f"the agent runs {tool}",
                    idempotency_key=f"call-{task_id}-{self.n}",
                ),
                ap.RequestApproval(
                    task_id=task_id,
                    approval_id=approval_id,
                    effect_id=effect_id,
                    policy="tools",
                    **kw,
                ),
            ],
            BOT,
        )
        return approval_id

    def approval(self, task_id: str, approval_id: str) -> dict[str, Any]:
        rows = self.ok("approvals", task_id)["result"]
        return dict(next(r for r in rows if r["id"] == approval_id))

    def effect(self, task_id: str, effect_id: str) -> dict[str, Any]:
        rows = self.ok("effects", task_id)["result"]
        return dict(next(r for r in rows if r["id"] == effect_id))

    def verify(self) -> tuple[int, list[dict[str, Any]]]:
        rc, out, _ = self.run("verify", "--no-remember", "--json")
        answer = json.loads(out)
        report = answer["result"] if answer["ok"] else answer["error"]["details"]["report"]
        return rc, list(report["problems"])

    def view_verdicts(self, task_id: str, approval_id: str) -> tuple[ApprovalVerdict, ...]:
        with self.store.read() as conn:
            now = self.store.now()
            return approval_decision(conn, self.store.blobs, task_id, approval_id, now).verdicts


@pytest.fixture
def signed(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Signed:
    return Signed(store, tmp_path, capsys)


def test_a_person_answers_as_the_tool_recorded_never_run(signed: Signed) -> None:
    tid = signed.task("t1")
    apr = signed.ask(tid, "weather", {"city": "Oslo", "result_schema": WEATHER_SCHEMA})
    assert ApprovalVerdict.RESPOND in signed.view_verdicts(tid, apr)

    answer = signed.ok(
        "--actor",
        "person:rita",
        "respond",
        tid,
        apr,
        "--result-json",
        '{"temperature_c": -3.5, "sky": "snow"}',
        "--note",
        "the weather service is down; I looked outside",
    )
    assert answer["result"] == "answered"
    assert answer["answer"]["result"] == {"temperature_c": -3.5, "sky": "snow"}
    assert answer["answer"]["answered_by"] == "person:rita"
    assert answer["answer"]["schema_checked"] is True

    row = signed.approval(tid, apr)
    assert row["state"] == "answered" and row["decided_by"]["id"] == "rita"
    effect = signed.effect(tid, f"eff-{tid}-1")
    assert effect["stage"] == "cancelled" and effect["attempts"] == []

    # The person's signed event holds the result; an adapter reads it as the tool's.
    events = [e for e in signed.store.events(tid) if e["type"] == ApprovalAnswered.TYPE]
    assert len(events) == 1 and events[0]["actor"]["id"] == "rita"
    found = answered_result(signed.store, tid, apr)
    assert found is not None and found.result == {"temperature_c": -3.5, "sky": "snow"}
    assert found.answered_by.id == "rita"

    # Never run: the effect cannot be dispatched, the approval cannot be decided again.
    with pytest.raises(CommandRejected):
        signed.store.execute(
            lg.DispatchEffect(task_id=tid, effect_id=f"eff-{tid}-1", executor="tool"), BOT
        )
    again = signed.refused("--actor", "person:rita", "approve", tid, apr)
    assert "already answered by rita" in again["message"]

    rc, problems = signed.verify()
    assert rc == 0, problems


def test_a_result_that_does_not_fit_the_schema_is_refused(signed: Signed) -> None:
    tid = signed.task("t2")
    apr = signed.ask(tid, "weather", {"city": "Oslo", "result_schema": WEATHER_SCHEMA})
    error = signed.refused(
        "--actor", "person:rita", "respond", tid, apr, "--result-json", '{"sky": "snow"}'
    )
    assert "does not fit the tool's schema" in error["message"]
    assert "temperature_c" in error["message"]
    assert signed.approval(tid, apr)["state"] == "pending"


def test_respond_only_where_the_request_allows_it(signed: Signed) -> None:
    tid = signed.task("t3")
    plain = signed.ask(tid, "deploy", {"env": "prod"})
    assert ApprovalVerdict.RESPOND not in signed.view_verdicts(tid, plain)
    error = signed.refused("--actor", "person:rita", "respond", tid, plain, "--result-json", "1")
    assert "does not accept an answer in the tool's place" in error["message"]
    assert signed.approval(tid, plain)["state"] == "pending"

    # LangGraph's review config: respond allowed, no schema: any JSON value is the answer.
    lg_call = signed.ask(tid, "search", {"q": "boris", "allowed_decisions": ["approve", "respond"]})
    assert ApprovalVerdict.RESPOND in signed.view_verdicts(tid, lg_call)
    done = signed.ok(
        "--actor", "person:rita", "respond", tid, lg_call, "--result-json", '"no results"'
    )
    assert done["answer"]["result"] == "no results" and done["answer"]["schema_checked"] is False


def test_an_agent_cannot_answer_and_a_stale_digest_is_refused(signed: Signed) -> None:
    tid = signed.task("t4")
    apr = signed.ask(tid, "weather", {"city": "Oslo", "result_schema": WEATHER_SCHEMA})
    with pytest.raises(CommandRejected):
        signed.store.execute(
            RespondToApproval(task_id=tid, approval_id=apr, result={"temperature_c": 1}), BOT
        )
    stale = signed.refused(
        "--actor",
        "person:rita",
        "respond",
        tid,
        apr,
        "--result-json",
        '{"temperature_c": 1}',
        "--based-on",
        "sha256:" + "1" * 64,
    )
    assert "look at it again" in stale["message"]
    assert signed.approval(tid, apr)["state"] == "pending"


def test_verify_fails_an_answer_the_agent_wrote_itself(signed: Signed) -> None:
    tid = signed.task("t5")
    apr = signed.ask(tid, "weather", {"city": "Oslo", "result_schema": WEATHER_SCHEMA})
    # The agent writes a person's answer itself, past the command layer (signed with its own
    # trusted key): the projection says answered, verify names the event's writer.
    result = {"temperature_c": 30}
    with signed.store.transaction() as tx:
        tx.emit(
            tid,
            ApprovalAnswered(approval_id=apr, result=result, result_digest=digest_of(result)),
            BOT,
        )
    assert signed.approval(tid, apr)["state"] == "answered"
    rc, problems = signed.verify()
    assert rc == 3
    mine = [p for p in problems if p.get("actor") == "agent:bot"]
    assert mine and "approval.answered" in json.dumps(mine), problems
    assert any(p["kind"] == "approval_decider" or "person" in p["message"] for p in mine)


def test_a_request_several_people_must_approve_is_not_answered_by_one(signed: Signed) -> None:
    tid = signed.task("t6")
    apr = signed.ask(tid, "weather", {"city": "Oslo", "result_schema": WEATHER_SCHEMA}, approvers=2)
    assert ApprovalVerdict.RESPOND not in signed.view_verdicts(tid, apr)
    error = signed.refused(
        "--actor", "person:rita", "respond", tid, apr, "--result-json", '{"temperature_c": 1}'
    )
    assert "needs 2 people to approve" in error["message"]
    assert signed.approval(tid, apr)["state"] == "pending"
