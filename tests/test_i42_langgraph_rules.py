"""LangGraph and a person's "always" (issue 42's Done-when, audited): a standing rule made from
an interrupt decides the next call like it, recorded as the rule's (`approval.ruled` naming it,
with the same intent -> approval -> attempt trail as a person's decision); it decides nothing
after its revocation, nothing after its expiry (the database clock), and never a call whose
policy a person reserved.

LangGraph has no "always" answer of its own (its decisions are approve, edit, reject and
respond): the person's "always" is `boris rules add --from-approval` on the interrupt's
request, from their own shell. The real LangChain agent (`create_agent`, the real
`HumanInTheLoopMiddleware`, per-call interrupts) on the real `SqliteSaver`, a scripted model
(tests/test_langgraph_adapter.py), on the store `boris init` makes (signed; the agent's key as
BORIS_KEY).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from signed_default import PERSON, Signed, signed_default_store
from test_langgraph_adapter import AGENT, agent, config_of, first_turn, ran_calls

from store.adapters import langgraph as boris_lg
from store.canonical import digest_of
from store.store import Store

OPS = {"to": "ops@example.com", "subject": "Deploy 4.2 tonight"}
OPS_AGAIN = {"to": "ops@example.com", "subject": "Deploy 4.2 done"}
REPORT = {"path": "reports/q3.pdf"}


@pytest.fixture
def signed(tmp_path: Path) -> Signed:
    return signed_default_store(tmp_path / "home", f"agent:{AGENT.id}")


class Graph:
    """One task's graph threads, asked about and resumed as the agent's process does."""

    def __init__(self, signed: Signed, task: str, tmp: Path) -> None:
        self.signed, self.task = signed, task
        self.checkpoints, self.ran_log = tmp / "graph.sqlite", tmp / "ran.jsonl"

    def ask(self, thread: str, tool: str, args: dict[str, Any]) -> boris_lg.Asked:
        script = first_turn((tool, args, f"call-{thread}"))
        with agent(self.checkpoints, self.ran_log, "per_call", script) as graph:
            user = {"messages": [{"role": "user", "content": "go"}]}
            graph.invoke(user, config_of(thread), version="v2")
            with Store.open(self.signed.store_dir) as store:
                (asked,) = boris_lg.ask(store, AGENT, self.task, graph, config_of(thread))
        return asked

    def resume(self, thread: str) -> dict[str, str] | None:
        """Resume with what Boris holds; the tool messages the model read (None: still
        waiting on a person)."""
        done = [AIMessage(content="done")]
        with agent(self.checkpoints, self.ran_log, "per_call", done) as graph:
            config = config_of(thread)
            with Store.open(self.signed.store_dir) as store:
                command = boris_lg.resume_command(store, AGENT, self.task, graph, config)
                if command is None:
                    return None
                result = graph.invoke(command, config, version="v2")
                boris_lg.record_results(store, AGENT, self.task, graph, config)
        return {m.tool_call_id: m.content for m in result.value["messages"] if m.type == "tool"}

    def state(self, approval_id: str) -> str:
        (found,) = [a for a in self.signed.read("approvals", self.task) if a["id"] == approval_id]
        return str(found["state"])

    def ruled(self) -> dict[str, str]:
        """approval id -> the rule the record says decided it (`approval.ruled`)."""
        return {
            e["payload"]["approval_id"]: e["payload"]["rule_id"]
            for e in self.signed.read("events", self.task)
            if e["type"] == "approval.ruled"
        }


def rule_from(signed: Signed, task: str, approval_id: str, *extra: str) -> str:
    said = signed.ok(
        "--actor", PERSON, "rules", "add", task, "--from-approval", approval_id, *extra, "--json"
    )
    return str(json.loads(said)["result"]["id"])


def test_a_rule_from_an_interrupt_decides_the_next_until_revoked_never_a_reserved_policy(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("i42-lg-rules", "langgraph://tools/")
    signed.use_here(monkeypatch)
    g = Graph(signed, task, tmp_path)

    # Rita answers the first interrupt with "always" for mail to ops: this call is approved by
    # her, and the rule covers send_email to the same recipient.
    first = g.ask("t1", "send_email", OPS)
    rule = rule_from(signed, task, first.approval_id, "--field", "to")
    assert g.resume("t1") == {"call-t1": "sent to ops@example.com: Deploy 4.2 tonight"}
    assert first.approval_id not in g.ruled()  # hers, not the rule's

    # The next call like it is decided by the rule as it is asked, recorded as the rule's,
    # and runs with exactly its args through the same intent -> approval -> attempt trail.
    second = g.ask("t2", "send_email", OPS_AGAIN)
    assert g.state(second.approval_id) == "approved" and signed.pending(task) == []
    assert g.ruled() == {second.approval_id: rule}
    assert g.resume("t2") == {"call-t2": "sent to ops@example.com: Deploy 4.2 done"}
    (eff,) = [e for e in signed.effects(task) if e["id"] == second.effect_id]
    (attempt,) = eff["attempts"]
    assert attempt["approval_id"] == second.approval_id
    assert attempt["inputs"]["prepared_digest"] == digest_of(OPS_AGAIN)
    assert g.state(second.approval_id) == "consumed"

    # Another recipient is not covered: a person is asked.
    other = g.ask("t3", "send_email", {"to": "all@example.com", "subject": "x"})
    assert g.state(other.approval_id) == "pending"
    signed.ok("--actor", PERSON, "reject", task, other.approval_id, "--note", "not all")
    assert "rejected" in str(g.resume("t3"))

    # A policy reserved for a person: the rule decides none of its calls, the graph waits.
    signed.ok("--actor", PERSON, "rules", "reserve", boris_lg.POLICY)
    held = g.ask("t4", "send_email", OPS_AGAIN)
    assert g.state(held.approval_id) == "pending" and g.resume("t4") is None
    signed.ok("--actor", PERSON, "rules", "reserve", boris_lg.POLICY, "--off")
    signed.approve(task, held.approval_id)
    assert g.resume("t4") == {"call-t4": "sent to ops@example.com: Deploy 4.2 done"}
    assert held.approval_id not in g.ruled()

    # Revoked: the same call waits for a person again, and the graph with it.
    signed.ok("--actor", PERSON, "rules", "revoke", rule, "--reason", "release is out")
    later = g.ask("t5", "send_email", OPS_AGAIN)
    assert g.state(later.approval_id) == "pending" and g.resume("t5") is None
    assert g.ruled() == {second.approval_id: rule}
    assert [c["args"] for c in ran_calls(g.ran_log)] == [OPS, OPS_AGAIN, OPS_AGAIN]
    (listed,) = [r for r in signed.read("rules", "list")["rules"] if r["id"] == rule]
    assert (listed["standing"], listed["proved"]) == ("revoked", True)
    signed.assert_signed()


def test_a_rule_from_an_interrupt_decides_nothing_after_its_expiry(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("i42-lg-expiry", "langgraph://tools/")
    signed.use_here(monkeypatch)
    g = Graph(signed, task, tmp_path)

    first = g.ask("t1", "delete_file", REPORT)
    rule = rule_from(signed, task, first.approval_id, "--field", "path", "--expires-in", "3s")
    granted = time.monotonic()
    assert g.resume("t1") == {"call-t1": "deleted reports/q3.pdf"}

    # While it stands, the same call is the rule's at once.
    again = g.ask("t2", "delete_file", REPORT)
    assert time.monotonic() - granted < 3, "the machine was too slow to see the rule decide"
    assert g.ruled() == {again.approval_id: rule}
    assert g.resume("t2") == {"call-t2": "deleted reports/q3.pdf"}

    # Past its expiry on the database clock: a person is asked, and nothing runs meanwhile.
    time.sleep(max(0.0, 3.3 - (time.monotonic() - granted)))
    late = g.ask("t3", "delete_file", REPORT)
    assert g.state(late.approval_id) == "pending" and g.resume("t3") is None
    assert g.ruled() == {again.approval_id: rule}
    (listed,) = [r for r in signed.read("rules", "list")["rules"] if r["id"] == rule]
    assert listed["standing"] == "expired" and listed["decided"] == 1
    assert len(ran_calls(g.ran_log)) == 2
    signed.assert_signed()
