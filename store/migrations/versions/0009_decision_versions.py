"""Decisions name the version they were based on: criteria get a revision, evidence the
artifact version it was made on.

- `criteria.rev`, `criteria.rev_seq`: the criterion's revision (1 when added, one more for
  every event touching it: changed, judged, evidence attached, made stale by a newer
  version of what it was judged against) and the seq of the event that made it. A person's
  judgement names the revision it saw; a later one is a conflict, never an overwrite.
- `evidence.artifact_id`, `evidence.artifact_version`: the artifact version the evidence
  was made on, where its writer says (none did before this revision: NULL);
  `evidence.seq`: its event's seq, so that evidence without a version is dated against the
  artifact versions recorded before it.

The backfill folds the log as the projections do, in plain SQL and JSON on the tables as
they are at 0008 (frozen like the earlier revisions), so a rebuild after the migration
gives the same rows.

Revision ID: 0009
Revises: 0008
"""

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_TOUCHING = (
    "criterion.added",
    "criterion.changed",
    "criterion.judged",
    "evidence.attached",
    "artifact.version_recorded",
)


def _fold(conn: Any) -> tuple[dict[tuple[str, str], list[Any]], dict[tuple[str, str], int]]:
    """Each criterion's [rev, rev_seq, status, artifact_id, artifact_version] and each
    evidence's seq, by replaying the events that touch them."""
    crit: dict[tuple[str, str], list[Any]] = {}
    evid: dict[tuple[str, str], int] = {}
    marks = ", ".join(f"'{x}'" for x in _TOUCHING)
    rows = conn.execute(
        sa.text(
            f"SELECT task_id, seq, type, payload FROM events WHERE type IN ({marks}) "
            "ORDER BY task_id, seq"
        )
    )
    for task_id, seq, type_, payload in rows:
        p = json.loads(payload)
        if type_ == "criterion.added":
            crit[(task_id, p["criterion_id"])] = [1, seq, "unverified", None, None]
            continue
        if type_ == "artifact.version_recorded":
            for (tid, _), other in crit.items():
                if (
                    tid == task_id
                    and other[2] == "satisfied"
                    and other[3] == p["artifact_id"]
                    and other[4] is not None
                    and other[4] < p["version"]
                ):
                    other[0], other[1], other[2] = other[0] + 1, seq, "stale"
            continue
        c = crit.get((task_id, p["criterion_id"]))
        if type_ == "evidence.attached":
            evid[(task_id, p["evidence_id"])] = seq
        if c is None:
            continue
        c[0], c[1] = c[0] + 1, seq
        if type_ == "criterion.changed":
            c[2], c[3], c[4] = "unverified", None, None
        elif type_ == "criterion.judged":
            c[2], c[3], c[4] = p["status"], p.get("artifact_id"), p.get("artifact_version")
    return crit, evid


def upgrade() -> None:
    conn = op.get_bind()
    op.add_column("criteria", sa.Column("rev", sa.Integer, nullable=True))
    op.add_column("criteria", sa.Column("rev_seq", sa.Integer, nullable=True))
    op.add_column("evidence", sa.Column("artifact_id", sa.String(64), nullable=True))
    op.add_column("evidence", sa.Column("artifact_version", sa.Integer, nullable=True))
    op.add_column("evidence", sa.Column("seq", sa.Integer, nullable=True))

    crit, evid = _fold(conn)
    for (task_id, criterion_id), (rev, rev_seq, *_) in crit.items():
        conn.execute(
            sa.text(
                "UPDATE criteria SET rev = :r, rev_seq = :s "
                "WHERE task_id = :t AND criterion_id = :c"
            ),
            {"r": rev, "s": rev_seq, "t": task_id, "c": criterion_id},
        )
    for (task_id, evidence_id), seq in evid.items():
        conn.execute(
            sa.text("UPDATE evidence SET seq = :s WHERE task_id = :t AND evidence_id = :e"),
            {"s": seq, "t": task_id, "e": evidence_id},
        )
    for table, column in (("criteria", "rev"), ("evidence", "seq")):
        missing = conn.execute(
            sa.text(f"SELECT count(*) FROM {table} WHERE {column} IS NULL")
        ).scalar_one()
        if missing:
            raise RuntimeError(f"{missing} {table} rows have no event to date them")

    with op.batch_alter_table("criteria") as batch:
        batch.alter_column("rev", existing_type=sa.Integer, nullable=False)
        batch.alter_column("rev_seq", existing_type=sa.Integer, nullable=False)
    with op.batch_alter_table("evidence") as batch:
        batch.alter_column("seq", existing_type=sa.Integer, nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("evidence") as batch:
        batch.drop_column("seq")
        batch.drop_column("artifact_version")
        batch.drop_column("artifact_id")
    with op.batch_alter_table("criteria") as batch:
        batch.drop_column("rev_seq")
        batch.drop_column("rev")
