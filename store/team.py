"""A team store's database roles (PostgreSQL): who wrote each event, and who may write what.

On a shared server the actor a writer names is a claim; the role its connection logged in as
is not. So the server itself:

- records in each event row the role that inserted it (`events.db_role`): a BEFORE INSERT
  trigger overwrites whatever a client sent, so no client can name another role. The role is
  a fact about the row, like its `id`, outside the hashed body (store.record.stored_body):
  the hash chain, exports and signatures are exactly what they were, and a row copied into
  another store records the role that copied it;
- refuses, for a role that is a member of an agents' role and of no reviewers' role, an event
  in a person's name or of a type only a person's command records. What counts as a person's
  event is asked of store.rules (`person_only_events`, `role_refusal`) when the trigger is
  made: this module spells no rule of its own.

Which roles are the agents' and the reviewers' is data, in the store's own `team_roles`
table, written by the SQL `roles_sql` prints (an admin runs it): so two stores on one server
may have roles of their own, and a store with no team roles behaves as before. The store's
owner (who migrates it; `boris init`) and a superuser are never restricted: a superuser is a
member of every role, reviewers' included.

Agents hold no database login (issue 40): `boris mcp --http --team` (store.mcp.team) holds
the service role's, the one agents' role that writes, and each agent authenticates to it
with a bearer token a person issued (`issue_token`; the store keeps its digest only).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import rules
from . import schema as t
from .db import database_now
from .errors import CommandRejected
from .model import Actor

DEFAULT_AGENTS = "boris_agents"
DEFAULT_REVIEWERS = "boris_reviewers"
#: The login of `boris mcp --http --team`: the one program writing in agents' names.
DEFAULT_SERVICE = "boris_service"

#: The SQLSTATE the trigger raises: PostgreSQL's own insufficient_privilege, so any client
#: sees a permission error; the rule travels as the error's constraint name and the role as
#: its detail (store.db.role_refusal reads both, never the message).
REFUSED_STATE = "42501"

#: Role names we print into SQL: plain lower-case identifiers, never quoted or escaped.
_ROLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

#: Tables a writer only reads (the schema's version and settings, the roles' own table);
#: `events` is read and appended to; the keyring is appended to by reviewers (people trust
#: keys). Every other table is a projection or a blob table, written with each event.
_READ_ONLY = ("alembic_version", "store_meta", "team_roles")
_APPEND_ONLY = ("events",)
#: Written by a person's decision only: the keyring, and the receipts of deleted tasks (an
#: agents' role that could insert a receipt would make an absent task look deleted on purpose).
_REVIEWERS_APPEND = ("deletion_receipts", "keyring")
#: Appended to by every writer, never changed: a transaction's signature stays as it was made.
_SIGNED_APPEND = ("signatures",)
#: Written by people only (reviewers' logins), read by the MCP server: agents' tokens.
_TOKENS = ("agent_tokens",)
#: Projections the store only ever inserts into: an agents' role gets no UPDATE on them.
#: (No agents' role deletes a projection row: only a rebuild does, the owner's or a
#: reviewer's.) Every projection write by an agents' role is also guarded by the server
#: (`projection_guard_sql`).
_PROJECTIONS_APPENDED = (
    "artifact_versions",
    "checkpoints",
    "evidence",
    "objective_revisions",
    "observations",
)


def valid_role_name(name: str) -> bool:
    return _ROLE_NAME.fullmatch(name) is not None


def _rule() -> str:
    refusal = rules.role_refusal({rules.TeamRole.AGENTS}, rules.ActorKind.PERSON, "")
    assert refusal is not None
    return refusal.rule


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _member(s: str, kind: str) -> str:
    """SQL: whether the connection's role is a member of a team role of this kind."""
    return (
        f"SELECT 1 FROM {s}.team_roles AS tr JOIN pg_catalog.pg_roles AS g "
        f"ON g.rolname = tr.role_name WHERE tr.kind = {_literal(kind)} "
        "AND pg_catalog.pg_has_role(current_user, g.oid, 'MEMBER')"
    )


