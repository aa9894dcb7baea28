"""An index for finding a task's heads: checkpoints nothing supersedes, by seq.

Without it every checkpoint write scanned all of the task's checkpoints to find the head it
continues from, so writes slowed as the lineage grew.

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_checkpoints_heads", "checkpoints", ["task_id", "superseded", "seq"], unique=False
    )
