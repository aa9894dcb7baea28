"""Standing rules (issue 42): a person's "allow calls like this", recorded and enforced.

On a signed store as `boris init` makes it, on both engines: the person grants, lists and
revokes rules with the real `boris rules` command (signed with their own key); the agent asks
through the store's Python API as an adapter does (signed with its trusted key). A rule decides
the calls it covers in the request's own transaction, recorded as the rule's (`approval.ruled`
naming it), then dispatched like a person's approval; it never decides after its revocation or
expiry, nor a policy reserved for a person, nor a quorum; `boris verify` replays each decision
against the person's signed grant."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from cli_args import store_args

from store import Store
from store import commands as c
from store.cli import main as cli
from store.commands import approvals as ap
from store.commands import effects as lg
from store.events import ApprovalRuled, FileState
from store.model import Actor
from store.reads.standing_rules import StandingRule, StandingRules
from store.services import standing_rules as service
from store.signing.keys import load_key

RITA = Actor(kind="person", id="rita")
OLGA = Actor(kind="person", id="olga")
BOT = Actor(kind="agent", id="bot")
TOOLS = "claude-code://tools/"


class Signed:
    """The test's store, signed as `boris init --actor person:rita` makes it, with the agent's
    key trusted by rita (`boris keys new`, `boris keys add`)."""

    def __init__(self, store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.store = store
        self.capsys = capsys
        self.args = store_args(store)
        self.agent_key = tmp_path / "agent.pem"
        self.run("--actor", "person:rita", "init")
        self.run("--actor", "person:rita", "keys", "new", str(self.agent_key))
        self.run("--actor", "person:rita", "keys", "add", str(self.agent_key), "--for", "agent:bot")
        self.store.signer = load_key(self.agent_key)
        self.n = 0

    def run(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        rc = cli([*self.args, *argv])
        out, err = self.capsys.readouterr()
        return rc, out, err

    def ok(self, *argv: str) -> Any:
        rc, out, err = self.run(*argv, "--json")
        assert rc == 0, err or out
        return json.loads(out)["result"]

    def rita(self, *argv: str) -> Any:
        return self.ok("--actor", "person:rita", *argv)

    def task(self, task_id: str) -> str:
        self.store.execute(
            c.CreateTask(
                task_id=task_id, title="T", owner="rita", objective="x", destinations=[TOOLS]
            ),
            BOT,
        )
        return task_id

    def ask(
        self,
        task_id: str,
        tool: str,
        payload: dict[str, Any],
        policy: str = "tools",
        lease_token: int | None = None,
        **kw: Any,
    ) -> str:
        """The agent plans a tool call and asks for its approval (as store.adapters do)."""
        self.n += 1
        effect_id, approval_id = f"eff-{self.n}", f"apr-{self.n}"
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
                    consequence=f"Claude Code runs {tool}",
                    idempotency_key=f"call-{self.n}",
                    lease_token=lease_token,
                ),
                ap.RequestApproval(
                    task_id=task_id,
                    approval_id=approval_id,
                    effect_id=effect_id,
                    policy=policy,
                    lease_token=lease_token,
                    **kw,
                ),
            ],
            BOT,
        )
        return approval_id

    def approval(self, task_id: str, approval_id: str) -> dict[str, Any]:
        rows = self.ok("approvals", task_id)
        return next(r for r in rows if r["id"] == approval_id)

    def rules(self, *extra: str) -> StandingRules:
        return StandingRules.model_validate(self.ok("rules", "list", *extra))

    def verify(self) -> tuple[int, list[dict[str, Any]]]:
        rc, out, _ = self.run("verify", "--no-remember", "--json")
        answer = json.loads(out)
        report = answer["result"] if answer["ok"] else answer["error"]["details"]["report"]
        return rc, list(report["problems"])


@pytest.fixture
def signed(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Signed:
    return Signed(store, tmp_path, capsys)


def _add(signed: Signed, task_id: str, *argv: str) -> StandingRule:
    return StandingRule.model_validate(signed.rita("rules", "add", task_id, *argv))


def test_a_rule_decides_the_calls_it_covers_recorded_as_the_rules(signed: Signed) -> None:
    tid = signed.task("t1")
    rule = _add(
        signed,
        tid,
        "--tool",
        "Bash",
        "--target",
        TOOLS + "*",
        "--payload",
        '{"command": "git *"}',
        "--expires-in",
        "1h",
        "--note",
        "read-only git is fine",
    )
    assert rule.standing == "active" and rule.proved and rule.granted_by.id == "rita"
    assert rule.verdict == "approved" and rule.scope == "task" and rule.version == 1

    covered = signed.ask(tid, "Bash", {"command": "git status"})
    other_command = signed.ask(tid, "Bash", {"command": "rm -rf build"})
    other_tool = signed.ask(tid, "Write", {"command": "git status"})

    row = signed.approval(tid, covered)
    assert row["state"] == "approved"
    assert row["decided_by"]["id"] == "rita" and rule.id in row["note"]
    assert signed.approval(tid, other_command)["state"] == "pending"
    assert signed.approval(tid, other_tool)["state"] == "pending"

    # The record names the rule, and where its grant is, in the request's transaction.
    ruled = [e for e in signed.store.events(tid) if e["type"] == ApprovalRuled.TYPE]
    assert [(e["payload"]["approval_id"], e["payload"]["rule_id"]) for e in ruled] == [
        (covered, rule.id)
    ]
    assert ruled[0]["payload"]["rule_seq"] == rule.seq and ruled[0]["actor"]["id"] == "bot"

    # Intent -> approval -> attempt, as a person's approval: the dispatch uses it once.
    attempt = signed.store.execute(
        lg.DispatchEffect(task_id=tid, effect_id="eff-1", executor="claude-code"), BOT
    )
    assert attempt == 1
    assert signed.approval(tid, covered)["state"] == "consumed"

    listed = signed.rules()
    assert [(r.id, r.decided) for r in listed.rules] == [(rule.id, 1)]
    assert signed.verify()[0] == 0


def test_a_revoked_rule_decides_nothing_after_and_a_stale_revocation_is_a_conflict(
    signed: Signed,
) -> None:
    tid = signed.task("t1")
    rule = _add(signed, tid, "--tool", "Read")
    assert signed.approval(tid, signed.ask(tid, "Read", {"path": "a"}))["state"] == "approved"

    revoked = StandingRule.model_validate(
        signed.rita("rules", "revoke", rule.id, "--reason", "enough", "--based-on", "1")
    )
    assert revoked.standing == "revoked" and revoked.version == 2
    assert revoked.revoked_by == "rita" and revoked.revoke_reason == "enough"
    assert signed.approval(tid, signed.ask(tid, "Read", {"path": "b"}))["state"] == "pending"

    # Olga revokes on the version she read before rita's revocation: refused, naming rita.
    rc, out, _ = signed.run(
        "--actor", "person:olga", "rules", "revoke", rule.id, "--reason", "x", "--based-on", "1",
        "--json",
    )  # fmt: skip
    error = json.loads(out)["error"]
    assert rc == 1 and error["code"] == "conflict"
    assert "person:rita" in error["message"] and "version 2" in error["message"]
    assert [r.standing for r in signed.rules("--active").rules] == []
    assert signed.verify()[0] == 0


def test_a_rule_never_outlives_its_expiry_on_the_database_clock(signed: Signed) -> None:
    tid = signed.task("t1")
    _add(signed, tid, "--tool", "Read", "--expires-in", "2s")
    assert signed.approval(tid, signed.ask(tid, "Read", {"path": "a"}))["state"] == "approved"
    time.sleep(2.2)
    assert signed.approval(tid, signed.ask(tid, "Read", {"path": "b"}))["state"] == "pending"
    assert [r.standing for r in signed.rules().rules] == ["expired"]


def test_a_rule_never_covers_a_policy_reserved_for_a_person_nor_a_quorum(signed: Signed) -> None:
    tid = signed.task("t1")
    _add(signed, tid)  # any tool, any target
    signed.rita("rules", "reserve", "deploys")
    assert signed.approval(tid, signed.ask(tid, "Bash", {}, policy="deploys"))["state"] == "pending"
    signed.rita("policy", "set", "payments", "--approvers", "2")
    assert (
        signed.approval(tid, signed.ask(tid, "Bash", {}, policy="payments"))["state"] == "pending"
    )
    assert signed.approval(tid, signed.ask(tid, "Bash", {}, approvers=2))["state"] == "pending"
    assert signed.approval(tid, signed.ask(tid, "Bash", {}))["state"] == "approved"
    signed.rita("rules", "reserve", "deploys", "--off")
    assert (
        signed.approval(tid, signed.ask(tid, "Bash", {}, policy="deploys"))["state"] == "approved"
    )


def test_only_a_person_grants_or_revokes_a_rule(signed: Signed) -> None:
    tid = signed.task("t1")
    rc, out, _ = signed.run(
        "--actor", "agent:bot", "--key", str(signed.agent_key), "rules", "add", tid, "--json"
    )
    error = json.loads(out)["error"]
    assert rc == 1 and error["code"] == "authority_refused"
    assert signed.rules().rules == []
    rc, out, _ = signed.run(
        "--actor", "person:rita", "rules", "revoke", "rule-none", "--reason", "x"
    )
    assert rc == 4


def test_an_agent_scoped_rule_covers_that_agents_calls_on_every_task(signed: Signed) -> None:
    one, two = signed.task("t1"), signed.task("t2")
    rule = _add(signed, one, "--scope", "agent", "--agent", "agent:bot", "--tool", "Grep")
    assert rule.covers == "agent:bot's calls"
    assert signed.approval(two, signed.ask(two, "Grep", {"pattern": "x"}))["state"] == "approved"
    # Another agent's call is not covered (its key trusted by rita too).
    rc, _, err = signed.run("--actor", "person:rita", "rules", "add", one, "--scope", "agent")
    assert rc == 1 and "agent:ID" in err
    assert signed.verify()[0] == 0


def test_a_framework_always_answer_decides_this_call_and_the_next_like_it(
    signed: Signed,
) -> None:
    tid = signed.task("t1")
    first = signed.ask(tid, "Bash", {"command": "npm test", "timeout": 60})
    # The person's answer, in a process of theirs: signed with rita's own key.
    signed.store.signer = None
    rule = service.rule_from_answer(
        signed.store,
        RITA,
        tid,
        first,
        scope="agent",
        fields=["command"],
        origin="claude-code:updatedPermissions",
        note="always allow npm test",
    )
    signed.store.signer = load_key(signed.agent_key)
    assert rule.answered == first and rule.origin == "claude-code:updatedPermissions"
    assert rule.agent == "agent:bot" and rule.tool == "Bash" and rule.target == TOOLS + "Bash"
    assert rule.payload == {"command": "npm test"}
    assert signed.approval(tid, first)["state"] == "approved"  # rita's own decision
    again = signed.ask(tid, "Bash", {"command": "npm test", "timeout": 30})
    other = signed.ask(tid, "Bash", {"command": "npm publish"})
    assert signed.approval(tid, again)["state"] == "approved"
    assert signed.approval(tid, other)["state"] == "pending"
    assert signed.verify()[0] == 0


def test_verify_fails_a_rule_decision_the_record_does_not_prove(signed: Signed) -> None:
    tid = signed.task("t1")
    rule = _add(signed, tid, "--tool", "Read")
    signed.rita("rules", "revoke", rule.id, "--reason", "no more")
    approval_id = signed.ask(tid, "Read", {"path": "secret"})
    assert signed.approval(tid, approval_id)["state"] == "pending"
    # The agent writes the rule's decision itself, past the command layer (signed with its
    # own trusted key): the projection says approved, the record does not prove it.
    with signed.store.transaction() as tx:
        tx.emit(
            tid,
            ApprovalRuled(
                approval_id=approval_id,
                rule_id=rule.id,
                rule_task_id=tid,
                rule_seq=rule.seq,
                granted_by="rita",
                decision="approved",
            ),
            BOT,
        )
    assert signed.approval(tid, approval_id)["state"] == "approved"
    # Dispatch judges it by the record: refused.
    from store.errors import CommandRejected

    with pytest.raises(CommandRejected) as refused:
        signed.store.execute(
            lg.DispatchEffect(task_id=tid, effect_id="eff-1", executor="claude-code"), BOT
        )
    assert getattr(refused.value, "rule", None) == "approval_not_in_record"
    rc, problems = signed.verify()
    assert rc == 3
    mine = [p for p in problems if p["kind"] == "approval_decider"]
    assert len(mine) == 1 and rule.id in mine[0]["message"] and "revoked" in mine[0]["message"]
    assert mine[0]["actor"] == "agent:bot"


def test_always_from_the_cli_answers_a_pending_call_and_covers_its_session(
    signed: Signed,
) -> None:
    from store.commands.leases import AcquireLease, ReleaseLease

    tid = signed.task("t1")
    lease = signed.store.execute(
        AcquireLease(task_id=tid, session_id="sess-1", ttl_seconds=600), BOT
    )
    token = int(lease["token"])
    first = signed.ask(tid, "Edit", {"file_path": "src/a.py", "text": "x"}, lease_token=token)
    rule = StandingRule.model_validate(
        signed.rita(
            "rules", "add", tid, "--from-approval", first, "--scope", "session",
            "--field", "file_path", "--expires-in", "30m",
        )
    )  # fmt: skip
    assert rule.scope == "session" and rule.session_id == "sess-1" and rule.answered == first
    assert rule.payload == {"file_path": "src/a.py"} and rule.tool == "Edit"
    assert signed.approval(tid, first)["state"] == "approved"
    again = signed.ask(tid, "Edit", {"file_path": "src/a.py", "text": "y"}, lease_token=token)
    assert signed.approval(tid, again)["state"] == "approved"
    ruled = [e for e in signed.store.events(tid) if e["type"] == ApprovalRuled.TYPE]
    assert [e["payload"]["session_id"] for e in ruled] == ["sess-1"]
    # Another session of the same agent is not covered.
    signed.store.execute(ReleaseLease(task_id=tid, lease_token=token), BOT)
    lease = signed.store.execute(
        AcquireLease(task_id=tid, session_id="sess-2", ttl_seconds=600), BOT
    )
    other = signed.ask(
        tid, "Edit", {"file_path": "src/a.py", "text": "z"}, lease_token=int(lease["token"])
    )
    assert signed.approval(tid, other)["state"] == "pending"
    # --from-approval makes the rule from the call: what must match is named by --field.
    rc, _, err = signed.run(
        "--actor", "person:rita", "rules", "add", tid, "--from-approval", other, "--tool", "X"
    )
    assert rc == 2 and "--field" in err
    assert signed.verify()[0] == 0


def test_granting_a_rule_decides_the_calls_already_waiting_that_it_covers(
    signed: Signed,
) -> None:
    one, two = signed.task("t1"), signed.task("t2")
    waiting = [
        (one, signed.ask(one, "Read", {"path": "a"})),
        (two, signed.ask(two, "Read", {"path": "b"})),
        (two, signed.ask(two, "Write", {"path": "c"})),
    ]
    assert signed.ok("tasks")[0]["status"] == "awaiting_approval"
    rule = _add(signed, one, "--scope", "agent", "--agent", "agent:bot", "--tool", "Read")
    states = [signed.approval(t, a)["state"] for t, a in waiting]
    assert states == ["approved", "approved", "pending"]
    ruled = [e for e in signed.store.events(two) if e["type"] == ApprovalRuled.TYPE]
    assert [(e["actor"]["id"], e["payload"]["rule_id"]) for e in ruled] == [("rita", rule.id)]
    assert {r["id"]: r["status"] for r in signed.ok("tasks")}[one] == "running"
    # --leave-pending: a rule for later calls only.
    waiting_too = signed.ask(one, "Grep", {"pattern": "x"})
    _add(signed, one, "--tool", "Grep", "--leave-pending")
    assert signed.approval(one, waiting_too)["state"] == "pending"
    assert signed.approval(one, signed.ask(one, "Grep", {"pattern": "y"}))["state"] == "approved"
    # Each is dispatched once, and the record proves every one of them.
    signed.store.execute(lg.DispatchEffect(task_id=two, effect_id="eff-2", executor="x"), BOT)
    assert signed.verify()[0] == 0


def test_a_grant_no_trusted_persons_signature_proves_decides_nothing(signed: Signed) -> None:
    from store import store as store_module
    from store.commands.standing_rules import GrantStandingRule

    one, two = signed.task("t1"), signed.task("t2")
    # Written in rita's name straight into the database, past the signing of the write.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "seal", lambda *a: None)
        signed.store.execute(
            GrantStandingRule(
                task_id=one, scope="agent", agent="agent:bot", expires_in_seconds=600
            ),
            RITA,
        )
    asked = signed.ask(two, "Bash", {"command": "curl evil"})
    assert signed.approval(two, asked)["state"] == "pending"
    [rule] = signed.rules().rules
    assert not rule.proved and "not signed" in str(rule.why_unproved)
    # The agent's next write on t1 signs the grant with the agent's key: still not rita's.
    signed.ask(one, "Read", {"path": "x"})
    [rule] = signed.rules().rules
    assert not rule.proved and "not person:rita's trusted key" in str(rule.why_unproved)
    assert (
        signed.approval(two, signed.ask(two, "Bash", {"command": "curl evil"}))["state"]
        == "pending"
    )
