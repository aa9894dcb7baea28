"""Shared fixtures: temporary stores and workspaces, never the user's directories."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from store import Store


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A task's workspace: the root of its resource scope."""
    w = tmp_path / "workspace"
    w.mkdir()
    return w


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "store")
    yield s
    s.close()


@pytest.fixture
def s(store: Store) -> Store:
    return store
