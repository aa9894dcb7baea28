"""The durable record of an agent's long-running task: headless, no Qt.

Agents, scripts, the `boris` CLI and Boris Desktop all write through `Store.execute` with a
command from `store.commands`, and read the projections that `Store.task` assembles.

`Store`, `Actor` and the errors are imported on first use: `boris --version`, a command
handed to the resident process or a window's first paint should not wait for SQLAlchemy
and pydantic to load.
"""

from .version import __version__

#: typing itself is not imported: mypy reads this name as typing's (and `boris`'s start is
#: spared its import, ~9 ms).
TYPE_CHECKING = False
if TYPE_CHECKING:
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
    from .model import Actor
    from .store import Store


def __getattr__(name: str) -> object:
    if name == "Store":
        from .store import Store

        return Store
    if name == "Actor":
        from .model import Actor

        return Actor
    if name in __all__:
        from . import errors

        return getattr(errors, name)
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
