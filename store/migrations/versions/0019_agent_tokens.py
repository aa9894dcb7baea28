"""Agents' bearer tokens (issue 40): agents reach a team store through `boris mcp --http
--team`, which holds the database login, and authenticate to it with a token a person issued.

- `agent_tokens`: one row per token, by a public id; the token itself is never stored, only
  its sha256 digest. The agent it names, who issued it and when (the database's clock), and
  when and by whom it was revoked.
- on PostgreSQL, a trigger records the login that issued and that revoked each token (the
  columns a client sends are overwritten, as `events.db_role` is), and refuses to revive a
  revoked token or to change what a token names. Which logins may write the table at all is
  `boris roles-sql`'s grants: a reviewers' login and the owner, never the agents' nor the
  server's.

No backfill: no token existed before this revision.

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

# Frozen: the function as this revision installs it.
_GUARD = (
    """CREATE OR REPLACE FUNCTION boris_agent_tokens_guard() RETURNS trigger AS $$
       BEGIN
         IF TG_OP = 'INSERT' THEN
           NEW.issued_role := current_user;
           NEW.revoked_role := CASE WHEN NEW.revoked_at IS NULL THEN NULL ELSE current_user END;
           RETURN NEW;
         END IF;
         IF NEW.token_id IS DISTINCT FROM OLD.token_id
            OR NEW.token_hash IS DISTINCT FROM OLD.token_hash
            OR NEW.agent_id IS DISTINCT FROM OLD.agent_id
            OR NEW.issued_by IS DISTINCT FROM OLD.issued_by
            OR NEW.issued_at IS DISTINCT FROM OLD.issued_at
            OR NEW.issued_role IS DISTINCT FROM OLD.issued_role
            OR (OLD.revoked_at IS NOT NULL AND (NEW.revoked_at IS DISTINCT FROM OLD.revoked_at
                OR NEW.revoked_by IS DISTINCT FROM OLD.revoked_by)) THEN
           RAISE EXCEPTION USING ERRCODE = '42501',
             MESSAGE = 'an agent token is only ever revoked: token ' || OLD.token_id
               || ' cannot be changed or revived';
         END IF;
         IF NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
           NEW.revoked_role := current_user;
         ELSE
           NEW.revoked_role := OLD.revoked_role;
         END IF;
         RETURN NEW;
       END; $$ LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp""",
    """CREATE TRIGGER agent_tokens_guard BEFORE INSERT OR UPDATE ON agent_tokens
       FOR EACH ROW EXECUTE FUNCTION boris_agent_tokens_guard()""",
)


def upgrade() -> None:
    # Frozen: spelled out here, not taken from store.schema.
    op.create_table(
        "agent_tokens",
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
    op.create_index("ix_agent_tokens_hash", "agent_tokens", ["token_hash"], unique=True)
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for statement in _GUARD:
            bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        bind.exec_driver_sql("DROP TRIGGER IF EXISTS agent_tokens_guard ON agent_tokens")
        bind.exec_driver_sql("DROP FUNCTION IF EXISTS boris_agent_tokens_guard()")
    op.drop_index("ix_agent_tokens_hash", table_name="agent_tokens")
    op.drop_table("agent_tokens")
