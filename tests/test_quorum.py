"""Two approvers (issue 32): a policy may need several distinct people.

The number comes from the store's policy, set by a person (`set_approval_policy`), and a
request may ask for more, never fewer. An approval stays pending ("1 of 2 approved by
maria") until enough distinct people approved the object it binds; one person counts once;
a rejection or a send-back by any one ends it; dispatch needs the quorum, in the table and
in the log. Each test runs on both engines (the `store` fixture).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_team_roles import Team, team  # noqa: F401  (the team roles fixture)

from store import Actor, CommandRejected, Store
from store import commands as c
from store import schema as t
from store.canonical import digest_of
from store.commands.approvals import DecideApproval, RequestApproval, SetApprovalPolicy
from store.commands.effects import DispatchEffect, PlanEffect
from store.errors import AlreadyApproved, AuthorityRefused
from store.reads.decisions import open_decisions
from store.services.verify import verify

AGENT = Actor(kind="agent", id="writer-7")
MARIA = Actor(kind="person", id="maria", name="Maria Rossi")
BEN = Actor(kind="person", id="ben", name="Ben Ode")
OWNER = Actor(kind="person", id="owner")
POLICY = "payments need two people"
EMAIL = {"to": ["team@example.org"], "subject": "Invoice", "body": "Pay 1200 EUR."}
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tid(s: Store, ws: Path) -> str:
    task: str = s.execute(
        c.CreateTask(
            title="pay",
            owner="maria",
            objective="send the invoice",
            scope_paths=[str(ws)],
            destinations=["mailto:team@example.org"],
        ),
        AGENT,
    )
    return task


def _mail(s: Store, tid: str) -> str:
    eid: str = s.execute(
        PlanEffect(
            task_id=tid,
            kind="send",
            target="mailto:team@example.org",
            consequence="send the invoice to the team",
            intended={"exists": True},
            prepared=EMAIL,
            requires_approval=True,
            policy=POLICY,
        ),
        AGENT,
    )
    return eid


def _ask(s: Store, tid: str, eid: str, approvers: int | None = None) -> str:
    aid: str = s.execute(
        RequestApproval(task_id=tid, effect_id=eid, policy=POLICY, approvers=approvers), AGENT
    )
    return aid


def _approve(s: Store, tid: str, aid: str, who: Actor, **kw: Any) -> None:
    s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved", **kw), who)


def _row(s: Store, tid: str, aid: str) -> dict[str, Any]:
    return next(a for a in s.task(tid)["approvals"] if a["approval_id"] == aid)


def _dispatch(s: Store, tid: str, eid: str) -> int:
    n: int = s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="mailer"), AGENT)
    return n


@pytest.fixture
def two(s: Store) -> None:
    """The store's owner says: this policy needs two people."""
    s.execute(SetApprovalPolicy(policy=POLICY, approvers=2), OWNER)


def test_two_of_two_stays_pending_until_the_second_person_and_dispatch_waits(
    s: Store, tid: str, two: None
) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid)
    assert _row(s, tid, aid)["approvers"] == 2

    _approve(s, tid, aid, MARIA)
    row = _row(s, tid, aid)
    assert row["state"] == "pending"
    assert [a["id"] for a in row["approved_by"]] == ["maria"]
    view = s.approval_decision(tid, aid)
    assert view.decidable and view.quorum == "1 of 2 approved by maria"
    assert view.next_approval() == "2nd of 2" and view.approved_already("maria")
    assert view.next_approval(edited=True) == "1st of 2"
    why = next(d["why"] for d in open_decisions_of(s) if d["key"] == aid)
    assert why.startswith("1 of 2 approved by maria")
    with pytest.raises(CommandRejected, match="1 of 2 approved by maria"):
        _dispatch(s, tid, eid)

    _approve(s, tid, aid, BEN)
    row = _row(s, tid, aid)
    assert row["state"] == "approved"
    assert [a["id"] for a in row["approved_by"]] == ["maria", "ben"]
    assert row["decided_by"]["id"] == "ben"
    assert s.task(tid)["effects"][0]["stage"] == "approved"
    assert _dispatch(s, tid, eid) == 1
    assert _row(s, tid, aid)["state"] == "consumed"


def open_decisions_of(s: Store) -> list[dict[str, Any]]:
    with s.read() as conn:
        return open_decisions(conn, s.now(), s.blobs)


def test_the_same_person_twice_is_refused_and_counts_once(s: Store, tid: str, two: None) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid)
    _approve(s, tid, aid, MARIA)
    with pytest.raises(AlreadyApproved) as refused:
        _approve(s, tid, aid, MARIA)
    assert refused.value.code == "already_approved"
    assert refused.value.rule == "one_person_counts_once"
    assert "1 of 2 approved by maria" in str(refused.value)
    assert _row(s, tid, aid)["state"] == "pending"
    decided = [e for e in s.events(tid) if e["type"] == "approval.decided"]
    assert len(decided) == 1