def guard_sql(schema_name: str) -> tuple[str, ...]:
    """The functions and triggers that record each event's role and refuse an agents' role a
    person's event, in the schema `schema_name` (where the store's tables are). Generated
    from store.rules; run by migration 0007 on PostgreSQL."""
    s = f'"{schema_name}"'
    person_types = ", ".join(_literal(x) for x in rules.person_only_events()) or "NULL"
    agents = _member(s, rules.TeamRole.AGENTS)
    reviewers = _member(s, rules.TeamRole.REVIEWERS)
    return (
        # Whatever the client sent, the row says which role inserted it.
        f"""CREATE OR REPLACE FUNCTION {s}.boris_events_db_role() RETURNS trigger AS $$
           BEGIN NEW.db_role := current_user; RETURN NEW; END; $$ LANGUAGE plpgsql""",
        # The store sends no role: the column's default is the inserting role, and the
        # function runs only for a row that names another (migration 0020).
        f"ALTER TABLE {s}.events ALTER COLUMN db_role SET DEFAULT CURRENT_USER",
        f"""CREATE TRIGGER events_db_role BEFORE INSERT ON {s}.events FOR EACH ROW
           WHEN (NEW.db_role IS DISTINCT FROM CURRENT_USER)
           EXECUTE FUNCTION {s}.boris_events_db_role()""",
        # Invoker's rights (current_user is the writer's role); tables and functions named
        # with their schema and a fixed search_path, so a writer's temporary table called
        # team_roles cannot stand in for the store's.
        f"""CREATE OR REPLACE FUNCTION {s}.boris_events_role_check() RETURNS trigger AS $$
           BEGIN
             IF EXISTS ({agents}) AND NOT EXISTS ({reviewers}) THEN
               RAISE EXCEPTION USING
                 ERRCODE = {_literal(REFUSED_STATE)},
                 CONSTRAINT = {_literal(_rule())},
                 DETAIL = current_user,
                 MESSAGE = 'database role ' || current_user || ' is an agents'' role: it '
                   'cannot write ' || NEW.type || ' in the name of ' || NEW.actor_kind || ' '
                   || NEW.actor_id || '; a person writes it through a reviewers'' login';
             END IF;
             RETURN NEW;
           END; $$ LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp""",
        # Only a row that could be a person's calls the function: an agent's append pays for
        # no lookup.
        f"""CREATE TRIGGER events_role_check BEFORE INSERT ON {s}.events FOR EACH ROW
           WHEN (NEW.actor_kind = {_literal(rules.ActorKind.PERSON)}
                 OR NEW.type IN ({person_types}))
           EXECUTE FUNCTION {s}.boris_events_role_check()""",
    )


#: The rules the projection guard raises (RoleRefused.rule, as the error's constraint name).
PROJECTION_RULE = "projection_written_only_with_its_event"
DECIDED_RULE = "persons_decision_needs_reviewer_role"

#: Which projection column holds what only a person decides (rules.person_decided_values).
_DECIDED_COLUMNS = {"approval": ("approvals", "state"), "criterion": ("criteria", "status")}


