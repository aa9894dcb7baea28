"""Bringing a table model's rows to a fresh read by key: no model reset.

A re-read of 2,000 open decisions or 10,000 tasks mostly finds what was there. Resetting
the model for it throws away the view's selection and makes Qt ask for every row again
(100-200 ms on the GUI thread, benchmarks/bench_queue.py). `sync` instead compares the rows
by key and tells the model's views only what changed: rows gone (beginRemoveRows), rows
new (beginInsertRows, at their place in the fresh order), rows whose content changed
(dataChanged). A row that kept its key but moved relative to the others is taken out and put
back at its new place; the rows that keep their relative order are the longest run of them
in order (a longest increasing subsequence), so a single arrival or departure never moves
the rest.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic

from PySide6.QtCore import QAbstractItemModel, QModelIndex
from typing_extensions import TypeVar

#: A model's row: a read's (a task, an open decision), compared by `==` and found by `key`.
Row = TypeVar("Row", default=Any)


def kept_in_order(positions: Sequence[int]) -> set[int]:
    """The indices into `positions` of a longest strictly increasing run (not contiguous)."""
    tails: list[int] = []  # tails[k]: the smallest last value of a run of length k + 1
    tail_at: list[int] = []  # ...and its index into positions
    before: list[int] = [-1] * len(positions)
    for i, p in enumerate(positions):
        k = bisect_left(tails, p)
        if k == len(tails):
            tails.append(p)
            tail_at.append(i)
        else:
            tails[k] = p
            tail_at[k] = i
        before[i] = tail_at[k - 1] if k > 0 else -1
    kept: set[int] = set()
    i = tail_at[-1] if tail_at else -1
    while i >= 0:
        kept.add(i)
        i = before[i]
    return kept


def runs_of(indices: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted indices as (first, last) runs of consecutive ones."""
    out: list[tuple[int, int]] = []
    for i in indices:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


class Changes:
    """What `sync` did, for the caller (the selection to restore, a summary to redraw)."""

    def __init__(self) -> None:
        self.removed = 0
        self.inserted = 0
        self.changed = 0

    def __bool__(self) -> bool:
        return bool(self.removed or self.inserted or self.changed)

    def __repr__(self) -> str:
        return f"Changes(removed={self.removed}, inserted={self.inserted}, changed={self.changed})"


def sync(
    model: QAbstractItemModel,
    rows: list[Row],
    fresh: Sequence[Row],
    key: Callable[[Row], Hashable],
    columns: int,
    *,
    limit: int | None = None,
) -> tuple[Changes, bool]:
    """Edit `rows` (the model's own list, in place) into `fresh`, telling the model's views.

    `limit`: insert at most this many rows now (the rest on a later call with the same
    `fresh`), so that one turn of the event loop never takes in thousands of rows at once.
    Returns what was done and whether `rows` now equals `fresh`."""
    done = Changes()
    where = {key(r): i for i, r in enumerate(fresh)}
    present = [(i, where[k]) for i, r in enumerate(rows) if (k := key(r)) in where]
    kept_at = kept_in_order([p for _, p in present])
    kept = {present[i][0] for i in kept_at}
    gone = [i for i in range(len(rows)) if i not in kept]
    root = QModelIndex()
    for first, last in reversed(runs_of(gone)):
        model.beginRemoveRows(root, first, last)
        del rows[first : last + 1]
        model.endRemoveRows()
        done.removed += last - first + 1
    # What is left is in the fresh order: walk both, putting the missing rows in their place.
    changed: list[int] = []
    budget = len(fresh) if limit is None else limit
    i = j = 0
    while j < len(fresh):
        if i < len(rows) and key(rows[i]) == key(fresh[j]):
            if rows[i] is not fresh[j] and rows[i] != fresh[j]:
                rows[i] = fresh[j]
                changed.append(i)
            i += 1
            j += 1
            continue
        k = j
        # Every kept row is in `fresh`, later: the rows before the next kept one are new.
        nxt = key(rows[i]) if i < len(rows) else None
        while k < len(fresh) and key(fresh[k]) != nxt:
            k += 1
        if budget <= 0:
            j = k
            continue
        take = min(k - j, budget)
        model.beginInsertRows(root, i, i + take - 1)
        rows[i:i] = fresh[j : j + take]
        model.endInsertRows()
        done.inserted += take
        budget -= take
        i += take
        j = k  # what did not fit in the budget is put in on a later call
    for first, last in runs_of(changed):
        model.dataChanged.emit(model.index(first, 0), model.index(last, columns - 1))
        done.changed += last - first + 1
    return done, len(rows) == len(fresh)


