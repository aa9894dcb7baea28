"""Errors at the store boundary.

Two families, as in qutebrowser's sql module: `StoreError` subclasses are the user's environment
or input (a clear message, nothing lost); anything else escaping the store is a bug.
"""

from __future__ import annotations


class StoreError(Exception):
    """A problem the user can act on. The message is one line, meant to be shown as is."""


class CommandRejected(StoreError):
    """A command broke an invariant. Nothing was written."""


class UnknownTask(CommandRejected):
    def __init__(self, task_id: str) -> None:
        super().__init__(f"no task with id {task_id!r}")
        self.task_id = task_id


class ScopeViolation(CommandRejected):
    """A path or destination outside the task's resource scope."""


class StoreTooNew(StoreError):
    """The store was written by a newer program; it is left untouched."""


class MigrationFailed(StoreError):
    """Bringing the store to this program's schema failed; it was left at its old schema."""


class StoreCorrupt(StoreError):
    """The store file cannot be read as a Boris store."""


class StoreBusy(StoreError):
    """Another process held the write lock for longer than the busy timeout."""


class BlobProblem(StoreError):
    """A blob that is missing or whose content does not match its digest."""

    def __init__(self, digest: str, problem: str, owner: str = "") -> None:
        where = f" (owned by {owner})" if owner else ""
        super().__init__(f"blob {digest} is {problem}{where}")
        self.digest = digest
        self.problem = problem
        self.owner = owner


class UnknownEventFormat(StoreError):
    """An event payload in a format this program does not know; never filled with defaults."""


class StoreMissing(StoreError):
    """A command that only reads (or writes into an existing store) found no store there."""

    def __init__(self, where: str) -> None:
        super().__init__(f"no store at {where} (boris init creates one)")
        self.where = where


class StoreLocationInvalid(StoreError):
    """The store's directory or database URL cannot be used (a file, an unknown URL form)."""


class StoreReadOnly(StoreError):
    """The store can be read here but not written (a read-only mount or permissions)."""


class StoreFull(StoreError):
    """The disk (or quota) holding the store is full. Nothing was written; the same store
    object works again once space is freed."""
