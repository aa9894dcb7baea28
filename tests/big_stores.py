"""Stores of generated tasks for the window's tests of big stores, made once per module
(benchmarks/gen_big_store.py: template tasks made by the store's commands, cloned in bulk
SQL with their chains recomputed); each test opens a copy of its own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def generated(factory: pytest.TempPathFactory, tasks: int, events: int) -> Path:
    """The directory of a new store of `tasks` tasks of `events` events each."""
    from gen_big_store import fill

    directory = factory.mktemp("big") / "store"
    with Store.open(directory) as s:
        fill(s, tasks, events, report=lambda _: None)
    return directory
