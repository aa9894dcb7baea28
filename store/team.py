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
#: Written by a person's decision only: the keyring, and the receipts of deleted tasks (an
#: agents' role that could insert a receipt would make an absent task look deleted on purpose).
_REVIEWERS_APPEND = ("deletion_receipts", "keyring")
#: Appended to by every writer, never changed: a transaction's signature stays as it was made.
_SIGNED_APPEND = ("signatures",)
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
    agents = _member(s, rules.TeamRole.AGENTS)
    reviewers = _member(s, rules.TeamRole.REVIEWERS)
    statements = [
        f"""CREATE OR REPLACE FUNCTION {s}.boris_projection_guard() RETURNS trigger AS $$
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
           END; $$ LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp""",
    ]
    decided_by_table = {
        _DECIDED_COLUMNS[thing]: values for thing, values in rules.person_decided_values().items()
    }
    guarded = tuple(tables) if tables is not None else tuple(x.name for x in t.PROJECTIONS)
    for table_name in guarded:
        args = ""
        for (name, column), values in decided_by_table.items():
            if name == table_name:
                args = ", ".join(_literal(x) for x in (column, *values))
        statements += [
            f"DROP TRIGGER IF EXISTS {table_name}_guard ON {s}.{table_name}",
            f"""CREATE TRIGGER {table_name}_guard BEFORE INSERT OR UPDATE OR DELETE
               ON {s}.{table_name} FOR EACH ROW
               EXECUTE FUNCTION {s}.boris_projection_guard({args})""",
        ]
    return tuple(statements)


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
    projections = sorted(table.name for table in t.PROJECTIONS)
    writable = sorted(
        name
        for name in t.metadata.tables
        if name not in _READ_ONLY + _APPEND_ONLY + _REVIEWERS_APPEND + _SIGNED_APPEND
        and name not in projections
    )
    appended = [n for n in projections if n in _PROJECTIONS_APPENDED]
    changed = [n for n in projections if n not in _PROJECTIONS_APPENDED]
    everything = [*sorted(t.metadata.tables), "alembic_version"]

    def tables(names: Iterable[str]) -> str:
        return ", ".join(f"{s}.{n}" for n in names)

    db = database or "<database>"
    lines = [
        "-- The team roles of a Boris store on PostgreSQL: agents and reviewers.",
        "-- Run as the store database's owner, a role that may create roles (or a superuser):",
        '--     psql "postgresql://OWNER@HOST/DATABASE" -v ON_ERROR_STOP=1 -f roles.sql',
        "-- Run it again after upgrading Boris (new tables get their grants); existing roles stay.",
        "-- An agents' role cannot write an event in a person's name (the server refuses it),",
        "-- nor change a projection but with the event it projects, nor a signature;",
        "-- a reviewers' role writes people's decisions, waivers, hand reconciliations, stops.",
        "BEGIN;",
    ]
    for role in (agents, reviewers):
        lines.append(
            f"DO $$ BEGIN CREATE ROLE {role} NOLOGIN; "
            "EXCEPTION WHEN duplicate_object THEN NULL; END $$;"
        )
    lines += [
        # Run again after an upgrade: what older SQL granted (UPDATE and DELETE on every
        # projection and on signatures) goes, and only what follows stays.
        f"REVOKE ALL ON {tables(everything)} FROM {both};",
        f"GRANT USAGE ON SCHEMA {s} TO {both};",
        f"GRANT SELECT ON {tables(_READ_ONLY)} TO {both};",
        f"GRANT SELECT, INSERT ON {tables(_APPEND_ONLY)} TO {both};",
        f"GRANT SELECT ON {tables(_REVIEWERS_APPEND)} TO {agents};",
        f"GRANT SELECT, INSERT ON {tables(_REVIEWERS_APPEND)} TO {reviewers};",
        f"GRANT INSERT, DELETE ON {s}.store_meta TO {reviewers};",
        f"GRANT SELECT, INSERT ON {tables(_SIGNED_APPEND)} TO {both};",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables(writable)} TO {both};",
        # Projections: an agents' role inserts and updates them only through the store (the
        # server's guard, migration 0010); a reviewers' role may also rebuild them.
        f"GRANT SELECT, INSERT ON {tables(appended)} TO {agents};",
        f"GRANT SELECT, INSERT, UPDATE ON {tables(changed)} TO {agents};",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables(projections)} TO {reviewers};",
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
