"""The write guard: one round trip for a write on a team store (issue 36).

A process that wrote a task last knows its row (head, lease, the keyring's head) as the
write left it. Its next write to that task sends everything at once, built on that
knowledge, and this function, the first statement of the exchange, checks it under the
task's row lock: the row's fingerprint must be the one the process knows, and the time the
process gave its events must be the database's clock (not after it, and not more than the
allowed slack before it). Anything else aborts the transaction with SQLSTATE BR001 or BR002
and the process writes again the ordinary way (store.tx, store.store). On SQLite, where
writers queue for the file, nothing is done.

Revision ID: 0018
Revises: 0017
"""

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# Frozen: the function as this revision installs it (store.tx calls it by name).
GUARD = """
CREATE OR REPLACE FUNCTION boris_write_guard(
    p_current text, p_expected text, p_at text, p_slack_ms integer
) RETURNS void AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_format constant text := 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"';
BEGIN
    IF p_current IS DISTINCT FROM p_expected THEN
        RAISE EXCEPTION 'the task changed since this process last wrote it'
            USING ERRCODE = 'BR001';
    END IF;
    IF p_at > to_char(v_now AT TIME ZONE 'UTC', v_format)
       OR p_at < to_char((v_now - p_slack_ms * interval '1 millisecond') AT TIME ZONE 'UTC',
                         v_format) THEN
        RAISE EXCEPTION USING ERRCODE = 'BR002',
            MESSAGE = 'the write''s time ' || p_at || ' is not the database''s clock';
    END IF;
END $$ LANGUAGE plpgsql
"""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        bind.exec_driver_sql(GUARD)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        bind.exec_driver_sql("DROP FUNCTION IF EXISTS boris_write_guard(text, text, text, integer)")
