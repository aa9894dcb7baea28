"""`boris roles-sql`: the SQL that creates a team store's database roles (store.team).

It opens no store and needs no credentials: it only prints text, which the admin reads and
runs as the database's owner (often on another machine, with `psql`). `boris init --url …`
prints the same SQL for the store it made (its database named in the example URL).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from .. import team
from ..location import checked_url
from ..store import Store
from .output import _print

Add = Callable[[str, Any, str], argparse.ArgumentParser]


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
    )
    _print(args, {"sql": sql, "agents": args.agents, "reviewers": args.reviewers}, sql.rstrip())


def init_sql(store: Store) -> str | None:
    """For `boris init` on a server store: the roles' SQL for its database and schema."""
    database = database_of(store.location.url)
    if database is None:
        return None
    with store.read() as conn:
        schema_name = str(conn.exec_driver_sql("SELECT current_schema()").scalar())
    return team.roles_sql(schema_name=schema_name, database=database)


def register(add: Add) -> None:
    sp = add(
        "roles-sql",
        cmd_roles_sql,
        "print the SQL that creates a team store's agents' and reviewers' database roles",
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
