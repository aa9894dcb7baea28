"""Projection guard: on a team store (PostgreSQL) an agents' role writes a projection only
with the event it projects, in the same transaction, and never a person's decision into one.

No table changes. On PostgreSQL the function and one trigger per projection table are
generated from store.rules and store.schema (store.team.projection_guard_sql) when this
runs; on SQLite there are no roles and nothing is done.

Revision ID: 0010
Revises: 0009
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# Frozen: the projection tables as they were when this was written.
_PROJECTIONS = (
    "tasks",
    "objective_revisions",
    "criteria",
    "artifacts",
    "artifact_versions",
    "evidence",
    "phases",
    "budgets",
    "effects",
    "attempts",
    "observations",
    "approvals",
    "checkpoints",
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        from store.team import projection_guard_sql

        schema_name = bind.exec_driver_sql("SELECT current_schema()").scalar()
        # Its own frozen list: a projection a later revision creates is guarded by that one.
        for statement in projection_guard_sql(str(schema_name), _PROJECTIONS):
            bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for table in _PROJECTIONS:
            bind.exec_driver_sql(f"DROP TRIGGER IF EXISTS {table}_guard ON {table}")
        bind.exec_driver_sql("DROP FUNCTION IF EXISTS boris_projection_guard()")
