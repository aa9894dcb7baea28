"""The inbox in pages: what a window holding 100,000 tasks reads as the reviewer scrolls.

`store.reads.inbox.list_tasks` reads every task and every need, then sorts in Python: right
for ten thousand tasks, not for a hundred thousand. Here the database sorts, filters and
counts, on indexed columns (migration 0017), and a page is `limit` rows after a key
(keyset paging: no OFFSET, so the thousandth page costs what the first does).

The default order is the inbox's own, by need of attention. Attention is worked out from
several tables, so it is no column; but the tasks that need a person are few and SQL finds
them (`NEED_CANDIDATES`, a superset): their rows and scores come from the whole read's own
code (`inbox.list_tasks`, restricted to them), sorted first. Every other task follows by
last activity, open records before closed ones, as the whole read orders them.

Search is SQL too: every word must occur in the title, id, owner or status, by
`lower(column) LIKE '%word%'` on both engines (SQLite's `lower` folds ASCII only). It scans
the table (no trigram index: one statement serves both engines); 100,000 rows take tens of
milliseconds, on the window's worker thread. Unlike the whole read's search, the "needs
you" words are not searched: the "Needs you" filter shows those tasks.
Missing blobs are counted only for the tasks that need a person: checking every blob of
100,000 tasks is what paging avoids (`boris verify` finds the rest).

Plain SQL text with a `Fetch`, like store.reads.inbox, so both engines and the standard
library's sqlite3 read the same statements.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .. import rules
from . import inbox

#: Orders the database can serve from an index: the inbox's default (need of attention),
#: last activity, title, status.
NEEDS, ACTIVITY, TITLE, STATUS = "needs", "activity", "title", "status"
ORDERS = (NEEDS, ACTIVITY, TITLE, STATUS)
#: Filters: a status, or every task that needs a person.
NEEDS_YOU = "__needs_you__"

_CLOSED = tuple(sorted(str(s) for s in rules.CLOSED))

#: Every task that may need a person (a superset: the exact score is inbox.attention_score's).
#: Each arm is found by an index (migration 0021: partial indexes whose WHERE is the arm's
#: text, word for word; the near-limit fraction is written in, not bound, for that; `=`
#: joined by OR, not IN, which SQLite made a table of at every write of the row):
#: scanned, the arms on `tasks`, `budgets` and `effects` were ~110 ms on 100,000 tasks.
NEED_CANDIDATES = (
    "SELECT task_id FROM approvals WHERE state = 'pending' AND expires_at > :now "
    "UNION SELECT task_id FROM effects WHERE stage <> 'cancelled' "
    "AND (outcome = 'unknown' OR outcome = 'partial' OR stage = 'observed') "
    "UNION SELECT task_id FROM criteria WHERE status IN ('stale', 'failed') "
    "UNION SELECT task_id FROM budgets WHERE limit_value IS NOT NULL "
    f"AND (limit_value <= 0 OR used + reserved >= {float(rules.NEAR_LIMIT)!r} * limit_value) "
    "UNION SELECT task_id FROM tasks WHERE late_count > 0 "
    + "".join(f"OR status = '{s}' " for s in sorted(inbox.AT_ISSUE))
    + "OR json_array_length(checkpoint_heads) > 1"
)


def _effect_to_reconcile_sql() -> str:
    """rules.effect_to_reconcile as SQL on `effects` columns: the (stage, outcome) pairs it
    holds for, asked of the rule itself (an outcome not yet known is NULL)."""
    outcomes: list[str | None] = [*map(str, rules.Outcome), None]
    arms = []
    for stage in map(str, rules.EffectStage):
        held = [o for o in outcomes if rules.effect_to_reconcile(stage, o)]
        if len(held) == len(outcomes):
            arms.append(f"stage = '{stage}'")
        elif held:
            tests = " OR ".join(
                "outcome IS NULL" if o is None else f"outcome = '{o}'" for o in held
            )
            arms.append(f"(stage = '{stage}' AND ({tests}))")
    return " OR ".join(arms) or "1 = 0"


def _or_equal(column: str, values: Sequence[str]) -> str:
    return " OR ".join(f"{column} = '{v}'" for v in sorted(values))


#: rules.budget_standing's exhausted, fully reserved or near its limit, on `budgets` columns.
_BUDGET_NEEDS_YOU = (
    "used >= limit_value OR limit_value - used - reserved <= 0 OR (limit_value > 0 "
    f"AND (used + reserved) / limit_value >= {float(rules.NEAR_LIMIT)!r})"
)
_ARMS = NEED_CANDIDATES.split(" UNION ")

#: Each task that may need a person (`NEED_CANDIDATES`) with what its open record's needs
#: weigh (`inbox.attention_score`'s weights and rules, missing blobs aside:
#: `inbox.attention_of` adds them and judges closed and quiet records). Each arm of the
#: candidates, read by its index, gives its rows' weight; summed by task. The peek orders
#: the candidates by it and makes rows for the first page's tasks only, instead of reading
#: and scoring every candidate's rows (some 4,000 on 100,000 tasks).
NEED_SCORES = (
    "SELECT t.task_id, t.status, t.updated_at, t.late_count, n.w "
    f"+ CASE WHEN json_array_length(t.checkpoint_heads) > 1 THEN {inbox.FORKED} ELSE 0 END "
    f"+ CASE WHEN {_or_equal('t.status', [str(s) for s in inbox.AT_ISSUE])} "
    f"THEN {inbox.AT_ISSUE_WEIGHT} ELSE 0 END "
    "FROM (SELECT task_id, sum(w) AS w FROM ("
    + " UNION ALL ".join(
        (
            _ARMS[0].replace("SELECT task_id ", f"SELECT task_id, {inbox.PER_APPROVAL} AS w ", 1),
            _ARMS[1].replace(
                "SELECT task_id ",
                f"SELECT task_id, CASE WHEN {_effect_to_reconcile_sql()} "
                f"THEN {inbox.PER_RECONCILE} ELSE 0 END ",
                1,
            ),
            _ARMS[2].replace("SELECT task_id ", f"SELECT task_id, {inbox.PER_CRITERION} ", 1),
            # One budget's standing weighs once, however many counters are near the limit.
            _ARMS[3].replace(
                "SELECT task_id ",
                f"SELECT task_id, max(CASE WHEN {_BUDGET_NEEDS_YOU} "
                f"THEN {inbox.BUDGET_WEIGHT} ELSE 0 END) ",
                1,
            )
            + " GROUP BY task_id",
            _ARMS[4].replace("SELECT task_id ", "SELECT task_id, 0 ", 1),
        )
    )
    + ") w GROUP BY task_id) n JOIN tasks t ON t.task_id = n.task_id"
)

#: One page of rows: (the rows, the key to read the next page after, None at the end).
Page = tuple[list[inbox.TaskRow], "PageKey | None"]


@dataclass(frozen=True)
class PageKey:
    """Where the next page starts: after this row of this segment (0: the tasks that need a
    person, by index; 1: open records; 2: closed records, each by (sort value, task id))."""

    segment: int
    value: str = ""
    task_id: str = ""
    index: int = 0


#: How a list of values is bound: one expanding parameter (SQLAlchemy's, through
#: store.reads.queries.inbox_fetcher, both engines), or one JSON text that SQLite's
#: json_each unpacks (the standard library's sqlite3, before the Store is open: `peek`).
EXPANDING, JSON_EACH = "expanding", "json_each"


def _in_list(name: str, values: Sequence[str], lists: str) -> tuple[str, dict[str, Any]]:
    """`IN <this>` for the values, bound as `lists` says."""
    if lists == JSON_EACH:
        return f"(SELECT value FROM json_each(:{name}))", {name: json.dumps(list(values))}
    return f":{name}", {name: list(values)}


def search_where(words: Sequence[str], like: str | None = None) -> tuple[str, dict[str, Any]]:
    """SQL that holds when every word is in the title, id, owner or status, case aside.

    `like`: the engine's own case-blind operator, "LIKE" on SQLite (ASCII letters) or
    "ILIKE" on PostgreSQL: a third of the time of `lower(column) LIKE`, which is the
    default, the same text on both engines."""
    if like not in (None, "LIKE", "ILIKE"):
        raise ValueError(f"not a LIKE operator: {like!r}")
    clauses, params = [], {}
    for i, w in enumerate(words):
        # LIKE's own wildcards in what the reviewer typed match themselves.
        pattern = "%" + w.casefold().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params[f"w{i}"] = pattern + "%"
        columns = ("title", "task_id", "owner", "status")
        test = (
            [f"{c} {like} :w{i} ESCAPE '\\'" for c in columns]
            if like
            else [f"lower({c}) LIKE :w{i} ESCAPE '\\'" for c in columns]
        )
        clauses.append("(" + " OR ".join(test) + ")")
    return " AND ".join(clauses) or "1 = 1", params


def _needing(
    fetch: inbox.Fetch, now: str, blob_exists: Callable[[str], bool] | None, lists: str
) -> list[inbox.TaskRow]:
    """The tasks that need a person now, in the whole read's order, with its rows."""
    ids = [str(r[0]) for r in fetch(NEED_CANDIDATES, {"now": now})]
    if not ids:
        return []
    listed, params = _in_list("c", ids, lists)
    restricted = _restricted(fetch, listed, params)
    return [r for r in inbox.list_tasks(restricted, now, blob_exists) if r.attention > 0]