def projection_guard_sql(schema_name: str, tables: Iterable[str] | None = None) -> tuple[str, ...]:
    """The function and triggers by which the server refuses an agents' role any write to a
    projection that is not the store's own path. Run by migration 0010 on PostgreSQL.

    The store writes a projection row only right after inserting the event it projects, in
    the same transaction (store.tx.Tx.emit). So a row of task T that an agents' role
    inserts, updates or deletes must come after T's newest event having been inserted by
    this very role in this very transaction (its xmin is our transaction id: rows another
    transaction has not committed are invisible, so the check cannot be borrowed). A bare
    `UPDATE approvals SET state = 'approved'` has no such event and is refused. An agent that
    appends an event of its own first is named by that event, in its name and role, in the
    log that verify checks; and what only a person decides (an approval approved or rejected,
    a criterion waived: rules.person_decided_values) is refused from an agents' role whatever
    event comes with it, since no event an agent may record makes it. Dispatch and completion
    read the decision's event besides (store.commands.authority): the table is never the
    authority on its own.

    Invoker's rights and a fixed search_path, as `guard_sql`'s check. The store's owner and a
    reviewers' role are not restricted (a rebuild is theirs).

    `tables`: the projections to guard, every one of store.schema's by default; a migration
    names those it knows (0010 the thirteen of its day, 0012 the leases it creates), so the
    trigger of a table a later revision creates is never made before the table."""
    s = f'"{schema_name}"'
    return (_projection_guard_function(s), *_projection_guard_triggers(s, tables))


def _projection_guard_function(s: str) -> str:
    """The guard's function (see `projection_guard_sql`): an agents' role writes a row of a
    task only after that task's newest event, inserted by it in this transaction; and never
    a value only a person decides (the trigger's arguments: the column and those values)."""
    agents = _member(s, rules.TeamRole.AGENTS)
    reviewers = _member(s, rules.TeamRole.REVIEWERS)
    return f"""CREATE OR REPLACE FUNCTION {s}.boris_projection_guard() RETURNS trigger AS $$
           DECLARE
             row_task text;
             decided text;
             before text;
           BEGIN
             IF NOT EXISTS ({agents}) OR EXISTS ({reviewers}) THEN
               RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
             END IF;
             IF TG_OP = 'DELETE' THEN
               row_task := OLD.task_id;
             ELSE
               row_task := NEW.task_id;
             END IF;
             IF TG_OP = 'UPDATE' AND OLD.task_id IS DISTINCT FROM NEW.task_id
                OR NOT EXISTS (
                  SELECT 1 FROM (
                    SELECT e.db_role, e.xmin FROM {s}.events AS e
                    WHERE e.task_id = row_task ORDER BY e.seq DESC LIMIT 1
                  ) AS newest
                  WHERE newest.db_role = current_user
                    AND newest.xmin = pg_catalog.pg_current_xact_id()::xid) THEN
               RAISE EXCEPTION USING
                 ERRCODE = {_literal(REFUSED_STATE)},
                 CONSTRAINT = {_literal(PROJECTION_RULE)},
                 DETAIL = current_user,
                 MESSAGE = 'database role ' || current_user || ' is an agents'' role: it '
                   'writes ' || TG_TABLE_NAME || ' of task ' || coalesce(row_task, '?')
                   || ' only with the event it projects, through the store';
             END IF;
             IF TG_NARGS > 0 AND TG_OP <> 'DELETE' THEN
               decided := pg_catalog.to_jsonb(NEW) ->> TG_ARGV[0];
               IF TG_OP = 'UPDATE' THEN
                 before := pg_catalog.to_jsonb(OLD) ->> TG_ARGV[0];
               END IF;
               IF decided IS DISTINCT FROM before AND decided = ANY (TG_ARGV[1:]) THEN
                 RAISE EXCEPTION USING
                   ERRCODE = {_literal(REFUSED_STATE)},
                   CONSTRAINT = {_literal(DECIDED_RULE)},
                   DETAIL = current_user,
                   MESSAGE = 'database role ' || current_user || ' is an agents'' role: '
                     || TG_TABLE_NAME || '.' || TG_ARGV[0] || ' = ' || decided
                     || ' is a person''s decision; a person makes it through a reviewers'' login';
               END IF;
             END IF;
             RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
           END; $$ LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp"""


