"""A person's standing rule decides the calls an agents' login asks, from the person's own
tick (issue 42, team stores).

PostgreSQL only, with the team's roles as `boris roles-sql` prints them (tests/test_team_roles
`team` fixture): the agent asks through the agents' login (the team MCP server's), which may
not write a rule's decision, so the call waits as it is asked; ana's process, through a
reviewers' login, records due escalations and decides it by her rule, in her name. Never a
revoked or expired rule, a reserved policy, a call asked before the rule, or another
person's rule; once however many of her processes tick. `boris verify` passes afterwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_routing_team import OLGA, TOOLS, _agent, _ask, _reviewer, _state, task  # noqa: F401
from test_team_roles import AGENT, PERSON, Team, team  # noqa: F401  (the fixtures)

from store import Actor, Store
from store.commands import CreateTask
from store.commands.effects import DispatchEffect
from store.commands.standing_rules import GrantStandingRule, ReservePolicy, RevokeStandingRule
from store.events import ApprovalRuled
from store.services import escalations
from store.services.standing_rules import list_standing_rules
from store.services.verify import verify


def _ruled(s: Store, task_id: str) -> list[dict[str, object]]:
    return [e for e in s.events(task_id) if e["type"] == ApprovalRuled.TYPE]


def _grant(
    s: Store, task_id: str, tool: str, seconds: float = 3600, by: Actor = PERSON, **kw: Any
) -> str:
    grant = GrantStandingRule(task_id=task_id, tool=tool, expires_in_seconds=seconds, **kw)
    return str(s.execute(grant, by))


def _verified(s: Store) -> None:
    report = verify(s, remember=False)
    assert report.ok, [p.line() for p in report.problems]


def test_the_persons_tick_decides_by_her_rule_what_the_agent_login_asked(
    team: Team,  # noqa: F811
    tmp_path: Path,
    task: str,  # noqa: F811
) -> None:
    with _reviewer(team, tmp_path) as s:
        rule = _grant(s, task, "Bash")
    with _agent(team, tmp_path) as s:
        apr = _ask(s, 1, "Bash")
        assert _state(s, apr) == "pending"  # the agents' login may not write the rule's decision
        # The agent's own tick (boris mcp's) decides nothing by a person's rule.
        assert escalations.rules_due_now(s, AGENT) == []
        assert escalations.escalate_due(s, AGENT) == []
        assert _state(s, apr) == "pending"
    with _reviewer(team, tmp_path) as s:
        assert escalations.rules_due_now(s, OLGA) == []  # not olga's rule
        assert escalations.rules_due_now(s, PERSON) == [f"{task}/{apr}"]
        assert escalations.escalate_due(s, PERSON) == [f"{task}/{apr}"]
        assert escalations.escalate_due(s, PERSON) == []  # once
        assert _state(s, apr) == "approved"
        [ruled] = _ruled(s, task)
        assert ruled["payload"]["rule_id"] == rule
        assert ruled["payload"]["approval_id"] == apr
        assert ruled["payload"]["granted_by"] == PERSON.id
        assert ruled["actor"]["id"] == PERSON.id  # written by the rule's person
        _verified(s)
    # The agent runs the call its approval allows (dispatch judges the rule's decision again).
    with _agent(team, tmp_path) as s:
        assert s.execute(
            DispatchEffect(task_id=task, effect_id="eff-1", executor="tool:Bash"), AGENT
        )
    # A later call of the same kind waits again until the next tick.
    with _agent(team, tmp_path) as s:
        second = _ask(s, 2, "Bash")
        assert _state(s, second) == "pending"
    with _reviewer(team, tmp_path) as s:
        assert escalations.escalate_due(s, PERSON) == [f"{task}/{second}"]
        assert _state(s, second) == "approved"
        _verified(s)


def test_no_tick_decides_after_revocation_or_expiry_a_reserved_policy_or_an_earlier_call(
    team: Team,  # noqa: F811
    tmp_path: Path,
    task: str,  # noqa: F811
) -> None:
    with _agent(team, tmp_path) as s:
        before = _ask(s, 0, "Grep")  # asked before any rule covering it
    with _reviewer(team, tmp_path) as s:
        _grant(s, task, "Grep", decide_pending=False)  # "only later calls"
        revoked = _grant(s, task, "Bash")
        expiring = _grant(s, task, "Read", seconds=4)
        _grant(s, task, "Deploy")
    with _agent(team, tmp_path) as s:
        bash = _ask(s, 1, "Bash")
        read = _ask(s, 2, "Read")
        deploy = _ask(s, 3, "Deploy", policy="deploys")
    with _reviewer(team, tmp_path) as s:
        # Until then her tick would decide each of them, but never the earlier call.
        due = escalations.rules_due_now(s, PERSON)
        assert sorted(due) == sorted(f"{task}/{a}" for a in (bash, read, deploy))
        s.execute(RevokeStandingRule(rule_id=revoked, reason="enough"), PERSON)
        s.execute(ReservePolicy(policy="deploys"), PERSON)  # people decide it every time
        [rule] = [r for r in list_standing_rules(s).rules if r.id == expiring]
        while s.now() <= rule.expires_at:
            time.sleep(0.1)
        assert escalations.rules_due_now(s, PERSON) == []
        assert escalations.escalate_due(s, PERSON) == []
        for apr in (before, bash, read, deploy):
            assert _state(s, apr) == "pending", apr
        assert _ruled(s, task) == []
        _verified(s)


def test_two_processes_of_hers_ticking_at_once_decide_each_call_once(
    team: Team,  # noqa: F811
    tmp_path: Path,
    task: str,  # noqa: F811
) -> None:
    with _reviewer(team, tmp_path) as s:
        _grant(s, task, "Bash")
    with _agent(team, tmp_path) as s:
        asked = [_ask(s, n, "Bash") for n in range(3)]
    stores = [Store.open(tmp_path / f"ticker{n}", url=team.reviewer_url) for n in range(2)]
    start = threading.Barrier(len(stores))
    got: list[list[str]] = []

    def tick(s: Store) -> None:
        start.wait()
        got.append(escalations.escalate_due(s, PERSON))

    threads = [threading.Thread(target=tick, args=(s,)) for s in stores]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    try:
        assert sorted(k for done in got for k in done) == sorted(f"{task}/{a}" for a in asked)
        ruled = _ruled(stores[0], task)
        assert sorted(str(e["payload"]["approval_id"]) for e in ruled) == sorted(asked)
        assert all(_state(stores[0], a) == "approved" for a in asked)
        _verified(stores[0])
    finally:
        for s in stores:
            s.close()


def test_an_older_rule_of_another_person_decides_first_and_hers_waits(
    team: Team,  # noqa: F811
    tmp_path: Path,
    task: str,  # noqa: F811
) -> None:
    """The oldest covering rule decides, as when the call is asked on SQLite: olga's older
    rejecting rule is hers to apply; ana's tick leaves it, olga's rejects it."""
    with _reviewer(team, tmp_path) as s:
        _grant(s, task, "Bash", verdict="rejected", by=OLGA)
        _grant(s, task, "Bash")
    with _agent(team, tmp_path) as s:
        apr = _ask(s, 1, "Bash")
    with _reviewer(team, tmp_path) as s:
        assert escalations.escalate_due(s, PERSON) == []
        assert _state(s, apr) == "pending"
        assert escalations.escalate_due(s, OLGA) == [f"{task}/{apr}"]
        assert _state(s, apr) == "rejected"
        [ruled] = _ruled(s, task)
        assert ruled["actor"]["id"] == OLGA.id
        _verified(s)


def test_on_sqlite_the_rule_decides_as_the_call_is_asked_and_no_tick_finds_anything(
    tmp_path: Path,
) -> None:
    with Store.open(tmp_path / "lite") as s:
        s.execute(
            CreateTask(
                task_id="t1", title="ship", owner="ana", objective="ship it", destinations=[TOOLS]
            ),
            AGENT,
        )
        _grant(s, "t1", "Bash")
        apr = _ask(s, 1, "Bash")
        assert _state(s, apr) == "approved"  # as it was asked, by the agent's own command
        [ruled] = _ruled(s, "t1")
        assert ruled["actor"]["id"] == AGENT.id
        assert escalations.rules_due_now(s, PERSON) == []
        assert escalations.escalate_due(s, PERSON) == []
        assert len(_ruled(s, "t1")) == 1
        _verified(s)


def _at_once(*works: Callable[[], object]) -> list[BaseException]:
    """Run each in a thread of its own, started together; what they raised."""
    start = threading.Barrier(len(works))
    failed: list[BaseException] = []

    def run(work: Callable[[], object]) -> None:
        start.wait()
        try:
            work()
        except BaseException as exc:  # told to the caller
            failed.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in works]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    return failed


def test_a_revocation_at_the_same_moment_as_her_tick_leaves_no_decision_after_it(
    team: Team,  # noqa: F811
    tmp_path: Path,
    task: str,  # noqa: F811
) -> None:
    """Her tick and her revocation from another process at once, a few rounds: both finish
    (neither waits on the other in a circle), and every decision by the rule is before its
    revocation on the record, as verify judges it."""
    stores = [Store.open(tmp_path / f"p{n}", url=team.reviewer_url) for n in range(2)]
    try:
        for n in range(3):
            rule = _grant(stores[0], task, f"Tool{n}")
            with _agent(team, tmp_path) as s:
                for m in range(2):
                    _ask(s, 10 * n + m, f"Tool{n}")
            revoke = RevokeStandingRule(rule_id=rule, reason="enough")
            failed = _at_once(
                lambda: escalations.escalate_due(stores[0], PERSON),
                lambda: stores[1].execute(revoke, PERSON),  # noqa: B023  (run in this round)
            )
            assert failed == []
            events = stores[0].events(task)
            [revoked] = [
                e for e in events
                if e["type"] == "rule.revoked" and e["payload"]["rule_id"] == rule
            ]  # fmt: skip
            for e in _ruled(stores[0], task):
                if e["payload"]["rule_id"] == rule:
                    assert e["seq"] < revoked["seq"] and e["at"] <= revoked["at"]
        assert escalations.escalate_due(stores[0], PERSON) == []  # revoked, all of them
        _verified(stores[0])
    finally:
        for s in stores:
            s.close()
