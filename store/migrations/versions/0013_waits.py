"""Scheduled waits: waiting as state, not as a process kept awake.

- `waits` (a projection of `wait.recorded`, `wait.rescheduled`, `wait.ended`): one row per
  wait a task recorded: what it waits for (kind, ref), the next time to consider it
  (`not_before`, on the database's clock, which `clock` names), the budget reserved for it,
  its cancellation condition, and whether it is open, settled, cancelled or retired.

No backfill: no event before this revision is a wait's.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Frozen: spelled out here, not taken from store.schema.
    op.create_table(
        "waits",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("wait_id", sa.String(64), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("ref", sa.Text, nullable=False),
        sa.Column("not_before", sa.String(32), nullable=False),
        sa.Column("clock", sa.String(16), nullable=False),
        sa.Column("reserve_counter", sa.String(32)),
        sa.Column("reserve_amount", sa.Float),
        sa.Column("cancel_if", sa.JSON),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("recorded_by", sa.JSON, nullable=False),
        sa.Column("recorded_at", sa.String(32), nullable=False),
        sa.Column("considered", sa.Integer, nullable=False),
        sa.Column("ended_at", sa.String(32)),
        sa.Column("ended_by", sa.JSON),
        sa.Column("end_reason", sa.Text),
        sa.Column("seq", sa.Integer, nullable=False),
    )
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        # The new projection gets the server's guard (0010) as the others have it.
        from store.team import projection_guard_sql

        schema_name = bind.exec_driver_sql("SELECT current_schema()").scalar()
        for statement in projection_guard_sql(str(schema_name), ("waits",)):
            bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        bind.exec_driver_sql("DROP TRIGGER IF EXISTS waits_guard ON waits")
    op.drop_table("waits")