def _projection_guard_triggers(s: str, tables: Iterable[str] | None) -> list[str]:
    """Each guarded projection's trigger, with the column and values only a person decides
    as its arguments where the table has one (approvals' state, criteria's status)."""
    decided_by_table = {
        _DECIDED_COLUMNS[thing]: values for thing, values in rules.person_decided_values().items()
    }
    guarded = tuple(tables) if tables is not None else tuple(x.name for x in t.PROJECTIONS)
    statements: list[str] = []
    for table_name in guarded:
        args = ""
        for (name, column), values in decided_by_table.items():
            if name == table_name:
                args = ", ".join(_literal(x) for x in (column, *values))
        statements += [
            f"DROP TRIGGER IF EXISTS {table_name}_guard ON {s}.{table_name}",
            # A role that may create triggers on the table (its owner, a superuser), whom
            # the function lets through anyway, calls no function (migration 0020).
            f"""CREATE TRIGGER {table_name}_guard BEFORE INSERT OR UPDATE OR DELETE
               ON {s}.{table_name} FOR EACH ROW
               WHEN (NOT pg_catalog.has_table_privilege('{s}.{table_name}'::regclass, 'TRIGGER'))
               EXECUTE FUNCTION {s}.boris_projection_guard({args})""",
        ]
    return statements


def roles_sql(
    agents: str = DEFAULT_AGENTS,
    reviewers: str = DEFAULT_REVIEWERS,
    schema_name: str = "public",
    database: str | None = None,
    service: str = DEFAULT_SERVICE,
) -> str:
    """SQL an admin runs (as the store database's owner, able to create roles) that creates
    the team's roles, grants them this program's tables and sequences, and names them in the
    store's `team_roles`. It may be run again (after an upgrade, for new tables): a role that
    exists is kept, and what older versions granted is revoked first.

    - `service`: the login of `boris mcp --http --team`, the one program that writes in
      agents' names. It holds what an agents' login used to (append events and signatures,
      write projections through the store, blobs, heartbeats) and is registered as an
      agents' role, so the server refuses it a person's event or decision as it did them.
    - `agents`: kept for logins made by older versions, it reads and writes nothing but
      what it may read: agents hold no database login any more; they authenticate to the
      MCP server with a token a person issued (`boris agent-token issue`).
    - `reviewers`: people's logins, as before; they also issue and revoke agents' tokens."""
    names = (agents, reviewers, service)
    for name in (*names, schema_name):
        if not valid_role_name(name):
            raise ValueError(f"{name!r} is not a plain lower-case SQL name ([a-z_][a-z0-9_]*)")
    if len(set(names)) != len(names):
        raise ValueError("the agents', the reviewers' and the service's roles must differ")
    lines = [
        *_roles_preamble(agents, reviewers, service),
        "BEGIN;",
        *(
            f"DO $$ BEGIN CREATE ROLE {role} NOLOGIN; "
            "EXCEPTION WHEN duplicate_object THEN NULL; END $$;"
            for role in (service, reviewers, agents)
        ),
        *_roles_grants(f'"{schema_name}"', agents, reviewers, service),
        "COMMIT;",
        *_roles_afterword(reviewers, service, database or "<database>"),
    ]
    return "\n".join(lines) + "\n"


def _roles_preamble(agents: str, reviewers: str, service: str) -> list[str]:
    """What the roles' SQL says first, as comments: how to run it, and each role's part."""
    return [
        "-- The team roles of a Boris store on PostgreSQL: the MCP server's, reviewers', agents'.",
        "-- Run as the store database's owner, a role that may create roles (or a superuser):",
        '--     psql "postgresql://OWNER@HOST/DATABASE" -v ON_ERROR_STOP=1 -f roles.sql',
        "-- Run it again after upgrading Boris (new tables get their grants); existing roles stay.",
        f"-- {service}: the login of `boris mcp --http --team` only, the one program that writes",
        "--   in agents' names: agents never hold a database login; each authenticates to that",
        "--   server with its own token (boris agent-token issue agent:ID --actor person:YOU).",
        "--   The server refuses it an event in a person's name, and a projection change but with",
        "--   the event it projects, as an agents' role.",
        f"-- {reviewers}: people's logins: decisions, waivers, hand reconciliations, stops, the",
        "--   keyring, and issuing and revoking agents' tokens.",
        f"-- {agents}: agents' logins of older versions: no write grant of any kind (no INSERT,",
        "--   UPDATE nor DELETE on any table), so a login left in it reads the record and can",
        "--   change nothing; it never reads the agents' tokens.",
    ]


