"""Leases: who works on a task now, under which fencing token.

- `leases` (a projection of `lease.acquired`, `lease.released`, `lease.taken_over`): one row
  per task that ever had a lease, the current or the last one. `token` only grows, per task:
  a write that carries an older one is refused (store.commands.leases). `expires_at` is the
  expiry the acquiring event granted; NULL for a person's lease (held until released).
- `lease_heartbeats`: the newest renewal of a task's lease (its token, when, the expiry it
  pushed out). Not a projection and not chained: heartbeats would flood the log. A rebuild
  leaves it alone (like `verified_heads`); a read uses a heartbeat only while its token is
  the lease's, so a stale one can never revive a lease that ended.

No backfill: no event before this revision is a lease's.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Frozen: spelled out here, not taken from store.schema.
    op.create_table(
        "leases",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("token", sa.Integer, nullable=False),
        sa.Column("holder", sa.JSON, nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("granted_at", sa.String(32), nullable=False),
        sa.Column("ttl_seconds", sa.Integer),
        sa.Column("expires_at", sa.String(32)),
        sa.Column("ended_at", sa.String(32)),
        sa.Column("ended_by", sa.JSON),
        sa.Column("end_reason", sa.String(16)),
        sa.Column("reason", sa.Text, nullable=False, server_default=sa.text("''")),
        sa.Column("seq", sa.Integer, nullable=False),
    )
    op.create_table(
        "lease_heartbeats",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("token", sa.Integer, nullable=False),
        sa.Column("last_heartbeat_at", sa.String(32), nullable=False),
        sa.Column("expires_at", sa.String(32), nullable=False),
    )
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        # The new projection gets the server's guard (0010) as the others have it.
        from store.team import projection_guard_sql

        schema_name = bind.exec_driver_sql("SELECT current_schema()").scalar()
        for statement in projection_guard_sql(str(schema_name), ("leases",)):
            bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        bind.exec_driver_sql("DROP TRIGGER IF EXISTS leases_guard ON leases")
    op.drop_table("lease_heartbeats")
    op.drop_table("leases")
