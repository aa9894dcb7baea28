"""Where a store lives: the user data directory by default, or what the user names."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import StoreLocationInvalid

DB_NAME = "boris.sqlite"
SUPPORTED_URLS = "sqlite:///PATH or postgresql+psycopg://USER@HOST/DATABASE"


@dataclass(frozen=True)
class Location:
    """A store: a database URL plus the directory that holds its blobs and backups."""

    url: str
    directory: Path

    @property
    def blobs(self) -> Path:
        return self.directory / "blobs"

    @property
    def backups(self) -> Path:
        return self.directory / "backups"

    @property
    def sqlite_file(self) -> Path | None:
        prefix = "sqlite+pysqlite:///"
        return Path(self.url[len(prefix) :]) if self.url.startswith(prefix) else None

    def describe(self) -> str:
        return str(self.sqlite_file or self.url.split("@")[-1])


def default_directory() -> Path:
    from platformdirs import user_data_path

    return user_data_path("boris", appauthor=False)


def resolve(store: str | os.PathLike[str] | None = None, url: str | None = None) -> Location:
    """`store` (a directory) beats BORIS_STORE beats the platform default; `url` (or
    BORIS_STORE_URL) picks another database, with blobs still kept in the directory."""
    if store is None:
        env = os.environ.get("BORIS_STORE")
        directory = Path(env) if env else default_directory()
    else:
        directory = Path(store)
    directory = directory.expanduser().absolute()
    url = url or os.environ.get("BORIS_STORE_URL")
    url = checked_url(url) if url else f"sqlite+pysqlite:///{directory / DB_NAME}"
    return Location(url=url, directory=directory)


def checked_url(url: str) -> str:
    """A database URL in the one form the store uses for it, or `StoreLocationInvalid`
    naming the forms it accepts: an SQLite file (made absolute) or PostgreSQL via psycopg."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreLocationInvalid(f"{url!r} is not a database URL; use {SUPPORTED_URLS}") from None
    shown = parsed.render_as_string(hide_password=True)
    if parsed.drivername in ("sqlite", "sqlite+pysqlite"):
        database = parsed.database or ""
        if not database or database == ":memory:" or database.startswith("file:"):
            raise StoreLocationInvalid(f"{shown!r} names no database file; use {SUPPORTED_URLS}")
        path = Path(database).expanduser().absolute()
        return f"sqlite+pysqlite:///{path}"
    if parsed.drivername in ("postgresql", "postgresql+psycopg"):
        # A bare postgresql:// means psycopg2 to SQLAlchemy; the store is built on psycopg 3.
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    raise StoreLocationInvalid(f"{shown!r} is not a supported database; use {SUPPORTED_URLS}")
