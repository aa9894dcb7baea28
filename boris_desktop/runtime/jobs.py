"""What the workers do: open the store, read a task's record, compute its resume brief.

Plain functions of the store, run on the thread pool; Qt is not touched here. `store` is
imported inside them so that SQLAlchemy loads after the window's first paint.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from boris_desktop.runtime.job_results import (
    FirstPage,
    InboxPeek,
    InboxPlan,
    InboxRead,
    Order,
    PagedRead,
    PublicKey,
    TaskRead,
    Unchanged,
)
from boris_desktop.task.bundle import TaskBrief, TaskBundle, TimelineEvent, TimelinePage

if TYPE_CHECKING:
    # Named in annotations only: the store's modules load after the window's first paint.
    from store.api import EventRow, TaskRow

    #: What the inbox holds, for a worker to read against: its order, the rows it shows,
    #: its revision and its search words (see `as_shown`).
    Shown = tuple[Order, list[TaskRow], int, tuple[str, ...]]


def open_store(directory: str | None) -> Any:
    from boris_desktop.runtime.interpreter import paused

    # Opening imports SQLAlchemy, pydantic and the store's modules: some hundred thousand
    # objects that live as long as the process. Full collections while they are made scan
    # them all again and again for nothing (about a third of the open's CPU time on the
    # demo store, bench_desktop.py); refcounting still frees what is dropped.
    with paused():
        from store.api import Store

        store = Store.open(directory)
        # The file watcher starts with the first task shown, on the GUI thread; importing
        # watchdog here takes its 20 ms of imports off that thread. No Qt is touched.
        import watchdog.events
        import watchdog.observers  # noqa: F401

    return store


def peek_tasks(directory: str | None, shown: Shown) -> InboxPeek | None:
    """The inbox of a SQLite store read before the store is open (store.reads.peek): no
    SQLAlchemy, so it is on screen long before the store's modules have loaded. Sorted and
    compared with the rows shown here, as `refresh` does (`as_shown`)."""
    from store.api import peek_tasks as peek

    tasks = peek(directory)
    if tasks is None:
        return None
    tasks, order, planned = as_shown(tasks, shown)
    return InboxPeek(tasks, order, planned)


def as_shown(tasks: list[TaskRow], shown: Shown) -> tuple[list[TaskRow], Order, InboxPlan]:
    """Fresh rows put in the order the inbox shows (its order, the rows it holds and its
    revision), and compared with those rows (keyed_rows.plan): the GUI thread then neither
    sorts ten thousand rows nor compares them, it only tells its views what changed
    (inbox.InboxModel.set_rows)."""
    from boris_desktop.inbox.table import matching, ordered, task_key, with_haystack
    from boris_desktop.ui.keyed_rows import plan

    order, held, revision, search = shown
    tasks = with_haystack(ordered(tasks, *order))
    showing = matching(tasks, search)
    return tasks, order, InboxPlan(revision, plan(held, showing, task_key), showing)


def search(
    every: list[TaskRow], search_: tuple[str, ...], held: list[TaskRow], revision: int
) -> tuple[tuple[str, ...], InboxPlan]:
    """The inbox's rows matching a search, and the changes from the rows it shows
    (`held`, at `revision`): while the reviewer types, the GUI thread only applies them."""
    from boris_desktop.inbox.table import matching, narrowing_plan

    showing = matching(every, search_)
    return search_, InboxPlan(revision, narrowing_plan(every, held, showing), showing)


def fill_demo(store: Any, *, demo_store: bool = False) -> list[str]:
    """The demo tasks. In a signed store the reviewer vouches for the demo actors' keys
    (store.services.demo_keys), so they sign with their own key, as for a decision. A demo
    store of its own (`demo_store`: `boris-desktop --demo`) that is new is first made as
    `boris init` makes a store, the reviewer's key its root (the store's rule:
    `fill_demo_store`)."""
    from boris_desktop import settings
    from store.api import Actor, fill_demo_store
    from store.api import fill_demo as fill

    who = settings.reviewer()
    person = None if who is None else Actor(kind="person", id=who[1], name=who[0])
    if demo_store:
        return list(fill_demo_store(store, person))
    if person is not None:
        store.sign_as(person)
    return list(fill(store))


#: Events the timeline reads at a time: a task may have hundreds of thousands.
TIMELINE_PAGE = 300


def timeline_page(
    store: Any,
    task_id: str,
    *,
    before_seq: int | None = None,
    event_type: str | None = None,
    actor: tuple[str, str] | None = None,
) -> TimelinePage:
    """One page of the task's events, newest first, each with its payload's one-line gist
    made here rather than on the GUI thread and who signed it (`signer`, the store's
    words: store.reads.signers); `more` says whether older ones remain."""
    import json

    events: list[EventRow] = store.events(
        task_id,
        before_seq=before_seq,
        types=[event_type] if event_type else None,
        actor=actor,
        limit=TIMELINE_PAGE + 1,
        newest_first=True,
    )
    more = len(events) > TIMELINE_PAGE
    events = events[:TIMELINE_PAGE]
    from store.api import signers

    with store.read() as conn:
        signed_by = signers(conn, task_id, events)
    rows = []
    for e in events:
        text = json.dumps(e.payload, ensure_ascii=False, sort_keys=True, default=str)
        gist = text if len(text) <= 160 else text[:157] + "…"
        rows.append(TimelineEvent(e, signed_by[e.seq], gist))
    return TimelinePage(task_id, (event_type, actor), before_seq, tuple(rows), more)


def task_bundle(store: Any, task_id: str) -> TaskBundle:
    from store.api import decision_signers, model_saw, narratives

    with store.read() as conn:
        signing = decision_signers(conn, task_id)
    return TaskBundle(
        task=store.task(task_id),
        signing=signing,
        timeline=timeline_page(store, task_id),
        event_facets=store.event_facets(task_id),
        narratives=narratives(store, task_id),
        # What the model saw and ran under (issue 35 part M): beside effects and checkpoints.
        model_saw=model_saw(store, task_id),
    )


def refresh(
    store: Any,
    task_id: str | None,
    known_version: int | None,
    shown: Shown | None = None,
) -> InboxRead | Unchanged:
    """The inbox and the selected task; only the version when nothing was written since.

    `shown`: the inbox's order, the rows it holds and its revision (see `as_shown`)."""
    version = store.data_version()
    if known_version is not None and version == known_version:
        return Unchanged(version)
    from boris_desktop.runtime.interpreter import paused

    with paused():  # ten thousand rows: no collection of the whole heap meanwhile (runtime)
        tasks = store.tasks()
        order, planned = None, None
        if shown is not None:
            tasks, order, planned = as_shown(tasks, shown)
    bundle = None
    if task_id and any(t.id == task_id for t in tasks):
        bundle = task_bundle(store, task_id)
    return InboxRead(
        version=version,
        task_id=task_id,
        tasks=tasks,
        now=store.now(),
        order=order,
        planned=planned,
        # What the status bar and the status filter say, counted here rather than by two
        # loops over ten thousand rows on the GUI thread.
        needy=sum(t.attention > 0 for t in tasks),
        statuses=sorted({t.status for t in tasks}),
        bundle=bundle,
    )