def _roles_grants(s: str, agents: str, reviewers: str, service: str) -> list[str]:
    """Each role's grants, after revoking what older versions granted, and the roles named
    in the store's `team_roles` (which the server's guards read)."""
    writers = f"{service}, {reviewers}"
    projections = sorted(table.name for table in t.PROJECTIONS)
    writable = sorted(
        name
        for name in t.metadata.tables
        if name not in _READ_ONLY + _APPEND_ONLY + _REVIEWERS_APPEND + _SIGNED_APPEND + _TOKENS
        and name not in projections
    )
    appended = [n for n in projections if n in _PROJECTIONS_APPENDED]
    changed = [n for n in projections if n not in _PROJECTIONS_APPENDED]
    everything = [*sorted(t.metadata.tables), "alembic_version"]
    readable = [n for n in everything if n not in _TOKENS]

    def tables(names: Iterable[str]) -> str:
        return ", ".join(f"{s}.{n}" for n in names)

    return [
        # Run again after an upgrade: what older SQL granted (UPDATE and DELETE on every
        # projection and on signatures; an agents' role's writes) goes, and only what
        # follows stays.
        f"REVOKE ALL ON {tables(everything)} FROM {writers}, {agents};",
        f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {s} FROM {writers}, {agents};",
        f"GRANT USAGE ON SCHEMA {s} TO {writers}, {agents};",
        f"GRANT SELECT ON {tables(readable)} TO {agents};",
        f"GRANT SELECT ON {tables(_READ_ONLY)} TO {writers};",
        f"GRANT SELECT, INSERT ON {tables(_APPEND_ONLY)} TO {writers};",
        f"GRANT SELECT ON {tables(_REVIEWERS_APPEND)} TO {service};",
        f"GRANT SELECT, INSERT ON {tables(_REVIEWERS_APPEND)} TO {reviewers};",
        f"GRANT INSERT, DELETE ON {s}.store_meta TO {reviewers};",
        f"GRANT SELECT, INSERT ON {tables(_SIGNED_APPEND)} TO {writers};",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables(writable)} TO {writers};",
        # Projections: the server's role inserts and updates them only through the store
        # (the server's guard, migration 0010); a reviewers' role may also rebuild them.
        f"GRANT SELECT, INSERT ON {tables(appended)} TO {service};",
        f"GRANT SELECT, INSERT, UPDATE ON {tables(changed)} TO {service};",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables(projections)} TO {reviewers};",
        # Agents' tokens: people issue and revoke them (a revoked token stays revoked:
        # migration 0019's trigger); the server only looks them up.
        f"GRANT SELECT ON {tables(_TOKENS)} TO {service};",
        f"GRANT SELECT, INSERT ON {tables(_TOKENS)} TO {reviewers};",
        f"GRANT UPDATE (revoked_at, revoked_by) ON {tables(_TOKENS)} TO {reviewers};",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {writers};",
        f"INSERT INTO {s}.team_roles (role_name, kind) VALUES "
        f"('{service}', '{rules.TeamRole.AGENTS}'), ('{agents}', '{rules.TeamRole.AGENTS}'), "
        f"('{reviewers}', '{rules.TeamRole.REVIEWERS}') "
        "ON CONFLICT (role_name) DO UPDATE SET kind = EXCLUDED.kind;",
    ]