#: The inbox's statements that group by task, with the tasks' filter where SQLite applies it
#: before grouping: wrapped whole (`_restricted`), the criteria's grouping read all 100,000
#: tasks' criteria for one page or for the tasks that need a person (180 ms of the 5,000
#: needing tasks' 450). PostgreSQL pushes the filter down itself; the text is the same.
_GROUPED = {
    inbox.CRITERIA: (
        "SELECT task_id, status, count(*) FROM criteria WHERE task_id IN {listed} "
        "GROUP BY task_id, status"
    ),
    # Wrapped, every pending approval of the store was grouped for a page of 60 tasks
    # (10-20 ms of a search's first page under load): the page's tasks by their index.
    inbox.PENDING: (
        "SELECT task_id, count(*) FROM approvals WHERE task_id IN {listed} "
        "AND state = 'pending' AND expires_at > :now GROUP BY task_id"
    ),
}


def _restricted(fetch: inbox.Fetch, listed: str, params: dict[str, Any]) -> inbox.Fetch:
    """A `Fetch` that reads the inbox's statements for the listed tasks only."""

    def restricted(sql: str, p: Any) -> Any:
        grouped = _GROUPED.get(sql)
        if grouped is not None:
            return fetch(grouped.format(listed=listed), {**p, **params})
        # Every inbox statement names the task first: read it for the listed tasks only.
        return fetch(f"SELECT * FROM ({sql}) q WHERE q.task_id IN {listed}", {**p, **params})

    return restricted


