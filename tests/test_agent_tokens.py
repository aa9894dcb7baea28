"""Agents' tokens for `boris mcp --http --team` (issue 40): a person issues one per agent and
sees it once; the store keeps its digest, who issued it and when; a revoked token names no
agent any more. On both engines; the PostgreSQL guard (who issued, no revival) at the end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from store import Actor, Store, team
from store import schema as t
from store.cli.app import main

RITA = Actor(kind="person", id="rita")
BUILDER = Actor(kind="agent", id="builder", name="Build agent")


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_token_names_its_agent_until_it_is_revoked(store: Store) -> None:
    with store.transaction() as tx:
        token, row = team.issue_token(tx.conn, BUILDER, RITA)
    assert token.startswith("boris-agent." + row["token_id"] + ".")
    assert (row["agent"], row["issued_by"], row["revoked_at"]) == (
        "agent:builder",
        "person:rita",
        None,
    )
    with store.read() as conn:
        assert team.token_agent(conn, token) == (row["token_id"], BUILDER)
        # Only the digest is kept.
        stored = conn.execute(sa.select(t.agent_tokens)).one()._asdict()
        assert token not in json.dumps(stored)
        assert stored["token_hash"] == team.token_digest(token)
        # Another token, a token's id, a changed secret: no agent.
        assert team.token_agent(conn, token[:-1] + ("A" if token[-1] != "A" else "B")) is None
        assert team.token_agent(conn, row["token_id"]) is None
        assert team.token_agent(conn, "") is None
    with store.transaction() as tx:
        revoked = team.revoke_token(tx.conn, row["token_id"], RITA)
    assert revoked["revoked_by"] == "person:rita" and revoked["revoked_at"]
    with store.read() as conn:
        assert team.token_agent(conn, token) is None
    # Revoking again leaves the first revocation as it was.
    with store.transaction() as tx:
        assert team.revoke_token(tx.conn, row["token_id"], RITA) == revoked


def test_only_a_person_issues_and_only_for_an_agent(store: Store) -> None:
    with store.transaction() as tx:
        with pytest.raises(team.TokenRefused, match="only a person issues"):
            team.issue_token(tx.conn, BUILDER, Actor(kind="agent", id="other"))
        with pytest.raises(team.TokenRefused, match="for an agent"):
            team.issue_token(tx.conn, RITA, RITA)
        with pytest.raises(team.UnknownToken):
            team.revoke_token(tx.conn, "0123456789abcdef", RITA)


def test_the_cli_issues_lists_and_revokes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = ["--store", str(tmp_path / "s")]
    assert main(["init", *where, "--actor", "person:rita", "--no-require-signatures"]) == 0
    capsys.readouterr()
    # Text: the token alone on stdout, what it is on stderr.
    assert main(["agent-token", "issue", "agent:builder", "--actor", "person:rita", *where]) == 0
    out, err = capsys.readouterr()
    token = out.strip()
    assert token.startswith("boris-agent.") and "\n" not in token
    assert "shown once" in err
    code, listed = _cli(capsys, "agent-token", "list", *where)
    assert code == 0
    rows = listed["result"]
    assert isinstance(rows, list) and len(rows) == 1
    assert token not in json.dumps(listed)
    token_id = rows[0]["token_id"]
    assert token.split(".")[1] == token_id
    code, revoked = _cli(
        capsys, "agent-token", "revoke", token_id, "--actor", "person:rita", *where
    )
    assert code == 0 and revoked["result"]["revoked_by"] == "person:rita"  # type: ignore[index]
    # An agent may not issue, a person's token may not be made, an unknown id is not found.
    code, refused = _cli(capsys, "agent-token", "issue", "agent:x", "--actor", "agent:y", *where)
    assert code == 1 and refused["error"]["code"] == "token_refused"  # type: ignore[index]
    assert main(["agent-token", "issue", "person:x", "--actor", "person:rita", *where]) == 2
    code, _ = _cli(capsys, "agent-token", "revoke", "nope", "--actor", "person:rita", *where)
    assert code == 4
    # Issuing needs who issues.
    assert main(["agent-token", "issue", "agent:builder", *where]) == 2


def test_on_postgresql_the_database_records_the_issuing_login_and_refuses_a_revival(
    pg_url: str, tmp_path: Path
) -> None:
    from sqlalchemy.engine import make_url

    with Store.open(tmp_path / "s", url=pg_url) as s:
        with s.transaction() as tx:
            _, row = team.issue_token(tx.conn, BUILDER, RITA)
        with s.transaction() as tx:
            revoked = team.revoke_token(tx.conn, row["token_id"], RITA)
    owner = make_url(pg_url).username
    assert (row["issued_role"], revoked["revoked_role"]) == (owner, owner)
    engine = sa.create_engine(pg_url)
    try:
        for values in ({"revoked_at": None}, {"agent_id": "someone-else"}):
            with pytest.raises(sa.exc.DBAPIError) as info, engine.begin() as conn:
                conn.execute(t.agent_tokens.update().values(**values))
            assert getattr(info.value.orig, "sqlstate", None) == "42501"
            assert "only ever revoked" in str(info.value)
    finally:
        engine.dispose()