def _roles_afterword(reviewers: str, service: str, db: str) -> list[str]:
    """What the roles' SQL says last, as comments: the logins to make and their URLs."""
    return [
        "-- Then one login for the MCP server and one per person, each with a password of its",
        "-- own in place of <password> (or none, with client certificates or peer authentication):",
        f"--   CREATE ROLE boris_server LOGIN PASSWORD '<password>' IN ROLE {service};",
        f"--   CREATE ROLE person_name LOGIN PASSWORD '<password>' IN ROLE {reviewers};",
        "-- and give each its own URL (the server's stays on the server's machine):",
        f"--   postgresql+psycopg://boris_server:<password>@HOST/{db}",
        "-- Agents get no login: a person issues each a token for the server,",
        "--   boris agent-token issue agent:ID --actor person:YOU",
        "-- and the server serves them all: boris mcp --http --team (see docs/team-store.md).",
    ]


def member_kinds(conn: Connection, roles: Iterable[str]) -> dict[str, set[str]]:
    """For each database role in `roles`, the team roles (TeamRole values) it is a member of
    now, by the store's `team_roles`. A role that no longer exists is a member of none."""
    names = sorted(set(roles))
    if not names or conn.dialect.name != "postgresql":
        return {n: set() for n in names}
    rows = conn.execute(
        sa.text(
            "SELECT w.rolname, tr.kind FROM pg_catalog.pg_roles AS w "
            "CROSS JOIN team_roles AS tr "
            "JOIN pg_catalog.pg_roles AS g ON g.rolname = tr.role_name "
            "WHERE w.rolname = ANY(:names) "
            "AND pg_catalog.pg_has_role(w.oid, g.oid, 'MEMBER')"
        ),
        {"names": names},
    )
    out: dict[str, set[str]] = {n: set() for n in names}
    for name, kind in rows:
        out[str(name)].add(str(kind))
    return out


def role_violations(
    conn: Connection, task_ids: Iterable[str]
) -> list[tuple[str, int, str, str, str, str, rules.Refusal]]:
    """Events of these tasks whose recorded role could not have written them, judged by
    store.rules.role_refusal against the roles' team membership now: (task_id, seq, type,
    actor_kind, actor_id, db_role, refusal). Rows with no recorded role (SQLite, or written
    before schema 0007) and rows by roles that are no agents' role (the owner, before the
    team roles existed) are never flagged."""
    wanted = set(task_ids)
    ev = t.events
    person_types = rules.person_only_events()
    claims_person = ev.c.actor_kind == rules.ActorKind.PERSON
    if person_types:
        claims_person = sa.or_(claims_person, ev.c.type.in_(person_types))
    rows = conn.execute(
        sa.select(ev.c.task_id, ev.c.seq, ev.c.type, ev.c.actor_kind, ev.c.actor_id, ev.c.db_role)
        .where(ev.c.db_role.is_not(None), claims_person)
        .order_by(ev.c.task_id, ev.c.seq)
    ).all()
    rows = [r for r in rows if r.task_id in wanted]
    kinds = member_kinds(conn, (str(r.db_role) for r in rows))
    found = []
    for r in rows:
        refusal = rules.role_refusal(kinds[str(r.db_role)], str(r.actor_kind), str(r.type))
        if refusal is not None:
            found.append(
                (
                    str(r.task_id),
                    int(r.seq),
                    str(r.type),
                    str(r.actor_kind),
                    str(r.actor_id),
                    str(r.db_role),
                    refusal,
                )
            )
    return found


# --- agents' tokens: how an agent authenticates to `boris mcp --http --team` (issue 40) ------

#: A token reads `boris-agent.TOKEN_ID.SECRET`: the id is public (it names the token in
#: `boris agent-token list` and `revoke`), the secret 32 random bytes (base64url, 43
#: characters). The store keeps the sha256 of the whole token, never the token.
TOKEN_PREFIX = "boris-agent"
_TOKEN = re.compile(r"boris-agent\.([0-9a-f]{16})\.[A-Za-z0-9_-]{43}")


