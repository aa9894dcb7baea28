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
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import rules
from . import schema as t

DEFAULT_AGENTS = "boris_agents"
DEFAULT_REVIEWERS = "boris_reviewers"

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
_REVIEWERS_APPEND = ("keyring",)


def valid_role_name(name: str) -> bool:
    return _ROLE_NAME.fullmatch(name) is not None


def _rule() -> str:
    refusal = rules.role_refusal({rules.TeamRole.AGENTS}, rules.ActorKind.PERSON, "")
    assert refusal is not None
    return refusal.rule


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def guard_sql(schema_name: str) -> tuple[str, ...]:
    """The functions and triggers that record each event's role and refuse an agents' role a
    person's event, in the schema `schema_name` (where the store's tables are). Generated
    from store.rules; run by migration 0007 on PostgreSQL."""
    s = f'"{schema_name}"'
    person_types = ", ".join(_literal(x) for x in rules.person_only_events()) or "NULL"
    member = (
        "SELECT 1 FROM {s}.team_roles AS tr JOIN pg_catalog.pg_roles AS g "
        "ON g.rolname = tr.role_name WHERE tr.kind = {kind} "
        "AND pg_catalog.pg_has_role(current_user, g.oid, 'MEMBER')"
    )
    agents = member.format(s=s, kind=_literal(rules.TeamRole.AGENTS))
    reviewers = member.format(s=s, kind=_literal(rules.TeamRole.REVIEWERS))
    return (
        # Whatever the client sent, the row says which role inserted it.
        f"""CREATE OR REPLACE FUNCTION {s}.boris_events_db_role() RETURNS trigger AS $$
           BEGIN NEW.db_role := current_user; RETURN NEW; END; $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER events_db_role BEFORE INSERT ON {s}.events
           FOR EACH ROW EXECUTE FUNCTION {s}.boris_events_db_role()""",
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


def roles_sql(
    agents: str = DEFAULT_AGENTS,
    reviewers: str = DEFAULT_REVIEWERS,
    schema_name: str = "public",
    database: str | None = None,
) -> str:
    """SQL an admin runs (as the store database's owner, able to create roles) that creates
    the agents' and the reviewers' roles, grants them this program's tables and sequences, and
    names them in the store's `team_roles`. It may be run again (after an upgrade, for new
    tables): a role that exists is kept."""
    for name in (agents, reviewers, schema_name):
        if not valid_role_name(name):
            raise ValueError(f"{name!r} is not a plain lower-case SQL name ([a-z_][a-z0-9_]*)")
    if agents == reviewers:
        raise ValueError("the agents' and the reviewers' roles must differ")
    s = f'"{schema_name}"'
    both = f"{agents}, {reviewers}"
    writable = sorted(
        name
        for name in t.metadata.tables
        if name not in _READ_ONLY + _APPEND_ONLY + _REVIEWERS_APPEND
    )

    def tables(names: Iterable[str]) -> str:
        return ", ".join(f"{s}.{n}" for n in names)

    db = database or "<database>"
    lines = [
        "-- The team roles of a Boris store on PostgreSQL: agents and reviewers.",
        "-- Run as the store database's owner, a role that may create roles (or a superuser):",
        '--     psql "postgresql://OWNER@HOST/DATABASE" -v ON_ERROR_STOP=1 -f roles.sql',
        "-- Run it again after upgrading Boris (new tables get their grants); existing roles stay.",
        "-- An agents' role cannot write an event in a person's name (the server refuses it);",
        "-- a reviewers' role writes people's decisions, waivers, hand reconciliations, stops.",
        "BEGIN;",
    ]
    for role in (agents, reviewers):
        lines.append(
            f"DO $$ BEGIN CREATE ROLE {role} NOLOGIN; "
            "EXCEPTION WHEN duplicate_object THEN NULL; END $$;"
        )
    lines += [
        f"GRANT USAGE ON SCHEMA {s} TO {both};",
        f"GRANT SELECT ON {tables(_READ_ONLY)} TO {both};",
        f"GRANT SELECT, INSERT ON {tables(_APPEND_ONLY)} TO {both};",
        f"GRANT SELECT ON {tables(_REVIEWERS_APPEND)} TO {agents};",
        f"GRANT SELECT, INSERT ON {tables(_REVIEWERS_APPEND)} TO {reviewers};",
        f"GRANT INSERT, DELETE ON {s}.store_meta TO {reviewers};",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables(writable)} TO {both};",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {both};",
        f"INSERT INTO {s}.team_roles (role_name, kind) VALUES "
        f"('{agents}', '{rules.TeamRole.AGENTS}'), ('{reviewers}', '{rules.TeamRole.REVIEWERS}') "
        "ON CONFLICT (role_name) DO UPDATE SET kind = EXCLUDED.kind;",
        "COMMIT;",
        "-- Then one login per agent and per person, each with a password of its own in place",
        "-- of <password> (or no password, with client certificates or peer authentication):",
        f"--   CREATE ROLE agent_name LOGIN PASSWORD '<password>' IN ROLE {agents};",
        f"--   CREATE ROLE person_name LOGIN PASSWORD '<password>' IN ROLE {reviewers};",
        "-- and give each its own URL:",
        f"--   postgresql+psycopg://agent_name:<password>@HOST/{db}",
    ]
    return "\n".join(lines) + "\n"


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
