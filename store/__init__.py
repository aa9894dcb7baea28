"""The durable record of an agent's long-running task: headless, no Qt.

Agents, scripts, the `boris` CLI and Boris Desktop all write through `Store.execute` with a
command from `store.commands`, and read the projections that `Store.task` assembles.

`Store` and `Actor` are imported on first use: `boris --version` or a window's first paint
should not wait for SQLAlchemy and pydantic to load.
"""

from typing import TYPE_CHECKING, Any

from .errors import (
    BlobProblem,
    CommandRejected,
    MigrationFailed,
    RoleRefused,
    ScopeViolation,
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreLocationInvalid,
    StoreMissing,
    StoreReadOnly,
    StoreTooNew,
    UnknownTask,
    WriteConflict,
)
from .version import __version__

if TYPE_CHECKING:
    from .model import Actor
    from .store import Store


def __getattr__(name: str) -> Any:
    if name == "Store":
        from .store import Store

        return Store
    if name == "Actor":
        from .model import Actor

        return Actor
    raise AttributeError(f"module 'store' has no attribute {name!r}")


__all__ = [
    "Actor",
    "BlobProblem",
    "CommandRejected",
    "MigrationFailed",
    "RoleRefused",
    "ScopeViolation",
    "Store",
    "StoreBusy",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreLocationInvalid",
    "StoreMissing",
    "StoreReadOnly",
    "StoreTooNew",
    "UnknownTask",
    "WriteConflict",
    "__version__",
]