class Plan(Generic[Row]):
    """What `sync` would do, worked out off the GUI thread from a copy of the rows shown
    (`plan`); `apply` then only tells the views. Removals are (first, last) runs of the
    rows shown, inserts (at, rows) in the order they are made, changes the final rows."""

    def __init__(
        self,
        gone: list[tuple[int, int]],
        inserts: list[tuple[int, list[Row]]],
        changed: list[tuple[int, Row]],
        moved: bool,
        absent: list[tuple[int, int]],
        added: list[Row],
        where: dict[Hashable, int],
    ) -> None:
        self.gone, self.inserts, self.changed, self.moved = gone, inserts, changed, moved
        #: For a model that moves rows by a layout change instead: the runs of rows whose
        #: key is not in the fresh rows, the fresh rows whose key was not shown, and where
        #: each key is in the fresh rows.
        self.absent, self.added, self.where = absent, added, where


def plan(rows: Sequence[Row], fresh: Sequence[Row], key: Callable[[Row], Hashable]) -> Plan[Row]:
    """Pure Python, no Qt: safe on a worker with a copy of the model's row list. `moved`
    says whether some rows kept changed their order (then they are taken out and put back)."""
    where = {key(r): i for i, r in enumerate(fresh)}
    present = [(i, where[k]) for i, r in enumerate(rows) if (k := key(r)) in where]
    kept_at = kept_in_order([p for _, p in present])
    kept = [present[i][0] for i in sorted(kept_at)]
    kept_set = set(kept)
    gone = runs_of([i for i in range(len(rows)) if i not in kept_set])
    left = [rows[i] for i in kept]
    inserts: list[tuple[int, list[Row]]] = []
    changed: list[tuple[int, Row]] = []
    i = j = 0
    at = 0  # where the walk is in the rows as edited so far
    while j < len(fresh):
        if i < len(left) and key(left[i]) == key(fresh[j]):
            if left[i] is not fresh[j] and left[i] != fresh[j]:
                changed.append((at, fresh[j]))
            i += 1
            j += 1
            at += 1
            continue
        nxt = key(left[i]) if i < len(left) else None
        k = j
        while k < len(fresh) and key(fresh[k]) != nxt:
            k += 1
        inserts.append((at, list(fresh[j:k])))
        at += k - j
        j = k
    shown = {key(r) for r in rows}
    absent = runs_of([i for i, r in enumerate(rows) if key(r) not in where])
    added = [r for r in fresh if key(r) not in shown]
    return Plan(gone, inserts, changed, len(present) != len(kept), absent, added, where)


def apply(model: QAbstractItemModel, rows: list[Row], p: Plan[Row], columns: int) -> Changes:
    """Carry out `p` on `rows` (the model's own list, as it was when `p` was made)."""
    done = Changes()
    root = QModelIndex()
    for first, last in reversed(p.gone):
        model.beginRemoveRows(root, first, last)
        del rows[first : last + 1]
        model.endRemoveRows()
        done.removed += last - first + 1
    for at, new in p.inserts:
        model.beginInsertRows(root, at, at + len(new) - 1)
        rows[at:at] = new
        model.endInsertRows()
        done.inserted += len(new)
    for at, row in p.changed:
        rows[at] = row
    for first, last in runs_of([at for at, _ in p.changed]):
        model.dataChanged.emit(model.index(first, 0), model.index(last, columns - 1))
        done.changed += last - first + 1
    return done
