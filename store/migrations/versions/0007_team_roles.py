"""Team roles: each event records the database role that wrote it; a team store (PostgreSQL)
refuses an agents' role a person's event.

`events.db_role` is new and nullable: rows written before stay NULL (on SQLite every row
does). The role is a fact about the row, outside the hashed body, so no hash changes. On
PostgreSQL the triggers that fill it and that refuse an agents' role a person's event are
generated from store.rules (store.team.guard_sql) when this runs, not copied here.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Frozen: spelled out here, not taken from store.schema.
    op.add_column("events", sa.Column("db_role", sa.String(63), nullable=True))
    op.create_table(
        "team_roles",
        sa.Column("role_name", sa.String(63), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
    )
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        from store.team import guard_sql

        schema_name = bind.exec_driver_sql("SELECT current_schema()").scalar()
        for statement in guard_sql(str(schema_name)):
            bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        bind.exec_driver_sql("DROP TRIGGER IF EXISTS events_role_check ON events")
        bind.exec_driver_sql("DROP TRIGGER IF EXISTS events_db_role ON events")
        bind.exec_driver_sql("DROP FUNCTION IF EXISTS boris_events_role_check()")
        bind.exec_driver_sql("DROP FUNCTION IF EXISTS boris_events_db_role()")
    op.drop_table("team_roles")
    op.drop_column("events", "db_role")
