"""Who may decide, enforced by the database: a team store's agents' and reviewers' roles.

PostgreSQL only. Each test creates the roles with the SQL `boris roles-sql` prints (role
names of its own: roles belong to the whole server, the test databases do not), logs in as
the agents' writer and as a reviewer, and drops them again. The agents' writer is the login
of `boris mcp --http --team` (in the service role, an agents' role): agents themselves hold
no login since issue 40 (tests/test_team_deployment.py).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from store import Actor, RoleRefused, Store, rules
from store import commands as c
from store import schema as t
from store.cli.app import main
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.commands.effects import DispatchEffect, PlanEffect, ReconcileEffect, RecordResponse
from store.services.verify import RoleFinding, verify

AGENT = Actor(kind="agent", id="builder", name="Build agent")
PERSON = Actor(kind="person", id="ana", name="Ana")
_names = itertools.count()


def _admin(url: str, sql: str) -> None:
    import psycopg

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(sql)  # no parameters: several statements in one go, as psql runs them


@dataclass
class Team:
    owner_url: str
    agents: str
    reviewers: str
    #: The login writing in agents' names: the team MCP server's, in the service role.
    agent_login: str
    reviewer_login: str
    service: str = ""

    def url_as(self, login: str) -> str:
        return (
            make_url(self.owner_url)
            .set(username=login, password="secret")
            .render_as_string(hide_password=False)
        )

    @property
    def agent_url(self) -> str:
        return self.url_as(self.agent_login)

    @property
    def reviewer_url(self) -> str:
        return self.url_as(self.reviewer_login)


def _roles_sql(
    capsys: pytest.CaptureFixture[str], url: str, agents: str, reviewers: str, service: str
) -> str:
    capsys.readouterr()
    argv = ["roles-sql", "--url", url, "--agents", agents, "--reviewers", reviewers]
    assert main([*argv, "--service", service, "--json"]) == 0
    return str(json.loads(capsys.readouterr().out)["result"]["sql"])


@pytest.fixture
def team(pg_url: str, capsys: pytest.CaptureFixture[str]) -> Iterator[Team]:
    n = f"{os.getpid()}_{next(_names)}"
    tm = Team(pg_url, f"agents_{n}", f"reviewers_{n}", f"agent_{n}", f"person_{n}", f"svc_{n}")
    _admin(pg_url, _roles_sql(capsys, pg_url, tm.agents, tm.reviewers, tm.service))
    # The logins, as the printed SQL's comments say, with the password in place of <password>.
    _admin(pg_url, f"CREATE ROLE {tm.agent_login} LOGIN PASSWORD 'secret' IN ROLE {tm.service}")
    _admin(
        pg_url, f"CREATE ROLE {tm.reviewer_login} LOGIN PASSWORD 'secret' IN ROLE {tm.reviewers}"
    )
    yield tm
    roles = (tm.agent_login, tm.reviewer_login, tm.agents, tm.reviewers, tm.service)
    # Roles belong to the server: their grants in this database go, then the roles.
    _admin(pg_url, f"DROP OWNED BY {', '.join(roles)}")
    _admin(pg_url, f"DROP ROLE {', '.join(roles)}")


def _db_roles(url: str, task_id: str) -> dict[int, tuple[str, str | None]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.select(t.events.c.seq, t.events.c.type, t.events.c.db_role)
                .where(t.events.c.task_id == task_id)
                .order_by(t.events.c.seq)
            )
            return {int(r.seq): (str(r.type), r.db_role) for r in rows}
    finally:
        engine.dispose()


def _task_and_request(team: Team, tmp_path: Path) -> tuple[str, str]:
    with Store.open(tmp_path / "agent", url=team.agent_url) as s:
        tid = s.execute(c.CreateTask(title="ship", owner="ana", objective="ship it"), AGENT)
        apr = s.execute(
            c.RequestApproval(task_id=tid, payload={"x": 1}, consequence="ships", policy="p"),
            AGENT,
        )
    return tid, apr


def test_an_agent_login_creates_a_task_and_requests_an_approval_recording_its_role(
    team: Team, tmp_path: Path
) -> None:
    tid, apr = _task_and_request(team, tmp_path)
    with Store.open(tmp_path / "agent", url=team.agent_url) as s:
        assert s.task(tid)["approvals"][0]["id"] == apr
        assert s.task(tid)["approvals"][0]["state"] == "pending"
    recorded = _db_roles(team.owner_url, tid)
    assert [ty for ty, _ in recorded.values()][:2] == ["task.created", "approval.requested"]
    assert {role for _, role in recorded.values()} == {team.agent_login}


def test_an_agent_login_forging_a_persons_decision_is_refused_by_the_server(
    team: Team, tmp_path: Path
) -> None:
    tid, apr = _task_and_request(team, tmp_path)
    with Store.open(tmp_path / "agent", url=team.agent_url) as s:
        before = s.task(tid)["last_seq"]
        # The command layer accepts a person's decision (the actor is only a claim); the
        # server knows the connection is an agents' role and refuses it, when checked too.
        decide = c.DecideApproval(task_id=tid, approval_id=apr, decision="approved")
        with pytest.raises(RoleRefused):
            s.check(decide, PERSON)
        with pytest.raises(RoleRefused) as info:
            s.execute(decide, PERSON)
        assert info.value.code == "role_refused"
        assert f"database role {team.agent_login} is an agents' role" in str(info.value)
        assert info.value.category == "refused"
        assert info.value.rule == "person_event_needs_reviewer_role"
        assert info.value.role == team.agent_login
        cause = info.value.__cause__
        assert isinstance(cause, sa.exc.DBAPIError)
        assert getattr(cause.orig, "sqlstate", None) == "42501"
        assert s.task(tid)["last_seq"] == before
        assert s.task(tid)["approvals"][0]["state"] == "pending"


@pytest.mark.parametrize("event_type", rules.person_only_events())
def test_the_server_refuses_an_agents_role_a_persons_event_type_under_any_actor(
    team: Team, tmp_path: Path, event_type: str
) -> None:
    """Even a row that claims an agent: the types only a person's command records (asked of
    store.rules) are refused from an agents' role, written by hand as much as by a command."""
    tid, _ = _task_and_request(team, tmp_path)
    engine = sa.create_engine(team.agent_url)
    try:
        with pytest.raises(sa.exc.DBAPIError) as info, engine.begin() as conn:
            conn.execute(
                t.events.insert().values(
                    task_id=tid,
                    seq=99,
                    type=event_type,
                    format=1,
                    payload="{}",
                    actor_kind="agent",
                    actor_id="builder",
                    actor_name="",
                    at="2026-01-01T00:00:00.000000Z",
                    prev_hash="0" * 64,
                    hash="0" * 64,
                )
            )
        diag = getattr(info.value.orig, "diag", None)
        assert getattr(info.value.orig, "sqlstate", None) == "42501"
        assert getattr(diag, "constraint_name", None) == "person_event_needs_reviewer_role"
    finally:
        engine.dispose()


