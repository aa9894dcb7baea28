"""The first schema: events, the task contract, the effect ledger and checkpoints.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from store import db

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    # One piece: this revision is frozen, a script of its day's tables spelled out in order
    # rather than taken from store.schema (or from helpers later edits could reach), so that
    # later edits to the schema module cannot rewrite history.
    op.create_table(
        "store_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("format", sa.Integer, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_id", sa.String(128), nullable=False),
        sa.Column("actor_name", sa.String(256), nullable=False),
        sa.Column("at", sa.String(32), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.UniqueConstraint("task_id", "seq", name="uq_events_task_seq"),
    )
    op.create_index("ix_events_task_type", "events", ["task_id", "type"])
    for statement in db.event_guards(op.get_bind().dialect.name):
        op.execute(statement)
    op.create_table(
        "tasks",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("status_reason", sa.Text, nullable=False),
        sa.Column("objective_rev", sa.Integer, nullable=False),
        sa.Column("scope", sa.JSON, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
        sa.Column("last_seq", sa.Integer, nullable=False),
        sa.Column("head_hash", sa.String(64), nullable=False),
    )
    op.create_table(
        "objective_revisions",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("rev", sa.Integer, primary_key=True),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("actor", sa.JSON, nullable=False),
        sa.Column("at", sa.String(32), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
    )
    op.create_table(
        "criteria",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("criterion_id", sa.String(64), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("artifact_id", sa.String(64)),
        sa.Column("artifact_version", sa.Integer),
        sa.Column("evidence_ids", sa.JSON, nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("judged_by", sa.JSON),
        sa.Column("judged_at", sa.String(32)),
        sa.Column("stale_reason", sa.Text, nullable=False),
    )
    op.create_table(
        "artifacts",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("artifact_id", sa.String(64), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("current_version", sa.Integer, nullable=False),
    )
    op.create_table(
        "artifact_versions",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("artifact_id", sa.String(64), primary_key=True),
        sa.Column("version", sa.Integer, primary_key=True),
        sa.Column("digest", sa.String(80), nullable=False),
        sa.Column("media_type", sa.String(128), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("path", sa.Text),
        sa.Column("producer", sa.JSON, nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("at", sa.String(32), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
    )
    op.create_table(
        "evidence",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("evidence_id", sa.String(64), primary_key=True),
        sa.Column("criterion_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("digest", sa.String(80), nullable=False),
        sa.Column("media_type", sa.String(128), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("locator", sa.Text, nullable=False),
        sa.Column("actor", sa.JSON, nullable=False),
        sa.Column("at", sa.String(32), nullable=False),
    )
    op.create_table(
        "phases",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("phase_id", sa.String(64), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("inputs", sa.JSON, nullable=False),
        sa.Column("result", sa.JSON),
        sa.Column("history", sa.JSON, nullable=False),
    )
    op.create_table(
        "budgets",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("counter", sa.String(32), primary_key=True),
        sa.Column("limit_value", sa.Float),
        sa.Column("used", sa.Float, nullable=False),
        sa.Column("reserved", sa.Float, nullable=False),
    )
    op.create_table(
        "effects",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("effect_id", sa.String(64), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("idempotency_key", sa.String(128), nullable=False),
        sa.Column("intent", sa.JSON, nullable=False),
        sa.Column("consequence", sa.Text, nullable=False),
        sa.Column("requires_approval", sa.Boolean, nullable=False),
        sa.Column("stage", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(16)),
        sa.Column("reconciliation", sa.JSON),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
        sa.UniqueConstraint("task_id", "idempotency_key", name="uq_effects_idempotency"),
    )
    op.create_table(
        "attempts",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("effect_id", sa.String(64), primary_key=True),
        sa.Column("attempt_no", sa.Integer, primary_key=True),
        sa.Column("executor", sa.String(128), nullable=False),
        sa.Column("inputs", sa.JSON, nullable=False),
        sa.Column("approval_id", sa.String(64)),
        sa.Column("started_at", sa.String(32), nullable=False),
        sa.Column("ended_at", sa.String(32)),
        sa.Column("response", sa.JSON),
        sa.Column("error", sa.Text),
        sa.Column("outcome", sa.String(16)),
    )
    op.create_table(
        "observations",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("observation_id", sa.String(64), primary_key=True),
        sa.Column("effect_id", sa.String(64)),
        sa.Column("artifact_id", sa.String(64)),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("exists", sa.Boolean, nullable=False),
        sa.Column("digest", sa.String(80)),
        sa.Column("size", sa.BigInteger),
        sa.Column("mtime_ns", sa.BigInteger),
        sa.Column("purpose", sa.String(32), nullable=False),
        sa.Column("observer", sa.JSON, nullable=False),
        sa.Column("at", sa.String(32), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
    )
    op.create_table(
        "approvals",
        sa.Column("approval_id", sa.String(64), primary_key=True),
        sa.Column("task_id", sa.String(64), nullable=False),
        sa.Column("effect_id", sa.String(64)),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("payload_digest", sa.String(80), nullable=False),
        sa.Column("consequence", sa.Text, nullable=False),
        sa.Column("policy", sa.Text, nullable=False),
        sa.Column("requester", sa.JSON, nullable=False),
        sa.Column("requested_at", sa.String(32), nullable=False),
        sa.Column("expires_at", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("decided_by", sa.JSON),
        sa.Column("decided_at", sa.String(32)),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("consumed_at", sa.String(32)),
        sa.Column("consumed_by", sa.String(128)),
    )
    op.create_index("ix_approvals_task_id", "approvals", ["task_id"])
    op.create_table(
        "checkpoints",
        sa.Column("task_id", sa.String(64), primary_key=True),
        sa.Column("checkpoint_id", sa.String(64), primary_key=True),
        sa.Column("reason", sa.String(16), nullable=False),
        sa.Column("supersedes", sa.JSON, nullable=False),
        sa.Column("merged", sa.JSON, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("chain_hash", sa.String(64), nullable=False),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("state_digest", sa.String(80), nullable=False),
        sa.Column("author", sa.JSON, nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("at", sa.String(32), nullable=False),
        sa.Column("superseded", sa.Boolean, nullable=False),
    )