class TokenRefused(CommandRejected):
    """An agent token that cannot be issued or revoked as asked."""

    code = "token_refused"


class UnknownToken(TokenRefused):
    code = "unknown_token"
    category = "not_found"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _token_row(row: Any) -> dict[str, Any]:
    return {
        "token_id": row.token_id,
        "agent": f"agent:{row.agent_id}",
        "agent_name": row.agent_name,
        "issued_by": row.issued_by,
        "issued_at": row.issued_at,
        "issued_role": row.issued_role,
        "revoked_at": row.revoked_at,
        "revoked_by": row.revoked_by,
        "revoked_role": row.revoked_role,
    }


def issue_token(conn: Connection, agent: Actor, issuer: Actor) -> tuple[str, dict[str, Any]]:
    """A new token for `agent`, issued by the person `issuer`: (the token, its row). The
    token is returned once and never stored; the row holds its digest."""
    if agent.kind != "agent":
        raise TokenRefused(
            f"a token is for an agent, not {agent.kind}:{agent.id}: give agent:ID; "
            "people reach the store with their own database login"
        )
    if issuer.kind != "person":
        raise TokenRefused(
            f"only a person issues an agent's token, not {issuer.kind}:{issuer.id}: "
            "give --actor person:YOU"
        )
    token_id = secrets.token_hex(8)
    token = f"{TOKEN_PREFIX}.{token_id}.{secrets.token_urlsafe(32)}"
    conn.execute(
        t.agent_tokens.insert().values(
            token_id=token_id,
            token_hash=token_digest(token),
            agent_id=agent.id,
            agent_name=agent.name,
            issued_by=f"{issuer.kind}:{issuer.id}",
            issued_at=database_now(conn),
        )
    )
    return token, token_rows(conn, token_id)[0]


def revoke_token(conn: Connection, token_id: str, by: Actor) -> dict[str, Any]:
    """Revoke the token `token_id` from now on; its row. A token revoked already is left as
    it was (the first revocation stands)."""
    if by.kind != "person":
        raise TokenRefused(
            f"only a person revokes an agent's token, not {by.kind}:{by.id}: "
            "give --actor person:YOU"
        )
    rows = token_rows(conn, token_id)
    if not rows:
        raise UnknownToken(f"no agent token {token_id!r} in this store (boris agent-token list)")
    if rows[0]["revoked_at"] is None:
        at = t.agent_tokens.c
        conn.execute(
            t.agent_tokens.update()
            .where(at.token_id == token_id, at.revoked_at.is_(None))
            .values(revoked_at=database_now(conn), revoked_by=f"{by.kind}:{by.id}")
        )
        rows = token_rows(conn, token_id)
    return rows[0]


def token_rows(conn: Connection, token_id: str | None = None) -> list[dict[str, Any]]:
    """The tokens (all, or the one `token_id` names), oldest first; never their digests."""
    at = t.agent_tokens.c
    query = sa.select(t.agent_tokens).order_by(at.issued_at, at.token_id)
    if token_id is not None:
        query = query.where(at.token_id == token_id)
    return [_token_row(r) for r in conn.execute(query)]


def token_agent(conn: Connection, token: str) -> tuple[str, Actor] | None:
    """The agent a presented token names, with the token's id, if the token is one this
    store issued and has not revoked; else None (a malformed token is not looked up)."""
    if _TOKEN.fullmatch(token) is None:
        return None
    at = t.agent_tokens.c
    row = conn.execute(
        sa.select(at.token_id, at.agent_id, at.agent_name, at.revoked_at).where(
            at.token_hash == token_digest(token)
        )
    ).first()
    if row is None or row.revoked_at is not None:
        return None
    return str(row.token_id), Actor(kind="agent", id=row.agent_id, name=row.agent_name)
