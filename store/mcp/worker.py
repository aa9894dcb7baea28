"""The store as the MCP server uses it: one agent identity, and store work in one worker
thread at a time (`anyio.to_thread`), so the event loop keeps answering (a wait in progress
holds nothing up) and the store sees one caller, as from any other process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ..model import Actor
from ..store import Store

T = TypeVar("T")


class StoreWorker:
    """One store, the agent every call acts as, and the one thread its work runs in."""

    def __init__(self, store: Store, actor: Actor) -> None:
        self.store = store
        self.actor = actor
        self._one = anyio.CapacityLimiter(1)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in the worker thread, after any store work already running there."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._one)