@pytest.mark.parametrize("ending", ["rejected", "sent_back"])
def test_a_rejection_or_send_back_by_any_one_ends_it(
    s: Store, tid: str, two: None, ending: str
) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid)
    _approve(s, tid, aid, MARIA)
    s.execute(
        DecideApproval(task_id=tid, approval_id=aid, decision=ending, note="not this amount"),
        BEN,
    )
    assert _row(s, tid, aid)["state"] == ending
    with pytest.raises(CommandRejected, match="cannot be decided"):
        _approve(s, tid, aid, OWNER)
    with pytest.raises(CommandRejected, match="no usable approval"):
        _dispatch(s, tid, eid)


def test_an_agent_cannot_lower_the_quorum_nor_set_a_policy(s: Store, tid: str, two: None) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid, approvers=1)
    assert _row(s, tid, aid)["approvers"] == 2  # the policy's number holds
    requested = next(e for e in s.events(tid) if e["type"] == "approval.requested")
    assert requested["payload"]["approvers"] == 2
    more = _ask(s, tid, _mail(s, tid), approvers=3)  # asking for more is the agent's right
    assert _row(s, tid, more)["approvers"] == 3
    with pytest.raises(AuthorityRefused):
        s.execute(SetApprovalPolicy(policy=POLICY, approvers=1), AGENT)
    with pytest.raises(ValueError):
        RequestApproval(task_id=tid, effect_id=eid, policy=POLICY, approvers=0)


def test_a_policy_raised_after_the_request_counts_at_the_next_decision(s: Store, tid: str) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid)  # no policy yet: one person would do
    assert _row(s, tid, aid)["approvers"] == 1
    s.execute(SetApprovalPolicy(policy=POLICY, approvers=2), OWNER)
    _approve(s, tid, aid, MARIA)
    assert _row(s, tid, aid)["state"] == "pending"
    assert _row(s, tid, aid)["approvers"] == 2
    decided = next(e for e in s.events(tid) if e["type"] == "approval.decided")
    assert decided["payload"]["needed"] == 2
    _approve(s, tid, aid, BEN)
    assert _dispatch(s, tid, eid) == 1


def test_an_edit_makes_a_new_object_and_only_approvals_of_it_count(
    s: Store, tid: str, two: None
) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid)
    _approve(s, tid, aid, MARIA)
    edited = {**EMAIL, "body": "Pay 1100 EUR."}
    _approve(s, tid, aid, BEN, edited=edited)
    row = _row(s, tid, aid)
    assert row["state"] == "pending"  # maria approved the old object, not this one
    assert [a["id"] for a in row["approved_by"]] == ["ben"]
    assert row["payload_digest"] == digest_of(edited)
    _approve(s, tid, aid, MARIA)
    assert _row(s, tid, aid)["state"] == "approved"
    n = s.execute(
        DispatchEffect(task_id=tid, effect_id=eid, executor="mailer", inputs=edited), AGENT
    )
    assert n == 1


def test_the_log_decides_a_table_that_claims_the_quorum_is_refused(
    s: Store, tid: str, two: None
) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid)
    _approve(s, tid, aid, MARIA)
    with s.transaction() as tx:  # a hand-made row: the table says approved, the log 1 of 2
        tx.conn.execute(
            t.approvals.update().where(t.approvals.c.approval_id == aid).values(state="approved")
        )
    with pytest.raises(CommandRejected, match="1 of 2 approved by maria") as refused:
        _dispatch(s, tid, eid)
    assert refused.value.rule == "approval_not_in_record"


def test_rebuild_from_events_equals_the_incremental_rows(s: Store, tid: str, two: None) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid)
    _approve(s, tid, aid, MARIA)
    other = _ask(s, tid, _mail(s, tid), approvers=3)
    _approve(s, tid, other, BEN, edited={**EMAIL, "subject": "Invoice (edited)"})
    _approve(s, tid, other, MARIA)
    _approve(s, tid, aid, BEN)
    before = s.projection_dump(tid)
    s.rebuild(tid)
    assert s.projection_dump(tid) == before
    rows = {a["approval_id"]: a for a in s.task(tid)["approvals"]}
    assert rows[aid]["state"] == "approved" and rows[other]["state"] == "pending"
    # Several people's decisions of one request are what the commands allow: verify agrees.
    assert verify(s).ok, verify(s).problems


