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


class WriteConflict(StoreError):
    """Writers sharing a database server collided: a deadlock, a serialization failure, or a
    seq another writer took first. Nothing was written; `Store.execute` retries these itself
    and raises this only when a write keeps colliding. Never reported as "busy"."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"the write collided with another writer ({kind}); nothing was written")
        self.kind = kind
        self.detail = detail