def task_only(store: Any, task_id: str) -> TaskRead:
    """The selected task's record, without the inbox (the reviewer picked another row)."""
    version = store.data_version()
    return TaskRead(version, task_id, task_bundle(store, task_id))


def brief(store: Any, task_id: str) -> TaskBrief:
    """The resume brief hashes the task's files: never on the GUI thread."""
    from store.api import brief_markdown, resume_brief, summary_markdown

    b = resume_brief(store, task_id)
    return TaskBrief(
        task_id=task_id,
        markdown=brief_markdown(b),
        summary=summary_markdown(store, task_id),
        brief=b,
        artifacts=b.artifacts,
    )


def my_public_key(store: Any, reviewer_id: str) -> PublicKey:
    """The reviewer's keys-file line (their key created on first use: a file written and
    synced, so never on the GUI thread) and whether the open store's keyring trusts it."""
    from store.api import keyring, person_key_line

    key, line = person_key_line(reviewer_id)
    trusted: bool | None = None
    signed: bool | None = None
    if store is not None:
        signed = store.is_signed()
        with store.read() as conn:
            b = keyring.load(conn).get(key.key_id)
        trusted = b is not None and b.revoked_at is None and b.names("person", reviewer_id)
    return PublicKey(line, key.key_id, str(key.path or ""), trusted, signed)


def write_text(path: str, text: str) -> str:
    from pathlib import Path

    Path(path).write_text(text, encoding="utf-8")
    return path


# --- the inbox in pages (issue 36 part W) ---------------------------------------------------


