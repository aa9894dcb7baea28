"""Tables of the durable record (SQLAlchemy Core).

`events` is the truth: append-only, keyed (task_id, seq), hash-chained per task. Every other
table is a projection of it, written in the same transaction and rebuildable by replay. The
Alembic migrations under `store/migrations` create exactly these tables; a test checks that
the two agree.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

# A team store's database roles (store.team): which role is the agents', which the reviewers'.
team_roles = sa.Table(
    "team_roles",
    metadata,
    sa.Column("role_name", sa.String(63), primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),
)

# Settings of the store itself (which program wrote it last, the store's own id).
store_meta = sa.Table(
    "store_meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

events = sa.Table(
    "events",
    metadata,
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
    # The database role that inserted the row, set by the server (store.team) on PostgreSQL
    # and NULL on SQLite. A fact about the row, outside the hashed body: the chain is as it was.
    sa.Column("db_role", sa.String(63)),
    sa.UniqueConstraint("task_id", "seq", name="uq_events_task_seq"),
)
#: Event columns the database fills, never a writer, an export or an import.
SERVER_FILLED_EVENT_COLUMNS = frozenset({"id", "db_role"})
sa.Index("ix_events_task_type", events.c.task_id, events.c.type)

tasks = sa.Table(
    "tasks",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("status_reason", sa.Text, nullable=False, default=""),
    sa.Column("objective_rev", sa.Integer, nullable=False),
    sa.Column("scope", sa.JSON, nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("updated_at", sa.String(32), nullable=False),
    sa.Column("last_seq", sa.Integer, nullable=False),
    sa.Column("head_hash", sa.String(64), nullable=False),
    # The task's checkpoint heads (ids nothing supersedes), oldest first: kept on the row
    # every event updates anyway, so a checkpoint write finds and moves them for free.
    sa.Column("checkpoint_heads", sa.JSON, nullable=False, server_default=sa.text("'[]'")),
    # Changed after completion (issue 35 part L, migration 0016): late facts not yet answered
    # by a person, the first of them, and the newest (an answer's `based_on`). On the row so
    # the inbox sorts and filters by them in SQL.
    sa.Column("late_count", sa.Integer, nullable=False, default=0, server_default=sa.text("0")),
    sa.Column("late_since_seq", sa.Integer),
    sa.Column("late_since_at", sa.String(32)),
    sa.Column("late_last_seq", sa.Integer),
)

objective_revisions = sa.Table(
    "objective_revisions",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("rev", sa.Integer, primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("actor", sa.JSON, nullable=False),
    sa.Column("at", sa.String(32), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
)

criteria = sa.Table(
    "criteria",
    metadata,
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
    # The criterion's revision: 1 when added, one more for every event that touches it
    # (changed, judged, evidence attached, made stale), and the seq of that event. A
    # person's decision names the revision it saw; a later one is a conflict (0009).
    sa.Column("rev", sa.Integer, nullable=False),
    sa.Column("rev_seq", sa.Integer, nullable=False),
)

artifacts = sa.Table(
    "artifacts",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("artifact_id", sa.String(64), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("role", sa.String(32), nullable=False),
    sa.Column("current_version", sa.Integer, nullable=False),
)

artifact_versions = sa.Table(
    "artifact_versions",
    metadata,
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

evidence = sa.Table(
    "evidence",
    metadata,
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
    # The artifact version the evidence was made on, where its writer said (0009), and the
    # seq of its event: without a version, it was made on the one current at that seq.
    sa.Column("artifact_id", sa.String(64)),
    sa.Column("artifact_version", sa.Integer),
    sa.Column("seq", sa.Integer, nullable=False),
)

phases = sa.Table(
    "phases",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("phase_id", sa.String(64), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("inputs", sa.JSON, nullable=False),
    # The current result and the input identities it was computed from; None when there is
    # none or an input changed since (the old result then lives only in `history`).
    sa.Column("result", sa.JSON),
    sa.Column("history", sa.JSON, nullable=False),
)

budgets = sa.Table(
    "budgets",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("counter", sa.String(32), primary_key=True),
    sa.Column("limit_value", sa.Float),
    sa.Column("used", sa.Float, nullable=False),
    sa.Column("reserved", sa.Float, nullable=False),
)

effects = sa.Table(
    "effects",
    metadata,
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

attempts = sa.Table(
    "attempts",
    metadata,
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

observations = sa.Table(
    "observations",
    metadata,
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

approvals = sa.Table(
    "approvals",
    metadata,
    sa.Column("approval_id", sa.String(64), primary_key=True),
    sa.Column("task_id", sa.String(64), nullable=False, index=True),
    sa.Column("effect_id", sa.String(64)),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("payload_digest", sa.String(80), nullable=False),
    sa.Column("consequence", sa.Text, nullable=False),
    sa.Column("policy", sa.Text, nullable=False),
    sa.Column("requester", sa.JSON, nullable=False),
    sa.Column("requested_at", sa.String(32), nullable=False),
    sa.Column("expires_at", sa.String(32), nullable=False),
    # pending, approved, rejected, consumed, stale, revoked; `expired` is derived from the
    # database clock at read time, never written, so it cannot lag behind.
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("decided_by", sa.JSON),
    sa.Column("decided_at", sa.String(32)),
    sa.Column("note", sa.Text, nullable=False),
    sa.Column("consumed_at", sa.String(32)),
    sa.Column("consumed_by", sa.String(128)),
    # How many distinct people must approve (0011), and the people who approved the object it
    # binds now, in order (an edit starts the list again): it is `approved` when they suffice.
    sa.Column("approvers", sa.Integer, nullable=False, server_default=sa.text("1")),
    sa.Column("approved_by", sa.JSON, nullable=False, server_default=sa.text("'[]'")),
)

# A checkpoint's lineage and boundary. Its state is kept once, in its `checkpoint.written`
# event (at `event_seq`); readers join it (store.checkpoint_reads). Which checkpoints are
# heads is `tasks.checkpoint_heads`. Clustered on its key: one b-tree a write touches.
checkpoints = sa.Table(
    "checkpoints",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("checkpoint_id", sa.String(64), primary_key=True),
    sa.Column("reason", sa.String(16), nullable=False),
    sa.Column("supersedes", sa.JSON, nullable=False),
    sa.Column("merged", sa.JSON, nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("chain_hash", sa.String(64), nullable=False),
    sa.Column("event_seq", sa.Integer, nullable=False),
    sa.Column("state_digest", sa.String(80), nullable=False),
    sa.Column("author", sa.JSON, nullable=False),
    sa.Column("note", sa.Text, nullable=False),
    sa.Column("at", sa.String(32), nullable=False),
    sqlite_with_rowid=False,
)

# Who works on a task now (0012): the current or last lease of each task that had one, a
# projection of the lease events. `token` only grows per task (the fencing token a write
# carries); `expires_at` is the expiry the acquiring event granted, NULL for a person's lease
# (held until released). Renewals are in `lease_heartbeats`, never here.
leases = sa.Table(
    "leases",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("token", sa.Integer, nullable=False),
    sa.Column("holder", sa.JSON, nullable=False),
    sa.Column("session_id", sa.String(128), nullable=False),
    sa.Column("granted_at", sa.String(32), nullable=False),
    sa.Column("ttl_seconds", sa.Integer),
    sa.Column("expires_at", sa.String(32)),
    sa.Column("ended_at", sa.String(32)),
    sa.Column("ended_by", sa.JSON),
    sa.Column("end_reason", sa.String(16)),
    sa.Column("reason", sa.Text, nullable=False, server_default=sa.text("''")),
    sa.Column("seq", sa.Integer, nullable=False),
)

# A lease's newest heartbeat (0012). Not a projection and not chained (a heartbeat every few
# seconds would flood the log): a rebuild leaves it alone, and a read believes it only while
# its token is the lease's, so it can extend a live lease and never revive an ended one.
lease_heartbeats = sa.Table(
    "lease_heartbeats",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("token", sa.Integer, nullable=False),
    sa.Column("last_heartbeat_at", sa.String(32), nullable=False),
    sa.Column("expires_at", sa.String(32), nullable=False),
)

# Scheduled waits (0013): what a task waits for and when to consider it again, a projection
# of `wait.recorded`, `wait.rescheduled` and `wait.ended`. `not_before` is on the database's
# clock (`clock` says so); `state` is open, settled, cancelled or retired as written; a wait
# whose cancellation condition came true reads as retired at once (store.rules.wait_state).
waits = sa.Table(
    "waits",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("wait_id", sa.String(64), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("ref", sa.Text, nullable=False),
    sa.Column("not_before", sa.String(32), nullable=False),
    sa.Column("clock", sa.String(16), nullable=False),
    sa.Column("reserve_counter", sa.String(32)),
    sa.Column("reserve_amount", sa.Float),
    sa.Column("cancel_if", sa.JSON),
    sa.Column("note", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("recorded_by", sa.JSON, nullable=False),
    sa.Column("recorded_at", sa.String(32), nullable=False),
    sa.Column("considered", sa.Integer, nullable=False),
    sa.Column("ended_at", sa.String(32)),
    sa.Column("ended_by", sa.JSON),
    sa.Column("end_reason", sa.Text),
    sa.Column("seq", sa.Integer, nullable=False),
)

# Retention (0014): one row per item given a retention class (artifact version, evidence,
# note kept as content), a projection of `retention.set` and `content.retired`. `due_at` is
# on the database's clock (None: keep, or until-completion before the task completed);
# `retired_at` is set by the item's tombstone. An item never given a class is kept.
retention = sa.Table(
    "retention",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("item_kind", sa.String(32), primary_key=True),
    sa.Column("item_id", sa.String(160), primary_key=True),
    sa.Column("digest", sa.String(80), nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("media_type", sa.String(128), nullable=False),
    sa.Column("retain", sa.String(48), nullable=False),
    sa.Column("due_at", sa.String(32)),
    sa.Column("written_by", sa.JSON, nullable=False),
    sa.Column("set_by", sa.JSON, nullable=False),
    sa.Column("set_at", sa.String(32), nullable=False),
    sa.Column("retired_at", sa.String(32)),
    sa.Column("retired_by", sa.JSON),
    sa.Column("proved", sa.JSON),
    sa.Column("seq", sa.Integer, nullable=False),
)

# The last head `boris verify` found clean, per task (store.verify). Not a projection: a
# rebuild leaves it alone, so a log cut back below it is caught on the next verify.
verified_heads = sa.Table(
    "verified_heads",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    sa.Column("verified_at", sa.String(32), nullable=False),
)

# Blob content on a team store (store.blob_db): one row per blob, its bytes in 1 MiB chunks,
# each with its own digest so a damaged chunk is named. Created on SQLite too (one schema),
# where it stays empty: an embedded store keeps its blobs as files.
blob_contents = sa.Table(
    "blob_contents",
    metadata,
    sa.Column("digest", sa.String(71), primary_key=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("chunks", sa.Integer, nullable=False),
)

blob_chunks = sa.Table(
    "blob_chunks",
    metadata,
    sa.Column("digest", sa.String(71), primary_key=True),
    sa.Column("n", sa.Integer, primary_key=True),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
)

# A task deleted by a person (0015, store.services.deletion): the receipt the store keeps of
# it. Not a projection: no event is its source (the task's chain is what was deleted).
deletion_receipts = sa.Table(
    "deletion_receipts",
    metadata,
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
sa.Index("ix_deletion_receipts_task", deletion_receipts.c.task_id)

# The agents' bearer tokens of a team store's MCP server (0019, store.team): a person issues
# one per agent (`boris agent-token issue`); the store keeps only its digest. Not a
# projection: no event is its source. On PostgreSQL only a person's (reviewers') login or the
# owner's writes it, and the database records which login issued and revoked each.
agent_tokens = sa.Table(
    "agent_tokens",
    metadata,
    sa.Column("token_id", sa.String(32), primary_key=True),
    sa.Column("token_hash", sa.String(64), nullable=False),
    sa.Column("agent_id", sa.String(128), nullable=False),
    sa.Column("agent_name", sa.String(256), nullable=False),
    sa.Column("issued_by", sa.String(160), nullable=False),
    sa.Column("issued_at", sa.String(32), nullable=False),
    sa.Column("issued_role", sa.String(63)),
    sa.Column("revoked_at", sa.String(32)),
    sa.Column("revoked_by", sa.String(160)),
    sa.Column("revoked_role", sa.String(63)),
)
sa.Index("ix_agent_tokens_hash", agent_tokens.c.token_hash, unique=True)

#: Projection tables, in the order a rebuild clears and a dump compares them.
PROJECTIONS: tuple[sa.Table, ...] = (
    tasks,
    objective_revisions,
    criteria,
    artifacts,
    artifact_versions,
    evidence,
    phases,
    budgets,
    effects,
    attempts,
    observations,
    approvals,
    checkpoints,
    leases,
    waits,
    retention,
)

# --- signatures (store.signing) ------------------------------------------------------------

# The keyring: public keys bound to actors, added and revoked as a hash chain of entries,
# each signed by a person's key already trusted (the first by itself: the store's root).
keyring = sa.Table(
    "keyring",
    metadata,
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

# A transaction's signature per task it wrote: over (task_id, seq, hash) of its last event
# there, which commits to every event before it.
signatures = sa.Table(
    "signatures",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("key_id", sa.String(64), nullable=False),
    sa.Column("signature", sa.String(128), nullable=False),
    # Clustered on its key (0008): one b-tree, one page a signed commit.
    sqlite_with_rowid=False,
)

# The paged inbox (issue 36 part W, migration 0017): the database sorts and filters 100,000
# tasks by these (store.reads.inbox_pages), and finds the few that need a person.
sa.Index("ix_tasks_updated", tasks.c.updated_at, tasks.c.task_id)
sa.Index("ix_tasks_status_updated", tasks.c.status, tasks.c.updated_at, tasks.c.task_id)
sa.Index("ix_tasks_title", tasks.c.title, tasks.c.task_id)
sa.Index("ix_approvals_state", approvals.c.state, approvals.c.expires_at)
sa.Index("ix_criteria_status", criteria.c.status)


# The tasks that need a person, found by index (issue 44, migration 0021): partial indexes
# holding only the rows store.reads.inbox_pages.NEED_CANDIDATES' arms find, its WHERE text.
def _need_index(name: str, table: sa.Table, where: str) -> sa.Index:
    clause = sa.text(where)
    return sa.Index(name, table.c.task_id, sqlite_where=clause, postgresql_where=clause)


_need_index(
    "ix_tasks_need",
    tasks,
    "late_count > 0 OR status = 'blocked' OR status = 'budget_exhausted' "
    "OR status = 'outcome_unknown' OR json_array_length(checkpoint_heads) > 1",
)
_need_index(
    "ix_effects_need",
    effects,
    "stage <> 'cancelled' AND (outcome = 'unknown' OR outcome = 'partial' OR stage = 'observed')",
)
_need_index(
    "ix_budgets_need",
    budgets,
    "limit_value IS NOT NULL AND (limit_value <= 0 OR used + reserved >= 0.8 * limit_value)",
)
