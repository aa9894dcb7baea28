"""Routing and standing rules on a team store (issue 42): an agent's login writes no state a
person or a person's rule decides — a standing rule, a routing policy or group, an approval
decided in a person's name or by a rule — and the server itself refuses it, whatever the
actor named. What the agent's login does write stays open: its requests (routed, recorded
with their route) and the escalations that come due while it waits.

PostgreSQL only, with the team's roles as `boris roles-sql` prints them (tests/test_team_roles
`team` fixture): the agents' writer is the login of the team's MCP server (the service role);
ana decides through a reviewers' login."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from test_team_roles import AGENT, PERSON, Team, team  # noqa: F401  (the fixture)

from store import Actor, RoleRefused, Store
from store import commands as c
from store import schema as t
from store.commands import approvals as ap
from store.commands import effects as lg
from store.commands.routing import SetGroup, SetRoute
from store.commands.standing_rules import GrantStandingRule, RevokeStandingRule
from store.events import ApprovalRuled, FileState
from store.services import escalations

TOOLS = "claude-code://tools/"
OLGA = Actor(kind="person", id="olga")


def _agent(team: Team, tmp_path: Path) -> Store:  # noqa: F811
    return Store.open(tmp_path / "agent", url=team.agent_url)


def _reviewer(team: Team, tmp_path: Path) -> Store:  # noqa: F811
    return Store.open(tmp_path / "reviewer", url=team.reviewer_url)


def _ask(s: Store, n: int, tool: str, policy: str = "tools") -> str:
    """The agent plans a tool call and asks for its approval, as an adapter does."""
    s.execute_all(
        [
            lg.PlanEffect(
                task_id="t1", effect_id=f"eff-{n}", kind="other", target=TOOLS + tool,
                prepared={"n": n}, intended=FileState(exists=True, digest="sha256:" + "0" * 64),
                requires_approval=True, consequence=f"runs {tool}", idempotency_key=f"k{n}",
            ),
            ap.RequestApproval(
                task_id="t1", approval_id=f"apr-{n}", effect_id=f"eff-{n}", policy=policy
            ),
        ],
        AGENT,
    )  # fmt: skip
    return f"apr-{n}"


def _state(s: Store, approval_id: str) -> str:
    return str(next(a for a in s.task("t1")["approvals"] if a["id"] == approval_id)["state"])


def _meta(team: Team) -> dict[str, str]:  # noqa: F811
    engine = sa.create_engine(team.owner_url)
    try:
        with engine.connect() as conn:
            return {str(k): str(v) for k, v in conn.execute(sa.select(t.store_meta))}
    finally:
        engine.dispose()


@pytest.fixture
def task(team: Team, tmp_path: Path) -> str:  # noqa: F811
    create = c.CreateTask(
        task_id="t1", title="ship", owner="ana", objective="ship it", destinations=[TOOLS]
    )
    with _agent(team, tmp_path) as s:
        return str(s.execute(create, AGENT))


def test_an_agent_login_writes_no_rule_no_route_and_no_persons_decision(
    team: Team,  # noqa: F811
    tmp_path: Path,
    task: str,
) -> None:
    with _agent(team, tmp_path) as s:
        apr = _ask(s, 1, "Bash")
        before_meta, before_seq = _meta(team), s.task(task)["last_seq"]
        refused = {
            "a standing rule": GrantStandingRule(
                task_id=task, tool="Bash", expires_in_seconds=3600
            ),
            "a routing policy": SetRoute(policy="tools", deciders=["person:ana"]),
            "a group": SetGroup(name="release", members=["person:ana"]),
            "a person's decision": ap.DecideApproval(
                task_id=task, approval_id=apr, decision="approved"
            ),
        }
        for what, command in refused.items():
            with pytest.raises(RoleRefused) as info:
                s.execute(command, PERSON)  # the actor a writer names is only a claim
            assert info.value.role == team.agent_login, what
        # A rule's decision, forged past the command layer: the server refuses the approved
        # state it would write (no rule of a person's stands behind it).
        with pytest.raises(RoleRefused) as info, s.transaction() as tx:
            tx.emit(
                task,
                ApprovalRuled(
                    approval_id=apr, rule_id="rule-x", rule_task_id=task, rule_seq=1,
                    granted_by="ana", decision="approved",
                ),
                AGENT,
            )  # fmt: skip
        assert info.value.rule == "persons_decision_needs_reviewer_role"
        assert _meta(team) == before_meta
        assert s.task(task)["last_seq"] == before_seq
        assert _state(s, apr) == "pending"

    # Through a reviewers' login, the same person's commands are recorded.
    with _reviewer(team, tmp_path) as s:
        rule = s.execute(
            GrantStandingRule(
                task_id=task, tool="Bash", expires_in_seconds=3600, decide_pending=False
            ),
            PERSON,
        )
        s.execute(RevokeStandingRule(rule_id=rule, reason="done"), PERSON)
        s.execute(SetGroup(name="release", members=["person:ana"]), PERSON)
        s.execute(ap.DecideApproval(task_id=task, approval_id=apr, decision="approved"), PERSON)
        assert _state(s, apr) == "approved"


def test_a_call_a_persons_rule_covers_waits_for_a_person_when_an_agent_login_asks(
    team: Team,  # noqa: F811
    tmp_path: Path,
    task: str,
) -> None:
    """The rule's decision would be state an agent's login cannot write: the call is asked
    for and waits, never half-written nor refused; a reviewers' login decides it."""
    with _reviewer(team, tmp_path) as s:
        s.execute(GrantStandingRule(task_id=task, tool="Bash", expires_in_seconds=3600), PERSON)
    with _agent(team, tmp_path) as s:
        apr = _ask(s, 1, "Bash")
        assert _state(s, apr) == "pending"
        assert not [e for e in s.events(task) if e["type"] == ApprovalRuled.TYPE]
    with _reviewer(team, tmp_path) as s:
        s.execute(ap.DecideApproval(task_id=task, approval_id=apr, decision="approved"), PERSON)
        assert _state(s, apr) == "approved"


def test_a_routed_request_escalates_while_the_agent_login_waits(
    team: Team,  # noqa: F811
    tmp_path: Path,
    task: str,
) -> None:
    """Routing is a person's (a reviewers' login); the agent's login records its request's
    route and, once due on the database clock, its escalation (what `boris mcp` does while
    an agent waits), once; the escalation's person decides it."""
    with _reviewer(team, tmp_path) as s:
        s.execute(
            SetRoute(policy="deploys", deciders=["person:ana"], escalate_after_minutes=0.02,
                     escalate_to=["person:olga"]),
            PERSON,
        )  # fmt: skip
    with _agent(team, tmp_path) as s:
        apr = _ask(s, 1, "Deploy", policy="deploys")
        at = escalations.next_due(s)
        assert at is not None
        while s.now() <= at:
            time.sleep(0.05)
        assert escalations.escalate_due(s, AGENT) == [f"{task}/{apr}"]
        assert escalations.escalate_due(s, AGENT) == []
        escalated = [e for e in s.events(task) if e["type"] == "approval.escalated"]
        assert [(e["payload"]["to"], e["actor"]["id"]) for e in escalated] == [(["olga"], AGENT.id)]
    with _reviewer(team, tmp_path) as s:
        s.execute(ap.DecideApproval(task_id=task, approval_id=apr, decision="approved"), OLGA)
        assert _state(s, apr) == "approved"
