"""Verified deletion: a receipt for each task deleted by a person (issue 35 part D).

- `deletion_receipts`: one row per deletion, written by the store in the same transaction
  that removes the task's rows. Not a projection (no event is its source: the task's chain
  is what was deleted), so a rebuild leaves it alone. It keeps the task id, the digest of
  the title (never the title), the head seq and hash the chain had, what was removed
  (counts), who (a person), when (the database's clock) and why; `body_hash` is the digest
  of the receipt's canonical body and, on a signed store, `key_id` / `signature` the
  person's signature over it.

- the events' append-only guard (0001) gains its one exception: an event may be deleted
  when a deletion receipt of its task names a head at or after it (the store inserts the
  receipt first, in the same transaction). Anything else still cannot change or remove an
  event; a deletion the receipt does not cover is refused by the database itself.

No backfill: no task was deleted before this revision.

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Frozen: spelled out here, not taken from store.schema.
    op.create_table(
        "deletion_receipts",
        sa.Column("receipt_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("format", sa.Integer, nullable=False),
        sa.Column("task_id", sa.String(64), nullable=False),
        sa.Column("title_digest", sa.String(71), nullable=False),
        sa.Column("head_seq", sa.Integer, nullable=False),
        sa.Column("head_hash", sa.String(64), nullable=False),
        sa.Column("counts", sa.JSON, nullable=False),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_id", sa.String(128), nullable=False),
        sa.Column("actor_name", sa.String(256), nullable=False),
        sa.Column("deleted_at", sa.String(32), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("body_hash", sa.String(64), nullable=False),
        sa.Column("key_id", sa.String(64)),
        sa.Column("signature", sa.String(128)),
    )
    op.create_index("ix_deletion_receipts_task", "deletion_receipts", ["task_id"])
    bind = op.get_bind()
    for statement in _GUARDS[bind.dialect.name == "postgresql"]:
        bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    for statement in _OLD_GUARDS[bind.dialect.name == "postgresql"]:
        bind.exec_driver_sql(statement)
    op.drop_index("ix_deletion_receipts_task", table_name="deletion_receipts")
    op.drop_table("deletion_receipts")


# Frozen SQL (not store.db's): the guard as this revision leaves it.
_COVERED = (
    "SELECT 1 FROM deletion_receipts AS r WHERE r.task_id = OLD.task_id AND r.head_seq >= OLD.seq"
)
_SQLITE = (
    "DROP TRIGGER IF EXISTS events_no_delete",
    f"""CREATE TRIGGER events_no_delete BEFORE DELETE ON events
       WHEN NOT EXISTS ({_COVERED})
       BEGIN SELECT RAISE(ABORT, 'events are append-only'); END""",
)
_POSTGRES = (
    f"""CREATE OR REPLACE FUNCTION boris_events_append_only() RETURNS trigger AS $$
       BEGIN
         IF TG_OP = 'DELETE' AND EXISTS ({_COVERED}) THEN
           RETURN OLD;
         END IF;
         RAISE EXCEPTION 'events are append-only';
       END; $$ LANGUAGE plpgsql""",
)
_GUARDS = {False: _SQLITE, True: _POSTGRES}
_OLD_GUARDS = {
    False: (
        "DROP TRIGGER IF EXISTS events_no_delete",
        """CREATE TRIGGER events_no_delete BEFORE DELETE ON events
           BEGIN SELECT RAISE(ABORT, 'events are append-only'); END""",
    ),
    True: (
        """CREATE OR REPLACE FUNCTION boris_events_append_only() RETURNS trigger AS $$
           BEGIN RAISE EXCEPTION 'events are append-only'; END; $$ LANGUAGE plpgsql""",
    ),
}
