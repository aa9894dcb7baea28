"""Late changes: what changed after a task completed (issue 35 part L).

Four columns on `tasks`, a projection of the late facts (store.rules.LATE_FACT_EVENTS
recorded while the task was completed) and of a person's answer to them
(`late_changes.acknowledged`, `followup.opened`), kept on the task's row so that the inbox
sorts and filters by them in SQL:

- `late_count`: late facts not yet answered (0: nothing changed after completion);
- `late_since_seq`, `late_since_at`: the first of them;
- `late_last_seq`: the newest late fact (the `based_on` of an answer).

Backfill: an older program already took an effect observation on a completed task, so the
log is replayed here, by event type and status, as the projection would (frozen: the types
are spelled out, not taken from store.rules).

Revision ID: 0016
Revises: 0015
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_LATE = (
    "observation.recorded",
    "effect.reconciled",
    "criterion.judged",
    "artifact.version_recorded",
)


def upgrade() -> None:
    op.add_column(
        "tasks", sa.Column("late_count", sa.Integer, nullable=False, server_default=sa.text("0"))
    )
    op.add_column("tasks", sa.Column("late_since_seq", sa.Integer))
    op.add_column("tasks", sa.Column("late_since_at", sa.String(32)))
    op.add_column("tasks", sa.Column("late_last_seq", sa.Integer))
    conn = op.get_bind()
    completed = [
        r[0] for r in conn.execute(sa.text("SELECT task_id FROM tasks WHERE status = 'completed'"))
    ]
    for task_id in completed:
        rows = conn.execute(
            sa.text("SELECT seq, type, payload, at FROM events WHERE task_id = :t ORDER BY seq"),
            {"t": task_id},
        )
        status, count, since_seq, since_at, last = "", 0, None, None, None
        for seq, type_, payload, at in rows:
            if type_ == "run.status_changed":
                status = str(json.loads(payload).get("to_status", status))
            elif type_ in _LATE and status == "completed":
                count += 1
                since_seq = since_seq or seq
                since_at = since_at or at
                last = seq
        if count:
            conn.execute(
                sa.text(
                    "UPDATE tasks SET late_count = :c, late_since_seq = :s, "
                    "late_since_at = :a, late_last_seq = :l WHERE task_id = :t"
                ),
                {"c": count, "s": since_seq, "a": since_at, "l": last, "t": task_id},
            )


def downgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("late_last_seq")
        batch.drop_column("late_since_at")
        batch.drop_column("late_since_seq")
        batch.drop_column("late_count")
