"""A team store deployed as docs/team-store.md says (issue 40): agents never hold the
database's credentials.

On a real PostgreSQL server: the owner runs `boris init --url` and the SQL `boris roles-sql`
prints; a person (a reviewers' login) trusts two agents' keys and issues each a token; one
`boris mcp --http --team` process holds the service login; two agents, each a process of its
own with the official MCP client, no database URL and no key in its environment, only its
token, create tasks and plan effects through it at the same time. A request without a token
(or with a bad or revoked one) is answered 401 with one line; every write is recorded as the
agent whose token it came with, by the server's login, signed with that agent's key; and a
login in the agents' role can change nothing (permission denied).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from store import schema as t
from store.cli.app import main

ROOT = Path(__file__).resolve().parent.parent
_names = itertools.count()

#: One agent: its own process, its token as its only credential. Creates a task and plans a
#: file write that needs a person's approval, asks for it, then prints what it got.
AGENT = r"""
import json, sys
import anyio, httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

url, token, ws, name = sys.argv[1:5]

async def main():
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http, \
            streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()

        async def call(tool, **arguments):
            result = await session.call_tool(tool, arguments)
            answer = result.structured_content
            assert answer["ok"], answer
            return answer

        tasks = []
        for n in range(2):
            task = (await call("create_task", title=f"{name} {n}", owner="rita",
                               objective=f"{name} writes out-{n}.txt",
                               scope_paths=[ws]))["result"]
            effect = (await call("plan_effect", task_id=task, kind="file_write",
                                 target=f"{ws}/out-{n}.txt", consequence=f"write out-{n}.txt",
                                 content={"text": f"{name} {n}\n"}, requires_approval=True,
                                 policy="a person approves file writes"))["result"]
            approval = (await call("request_approval", task_id=task, effect_id=effect,
                                   policy="review"))["result"]
            tasks.append({"task": task, "effect": effect, "approval": approval})
        print(json.dumps(tasks))