def test_a_client_cannot_name_another_role_for_its_row(team: Team, tmp_path: Path) -> None:
    tid, _ = _task_and_request(team, tmp_path)
    engine = sa.create_engine(team.agent_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                t.events.insert().values(
                    task_id=tid,
                    seq=50,
                    type="note.recorded",
                    format=1,
                    payload="{}",
                    actor_kind="agent",
                    actor_id="builder",
                    actor_name="",
                    at="2026-01-01T00:00:00.000000Z",
                    prev_hash="0" * 64,
                    hash="0" * 64,
                    db_role=team.reviewer_login,
                )
            )
    finally:
        engine.dispose()
    assert _db_roles(team.owner_url, tid)[50] == ("note.recorded", team.agent_login)


def test_a_reviewer_login_decides_the_approval(team: Team, tmp_path: Path) -> None:
    tid, apr = _task_and_request(team, tmp_path)
    with Store.open(tmp_path / "reviewer", url=team.reviewer_url) as s:
        s.execute(c.DecideApproval(task_id=tid, approval_id=apr, decision="approved"), PERSON)
        assert s.task(tid)["approvals"][0]["state"] == "approved"
        report = verify(s, remember=False)
        assert report.ok, [p.line() for p in report.problems]
    decided = [
        role for ty, role in _db_roles(team.owner_url, tid).values() if ty == "approval.decided"
    ]
    assert decided == [team.reviewer_login]