def inbox_first_page(
    store: Any,
    *,
    order: str,
    descending: bool | None,
    words: tuple[str, ...],
    status: str | None,
    limit: int,
    needing: tuple[int, list[TaskRow]] | None = None,
    fresh: bool = False,
) -> FirstPage:
    """A fresh reading of the paged inbox (store.reads.inbox_pages) and its first `limit`
    rows, with the counts the status bar says, all by SQL. `needing`: (data version, the
    tasks that need a person) from an earlier reading, reused while nothing was written;
    `fresh`: a new search, filter or order (the rows are shown anew)."""
    from store.api import PagedInbox, inbox_fetcher

    version = store.data_version()
    with store.read() as conn:
        fetch = inbox_fetcher(conn)
        known = needing[1] if needing is not None and needing[0] == version else None
        view = PagedInbox(
            fetch,
            store.now(),
            order=order,
            descending=descending,
            words=words,
            status=status,
            blob_exists=store.blobs.has,
            needing=known,
            # The engine's case-blind LIKE: a third of the time of lower() on each column.
            like="ILIKE" if store.engine.dialect.name == "postgresql" else "LIKE",
        )
        rows, key = view.page(fetch, None, limit)
        # Every task, counted once a data version (not at each keystroke of a search).
        held = _TOTAL.get(store)
        total = held[1] if held is not None and held[0] == version else PagedInbox.total(fetch)
        _TOTAL[store] = (version, total)
        return FirstPage(view, rows, key, version, total, len(view.needing), fresh=fresh)


#: By store: the data version and its count of every task (`inbox_first_page`).
_TOTAL: weakref.WeakKeyDictionary[Any, tuple[int, int]] = weakref.WeakKeyDictionary()


def inbox_matching(store: Any, view: Any) -> int:
    """How many tasks a reading's search and filter show (a scan of every title for a
    search: counted after its rows are on screen)."""
    from store.api import inbox_fetcher

    with store.read() as conn:
        return int(view.matching(inbox_fetcher(conn)))


def peek_inbox_page(directory: str | None, limit: int) -> FirstPage | None:
    """The paged inbox's first rows and counts read before the Store is open (SQLite only:
    store.reads.inbox_pages.peek_first_page); None when it cannot be read that way."""
    from store.api import peek_inbox_page as peek

    got = peek(directory, limit)
    if got is None:
        return None
    rows, total, needy = got
    return FirstPage(None, rows, None, None, total, needy)


def inbox_page(store: Any, view: Any, key: Any, limit: int) -> tuple[list[TaskRow], Any]:
    """The next page of a reading of the paged inbox, after `key`."""
    from store.api import inbox_fetcher

    with store.read() as conn:
        rows: list[TaskRow]
        rows, after = view.page(inbox_fetcher(conn), key, limit)
        return rows, after


def inbox_size(store: Any) -> int:
    """How many tasks the store holds, by SQL: whether the window reads its inbox in pages."""
    from store.api import PagedInbox, inbox_fetcher

    with store.read() as conn:
        return PagedInbox.total(inbox_fetcher(conn))


def paged_refresh(
    store: Any, task_id: str | None, known_version: int | None
) -> PagedRead | Unchanged:
    """The paged window's refresh: the selected task and the statuses the filter offers,
    never the inbox's rows (the paged model reads again the pages it holds)."""
    from store.api import inbox_fetcher

    version = store.data_version()
    if known_version is not None and version == known_version:
        return Unchanged(version)
    with store.read() as conn:
        fetch = inbox_fetcher(conn)
        statuses = sorted(str(r[0]) for r in fetch("SELECT DISTINCT status FROM tasks", {}))
        held = task_id is not None and any(
            fetch("SELECT 1 FROM tasks WHERE task_id = :id", {"id": task_id})
        )
    # A task deleted meanwhile has no record to show.
    bundle = task_bundle(store, task_id) if held and task_id else None
    return PagedRead(version, task_id, statuses, store.now(), bundle)


def peek_inbox(
    directory: str | None, shown: Shown, mode: str, paged_from: int
) -> FirstPage | InboxPeek | None:
    """The window's first look before the store is open: the paged inbox's first page when
    the store is big (or `mode` is "always"), else every task (peek_tasks)."""
    if mode != "never":
        got = peek_inbox_page(directory, 200)
        if got is not None and (mode == "always" or got.total > paged_from):
            return got
    if mode == "always":
        return None
    return peek_tasks(directory, shown)
