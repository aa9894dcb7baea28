"""The tasks that need a person, found by index (issue 44): partial indexes for the paged
inbox's `NEED_CANDIDATES` (store.reads.inbox_pages), whose arms on `tasks`, `effects` and
`budgets` scanned their whole table: on 100,000 tasks the window's first page waited
~110 ms for them, now ~7 ms.

Each index holds only the rows its arm finds (a few percent of the table), so the engine
keeps it on every write at next to no cost, and it can never change an answer: a query that
does not match its WHERE clause word for word just scans as before. The same text on both
engines (json_array_length: SQLite's JSON1, PostgreSQL's json). No table changes, no
backfill (the engine builds the indexes from the rows). Their WHERE clauses compare with
`=` joined by OR, not `IN (...)`: SQLite evaluates a partial index's WHERE at each write of
the row, and an IN list built a table of its values for every UPDATE of `tasks` (every event
makes one): 20 µs more a write, against about 1 µs.

Revision ID: 0021
Revises: 0020
"""

from alembic import op
from sqlalchemy import text

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

# Frozen: spelled out here, not taken from store.reads (tests/test_inbox_pages.py checks
# that SQLite's plan for NEED_CANDIDATES uses each of them).
INDEXES = (
    (
        "ix_tasks_need",
        "tasks",
        "late_count > 0 OR status = 'blocked' OR status = 'budget_exhausted' "
        "OR status = 'outcome_unknown' OR json_array_length(checkpoint_heads) > 1",
    ),
    (
        "ix_effects_need",
        "effects",
        "stage <> 'cancelled' AND (outcome = 'unknown' OR outcome = 'partial' OR stage = 'observed')",
    ),
    (
        "ix_budgets_need",
        "budgets",
        "limit_value IS NOT NULL AND (limit_value <= 0 OR used + reserved >= 0.8 * limit_value)",
    ),
)


def upgrade() -> None:
    for name, table, where in INDEXES:
        op.create_index(
            name, table, ["task_id"], sqlite_where=text(where), postgresql_where=text(where)
        )


def downgrade() -> None:
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
