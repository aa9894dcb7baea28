"""What the queue reads on a worker: the open decisions, what they change in the rows shown,
and the task filter's items, so that the GUI thread only tells its views (`QueueRead`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from boris_desktop.queue.rows import decision_id
from boris_desktop.ui import keyed_rows

if TYPE_CHECKING:
    from store.api import Decision, QueueCounts, QueuePageKey, Store

#: The database's filters of a paged queue: (kind, task), None for all.
SqlFilters = tuple[str | None, str | None]


@dataclass(frozen=True)
class Paging:
    """A paged read: the reading it belongs to (a page of an older one is dropped), the
    filters it was read by, where the next page starts and the database's counts."""

    reading: int
    filters: SqlFilters
    next_key: QueuePageKey | None  # None after the last page
    counts: QueueCounts | None


@dataclass(frozen=True)
class QueueRead:
    """One read of the open decisions, by the database clock `now`."""

    decisions: list[Decision]
    now: str
    #: (title, id) of the tasks the rows are about, sorted: the task filter's items.
    tasks: list[tuple[str, str]]
    #: The changes from the rows the model held at a revision (DecisionModel.snapshot).
    planned: tuple[int, keyed_rows.Plan[Decision]] | None
    paging: Paging | None  # None: every open decision, read whole


def tasks_of(rows: list[Decision]) -> list[tuple[str, str]]:
    """(title, id) of the tasks these rows are about, sorted."""
    return sorted({(r.task_title, r.task_id) for r in rows})


def read_queue(
    store: Store,
    shown: tuple[int, list[Decision]] | None,
    paged: tuple[int, SqlFilters, int] | None,
) -> QueueRead:
    """On a worker. `shown`: the model's snapshot to plan against; `paged`: (reading,
    filters, how many rows) when the queue is read in pages, None to read it whole."""
    from boris_desktop.runtime.interpreter import paused
    from store.api import decision_page, decisions

    with paused():  # thousands of rows: no collection of the whole heap meanwhile
        paging = None
        if paged is not None:
            reading, (kind, task), limit = paged
            page = decision_page(store, kind=kind, task=task, limit=limit)
            paging = Paging(reading, (kind, task), page.key, page.counts)
            rows, now = page.decisions, page.now
        else:
            whole = decisions(store)
            rows, now = whole.decisions, whole.now
        planned = None
        if shown is not None:
            planned = (shown[0], keyed_rows.plan(shown[1], rows, decision_id))
        return QueueRead(rows, now, tasks_of(rows), planned, paging)
