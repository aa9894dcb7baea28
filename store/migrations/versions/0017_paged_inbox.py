"""The paged inbox (issue 36 part W): indexes the database sorts and filters tasks by.

A window holding 100,000 tasks reads the inbox in pages (store.reads.inbox_pages): by last
activity, status or title, after a key; and finds the tasks that need a person through
pending approvals and stale or failed criteria. No table changes, no backfill.

Revision ID: 0017
Revises: 0016
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# Frozen: spelled out here, not taken from store.schema.
INDEXES = (
    ("ix_tasks_updated", "tasks", ["updated_at", "task_id"]),
    ("ix_tasks_status_updated", "tasks", ["status", "updated_at", "task_id"]),
    ("ix_tasks_title", "tasks", ["title", "task_id"]),
    ("ix_approvals_state", "approvals", ["state", "expires_at"]),
    ("ix_criteria_status", "criteria", ["status"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns)


def downgrade() -> None:
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
