"""`boris roles-sql`: the SQL that creates a team store's database roles (store.team); and
`boris agent-token`: the tokens agents present to `boris mcp --http --team`.

`roles-sql` opens no store and needs no credentials: it only prints text, which the admin
reads and runs as the database's owner (often on another machine, with `psql`). `boris init
--url …` prints the same SQL for the store it made (its database named in the example URL).

`agent-token issue agent:ID --actor person:YOU` makes a token for one agent and prints it
once; the store keeps its digest, with who issued it and when. On a team store only a
reviewers' login (or the owner's) may write the tokens' table. `revoke TOKEN_ID` ends one
from the next request on; `list` shows them all, never a token.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from .. import team
from ..location import checked_url
from ..model import Actor
from ..services import answers
from ..store import Store
from .output import _actor, _print
from .parser import global_options

Add = Callable[[str, Any], argparse.ArgumentParser]


def _role_name(text: str) -> str:
    if not team.valid_role_name(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a plain lower-case SQL name ([a-z_][a-z0-9_]*)"
        )
    return text


def database_of(url: str | None) -> str | None:
    """The database a server URL names (None for an SQLite store)."""
    if not url:
        return None
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    return None if parsed.drivername.startswith("sqlite") else parsed.database


def cmd_roles_sql(_store: Any, args: argparse.Namespace) -> None:
    url = args.url or os.environ.get("BORIS_STORE_URL")
    sql = team.roles_sql(
        args.agents,
        args.reviewers,
        args.schema_name,
        database_of(checked_url(url) if url else None),
        args.service,
    )
    shown = {"sql": sql, "agents": args.agents, "reviewers": args.reviewers}
    _print(args, {**shown, "service": args.service}, sql.rstrip())


def init_sql(store: Store) -> str | None:
    """For `boris init` on a server store: the roles' SQL for its database and schema."""
    database = database_of(store.location.url)
    if database is None:
        return None
    with store.read() as conn:
        schema_name = str(conn.exec_driver_sql("SELECT current_schema()").scalar())
    return team.roles_sql(schema_name=schema_name, database=database)


def _agent(text: str) -> Actor:
    try:
        actor = Actor.parse(text)
    except ValueError:
        raise answers.UsageError(f"{text!r} is not agent:ID[:name]") from None
    if actor.kind != "agent":
        raise answers.UsageError(f"a token is for an agent, not {text!r}: give agent:ID")
    return actor


def _token_line(row: dict[str, Any]) -> str:
    state = f"revoked {row['revoked_at']} by {row['revoked_by']}" if row["revoked_at"] else "active"
    return (
        f"{row['token_id']}  {row['agent']:<24} issued {row['issued_at']} by "
        f"{row['issued_by']}  {state}"
    )


def cmd_token_issue(store: Store, args: argparse.Namespace) -> None:
    agent, person = _agent(args.agent), _actor(args.actor)
    with store.transaction() as tx:
        token, row = team.issue_token(tx.conn, agent, person)
    if args.json:
        _print(args, {**row, "token": token}, token)
        return
    print(token)
    print(
        f"boris: token {row['token_id']} for {row['agent']} (shown once: give it to the agent "
        "as its Authorization: Bearer header for boris mcp --http --team; the store keeps "
        "only its digest)",
        file=sys.stderr,
    )


def cmd_token_revoke(store: Store, args: argparse.Namespace) -> None:
    person = _actor(args.actor)
    with store.transaction() as tx:
        row = team.revoke_token(tx.conn, args.token_id, person)
    _print(args, row, _token_line(row))


def cmd_token_list(store: Store, args: argparse.Namespace) -> None:
    with store.read() as conn:
        rows = team.token_rows(conn)
    _print(args, rows, "\n".join(_token_line(r) for r in rows) or "no agent tokens")


def register(add: Add) -> None:
    sp = add(
        "roles-sql",
        cmd_roles_sql,
    )
    sp.add_argument(
        "--agents", type=_role_name, default=team.DEFAULT_AGENTS, help="the agents' role name"
    )
    sp.add_argument(
        "--reviewers",
        type=_role_name,
        default=team.DEFAULT_REVIEWERS,
        help="the reviewers' role name",
    )
    sp.add_argument(
        "--schema",
        dest="schema_name",
        type=_role_name,
        default="public",
        help="the PostgreSQL schema holding the store's tables (default: public)",
    )
    sp.add_argument(
        "--service",
        type=_role_name,
        default=team.DEFAULT_SERVICE,
        help="the role of boris mcp --http --team's login, which writes in agents' names",
    )

    sp = add(
        "agent-token",
        cmd_token_list,
    )
    sub = sp.add_subparsers(dest="token_command")
    common = argparse.ArgumentParser(add_help=False)
    global_options(common, argparse.SUPPRESS)

    def token_cmd(name: str, fn: Any, help_: str) -> argparse.ArgumentParser:
        k = sub.add_parser(name, help=help_, description=help_, parents=[common])
        k.set_defaults(fn=fn)
        return k

    token_cmd(
        "issue",
        cmd_token_issue,
        "issue a token for an agent (printed once; the store keeps its digest); "
        "needs --actor person:YOU",
    ).add_argument("agent", help="agent:ID[:name]")
    token_cmd(
        "revoke", cmd_token_revoke, "revoke a token from now on; needs --actor person:YOU"
    ).add_argument("token_id", help="the token's id, as agent-token list shows it")
    token_cmd("list", cmd_token_list, "list the tokens (never the tokens themselves)")
