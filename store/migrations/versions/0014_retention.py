"""Retention: how long content is kept, and its tombstone once retired (issue 35 part R).

- `retention` (a projection of `retention.set` and `content.retired`): one row per item
  given a retention class (an artifact version, an evidence item, a note kept as content):
  its digest, size and media type, the class, when it falls due on the database's clock,
  who wrote it and who set the class, and, once retired, when, by whom and what it proved.

No backfill: no event before this revision sets a retention class; every item recorded
before it is kept, as it always was.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Frozen: spelled out here, not taken from store.schema.
    op.create_table(
        "retention",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("item_kind", sa.String(32), primary_key=True),
        sa.Column("item_id", sa.String(160), primary_key=True),
        sa.Column("digest", sa.String(80), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("media_type", sa.String(128), nullable=False),
        sa.Column("retain", sa.String(48), nullable=False),
        sa.Column("due_at", sa.String(32)),
        sa.Column("written_by", sa.JSON, nullable=False),
        sa.Column("set_by", sa.JSON, nullable=False),
        sa.Column("set_at", sa.String(32), nullable=False),
        sa.Column("retired_at", sa.String(32)),
        sa.Column("retired_by", sa.JSON),
        sa.Column("proved", sa.JSON),
        sa.Column("seq", sa.Integer, nullable=False),
    )
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        # The new projection gets the server's guard (0010) as the others have it.
        from store.team import projection_guard_sql

        schema_name = bind.exec_driver_sql("SELECT current_schema()").scalar()
        for statement in projection_guard_sql(str(schema_name), ("retention",)):
            bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        bind.exec_driver_sql("DROP TRIGGER IF EXISTS retention_guard ON retention")
    op.drop_table("retention")
