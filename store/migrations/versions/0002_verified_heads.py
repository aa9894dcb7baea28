"""Remember, per task, the last head `boris verify` found clean.

A later verify compares the log with it: an event missing at the remembered seq (a truncated
log) or one with another hash there (a rolled-back or rewritten log) is a problem. The table
is not a projection of the events: a rebuild never clears it.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Frozen like 0001: the table is spelled out here, not taken from store.schema.
    op.create_table(
        "verified_heads",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("verified_at", sa.String(32), nullable=False),
    )