#: The needing rows' searched text, made once for the list an earlier reading found (a
#: search's every keystroke filters the same few thousand rows: the joins and case folds
#: were 12-25 ms of each first page under load). The list is held so its id stays its own.
_HAY: list[tuple[list[inbox.TaskRow], dict[str, str]]] = []


def _haystacks(needing: list[inbox.TaskRow]) -> dict[str, str]:
    """Each needing row's title, id, owner and status, case folded, by task id."""
    for held, hay in _HAY:
        if held is needing:
            return hay
    hay = {r.id: " ".join((r.title, r.id, r.owner, r.status)).casefold() for r in needing}
    _HAY[:] = [(needing, hay)]  # one list at a time: a new reading replaces the last
    return hay


_IDS: list[tuple[list[inbox.TaskRow], frozenset[str]]] = []


def _ids_of(needing: list[inbox.TaskRow]) -> frozenset[str]:
    """The needing rows' task ids, made once for the list an earlier reading found (each
    keystroke's reading made the set of some 4,000 ids again: 2 ms)."""
    for held, ids in _IDS:
        if held is needing:
            return ids
    ids = frozenset(r.id for r in needing)
    _IDS[:] = [(needing, ids)]
    return ids


class PagedInbox:
    """One reading of the paged inbox: the tasks that need a person (few, read whole), and
    the SQL for the rest. Made on a worker; its pages are read on a worker too."""

    def __init__(
        self,
        fetch: inbox.Fetch,
        now: str,
        *,
        order: str = NEEDS,
        descending: bool | None = None,
        words: Sequence[str] = (),
        status: str | None = None,
        blob_exists: Callable[[str], bool] | None = None,
        needing: list[inbox.TaskRow] | None = None,
        like: str | None = None,
        lists: str | None = None,
    ) -> None:
        """`needing`: the tasks that need a person as an earlier reading at the same head
        found them (a new search or order reads no need again). `lists`: how lists of ids
        are bound (None: SQLite's json_each where `like` is SQLite's LIKE, else expanding)."""
        if lists is None:  # SQLite's LIKE: its json_each (no IN list compiled per statement)
            lists = JSON_EACH if like == "LIKE" else EXPANDING
        self.lists = lists
        if order not in ORDERS:
            order = ACTIVITY
        self.order = order
        self.descending = (order in (NEEDS, ACTIVITY)) if descending is None else descending
        self.now = now
        self.words = tuple(words)
        self.status = status
        if needing is None:
            needing = _needing(fetch, now, blob_exists, lists)
        self.needing = needing
        self._needing_ids = _ids_of(self.needing)
        where, self._params = search_where(self.words, like)
        if status is not None and status != NEEDS_YOU:
            where += " AND status = :status"
            self._params["status"] = status
        self._where = where
        #: The needing rows this search and filter keep, in order (segment 0).
        self.first = self._kept()

    def _kept(self) -> list[inbox.TaskRow]:
        rows = self.needing
        if self.status is not None and self.status != NEEDS_YOU:
            rows = [r for r in rows if r.status == self.status]
        if not self.words:
            return list(rows)
        hay = _haystacks(self.needing)
        kept = list(rows)
        for w in self.words:  # word by word: no generator per row
            word = w.casefold()
            kept = [r for r in kept if word in hay[r.id]]
        return kept

    # --- counts ------------------------------------------------------------------------

    @staticmethod
    def total(fetch: inbox.Fetch) -> int:
        """ "N tasks": every task, by SQL."""
        return int(next(iter(fetch("SELECT count(*) FROM tasks", {})))[0])

    def matching(self, fetch: inbox.Fetch) -> int:
        """How many tasks this search and filter show, by SQL."""
        if self.status == NEEDS_YOU:
            return len(self.first)
        sql = f"SELECT count(*) FROM tasks WHERE {self._where}"
        return int(next(iter(fetch(sql, self._params)))[0])

    # --- pages -------------------------------------------------------------------------

    def page(self, fetch: inbox.Fetch, after: PageKey | None, limit: int) -> Page:
        """Up to `limit` rows after `after` (None: the first page) and the next page's key."""
        out: list[inbox.TaskRow] = []
        key: PageKey | None = after or PageKey(0 if self.order == NEEDS else 1)
        while len(out) < limit and key is not None:
            if key.segment == 0:
                rows = self.first[key.index : key.index + limit - len(out)]
                out += rows
                end = key.index + len(rows)
                if end < len(self.first):
                    key = PageKey(0, index=end)
                else:
                    key = None if self.status == NEEDS_YOU else PageKey(1)
                continue
            rows, key = self._sql_page(fetch, key, limit - len(out))
            out += rows
        return out, key

    def _column(self) -> str:
        return {TITLE: "title", STATUS: "status"}.get(self.order, "updated_at")

    def _sql_page(self, fetch: inbox.Fetch, key: PageKey, limit: int) -> Page:
        column = self._column()
        where = self._where
        params = dict(self._params)
        if self.order == NEEDS:
            # Open records first (attention 0), then closed ones (-1); each oldest first, as
            # the whole read's descending order by attention puts ties.
            listed, closed = _in_list("x", _CLOSED, self.lists)
            params.update(closed)
            where += f" AND status {'NOT ' if key.segment == 1 else ''}IN {listed}"
            descending = False
        else:
            descending = self.descending
        if key.task_id:
            cmp = "<" if descending else ">"
            where += f" AND ({column} {cmp} :after_v OR ({column} = :after_v AND task_id {cmp} :after_id))"
            params.update(after_v=key.value, after_id=key.task_id)
        way = "DESC" if descending else "ASC"
        # One row more than asked: whether another page follows, without a count.
        sql = (
            f"SELECT task_id, {column} FROM tasks WHERE {where} "
            f"ORDER BY {column} {way}, task_id {way} LIMIT {int(limit) + 1}"
        )
        found = [(str(r[0]), str(r[1])) for r in fetch(sql, params)]
        more = len(found) > limit
        found = found[:limit]
        rows = self.rows_of(fetch, [i for i, _ in found])
        if self.order == NEEDS:
            # The tasks that need a person came first already.
            rows = [r for r in rows if r.id not in self._needing_ids]
        if more:
            nxt: PageKey | None = PageKey(key.segment, found[-1][1], found[-1][0])
        elif self.order == NEEDS and key.segment == 1:
            nxt = PageKey(2)
        else:
            nxt = None
        return rows, nxt

    def rows_of(self, fetch: inbox.Fetch, ids: Sequence[str]) -> list[inbox.TaskRow]:
        """The inbox rows of these tasks (as the whole read makes them), in this order."""
        if not ids:
            return []
        listed, params = _in_list("p", ids, self.lists)
        restricted = _restricted(fetch, listed, params)
        by_id = {r.id: r for r in inbox.list_tasks(restricted, self.now)}
        return [by_id[i] for i in ids if i in by_id]


