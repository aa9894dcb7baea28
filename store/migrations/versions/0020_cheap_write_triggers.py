"""Cheaper triggers on a team store's write path (issue 44): the same refusals, fewer
functions called per write.

- `events.db_role` defaults to the inserting role (CURRENT_USER), and the trigger that
  overwrites what a client sent (0007) runs only WHEN the row names another role: the store
  sends no role, so its insert calls no function, and a client naming another role is
  still overwritten.
- The projection guard (0010 and the revisions that created projections since) runs only
  WHEN the writing role may not create triggers on the table (has_table_privilege
  TRIGGER): the tables' owner and a superuser, whom the guard lets through anyway (and who
  could drop it), no longer call it for every projection row. `boris roles-sql` grants
  TRIGGER to no team role, so the server's and agents' roles are guarded as before.

On SQLite, which has no roles, nothing is done.

Revision ID: 0020
Revises: 0019
"""

from typing import Any

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# Frozen: the clauses as this revision writes them.
_OWN_ROLE = "NEW.db_role IS DISTINCT FROM CURRENT_USER"
_TRUSTED = "NOT pg_catalog.has_table_privilege({table}::regclass, 'TRIGGER')"
_EACH_ROW = " FOR EACH ROW EXECUTE FUNCTION "


def _guard_triggers(bind: Any) -> list[tuple[str, str, str]]:
    """(trigger, table, definition) of every projection guard trigger in this schema."""
    rows = bind.exec_driver_sql(
        "SELECT t.tgname, pg_catalog.quote_ident(n.nspname) || '.' "
        "|| pg_catalog.quote_ident(c.relname), pg_catalog.pg_get_triggerdef(t.oid) "
        "FROM pg_catalog.pg_trigger AS t JOIN pg_catalog.pg_class AS c ON c.oid = t.tgrelid "
        "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
        "JOIN pg_catalog.pg_proc AS p ON p.oid = t.tgfoid "
        "WHERE p.proname = 'boris_projection_guard' AND n.nspname = current_schema() "
        "AND NOT t.tgisinternal ORDER BY 1"
    ).all()
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


def _recreate(trigger: str, table: str, definition: str) -> None:
    op.execute(f'DROP TRIGGER "{trigger}" ON {table}')
    op.execute(definition)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE events ALTER COLUMN db_role SET DEFAULT CURRENT_USER")
    op.execute("DROP TRIGGER IF EXISTS events_db_role ON events")
    op.execute(
        f"CREATE TRIGGER events_db_role BEFORE INSERT ON events FOR EACH ROW "
        f"WHEN ({_OWN_ROLE}) EXECUTE FUNCTION boris_events_db_role()"
    )
    for trigger, table, definition in _guard_triggers(bind):
        if " WHEN " in definition or _EACH_ROW not in definition:
            continue
        literal = "'" + table.replace("'", "''") + "'"
        when = f" FOR EACH ROW WHEN ({_TRUSTED.format(table=literal)}) EXECUTE FUNCTION "
        _recreate(trigger, table, definition.replace(_EACH_ROW, when, 1))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for trigger, table, definition in _guard_triggers(bind):
        head, found, tail = definition.partition(" FOR EACH ROW WHEN (")
        if found:
            _recreate(trigger, table, head + _EACH_ROW + tail.split(" EXECUTE FUNCTION ", 1)[1])
    op.execute("DROP TRIGGER IF EXISTS events_db_role ON events")
    op.execute(
        "CREATE TRIGGER events_db_role BEFORE INSERT ON events "
        "FOR EACH ROW EXECUTE FUNCTION boris_events_db_role()"
    )
    op.execute("ALTER TABLE events ALTER COLUMN db_role DROP DEFAULT")
