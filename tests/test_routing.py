"""Routing (issue 42): a policy names who decides its requests, how many, and when they
escalate; enforced by the store, recorded as events, shown in the decision view.

On a signed store as `boris init` makes it, on both engines: rita sets the routes and groups
with the real `boris route` command; olga and ben decide with their own trusted keys; the agent
asks through the store's Python API as an adapter does. The escalation fires on the database
clock, `boris route escalate` records it, and `boris verify` accepts the record."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from test_standing_rules import TOOLS, Signed, signed  # noqa: F401  (the fixture)

from store import Store
from store.commands import effects as lg
from store.events import ApprovalEscalated, ApprovalRouted
from store.reads.decision_views import approval_decision

BOT_EXECUTOR = "claude-code"


class Team:
    """rita (the store's root), and ben and olga with keys rita trusts."""

    def __init__(self, s: Signed, tmp_path: Path) -> None:
        self.s = s
        self.keys: dict[str, Path] = {}
        for who in ("ben", "olga"):
            key = tmp_path / f"{who}.pem"
            s.run("--actor", f"person:{who}", "keys", "new", str(key))
            rc, _, err = s.run(
                "--actor", "person:rita", "keys", "add", str(key), "--for", f"person:{who}"
            )
            assert rc == 0, err
            self.keys[who] = key

    def as_(self, who: str, *argv: str) -> tuple[int, str, str]:
        key = ["--key", str(self.keys[who])] if who in self.keys else []
        return self.s.run("--actor", f"person:{who}", *key, *argv)

    def approve(self, who: str, task_id: str, approval_id: str) -> tuple[int, dict]:
        rc, out, _ = self.as_(who, "approve", task_id, approval_id, "--json")
        return rc, json.loads(out)


@pytest.fixture
def team(signed: Signed, tmp_path: Path) -> Team:  # noqa: F811
    return Team(signed, tmp_path)


def _view(store: Store, task_id: str, approval_id: str):
    with store.read() as conn:
        from store import db

        return approval_decision(conn, store.blobs, task_id, approval_id, db.database_now(conn))


def test_a_routed_request_waits_on_its_group_then_escalates_on_the_database_clock(
    signed: Signed,  # noqa: F811
    team: Team,
) -> None:
    tid = signed.task("t1")
    signed.rita("route", "group", "release", "--member", "person:rita", "--member", "person:ben")
    signed.rita(
        "route", "set", "deploys", "--decider", "group:release",
        "--escalate-after", "0.05", "--escalate-to", "person:olga",
    )  # fmt: skip
    listed = signed.ok("route", "list")
    assert listed["groups"] == [
        {"name": "release", "members": ["rita", "ben"], "set_by": "person:rita",
         "set_at": listed["groups"][0]["set_at"]}
    ]  # fmt: skip
    assert listed["policies"][0]["escalate_to"] == ["person:olga"]

    aid = signed.ask(tid, "Deploy", {"env": "prod"}, policy="deploys")
    routed = [e["payload"] for e in signed.store.events(tid) if e["type"] == ApprovalRouted.TYPE]
    assert routed[0]["deciders"] == ["rita", "ben"] and routed[0]["escalate_to"] == ["olga"]
    view = _view(signed.store, tid, aid)
    assert view.routing is not None
    assert view.routing.startswith("waiting on group:release (rita, ben); escalates to")
    assert "person:olga" in view.routing

    # Olga may not decide it yet: it is routed to the release group.
    rc, answer = team.approve("olga", tid, aid)
    assert rc == 1 and answer["error"]["rule"] == "routed_to_named_people"
    assert "group:release" in answer["error"]["message"]
    assert signed.rita("route", "escalate") == []  # nothing due yet

    time.sleep(3.2)  # past its escalation time on the database clock
    assert signed.rita("route", "escalate") == [f"{tid}/{aid}"]
    assert signed.rita("route", "escalate") == []  # once
    escalated = [e for e in signed.store.events(tid) if e["type"] == ApprovalEscalated.TYPE]
    assert [(e["payload"]["to"], e["payload"]["why"]) for e in escalated] == [
        (["olga"], "unanswered")
    ]
    assert "escalated to person:olga" in str(_view(signed.store, tid, aid).routing)
    rc, answer = team.approve("olga", tid, aid)
    assert rc == 0 and answer["result"] == "approved"
    signed.store.execute(lg.DispatchEffect(task_id=tid, effect_id="eff-1", executor="x"), _bot())
    assert signed.verify()[0] == 0


def _bot():
    from test_standing_rules import BOT

    return BOT


def test_a_quorum_of_the_group_and_no_standing_rule_decides_a_routed_request(
    signed: Signed,  # noqa: F811
    team: Team,
) -> None:
    tid = signed.task("t1")
    signed.rita("rules", "add", tid)  # would cover anything: it does not cover routed requests
    signed.rita("route", "group", "release", "--member", "person:rita", "--member", "person:ben")
    signed.rita("route", "set", "payments", "--decider", "group:release", "--approvers", "2")
    aid = signed.ask(tid, "Pay", {"amount": 1200}, policy="payments")
    assert signed.approval(tid, aid)["state"] == "pending"
    assert team.approve("rita", tid, aid)[1]["result"] == "pending"  # 1 of 2
    rc, answer = team.approve("olga", tid, aid)
    assert rc == 1 and answer["error"]["rule"] == "routed_to_named_people"
    assert team.approve("ben", tid, aid)[1]["result"] == "approved"
    signed.store.execute(lg.DispatchEffect(task_id=tid, effect_id="eff-1", executor="x"), _bot())
    assert signed.verify()[0] == 0


def test_on_expiry_escalate_moves_the_expiry_on_and_widens_who_decides(
    signed: Signed,  # noqa: F811
    team: Team,
) -> None:
    tid = signed.task("t1")
    signed.rita(
        "route", "set", "nightly", "--decider", "person:ben",
        "--escalate-to", "person:olga", "--on-expiry", "escalate",
    )  # fmt: skip
    aid = signed.ask(tid, "Restart", {"service": "db"}, policy="nightly", expires_in_seconds=2)
    time.sleep(2.2)
    rc, answer = team.approve("olga", tid, aid)
    assert rc == 1 and "expired" in answer["error"]["message"]
    assert signed.rita("route", "escalate") == [f"{tid}/{aid}"]
    row = signed.approval(tid, aid)
    assert row["state"] == "pending" and row["expires_at"] > signed.ok("rules", "list")["now"]
    rc, answer = team.approve("olga", tid, aid)
    assert rc == 0 and answer["result"] == "approved"
    signed.store.execute(lg.DispatchEffect(task_id=tid, effect_id="eff-1", executor="x"), _bot())
    assert signed.verify()[0] == 0


def test_only_people_the_keyring_trusts_are_routed_to_and_only_a_person_routes(
    signed: Signed,  # noqa: F811
    team: Team,
) -> None:
    rc, _, err = signed.run(
        "--actor", "person:rita", "route", "set", "p", "--decider", "person:zed"
    )
    assert rc == 1 and "person:zed holds no key the keyring trusts" in err
    rc, _, err = signed.run(
        "--actor", "agent:bot", "--key", str(signed.agent_key), "route", "set", "p",
        "--decider", "person:ben",
    )  # fmt: skip
    assert rc == 1 and "only a person routes a policy" in err
    rc, _, err = signed.run("--actor", "person:rita", "route", "set", "p", "--decider", "group:x")
    assert rc == 1 and "no group:x" in err
    assert signed.ok("route", "list") == {"policies": [], "groups": []}


def test_verify_fails_a_decision_by_someone_not_routed_to_and_an_early_escalation(
    signed: Signed,  # noqa: F811
    team: Team,
) -> None:
    from test_standing_rules import BOT

    from store.events import ApprovalDecided
    from store.model import Actor
    from store.signing.keys import load_key

    tid = signed.task("t1")
    signed.rita(
        "route", "set", "deploys", "--decider", "person:ben",
        "--escalate-after", "60", "--escalate-to", "person:olga",
    )  # fmt: skip
    aid = signed.ask(tid, "Deploy", {"env": "prod"}, policy="deploys")
    # The agent records the escalation itself, an hour early; then olga approves, past the
    # command layer, each signed with their own trusted key.
    with signed.store.transaction() as tx:
        tx.emit(tid, ApprovalEscalated(approval_id=aid, to=("olga",), why="unanswered"), BOT)
    signed.store.signer = load_key(team.keys["olga"])
    with signed.store.transaction() as tx:
        tx.emit(
            tid,
            ApprovalDecided(approval_id=aid, decision="approved"),
            Actor(kind="person", id="olga"),
        )
    signed.store.signer = load_key(signed.agent_key)
    rc, problems = signed.verify()
    assert rc == 3
    mine = sorted((p["rule"], p["actor"]) for p in problems if p["kind"] == "approval_decider")
    assert mine == [("escalation_when_due", "agent:bot"), ("routed_to_named_people", "person:olga")]
    # Dispatch does not take olga's approval either: the request is ben's until escalated.
    from store.errors import CommandRejected

    with pytest.raises(CommandRejected):
        signed.store.execute(lg.DispatchEffect(task_id=tid, effect_id="eff-1", executor="x"), BOT)