def _first_needing(
    fetch: inbox.Fetch, now: str, blob_exists: Callable[[str], bool], limit: int
) -> tuple[list[inbox.TaskRow], int]:
    """The first `limit` tasks that need a person, in the whole read's order (most in need
    first, ties oldest first, then by id), with how many need one: the candidates ordered
    by `NEED_SCORES`, rows made for the first `limit` only."""
    scored = list(fetch(NEED_SCORES, {"now": now}))
    if not scored:
        return [], 0
    # Missing blobs weigh too: every candidate's evidence and current artifacts checked.
    listed, params = _in_list("c", [str(r[0]) for r in scored], JSON_EACH)
    missing: dict[str, int] = {}
    for task_id, digest in _restricted(fetch, listed, params)(inbox.RETAINED, {}):
        if not blob_exists(str(digest)):
            missing[task_id] = missing.get(task_id, 0) + 1
    ranked = []
    for task_id, status, updated_at, late, score in scored:
        attention = inbox.attention_of(status, int(score), missing.get(task_id, 0), late)
        if attention > 0:
            ranked.append((-attention, updated_at, task_id))
    ranked.sort()
    ids = [task_id for _, _, task_id in ranked[:limit]]
    listed, params = _in_list("p", ids, JSON_EACH)
    by_id = {
        r.id: r for r in inbox.list_tasks(_restricted(fetch, listed, params), now, blob_exists)
    }
    return [by_id[i] for i in ids if i in by_id], len(ranked)


