"""Alembic environment: migrations run on the connection the store hands over.

That connection is already inside the store's one write transaction (see
`store.migrate._upgrade`), so Alembic opens none of its own: every step of an upgrade is
kept, or none is.

On SQLite `render_as_batch` rebuilds a table to alter it, which drops the table's triggers:
a migration that alters `events` must create the append-only guards again
(`store.db.event_guards`).
"""

from __future__ import annotations

from alembic import context

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
