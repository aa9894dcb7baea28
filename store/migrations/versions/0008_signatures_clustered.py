"""Signatures clustered on their key on SQLite (WITHOUT ROWID).

A rowid table keyed on (task_id, seq) is two b-trees, the rows and their key's index, so
every signed commit wrote two more WAL pages than an unsigned one; clustered, it writes
one (bench_signing.py). Nothing else changes: the same columns, the same rows. A server
(PostgreSQL) has no such distinction and is left as it is.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # Frozen: the table as 0006 made it, spelled out here.
    with op.batch_alter_table(
        "signatures",
        recreate="always",
        table_kwargs={"sqlite_with_rowid": False},
    ) as batch:
        batch.alter_column("key_id", existing_type=sa.String(64), nullable=False)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table(
        "signatures", recreate="always", table_kwargs={"sqlite_with_rowid": True}
    ) as batch:
        batch.alter_column("key_id", existing_type=sa.String(64), nullable=False)