anyio.run(main)
"""


def _admin(url: str, sql: str) -> None:
    import psycopg

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(sql)


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a process of the deployment: no BORIS_* of the test run's, and no
    database URL but the one it is given, if any."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BORIS_", "PG"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return {**env, **extra}


@dataclass
class Deployment:
    owner_url: str
    agents: str
    reviewers: str
    service: str
    server_login: str
    rita_login: str
    old_agent_login: str

    def url_as(self, login: str) -> str:
        return (
            make_url(self.owner_url)
            .set(username=login, password="secret")
            .render_as_string(hide_password=False)
        )


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    result = json.loads(out)["result"]
    assert isinstance(result, dict)
    return result


@pytest.fixture
def deployment(
    empty_pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[Deployment]:
    n = f"{os.getpid()}_{next(_names)}"
    d = Deployment(
        empty_pg_url,
        f"agents_{n}",
        f"reviewers_{n}",
        f"svc_{n}",
        f"server_{n}",
        f"rita_{n}",
        f"oldagent_{n}",
    )
    # The owner: the store, signed, rita's key its root; then the roles' SQL, run as psql would.
    owner = ["--url", empty_pg_url, "--store", str(tmp_path / "owner")]
    _cli(capsys, "init", *owner, "--actor", "person:rita")
    sql = _cli(
        capsys,
        "roles-sql",
        "--url",
        empty_pg_url,
        "--agents",
        d.agents,
        "--reviewers",
        d.reviewers,
        "--service",
        d.service,
    )["sql"]
    _admin(empty_pg_url, str(sql))
    # The logins, as the SQL's comments say: the server's, a person's, and one left in the
    # agents' role by an older deployment.
    for login, role in (
        (d.server_login, d.service),
        (d.rita_login, d.reviewers),
        (d.old_agent_login, d.agents),
    ):
        _admin(empty_pg_url, f"CREATE ROLE {login} LOGIN PASSWORD 'secret' IN ROLE {role}")
    yield d
    roles = (d.server_login, d.rita_login, d.old_agent_login, d.agents, d.reviewers, d.service)
    _admin(empty_pg_url, f"DROP OWNED BY {', '.join(roles)}")
    _admin(empty_pg_url, f"DROP ROLE {', '.join(roles)}")


@pytest.fixture
def team_server(deployment: Deployment, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`boris mcp --http --team` on the service login, with the agents' keys; its URL."""
    keys = tmp_path / "server-keys"
    keys.mkdir()
    argv = [sys.executable, "-m", "store.cli", "mcp", "--http", "--team", "--port", "0"]
    argv += ["--keys", str(keys), "--store", str(tmp_path / "server")]
    env = _clean_env(BORIS_STORE_URL=deployment.url_as(deployment.server_login))
    proc = subprocess.Popen(
        argv, env=env, cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "streamable HTTP at http://127.0.0.1:" in line, line + proc.stderr.read()
        assert "for every agent with a token" in line
        yield line.split(" at ", 1)[1].split(" ", 1)[0], keys
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()


def _post(
    url: str, token: str | None, session: str | None = None
) -> tuple[int, dict[str, str], str]:
    """An MCP initialize by hand (or, in a session, a tools/list): the status, the headers
    (lower-cased names) and the body."""
    body: dict[str, object] = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "curl", "version": "1"},
        },
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session is not None:
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        headers |= {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            found = {k.lower(): v for k, v in response.headers.items()}
            return response.status, found, response.read(2000).decode()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read().decode()


def _agent(url: str, token: str, ws: Path, name: str) -> subprocess.Popen[str]:
    ws.mkdir()
    # Nothing but the token: no BORIS_STORE_URL, no BORIS_KEY, no PG* variables.
    env = _clean_env()
    assert not any("postgresql" in v for v in env.values())
    return subprocess.Popen(
        [sys.executable, "-c", AGENT, url, token, str(ws), name],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _refused(deployment: Deployment, login: str, statement: str) -> tuple[str | None, str | None]:
    engine = sa.create_engine(deployment.url_as(login))
    try:
        with pytest.raises(sa.exc.DBAPIError) as info, engine.begin() as conn:
            conn.execute(sa.text(statement))
    finally:
        engine.dispose()
    diag = getattr(info.value.orig, "diag", None)
    return getattr(info.value.orig, "sqlstate", None), getattr(diag, "constraint_name", None)


def test_agents_work_through_the_team_server_and_hold_no_database_login(
    deployment: Deployment,
    team_server: tuple[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, keys = team_server
    rita = ["--url", deployment.url_as(deployment.rita_login), "--store", str(tmp_path / "rita")]
    # A person trusts each agent's key, made where the server reads it, and issues its token.
    tokens, key_ids = {}, {}
    for agent in ("builder", "tester"):
        key = keys / f"agent-{agent}.pem"
        key_ids[agent] = _cli(capsys, "keys", "new", str(key))["key_id"]
        _cli(
            capsys,
            "keys",
            "add",
            str(key),
            "--for",
            f"agent:{agent}",
            "--actor",
            "person:rita",
            *rita,
        )
        issued = _cli(
            capsys, "agent-token", "issue", f"agent:{agent}", "--actor", "person:rita", *rita
        )
        assert issued["issued_by"] == "person:rita"
        assert issued["issued_role"] == deployment.rita_login
        tokens[agent] = str(issued["token"])

    # No token, a bad one: 401, one line saying what to send; nothing else is done.
    for token, says in (
        (None, "send Authorization: Bearer TOKEN"),
        ("x" * 20, "not one the store issued"),
    ):
        status, headers, body = _post(url, token)
        assert status == 401, body
        line = json.loads(body)["error_description"]
        assert says in line and "\n" not in line
        assert "boris agent-token issue agent:ID" in line
        assert headers["www-authenticate"].startswith('Bearer error="invalid_token"')

    # Two agents at once, each with its token only.
    agents = {name: _agent(url, tokens[name], tmp_path / f"ws-{name}", name) for name in tokens}
    planned = {}
    for name, proc in agents.items():
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        planned[name] = json.loads(out.strip().splitlines()[-1])

    # Every write is recorded as the agent whose token it came with, by the server's login.
    engine = sa.create_engine(deployment.owner_url)
    try:
        with engine.connect() as conn:
            for name, tasks in planned.items():
                assert len(tasks) == 2
                rows = conn.execute(
                    sa.select(
                        t.events.c.type,
                        t.events.c.actor_kind,
                        t.events.c.actor_id,
                        t.events.c.db_role,
                    ).where(t.events.c.task_id.in_([x["task"] for x in tasks]))
                ).all()
                types = {r.type for r in rows}
                assert {"task.created", "effect.planned", "approval.requested"} <= types
                assert {(r.actor_kind, r.actor_id, r.db_role) for r in rows} == {
                    ("agent", name, deployment.server_login)
                }
                signed_by = conn.execute(
                    sa.select(t.signatures.c.key_id).where(
                        t.signatures.c.task_id.in_([x["task"] for x in tasks])
                    )
                ).scalars()
                assert set(signed_by) == {key_ids[name]}
    finally:
        engine.dispose()

    # Signed with each agent's own key (the server's --keys), as the person's verify finds.
    capsys.readouterr()
    assert main(["verify", *rita]) == 0, capsys.readouterr()
    # And a person decides through their own login, as before.
    first = planned["builder"][0]
    assert main(["approve", first["task"], first["approval"], "--actor", "person:rita", *rita]) == 0

    # A session is the agent's whose token opened it: another agent's token does not reach
    # it (the SDK answers as if there were no such session).
    status, headers, body = _post(url, tokens["builder"])
    assert status == 200, body
    session = headers["mcp-session-id"]
    assert _post(url, tokens["builder"], session)[0] == 200
    assert _post(url, tokens["tester"], session)[0] == 404

    # A revoked token stops working at its next request; the other agent's goes on.
    token_id = tokens["tester"].split(".")[1]
    _cli(capsys, "agent-token", "revoke", token_id, "--actor", "person:rita", *rita)
    status, _, body = _post(url, tokens["tester"])
    assert status == 401 and "revoked" in json.loads(body)["error_description"]
    status, _, body = _post(url, tokens["builder"])
    assert status == 200, body

    # The server's login cannot mint tokens (only people's logins write them).
    assert _refused(
        deployment,
        deployment.server_login,
        "INSERT INTO agent_tokens (token_id, token_hash, agent_id, agent_name, issued_by, "
        "issued_at) VALUES ('0000000000000000', 'h', 'x', '', 'person:rita', 'now')",
    ) == ("42501", None)


def test_a_login_in_the_agents_role_can_change_nothing(deployment: Deployment) -> None:
    """The agents' role keeps no INSERT, UPDATE nor DELETE on any table (the catalog says so),
    and a real login in it is refused each: permission denied, before any trigger runs."""
    engine = sa.create_engine(deployment.owner_url)
    try:
        with engine.connect() as conn:
            granted = conn.execute(
                sa.text(
                    "SELECT c.relname FROM pg_catalog.pg_class AS c "
                    "JOIN pg_catalog.pg_namespace AS ns ON ns.oid = c.relnamespace "
                    "WHERE ns.nspname = current_schema() AND c.relkind IN ('r', 'p') "
                    "AND pg_catalog.has_table_privilege(:role, c.oid, "
                    "'INSERT, UPDATE, DELETE, TRUNCATE')"
                ),
                {"role": deployment.old_agent_login},
            ).all()
            tables = set(
                conn.execute(
                    sa.text(
                        "SELECT tablename FROM pg_catalog.pg_tables "
                        "WHERE schemaname = current_schema()"
                    )
                ).scalars()
            )
    finally:
        engine.dispose()
    assert granted == []
    assert set(t.metadata.tables) <= tables
    denied = ("42501", None)
    login = deployment.old_agent_login
    for statement in (
        "DELETE FROM lease_heartbeats",
        "UPDATE lease_heartbeats SET expires_at = '9999'",
        "DELETE FROM blob_chunks",
        "DELETE FROM blob_contents",
        "UPDATE verified_heads SET seq = 0",
        "DELETE FROM verified_heads",
        "UPDATE tasks SET status = 'completed'",
        "DELETE FROM approvals",
        "INSERT INTO events (task_id, seq, type, format, payload, actor_kind, actor_id, "
        "actor_name, at, prev_hash, hash) VALUES ('t', 1, 'note.recorded', 1, '{}', 'agent', "
        "'a', '', 'x', 'p', 'h')",
        "INSERT INTO signatures (task_id, seq, key_id, signature) VALUES ('t', 1, 'k', 's')",
        "INSERT INTO agent_tokens (token_id, token_hash, agent_id, agent_name, issued_by, "
        "issued_at) VALUES ('0', 'h', 'x', '', 'person:x', 'now')",
        "SELECT token_hash FROM agent_tokens",
    ):
        assert _refused(deployment, login, statement) == denied, statement
    # It still reads the record.
    engine = sa.create_engine(deployment.url_as(login))
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one() >= 0
    finally:
        engine.dispose()


def test_the_team_server_refuses_what_would_let_one_key_sign_for_every_agent(
    deployment: Deployment, tmp_path: Path
) -> None:
    """A signed store with no --keys, or BORIS_KEY set: the server does not start, and says
    what to give instead."""
    argv = [sys.executable, "-m", "store.cli", "mcp", "--http", "--team", "--port", "0"]
    argv += ["--store", str(tmp_path / "server")]
    url = deployment.url_as(deployment.server_login)
    for extra, says in (
        ({}, "give --keys DIR"),
        ({"BORIS_KEY": str(tmp_path / "k.pem")}, "unset BORIS_KEY"),
    ):
        done = subprocess.run(
            argv,
            env=_clean_env(BORIS_STORE_URL=url, **extra),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 2, done.stderr
        assert says in done.stderr
