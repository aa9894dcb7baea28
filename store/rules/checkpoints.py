"""What a checkpoint leaves: pending work, and the heads a final checkpoint would leave.

A final checkpoint closes the task's lineage and says nothing is left to do, so it is written
only when no criterion, effect, approval, phase or wait is pending and no head is left beside
it; which lines of work end in the finished task is the person's choice, never the store's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .criteria import criterion_done


def pending_work(state: Mapping[str, Any]) -> list[str]:
    """What a checkpoint state leaves to do: none of it may remain at a final checkpoint."""
    out = [
        f"criterion {c['id']} is {c['status']}"
        for c in state["criteria"]
        if not criterion_done(c["status"])
    ]
    out += [
        f"effect {e['id']} is {e['stage']}"
        + (f" ({e['outcome']})" if e["outcome"] else "")
        + f": {e['safe_recovery']}"
        for e in state["unresolved_effects"]
    ]
    out += [f"approval {a['id']} is {a['state']}" for a in state["open_approvals"]]
    out += [f"phase {p['id']} is {p['status']}" for p in state["pending_phases"]]
    # An open wait is a plan not yet carried out or given up (`open_waits`: the waits whose
    # `wait_state` is open; absent from checkpoints written before waits were pending work).
    out += [open_wait_pending(w["id"], w["kind"]) for w in state.get("open_waits", ())]
    return out


def open_wait_pending(wait_id: str, kind: str) -> str:
    """An open wait as pending work: a final checkpoint may not leave it scheduled."""
    return f"wait {wait_id} ({kind.replace('_', ' ')}) is open: settle or cancel it"


def fork_left_open(
    lineage: Iterable[tuple[str, Sequence[str], Sequence[str]]], checkpoint_id: str
) -> tuple[str, ...]:
    """The heads a checkpoint written on a fork neither continued from nor merged (empty when
    the lineage had one head then). `lineage`: each checkpoint's (id, supersedes, merged) in
    the order written, up to and including `checkpoint_id`."""
    before: list[str] = []
    for cid, supersedes, merged in lineage:
        if cid == checkpoint_id:
            replaced = {*supersedes, *merged}
            return tuple(h for h in before if h not in replaced) if len(before) > 1 else ()
        before = [h for h in before if h not in {*supersedes, *merged}] + [cid]
    return ()


def final_left_open(
    heads: Sequence[str], continue_from: Sequence[str] | None, merge: Sequence[str]
) -> tuple[str, ...]:
    """The heads a final checkpoint would leave beside it: those it neither continues from
    (`continue_from`, the heads it supersedes; None: not named) nor merges. A final
    checkpoint closes the lineage, so it is written only when this is empty: a task is never
    completed with two heads. Nothing is picked for the person: on a fork with no head named,
    every head not merged is left open, unless exactly one is (that one is then the head it
    continues from, the only choice there is)."""
    named = {*(continue_from or ()), *merge}
    left = tuple(h for h in heads if h not in named)
    if continue_from is None and len(left) <= 1:
        return ()
    return left


def final_fork_refusal(
    heads: Sequence[str], continue_from: Sequence[str] | None, merge: Sequence[str]
) -> str | None:
    """Why a final checkpoint continuing from `continue_from` and merging `merge` is refused
    (`fork_open`), or None: it would leave a head beside it (`final_left_open`). Each head
    must be named, the one continued from and every other merged: which lines of work end
    in the finished task is the person's decision, never the store's."""
    left = final_left_open(heads, continue_from, merge)
    if not left:
        return None
    shown = ", ".join(heads)
    listed = ", ".join(left[:-1]) + " and " + left[-1] if len(left) > 1 else left[0]
    stays = "would stay a head" if len(left) == 1 else "would stay heads"
    if len(heads) > 1:
        where = f"the lineage is forked (heads {shown})"
    else:
        where = f"the lineage's head is {shown}"
    return (
        f"{where}, and a final checkpoint closes it: {listed} {stays} beside the finished "
        "task. Choose the head it continues from and merge every other head"
    )
