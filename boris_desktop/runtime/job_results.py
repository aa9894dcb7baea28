"""What the workers hand the GUI thread (runtime.jobs): frozen, typed results, never a dict
keyed by strings. Nothing of the store at import: the workers build these.

While the window's parts move to attributes, a result still answers a string key at run time
(`runtime.keyed`). The type checker sees attributes only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from boris_desktop.runtime.keyed import Keyed
from boris_desktop.task.bundle import TaskBundle
from boris_desktop.ui.keyed_rows import Plan

if TYPE_CHECKING:
    # A task as the inbox lists it (Store.tasks, store.reads.peek, the paged inbox).
    from store.api import TaskRow
#: The inbox's order: (column, descending).
Order = tuple[int, bool]


@dataclass(frozen=True)
class InboxPlan(Keyed):
    """The changes from the rows the inbox showed at `revision` to `showing` (the rows its
    search shows), worked out on a worker: the GUI thread applies them if the inbox still
    holds what they were made from (inbox.InboxModel.set_rows, show_matching)."""

    revision: int
    plan: Plan[TaskRow]
    showing: list[TaskRow]


@dataclass(frozen=True)
class InboxPeek(Keyed):
    """Every task, read before the store is open (store.reads.peek), in the inbox's order."""

    tasks: list[TaskRow]
    order: Order
    planned: InboxPlan


@dataclass(frozen=True)
class FirstPage(Keyed):
    """A fresh reading of the paged inbox (store.reads.inbox_pages) and its first rows, with
    the counts the status bar says. Peeked before the store is open: no reading (`view`),
    key or version."""

    view: Any  # store.reads.inbox_pages.PagedInbox, which reads the next pages
    rows: list[TaskRow]
    key: Any  # where the next page starts, None after the last
    version: int | None  # the store's data version it was read at
    total: int  # every task
    needy: int  # the tasks that need a person
    fresh: bool = False  # a new search, filter or order: the rows are shown anew
    paged: bool = True


@dataclass(frozen=True)
class Unchanged(Keyed):
    """Nothing was written since the version the window knows."""

    version: int
    unchanged: bool = True


@dataclass(frozen=True)
class TaskRead(Keyed):
    """The selected task's record, without the inbox (the reviewer picked another row)."""

    version: int
    task_id: str
    bundle: TaskBundle


@dataclass(frozen=True)
class InboxRead(Keyed):
    """Every task, in the inbox's order, and the selected task's record."""

    version: int
    task_id: str | None
    tasks: list[TaskRow]
    now: str  # the database clock the leases were judged at: "Working now" counts on
    order: Order | None  # the order `tasks` are in (None: the store's)
    planned: InboxPlan | None
    needy: int  # how many need a person (the status bar)
    statuses: list[str]  # the statuses the filter offers
    bundle: TaskBundle | None  # None: no task selected, or not in the store any more


@dataclass(frozen=True)
class PagedRead(Keyed):
    """The paged window's refresh: the selected task and the statuses the filter offers,
    never the inbox's rows (the paged model reads again the pages it holds)."""

    version: int
    task_id: str | None
    statuses: list[str]
    now: str
    bundle: TaskBundle | None  # None: no task selected, or deleted meanwhile


@dataclass(frozen=True)
class PublicKey(Keyed):
    """The reviewer's keys-file line and whether the open store trusts that key."""

    line: str
    key_id: str
    path: str  # where the private key stays ("" when not known)
    trusted: bool | None  # None: no store open
    store_signed: bool | None  # whether the store requires signatures; None: no store
