"""Where a store lives: the user data directory by default, or what the user names."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DB_NAME = "boris.sqlite"


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
    if not url:
        url = f"sqlite+pysqlite:///{directory / DB_NAME}"
    return Location(url=url, directory=directory)
