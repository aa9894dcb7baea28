"""Blob content in the database, for team stores.

On PostgreSQL a blob's bytes live in the store itself, so every machine sharing the URL reads
the same artifacts (the local blob directory becomes a cache). A blob is one `blob_contents`
row plus its bytes in `blob_chunks`, 1 MiB each with the chunk's own sha256. SQLite gets the
same (empty) tables and keeps its blobs as files.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Frozen like the earlier revisions: the tables are spelled out here.
    op.create_table(
        "blob_contents",
        sa.Column("digest", sa.String(71), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("chunks", sa.Integer, nullable=False),
    )
    op.create_table(
        "blob_chunks",
        sa.Column("digest", sa.String(71), primary_key=True),
        sa.Column("n", sa.Integer, primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
