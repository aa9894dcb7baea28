"""Lineage, from the `checkpoint.written` events: exactly one `initial` checkpoint when there
is any, and it supersedes nothing; every `supersedes` / `merged` id names a checkpoint of the
same task written earlier; no checkpoint id twice; no cycle; each checkpoint's boundary seq
and hash are those of the event at that seq, before the checkpoint; its `state_digest` is
the digest of its state. More than one head checkpoint is a fork: said, not a problem (the
store reports a fork and never resolves it by itself)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ... import events as ev
from ... import schema as t
from ...canonical import digest_of
from ...record import Event
from .findings import TaskFindings

#: Checkpoint boundary seqs looked up per query.
_LOOKUP = 500


@dataclass
class CheckpointSeen:
    """What lineage needs of a checkpoint.written event (its state is not kept)."""

    seq: int
    checkpoint_id: str
    reason: str
    supersedes: tuple[str, ...]
    merged: tuple[str, ...]
    boundary_seq: int
    boundary_hash: str
    digest_problem: str | None


class LineageCheck:
    """The checkpoints written in the log, kept as it streams by (`see`, without their
    states), checked once it has ended (`check`)."""

    def __init__(self, found: TaskFindings, conn: Connection) -> None:
        self.found = found
        self.conn = conn
        self.checkpoints: list[CheckpointSeen] = []

    def see(self, e: Event) -> None:
        p = e.payload
        if not isinstance(p, ev.CheckpointWritten):
            return
        digest = digest_of(p.state)
        self.checkpoints.append(
            CheckpointSeen(
                e.seq,
                p.checkpoint_id,
                p.reason,
                tuple(p.supersedes),
                tuple(p.merged),
                p.boundary_seq,
                p.boundary_hash,
                None
                if digest == p.state_digest
                else f"checkpoint {p.checkpoint_id} (seq {e.seq}): state_digest "
                f"{p.state_digest} is not the digest of its state ({digest})",
            )
        )

    def _boundary_hashes(self) -> dict[int, str]:
        """The hash of each event a checkpoint names as its boundary, from the snapshot:
        looked up afterwards, so the stream need not keep every hash of the log."""
        wanted = sorted({c.boundary_seq for c in self.checkpoints})
        found: dict[int, str] = {}
        ev_t = t.events
        for i in range(0, len(wanted), _LOOKUP):
            chunk = wanted[i : i + _LOOKUP]
            rows = self.conn.execute(
                sa.select(ev_t.c.seq, ev_t.c.hash).where(
                    ev_t.c.task_id == self.found.task_id, ev_t.c.seq.in_(chunk)
                )
            )
            found.update((int(r.seq), str(r.hash)) for r in rows)
        return found

    def check(self) -> None:
        """The checkpoints' lineage: each written once at a boundary in the log, one initial
        checkpoint with no parent, every parent a checkpoint of this task written earlier,
        no cycle; more than one head is a fork (said, not a problem)."""
        if not self.checkpoints:
            return
        written = self._checkpoints_written()
        self._initial_checkpoint(written)
        edges, replaced = self._lineage_edges(written)
        for cycle in _cycles(edges):
            self.found.problem(
                "lineage_cycle",
                "checkpoints supersede each other in a cycle: " + " -> ".join(cycle),
            )
        heads = [cid for cid in written if cid not in replaced]
        if len(heads) > 1:
            self.found.note(
                "fork",
                f"the lineage has {len(heads)} heads: "
                + ", ".join(f"{c} (seq {written[c].seq})" for c in heads),
            )

    def _checkpoints_written(self) -> dict[str, CheckpointSeen]:
        """Each checkpoint by id, written once, its boundary an event before it with the
        hash it names, its state's digest its own."""
        hashes = self._boundary_hashes()
        written: dict[str, CheckpointSeen] = {}
        for c in self.checkpoints:
            cid = c.checkpoint_id
            if cid in written:
                self.found.problem(
                    "lineage_duplicate",
                    f"checkpoint {cid} is written twice (seq {written[cid].seq} and seq {c.seq})",
                    c.seq,
                )
                continue
            written[cid] = c
            named = f"checkpoint {cid} (seq {c.seq}) names boundary seq {c.boundary_seq}"
            if c.boundary_seq >= c.seq:
                self.found.problem("checkpoint_boundary", f"{named}, which is not before it", c.seq)
            elif c.boundary_seq not in hashes:
                self.found.problem(
                    "checkpoint_boundary", f"{named}, which is not in the log", c.seq
                )
            elif hashes[c.boundary_seq] != c.boundary_hash:
                self.found.problem(
                    "checkpoint_boundary",
                    f"{named} with hash {c.boundary_hash}; the event there has hash "
                    f"{hashes[c.boundary_seq]}",
                    c.seq,
                )
            if c.digest_problem is not None:
                self.found.problem("checkpoint_digest", c.digest_problem, c.seq)
        return written

    def _initial_checkpoint(self, written: dict[str, CheckpointSeen]) -> None:
        """Exactly one initial checkpoint, and it has no parent."""
        initial = [cid for cid, c in written.items() if c.reason == "initial"]
        if len(initial) != 1:
            listed = ", ".join(f"{i} (seq {written[i].seq})" for i in initial)
            self.found.problem(
                "lineage_initial",
                f"{len(initial)} initial checkpoints ({listed}); a task has exactly one"
                if initial
                else f"no initial checkpoint among {len(written)} checkpoints",
            )
        for cid in initial:
            c = written[cid]
            if c.supersedes or c.merged:
                self.found.problem(
                    "lineage_initial",
                    f"initial checkpoint {cid} (seq {c.seq}) supersedes "
                    f"{', '.join((*c.supersedes, *c.merged))}; an initial checkpoint has no parent",
                    c.seq,
                )

    def _lineage_edges(
        self, written: dict[str, CheckpointSeen]
    ) -> tuple[dict[str, list[str]], set[str]]:
        """Each checkpoint's parents (what it supersedes or merges) that are checkpoints of
        this task written before it, and every id some checkpoint replaces."""
        edges: dict[str, list[str]] = defaultdict(list)
        replaced: set[str] = set()
        unresolved: list[tuple[str, int, str, str]] = []
        for cid, c in written.items():
            seq = c.seq
            for how, refs in (("supersedes", c.supersedes), ("merges", c.merged)):
                for ref in refs:
                    replaced.add(ref)
                    if ref == cid:
                        self.found.problem(
                            "lineage_cycle", f"checkpoint {cid} (seq {seq}) {how} itself", seq
                        )
                    elif ref in written:
                        edges[cid].append(ref)
                        if written[ref].seq > seq:
                            self.found.problem(
                                "lineage_forward",
                                f"checkpoint {cid} (seq {seq}) {how} {ref}, which is written "
                                f"only later (seq {written[ref].seq})",
                                seq,
                            )
                    else:
                        unresolved.append((cid, seq, how, ref))
        owners = self._owners_elsewhere({ref for *_, ref in unresolved})
        for cid, seq, how, ref in unresolved:
            where = (
                f"a checkpoint of task {owners[ref]}, not of this task"
                if ref in owners
                else "which is no checkpoint"
            )
            self.found.problem(
                "lineage_unresolved", f"checkpoint {cid} (seq {seq}) {how} {ref}, {where}", seq
            )
        return edges, replaced

    def _owners_elsewhere(self, refs: set[str]) -> dict[str, str]:
        """The other task each of these checkpoint ids belongs to, where one does."""
        if not refs:
            return {}
        cp = t.checkpoints
        rows = self.conn.execute(
            sa.select(cp.c.checkpoint_id, cp.c.task_id).where(
                cp.c.checkpoint_id.in_(sorted(refs)), cp.c.task_id != self.found.task_id
            )
        )
        return {str(r.checkpoint_id): str(r.task_id) for r in rows}


def _cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """Each cycle of the supersedes graph once, as a path that ends where it starts."""
    found: list[list[str]] = []
    seen_sets: set[frozenset[str]] = set()
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in edges.get(node, []):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :]
                key = frozenset(cycle)
                if key not in seen_sets:
                    seen_sets.add(key)
                    found.append([*cycle, nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found
