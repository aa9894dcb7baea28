"""Signed records: a keyring of public keys bound to actors, and a signature per write.

Both tables are new; nothing is rewritten. A store upgraded here has an empty keyring: it
stays unsigned (and says so) until `boris keys trust` trusts a person's key.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Frozen: spelled out here, not taken from store.schema.
    op.create_table(
        "keyring",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.Column("public_key", sa.String(64), nullable=False),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_id", sa.String(128), nullable=False),
        sa.Column("actor_name", sa.String(256), nullable=False),
        sa.Column("succeeds", sa.String(64)),
        sa.Column("at", sa.String(32), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("signer_key_id", sa.String(64), nullable=False),
        sa.Column("signature", sa.String(128), nullable=False),
    )
    op.create_table(
        "signatures",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.Column("signature", sa.String(128), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("signatures")
    op.drop_table("keyring")
