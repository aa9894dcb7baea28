"""Two approvers (a quorum): an approval may need several distinct people.

- `approvals.approvers`: how many distinct people must approve the request (1 for every
  request made before this revision: none asked for more).
- `approvals.approved_by`: the people who approved the object the approval binds now, in
  order, as events name an actor (kind, id, name). An edit starts the list again.

The backfill folds `approval.decided` as the projection does, in plain SQL and JSON on the
tables as they are at 0010 (frozen like the earlier revisions), so a rebuild after the
migration gives the same rows.

Revision ID: 0011
Revises: 0010
"""

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# Frozen: the two columns as this revision writes them.
_APPROVALS = sa.table(
    "approvals",
    sa.column("task_id", sa.String),
    sa.column("approval_id", sa.String),
    sa.column("approved_by", sa.JSON),
)


def _fold(conn: Any) -> dict[tuple[str, str], list[dict[str, str]]]:
    """Each approval's people who approved it, replaying its decisions."""
    approved: dict[tuple[str, str], list[dict[str, str]]] = {}
    rows = conn.execute(
        sa.text(
            "SELECT task_id, payload, actor_kind, actor_id, actor_name FROM events "
            "WHERE type = 'approval.decided' ORDER BY task_id, seq"
        )
    )
    for task_id, payload, kind, actor_id, name in rows:
        p = json.loads(payload)
        if p.get("decision") != "approved":
            continue
        key = (task_id, p["approval_id"])
        people = [] if p.get("edited") is not None else approved.get(key, [])
        if all(x["id"] != actor_id for x in people):
            people = [*people, {"kind": kind, "id": actor_id, "name": name}]
        approved[key] = people
    return approved


def upgrade() -> None:
    conn = op.get_bind()
    op.add_column(
        "approvals",
        sa.Column("approvers", sa.Integer, nullable=False, server_default=sa.text("1")),
    )
    op.add_column(
        "approvals",
        sa.Column("approved_by", sa.JSON, nullable=False, server_default=sa.text("'[]'")),
    )
    for (task_id, approval_id), people in _fold(conn).items():
        conn.execute(
            _APPROVALS.update()
            .where(_APPROVALS.c.task_id == task_id, _APPROVALS.c.approval_id == approval_id)
            .values(approved_by=people)
        )


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("approved_by")
        batch.drop_column("approvers")
