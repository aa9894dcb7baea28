"""The inbox read in pages (issue 36 part W): on a generated store of a few thousand tasks,
on both engines, every order, filter and count the database gives equals what the whole
read (store.reads.inbox.list_tasks) says; pages never repeat or skip a task, ties included
(every clone of a template shares its last activity)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from store import Store
from store.reads import inbox_pages as ip
from store.reads.queries import inbox_fetcher, list_tasks

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

TASKS = 1_500


@pytest.fixture
def big(store: Store) -> Store:
    from gen_big_store import fill

    fill(store, TASKS, 8, report=lambda _: None)
    return store


def _whole(s: Store) -> tuple[str, list[dict[str, Any]]]:
    with s.read() as conn:
        now = s.now()
        return now, list_tasks(conn, now)


def _every_page(s: Store, limit: int = 97, **kw: Any) -> tuple[ip.PagedInbox, list[dict[str, Any]]]:
    with s.read() as conn:
        fetch = inbox_fetcher(conn)
        view = ip.PagedInbox(fetch, s.now(), **kw)
        out, key = view.page(fetch, None, limit)
        while key is not None:
            rows, key = view.page(fetch, key, limit)
            assert len(rows) <= limit
            out += rows
    return view, out


def test_the_needs_order_pages_through_every_task_once_as_the_whole_read_orders(
    big: Store,
) -> None:
    _, whole = _whole(big)
    view, paged = _every_page(big)
    ids = [r["id"] for r in paged]
    assert len(ids) == len(set(ids)) == len(whole) == TASKS
    # Ties of (attention, last activity) are in no stated order in the whole read.
    assert [(-r["attention"], r["updated_at"]) for r in paged] == [
        (-r["attention"], r["updated_at"]) for r in whole
    ]
    assert {r["id"]: r["attention"] for r in paged} == {r["id"]: r["attention"] for r in whole}
    assert len(view.first) == sum(r["attention"] > 0 for r in whole) > 0


@pytest.mark.parametrize(
    ("order", "descending", "key"),
    [
        (ip.ACTIVITY, True, lambda r: (r["updated_at"], r["id"])),
        (ip.TITLE, False, lambda r: (r["title"], r["id"])),
        (ip.STATUS, False, lambda r: (r["status"], r["id"])),
    ],
)
def test_other_orders_are_the_databases_on_indexed_columns(
    big: Store, order: str, descending: bool, key: Any
) -> None:
    _, whole = _whole(big)
    _, paged = _every_page(big, limit=250, order=order, descending=descending)
    assert [r["id"] for r in paged] == [r["id"] for r in sorted(whole, key=key, reverse=descending)]


def test_filters_search_and_counts_are_sql_equal_to_the_whole_read(big: Store) -> None:
    _, whole = _whole(big)
    with big.read() as conn:
        assert ip.PagedInbox.total(inbox_fetcher(conn)) == len(whole)
    for status in ("completed", "running", "blocked"):
        view, paged = _every_page(big, status=status)
        expected = [r["id"] for r in whole if r["status"] == status]
        assert sorted(r["id"] for r in paged) == sorted(expected) and expected
        with big.read() as conn:
            assert view.matching(inbox_fetcher(conn)) == len(expected)
    view, paged = _every_page(big, status=ip.NEEDS_YOU)
    assert [r["id"] for r in paged] == [r["id"] for r in whole if r["attention"] > 0]
    words = ("INVOICE", "7")
    view, paged = _every_page(big, words=words, order=ip.ACTIVITY)

    def hit(r: dict[str, Any]) -> bool:
        hay = " ".join((r["title"], r["id"], r["owner"], r["status"])).casefold()
        return all(w.casefold() in hay for w in words)

    assert sorted(r["id"] for r in paged) == sorted(r["id"] for r in whole if hit(r))
    with big.read() as conn:
        assert view.matching(inbox_fetcher(conn)) == len(paged) > 0


def test_the_engines_own_case_blind_like_finds_the_same_tasks(big: Store) -> None:
    like = "ILIKE" if big.engine.dialect.name == "postgresql" else "LIKE"
    for words in (("INVOICE", "7"), ("task-0001",), ("Completed",)):
        _, portable = _every_page(big, words=words, order=ip.ACTIVITY)
        _, own = _every_page(big, words=words, order=ip.ACTIVITY, like=like)
        assert [r["id"] for r in own] == [r["id"] for r in portable] != []


def test_like_wildcards_typed_match_themselves(big: Store) -> None:
    _, paged = _every_page(big, words=("%",), order=ip.ACTIVITY)
    assert paged == []
    # Unescaped, "_" would match the "-" of every "task-0…" id.
    _, paged = _every_page(big, words=("task_0",), order=ip.ACTIVITY)
    assert paged == []


def _peek_is_the_stores_own(s: Store, limit: int) -> list[Any]:
    got = ip.peek_first_page(s.location.directory, limit)
    assert got is not None
    with s.read() as conn:
        fetch = inbox_fetcher(conn)
        view = ip.PagedInbox(fetch, s.now(), blob_exists=s.blobs.has)
        rows, _ = view.page(fetch, None, limit)
        total = ip.PagedInbox.total(fetch)
    assert got.total == total == TASKS and got.needing == len(view.needing) > 0
    assert [r["id"] for r in got.rows] == [r["id"] for r in rows]
    assert got.rows == rows  # every field: counts, budget use, lease, status
    return rows


@pytest.mark.parametrize("limit", [7, 200, 1_000])
def test_the_peek_reads_the_first_page_the_store_reads(big: Store, limit: int) -> None:
    """The peek (sqlite3 before the store is open, each statement's rows in one JSON row:
    `_in_one_row`; the candidates ordered by NEED_SCORES, rows made for the page's tasks
    only) gives the rows, values and counts the store's own first reading gives: a page
    of some of the tasks that need a person, all of them, and all of them and others."""
    if big.location.sqlite_file is None:
        pytest.skip("the peek reads SQLite stores only")
    rows = _peek_is_the_stores_own(big, limit)
    assert len(rows) == limit


def test_the_databases_weights_are_attention_scores(big: Store) -> None:
    """NEED_SCORES (each candidate's needs weighed by SQL) with inbox.attention_of is the
    whole read's attention for every task, both engines: the same tasks need a person."""
    from store.reads import inbox

    now, whole = _whole(big)
    with big.read() as conn:
        scored = list(inbox_fetcher(conn)(ip.NEED_SCORES, {"now": now}))
    by_sql = {
        str(t): inbox.attention_of(status, int(w), 0, late) for t, status, _, late, w in scored
    }
    needing = {r["id"]: r["attention"] for r in whole if r["attention"] > 0}
    assert len(needing) > 0
    assert {t: a for t, a in by_sql.items() if a > 0} == needing
    assert all(r["attention"] == by_sql[r["id"]] for r in whole if r["id"] in by_sql)


def test_a_missing_blob_lifts_a_task_into_the_peeked_page(big: Store) -> None:
    """A task that needs a person little, whose evidence's blob is gone, weighs that too:
    the peek finds it among every candidate, not only the page's, as the store does."""
    from store import Actor
    from store import commands as c
    from store.reads import inbox

    if big.location.sqlite_file is None:
        pytest.skip("the peek reads SQLite stores only")
    _, whole = _whole(big)
    needing = [r for r in whole if r["attention"] > 0]
    low = needing[-1]  # the least in need
    agent = Actor(kind="agent", id="bench-agent", name="Bench agent")
    big.execute(
        c.AttachEvidence(
            task_id=low["id"], criterion_id="c1", kind="review", content=c.Content(text="gone\n")
        ),
        agent,
    )
    with big.read() as conn:
        digests = [d for t, d in inbox_fetcher(conn)(inbox.RETAINED, {}) if t == low["id"]]
    assert len(digests) == 1
    big.blobs.path_of(digests[0]).unlink()
    weight = low["attention"] + inbox.PER_MISSING_BLOB
    limit = 1 + sum(1 for r in needing if r["attention"] >= weight)
    assert limit < len(needing)  # a page of some, the task far below it before
    rows = _peek_is_the_stores_own(big, limit)
    (lifted,) = [r for r in rows if r["id"] == low["id"]]
    assert lifted["needs"]["missing_blobs"] == 1 and lifted["attention"] == weight


@pytest.mark.parametrize(
    ("table", "index"),
    [("tasks", "ix_tasks_need"), ("effects", "ix_effects_need"), ("budgets", "ix_budgets_need")],
)
def test_the_tasks_that_need_a_person_are_found_by_index(
    big: Store, table: str, index: str
) -> None:
    """Migration 0021's partial indexes serve NEED_CANDIDATES' arms that scanned their whole
    table: each arm's WHERE is its index's, word for word (a stray change would keep the
    answers and silently bring the scans back). No IN list in them: SQLite evaluates a
    partial index's WHERE at every write of the row, and built a table of an IN list's values
    each time (20 µs more for each UPDATE of `tasks`, which every event makes)."""
    from sqlalchemy import text

    (sql,) = [a for a in ip.NEED_CANDIDATES.split(" UNION ") if f" FROM {table} " in a]
    assert " IN (" not in sql
    with big.read() as conn:
        if big.location.sqlite_file is not None:
            plan = " ".join(str(r[3]) for r in conn.execute(text("EXPLAIN QUERY PLAN " + sql)))
        else:  # a small table is scanned anyway: is the index usable for this WHERE at all?
            conn.execute(text("SET LOCAL enable_seqscan = off"))
            plan = " ".join(str(r[0]) for r in conn.execute(text("EXPLAIN " + sql)))
    assert index in plan