class FirstPage(NamedTuple):
    """The paged inbox's first rows read before the Store is open (`peek_first_page`)."""

    rows: list[inbox.TaskRow]
    #: Every task of the store.
    total: int
    #: The tasks that need a person.
    needing: int


def _in_one_row(conn: sqlite3.Connection) -> inbox.Fetch:
    """A `Fetch` that reads each statement's rows as one JSON row (`json_group_array`),
    decoded in one call. The standard library's sqlite3 lets go of the interpreter lock at
    every row: beside the window's build (the GUI thread importing) each row waited for the
    lock again, and the peek's some 25,000 rows on 100,000 tasks took 0.8-1 s instead of
    0.2. Values as the driver gives them (text, integers, reals, NULL), by position."""

    def fetch(sql: str, params: Any) -> list[list[Any]]:
        described = conn.execute(f"SELECT * FROM ({sql}) LIMIT 0", params).description
        names = [f"c{i}" for i in range(len(described))]
        listed = ", ".join(names)
        whole = (
            f"WITH q({listed}) AS ({sql}) "
            f"SELECT coalesce(json_group_array(json_array({listed})), '[]') FROM q"
        )
        text = conn.execute(whole, params).fetchone()[0]
        return list(json.loads(text))

    return fetch


def _blob_check(root: Path) -> Callable[[str], bool]:
    """BlobStore(root).has, each digest asked once (the page's rows ask again what every
    candidate's check asked), the blob store imported only when a digest is asked (hashlib's
    OpenSSL on the peek's worker, beside the window's imports: 6 ms of CPU for nothing where
    no task that needs a person holds evidence or artifacts)."""
    found: dict[str, bool] = {}

    def has(digest: str) -> bool:
        known = found.get(digest)
        if known is None:
            from ..blobs import BlobStore

            known = found[digest] = BlobStore(root).has(digest)
        return known

    return has


def peek_first_page(directory: str | os.PathLike[str] | None, limit: int) -> FirstPage | None:
    """The first `limit` rows of the paged inbox of the SQLite store at `directory`, with
    the counts (every task, those that need a person), read before the Store is open, as
    store.reads.peek reads the whole inbox (the same rules: read-only, this program's
    schema only, None when it cannot be read this way)."""
    from ..clock import system_now
    from ..location import resolve
    from ..version import SCHEMA_REVISIONS

    if os.environ.get("BORIS_STORE_URL"):
        return None
    location = resolve(directory)
    db_file = location.sqlite_file
    if db_file is None or not db_file.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db_file.as_uri()}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error:
        return None
    try:
        versions = [r[0] for r in conn.execute("SELECT version_num FROM alembic_version")]
        if versions != [SCHEMA_REVISIONS[-1]]:
            return None
        conn.execute("BEGIN")  # one snapshot for every statement
        try:
            fetch = _in_one_row(conn)
            now = system_now()
            first, needing = _first_needing(fetch, now, _blob_check(location.blobs), limit)
            rows = first
            if len(first) < limit:  # every task that needs a person: the rest follow
                view = PagedInbox(fetch, now, needing=first, lists=JSON_EACH)
                rows, _ = view.page(fetch, None, limit)
            return FirstPage(rows, PagedInbox.total(fetch), needing)
        finally:
            conn.rollback()
    except (sqlite3.Error, OSError):
        return None
    finally:
        conn.close()
