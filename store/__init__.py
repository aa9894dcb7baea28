"""The durable record of an agent's long-running task: headless, no Qt.

Agents, scripts, the `boris` CLI and Boris Desktop all write through `Store.execute` with a
command from `store.commands`, and read the projections that `Store.task` assembles.
"""

from .errors import (
    BlobProblem,
    CommandRejected,
    MigrationFailed,
    ScopeViolation,
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreTooNew,
    UnknownTask,
)
from .model import Actor
from .store import Store
from .version import __version__

__all__ = [
    "Actor",
    "BlobProblem",
    "CommandRejected",
    "MigrationFailed",
    "ScopeViolation",
    "Store",
    "StoreBusy",
    "StoreCorrupt",
    "StoreError",
    "StoreTooNew",
    "UnknownTask",
    "__version__",
]