def test_events_written_before_the_roles_existed_are_not_flagged(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The owner (who ran boris init) writes a person's decision, then the roles are made.
    with Store.open(tmp_path / "owner", url=pg_url) as s:
        tid = s.execute(c.CreateTask(title="ship", owner="ana", objective="ship it"), AGENT)
        apr = s.execute(
            c.RequestApproval(task_id=tid, payload={"x": 1}, consequence="ships", policy="p"),
            AGENT,
        )
        s.execute(c.DecideApproval(task_id=tid, approval_id=apr, decision="approved"), PERSON)
    owner = make_url(pg_url).username
    assert {role for _, role in _db_roles(pg_url, tid).values()} == {owner}
    n = f"{os.getpid()}_{next(_names)}"
    agents, reviewers, service = f"agents_{n}", f"reviewers_{n}", f"svc_{n}"
    _admin(pg_url, _roles_sql(capsys, pg_url, agents, reviewers, service))
    try:
        with Store.open(tmp_path / "owner", url=pg_url) as s:
            report = verify(s, remember=False)
        assert report.ok, [p.line() for p in report.problems]
    finally:
        _admin(pg_url, f"DROP OWNED BY {agents}, {reviewers}, {service}")
        _admin(pg_url, f"DROP ROLE {agents}, {reviewers}, {service}")


def test_verify_flags_an_event_its_recorded_role_could_not_have_written(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """How such a row honestly comes to be: the owner switched the role check off for a while
    (ALTER TABLE … DISABLE TRIGGER, as an admin restoring a dump might), and an agent's
    connection wrote a person's decision meanwhile. The role was still recorded (that trigger
    stayed on), so verify, judging each row's role against the team roles, names it."""
    tid, apr = _task_and_request(team, tmp_path)
    before = max(_db_roles(team.owner_url, tid))
    # (and the projection guard, which refuses an agents' role a person's decision there too)
    guards = (("events", "events_role_check"), ("approvals", "approvals_guard"))
    for table, trigger in guards:
        _admin(team.owner_url, f"ALTER TABLE {table} DISABLE TRIGGER {trigger}")
    try:
        with Store.open(tmp_path / "agent", url=team.agent_url) as s:
            s.execute(c.DecideApproval(task_id=tid, approval_id=apr, decision="approved"), PERSON)
    finally:
        for table, trigger in guards:
            _admin(team.owner_url, f"ALTER TABLE {table} ENABLE TRIGGER {trigger}")
    # The decision and the status it settles, both in the person's name, by the agent's role.
    written = _db_roles(team.owner_url, tid)
    forged = [q for q in written if q > before]
    assert "approval.decided" in {written[q][0] for q in forged}
    assert {written[q][1] for q in forged} == {team.agent_login}
    with Store.open(tmp_path / "reviewer", url=team.reviewer_url) as s:
        report = verify(s, remember=False)
    flagged = [p for p in report.problems if isinstance(p, RoleFinding)]
    assert [(f.task_id, f.kind, f.seq, f.role, f.rule) for f in flagged] == [
        (tid, "role_could_not_write", q, team.agent_login, "person_event_needs_reviewer_role")
        for q in forged
    ]
    assert not report.ok
    # The CLI says the same: a problem in the record, exit 3, with seq and role as fields.
    capsys.readouterr()
    code = main(["verify", "--url", team.owner_url, "--store", str(tmp_path / "o"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3
    problems = [
        p
        for p in out["error"]["details"]["report"]["problems"]
        if p["kind"] == "role_could_not_write"
    ]
    assert [(p["task_id"], p["seq"], p["role"]) for p in problems] == [
        (tid, q, team.agent_login) for q in forged
    ]


def test_the_role_check_trigger_names_the_person_event_types_of_the_rules(pg_url: str) -> None:
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            definition = conn.execute(
                sa.text(
                    "SELECT pg_get_triggerdef(oid) FROM pg_trigger "
                    "WHERE tgname = 'events_role_check'"
                )
            ).scalar_one()
    finally:
        engine.dispose()
    assert rules.person_only_events()
    for event_type in rules.person_only_events():
        assert f"'{event_type}'" in definition
    assert f"'{rules.ActorKind.PERSON}'" in definition


def test_init_on_a_server_prints_the_roles_sql(
    empty_pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["init", "--url", empty_pg_url, "--store", str(tmp_path / "s")]
    assert main([*argv, "--no-require-signatures", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    database = make_url(empty_pg_url).database
    assert result["roles_sql"] == _roles_sql(
        capsys, empty_pg_url, "boris_agents", "boris_reviewers", "boris_service"
    )
    assert f"@HOST/{database}" in result["roles_sql"]
    assert main([*argv, "--no-require-signatures"]) == 0
    assert "CREATE ROLE boris_agents NOLOGIN" in capsys.readouterr().out


def test_init_of_an_sqlite_store_prints_no_roles_sql(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["init", "--store", str(tmp_path / "s"), "--no-require-signatures", "--json"]
    assert main(argv) == 0
    assert "roles_sql" not in json.loads(capsys.readouterr().out)["result"]
    with Store.open(tmp_path / "s") as s:
        tid = s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
        with s.read() as conn:
            roles = conn.execute(sa.select(t.events.c.db_role).where(t.events.c.task_id == tid))
            assert [r[0] for r in roles] == [None]


def test_roles_sql_opens_no_store_and_refuses_an_unsafe_role_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A server that is not there: the SQL is only printed, nothing is opened.
    url = "postgresql+psycopg://owner@127.0.0.1:1/teamdb"
    assert main(["roles-sql", "--url", url]) == 0
    out = capsys.readouterr().out
    assert 'GRANT SELECT, INSERT ON "public".events TO boris_service, boris_reviewers;' in out
    assert "@HOST/teamdb" in out
    assert main(["roles-sql", "--agents", "x; DROP TABLE events"]) == 2


def test_the_cli_reports_the_servers_refusal_as_a_typed_refusal(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tid, apr = _task_and_request(team, tmp_path)
    capsys.readouterr()
    argv = ["approve", tid, apr, "--url", team.agent_url, "--store", str(tmp_path / "agent")]
    assert main([*argv, "--actor", "person:ana", "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["code"], error["category"], error["rule"]) == (
        "role_refused",
        "refused",
        "person_event_needs_reviewer_role",
    )
    assert error["details"]["role"] == team.agent_login
    argv = ["approve", tid, apr, "--url", team.reviewer_url, "--store", str(tmp_path / "rev")]
    assert main([*argv, "--actor", "person:ana"]) == 0


def test_a_server_store_at_schema_0006_upgrades_its_old_rows_keeping_no_role(
    empty_pg_url: str, tmp_path: Path
) -> None:
    from alembic import command
    from alembic.config import Config

    from store import migrate

    engine = sa.create_engine(empty_pg_url)
    try:
        cfg = Config()
        cfg.set_main_option("script_location", str(migrate.MIGRATIONS_DIR))
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0006")
            conn.execute(t.store_meta.insert().values(key="written_by", value="an older Boris"))
            conn.execute(
                sa.text(
                    "INSERT INTO events (task_id, seq, type, format, payload, actor_kind, "
                    "actor_id, actor_name, at, prev_hash, hash) VALUES ('old', 1, "
                    "'note.recorded', 1, '{}', 'person', 'ana', '', 'x', 'p', 'h')"
                )
            )
    finally:
        engine.dispose()
    with Store.open(tmp_path / "s", url=empty_pg_url) as s:
        assert migrate.current_revision(s.engine) == migrate.HEAD
        tid = s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
    owner = make_url(empty_pg_url).username
    assert _db_roles(empty_pg_url, "old") == {1: ("note.recorded", None)}
    assert _db_roles(empty_pg_url, tid)[1] == ("task.created", owner)


# --- the agents' role writes projections only through the store (issue 31, item 2) ---------


def _agent_sql(team: Team, *statements: str) -> sa.exc.DBAPIError:
    """Run statements on one transaction of the agent's login; the server's refusal."""
    engine = sa.create_engine(team.agent_url)
    try:
        with pytest.raises(sa.exc.DBAPIError) as info, engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
        return info.value
    finally:
        engine.dispose()


def _planned_with_approval(team: Team, tmp_path: Path) -> tuple[str, str, str]:
    """An agent's task with a criterion, a charge and a file effect that needs an approval,
    which it requested: (task, effect, approval)."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    with Store.open(tmp_path / "agent", url=team.agent_url) as s:
        tid = s.execute(
            c.CreateTask(title="ship", owner="ana", objective="ship", scope_paths=[str(ws)]),
            AGENT,
        )
        s.execute(c.AddCriterion(task_id=tid, criterion_id="C1", text="shipped"), AGENT)
        s.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=5), AGENT)
        s.execute(c.ChargeBudget(task_id=tid, counter="tool_calls", amount=1), AGENT)
        eid = s.execute(
            PlanEffect(
                task_id=tid,
                target="out.txt",
                consequence="write out.txt",
                content=c.Content(text="out\n"),
                requires_approval=True,
                policy="review",
            ),
            AGENT,
        )
        apr = s.execute(RequestApproval(task_id=tid, effect_id=eid, policy="review"), AGENT)
    return tid, eid, apr


def _refused_as(exc: sa.exc.DBAPIError) -> tuple[str | None, str | None]:
    diag = getattr(exc.orig, "diag", None)
    return getattr(exc.orig, "sqlstate", None), getattr(diag, "constraint_name", None)


def test_an_agent_login_cannot_approve_or_waive_by_writing_a_table(
    team: Team, tmp_path: Path
) -> None:
    tid, _, apr = _planned_with_approval(team, tmp_path)
    guarded = ("42501", "projection_written_only_with_its_event")
    where = f"task_id = '{tid}'"
    # A bare write to a projection: no event of the agent's in this transaction.
    for statement in (
        f"UPDATE approvals SET state = 'approved' WHERE approval_id = '{apr}'",
        f"UPDATE criteria SET status = 'waived' WHERE {where}",
        f"UPDATE budgets SET limit_value = NULL WHERE {where}",
        f"UPDATE effects SET requires_approval = false WHERE {where}",
        f"UPDATE tasks SET status = 'completed' WHERE {where}",
    ):
        assert _refused_as(_agent_sql(team, statement)) == guarded, statement
    # Never granted: deleting projections, changing or deleting signatures, changing what
    # the store only appends.
    for statement in (
        f"DELETE FROM approvals WHERE {where}",
        f"DELETE FROM criteria WHERE {where}",
        f"UPDATE signatures SET key_id = 'x' WHERE {where}",
        f"DELETE FROM signatures WHERE {where}",
        f"UPDATE observations SET digest = NULL WHERE {where}",
        f"DELETE FROM events WHERE {where}",
    ):
        assert _refused_as(_agent_sql(team, statement)) == ("42501", None), statement
    # With an event of its own first (the store's path, faked by hand): a person's decision
    # is still refused, whatever event comes with it.
    note = (
        "INSERT INTO events (task_id, seq, type, format, payload, actor_kind, actor_id, "
        f"actor_name, at, prev_hash, hash) VALUES ('{tid}', 999, 'note.recorded', 1, '{{}}', "
        "'agent', 'builder', '', '2026-01-01T00:00:00.000000Z', 'p', 'h')"
    )
    decided = ("42501", "persons_decision_needs_reviewer_role")
    for statement in (
        f"UPDATE approvals SET state = 'approved' WHERE approval_id = '{apr}'",
        f"UPDATE approvals SET state = 'rejected' WHERE approval_id = '{apr}'",
        f"UPDATE criteria SET status = 'waived' WHERE {where}",
    ):
        assert _refused_as(_agent_sql(team, note, statement)) == decided, statement
    with Store.open(tmp_path / "agent", url=team.agent_url) as s:
        state = s.task(tid)
        assert state["approvals"][0]["state"] == "pending"
        assert state["criteria"][0]["status"] == "unverified"
        assert max(e["seq"] for e in s.events(tid)) < 999


def test_the_store_refuses_an_agents_bare_table_write_as_a_typed_refusal(
    team: Team, tmp_path: Path
) -> None:
    """The same refusal through the store's own transaction (as a command that wrote a
    projection before its event would meet it): RoleRefused, the rule and the role."""
    _, _, apr = _planned_with_approval(team, tmp_path)
    with Store.open(tmp_path / "agent", url=team.agent_url) as s:
        with pytest.raises(RoleRefused) as info, s.transaction() as tx:
            tx.conn.execute(
                t.approvals.update()
                .where(t.approvals.c.approval_id == apr)
                .values(state="approved")
            )
        assert info.value.rule == "projection_written_only_with_its_event"
        assert info.value.role == team.agent_login


def test_an_agent_login_works_through_the_store_and_a_reviewer_decides(
    team: Team, tmp_path: Path
) -> None:
    """The guard leaves the store's own path open: everything an agent does, with a person's
    approval and waiver through a reviewers' login."""
    tid, eid, apr = _planned_with_approval(team, tmp_path)
    with Store.open(tmp_path / "reviewer", url=team.reviewer_url) as s:
        s.execute(DecideApproval(task_id=tid, approval_id=apr, decision="approved"), PERSON)
    with Store.open(tmp_path / "agent", url=team.agent_url) as s:
        assert s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:w"), AGENT)
        (tmp_path / "ws" / "out.txt").write_text("out\n")
        s.execute(RecordResponse(task_id=tid, effect_id=eid, reported="reported_success"), AGENT)
        assert s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT) == "present"
        s.execute(
            c.RecordArtifact(
                task_id=tid, artifact_id="out", name="out", content=c.Content(text="out\n")
            ),
            AGENT,
        )
        s.execute(c.RecordNote(task_id=tid, text="done"), AGENT)
        s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), AGENT)
        assert s.task(tid)["approvals"][0]["state"] == "consumed"
    with Store.open(tmp_path / "reviewer", url=team.reviewer_url) as s:
        s.execute(
            c.JudgeCriterion(task_id=tid, criterion_id="C1", status="waived", note="n/a"),
            PERSON,
        )
    with Store.open(tmp_path / "agent", url=team.agent_url) as s:
        s.execute(c.SetStatus(task_id=tid, status="completed", reason="done"), AGENT)
        assert s.task(tid)["status"] == "completed"
        report = verify(s, remember=False)
        assert report.ok, [p.line() for p in report.problems]


def test_dispatch_refuses_an_approval_only_a_tampered_table_gives(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tampered as the owner (a superuser here: the server lets it): the table says approved,
    no person decided. `boris dispatch … --approval` as the agent is refused, nothing used."""
    tid, eid, apr = _planned_with_approval(team, tmp_path)
    _admin(team.owner_url, f"UPDATE approvals SET state = 'approved' WHERE approval_id = '{apr}'")
    capsys.readouterr()
    argv = ["dispatch", tid, eid, "--executor", "tool:w", "--approval", apr]
    where = ["--url", team.agent_url, "--store", str(tmp_path / "agent")]
    assert main([*argv, *where, "--actor", "agent:builder", "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["category"], error["rule"]) == ("refused", "approval_not_in_record")
    assert "no person's approval of it is in the log" in error["message"]
    with Store.open(tmp_path / "agent", url=team.agent_url) as s:
        state = s.task(tid)
        assert state["approvals"][0]["state"] == "approved"  # as tampered; never consumed
        assert state["effects"][0]["attempts"] == []
    # A person's decision through a reviewers' login is what it takes.
    _admin(team.owner_url, f"UPDATE approvals SET state = 'pending' WHERE approval_id = '{apr}'")
    with Store.open(tmp_path / "reviewer", url=team.reviewer_url) as s:
        s.execute(DecideApproval(task_id=tid, approval_id=apr, decision="approved"), PERSON)
    assert main([*argv, *where, "--actor", "agent:builder"]) == 0