def _boris(store_dir: Path, url: str | None, *args: str, actor: str = "") -> Any:
    cmd = [sys.executable, "-m", "store.cli", "--store", str(store_dir), "--json"]
    cmd += ["--url", url] if url else []
    cmd += ["--actor", actor] if actor else []
    done = subprocess.run(
        [*cmd, *args], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    return done.returncode, json.loads(done.stdout)


def test_the_cli_sets_a_policy_and_asks_for_more(
    s: Store, tid: str, store_dir: Path, store_url: str | None
) -> None:
    code, out = _boris(
        store_dir, store_url, "policy", "set", POLICY, "--approvers", "2", actor="person:owner"
    )
    assert (code, out["result"]) == (0, 2)
    code, out = _boris(store_dir, store_url, "policy", "list")
    assert code == 0 and out["result"][0]["policy"] == POLICY
    assert out["result"][0]["approvers"] == 2
    code, out = _boris(
        store_dir, store_url, "policy", "set", POLICY, "--approvers", "1", actor="agent:writer-7"
    )
    assert code == 1 and out["error"]["code"] == "authority_refused"
    eid = _mail(s, tid)
    code, out = _boris(
        store_dir,
        store_url,
        "request-approval",
        tid,
        "--effect",
        eid,
        "--policy",
        POLICY,
        "--approvers",
        "3",
        actor="agent:writer-7",
    )
    assert code == 0
    assert _row(s, tid, out["result"])["approvers"] == 3
    _approve(s, tid, out["result"], MARIA)
    code, out2 = _boris(store_dir, store_url, "approve", tid, out["result"], actor="person:maria")
    assert code == 1 and out2["error"]["code"] == "already_approved"


def test_over_mcp_an_agent_asks_under_the_policy_and_waits_for_the_quorum(
    s: Store, tid: str, two: None
) -> None:
    import anyio

    from store.mcp import tools
    from store.mcp.server import BorisServer

    server = BorisServer(s, AGENT)

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        answer: dict[str, Any] = anyio.run(server.call, name, arguments)
        return answer

    assert "set_approval_policy" not in {spec.name for spec in tools.tool_specs(60)}
    eid = _mail(s, tid)
    asked = call("request_approval", task_id=tid, effect_id=eid, policy=POLICY, approvers=1)
    aid = asked["result"]
    assert _row(s, tid, aid)["approvers"] == 2
    _approve(s, tid, aid, MARIA)
    waited = call("wait_for_approval", task_id=tid, approval_id=aid, timeout_seconds=0)
    result = waited["result"]
    assert (result["state"], result["decided"]) == ("pending", False)
    assert (result["approvers"], result["approved_by"]) == (2, ["maria"])
    refused = call("set_approval_policy", policy=POLICY, approvers=1)
    assert refused["ok"] is False


def test_verify_names_a_log_where_one_person_approved_twice() -> None:
    from store import rules

    twice = [("approved", "maria", False, None), ("approved", "maria", False, None)]
    assert rules.why_decided_again(twice, 2) == "maria approved it twice; one person counts once"
    two = [("approved", "maria", False, None), ("approved", "ben", False, None)]
    assert rules.why_decided_again(two, 2) is None
    assert "settled" in str(rules.why_decided_again(two, 1))
    edited = [("approved", "maria", False, None), ("approved", "maria", True, None)]
    assert rules.why_decided_again(edited, 2) is None  # an edit is a new object
    after = [("rejected", "ben", False, None), ("approved", "maria", False, None)]
    assert "settled" in str(rules.why_decided_again(after, 2))


def test_on_a_team_store_only_a_reviewers_login_sets_a_policy(
    team: Team,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
) -> None:
    """An agents' login cannot set a policy even naming a person: its role only reads the
    store's settings (store.team); a reviewer's login sets it, and the agent's request
    under it needs two people whatever it asks."""
    with Store.open(tmp_path / "agent", url=team.agent_url) as agent:
        with pytest.raises(CommandRejected) as refused:
            agent.execute(SetApprovalPolicy(policy=POLICY, approvers=1), OWNER)
        assert refused.value.category == "refused"
    with Store.open(tmp_path / "reviewer", url=team.reviewer_url) as reviewer:
        assert reviewer.execute(SetApprovalPolicy(policy=POLICY, approvers=2), OWNER) == 2
    with Store.open(tmp_path / "agent", url=team.agent_url) as agent:
        tid = agent.execute(
            c.CreateTask(title="pay", owner="maria", objective="pay", scope_paths=[]), AGENT
        )
        aid = agent.execute(
            RequestApproval(
                task_id=tid, payload=EMAIL, consequence="pay", policy=POLICY, approvers=1
            ),
            AGENT,
        )
        assert _row(agent, tid, aid)["approvers"] == 2
