"""A checkpoint's state is kept once, in its event; its heads live on the task's row.

Before, each checkpoint write stored the state twice (in the `checkpoint.written` event and
in the checkpoints row), marked the head it replaced as superseded and kept an index of
heads: nine WAL pages a commit where the lineage needs about five. Now:

- `checkpoints` loses `state` and `superseded`, gains `event_seq` (where its event is), and is
  clustered on its key on SQLite (WITHOUT ROWID), so a write touches one b-tree.
- `tasks.checkpoint_heads` lists the heads, oldest first, on the row every event updates.

Nothing is lost: every state dropped here is in its event, which readers now join.

Revision ID: 0004
Revises: 0003
"""

import json
from collections import defaultdict

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    op.add_column(
        "tasks",
        sa.Column("checkpoint_heads", sa.JSON, nullable=False, server_default=sa.text("'[]'")),
    )
    op.add_column("checkpoints", sa.Column("event_seq", sa.Integer, nullable=True))

    # Frozen like the earlier revisions: plain SQL on the tables as they are at 0003.
    heads: dict[str, list[str]] = defaultdict(list)
    for task_id, checkpoint_id in conn.execute(
        sa.text(
            "SELECT task_id, checkpoint_id FROM checkpoints WHERE NOT superseded "
            "ORDER BY task_id, seq, at"
        )
    ):
        heads[task_id].append(checkpoint_id)
    for task_id, ids in heads.items():
        conn.execute(
            sa.text("UPDATE tasks SET checkpoint_heads = :h WHERE task_id = :t"),
            {"h": json.dumps(ids), "t": task_id},
        )
    for task_id, seq, payload in conn.execute(
        sa.text("SELECT task_id, seq, payload FROM events WHERE type = 'checkpoint.written'")
    ).all():
        conn.execute(
            sa.text(
                "UPDATE checkpoints SET event_seq = :s WHERE task_id = :t AND checkpoint_id = :c"
            ),
            {"s": seq, "t": task_id, "c": json.loads(payload)["checkpoint_id"]},
        )
    missing = conn.execute(
        sa.text("SELECT count(*) FROM checkpoints WHERE event_seq IS NULL")
    ).scalar_one()
    if missing:
        raise RuntimeError(f"{missing} checkpoint rows have no checkpoint.written event")

    sqlite = conn.dialect.name == "sqlite"
    with op.batch_alter_table(
        "checkpoints",
        recreate="always" if sqlite else "auto",
        table_kwargs={"sqlite_with_rowid": False} if sqlite else {},
    ) as batch:
        batch.drop_index("ix_checkpoints_heads")
        batch.drop_column("state")
        batch.drop_column("superseded")
        batch.alter_column("event_seq", existing_type=sa.Integer, nullable=False)
