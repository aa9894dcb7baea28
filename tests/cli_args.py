"""What the tests hand `boris` to reach a test's store: its directory, and on PostgreSQL
its URL too (the way a user points the CLI at a team store)."""

from __future__ import annotations

from store import Store


def store_args(store: Store) -> list[str]:
    args = ["--store", str(store.location.directory)]
    return args if store.location.sqlite_file else [*args, "--url", store.location.url]
