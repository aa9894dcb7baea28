"""What a person sees before completing a phase, built by the store.

`phase_completion` is the Complete Phase dialog's whole picture: the phase with each input
and whether it is available now (with the identity a result would record), whether the
store's rule lets it be completed (`rules.phase_completion_refusal`), and, for each outcome,
what completing it changes: which phases become ready, which stay blocked and by what, which
earlier results are retired, and what a final checkpoint would still be blocked by. The
"after" is the store's own readiness (`queries.readiness_of`) over the phases as the
projection would leave them; the window renders it and adds no rule.

`phase_rev` is the phase's revision, what a person's completion is `based_on`: the seq of the
newest change to the phase's result or to the identity of an input it would record. Phases
have no stored revision; this one is derived from the projection, so a completion decided on
guide v2 is refused as a `Conflict` once guide v3 is recorded, never recorded as made on v3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from ..blobs import BlobStore
from ..errors import CommandRejected
from . import queries
from .judging import VersionChange, change_at


@dataclass(frozen=True)
class PhaseInputView:
    kind: str
    ref: str
    identity: str | None  # what a result records for it ("v2", "seq:14", "approved")
    blocks: str | None  # why it is not available now (None: available)

    @property
    def words(self) -> str:
        what = f"{self.kind} {self.ref}"
        if self.blocks:
            return f"{what}: not ready ({self.blocks})"
        return f"{what}: ready" + (f" ({_identity_words(self.identity)})" if self.identity else "")


@dataclass(frozen=True)
class PhaseOutcome:
    """What completing the phase with this outcome changes."""

    ok: bool
    # Phases that become ready (every input available) after it.
    ready_after: tuple[str, ...]
    # Phases that use it and stay blocked, with what still blocks each.
    still_blocked: tuple[tuple[str, tuple[str, ...]], ...]
    # Phases whose current result used an earlier result of this one: retired, re-evaluated.
    retired: tuple[str, ...]
    # What a final checkpoint would still be blocked by (`rules.pending_work`), and whether
    # this phase is among it now.
    final_blockers: tuple[str, ...]

    def lines(self, phase_id: str, final_now: tuple[str, ...]) -> list[str]:
        out = [
            f"Phase {phase_id} becomes done; the inputs' identities above are recorded with it."
            if self.ok
            else f"Phase {phase_id} is recorded as failed, with the inputs' identities above; "
            "phases that use it stay blocked until it is completed again."
        ]
        if self.retired:
            out.append(
                "Results that used its earlier result are retired and re-evaluated: "
                + ", ".join(self.retired)
            )
        if self.ready_after:
            out.append("Becomes ready: " + ", ".join(self.ready_after))
        for pid, why in self.still_blocked:
            out.append(f"Stays blocked: {pid} ({'; '.join(why)})")
        freed = [x for x in final_now if x not in self.final_blockers]
        if freed:
            out.append("A final checkpoint is no longer blocked by: " + "; ".join(freed))
        if self.final_blockers:
            out.append("A final checkpoint is still blocked by: " + "; ".join(self.final_blockers))
        else:
            out.append("Nothing then blocks a final checkpoint.")
        return out


@dataclass(frozen=True)
class PhaseCompletion:
    """A phase as a person completing it must see it. `rev` is what the completion is based
    on: the store refuses it (`Conflict`) if the phase or an input moved since."""

    task_id: str
    phase_id: str
    name: str
    readiness: rules.PhaseReadiness
    rev: int
    last_change: VersionChange | None
    inputs: tuple[PhaseInputView, ...]
    blocked_by: tuple[str, ...]
    # Why it cannot be completed now (the store's rule); None: it can.
    refusal: str | None
    # The current result, in words (None: none), and how many earlier results are history.
    result: str | None
    earlier: int
    final_now: tuple[str, ...]
    outcomes: tuple[PhaseOutcome, PhaseOutcome]  # (done, failed)

    def outcome(self, ok: bool) -> PhaseOutcome:
        return self.outcomes[0] if ok else self.outcomes[1]

    @property
    def final_blocked_by_it(self) -> bool:
        return any(x.startswith(f"phase {self.phase_id} ") for x in self.final_now)


def _identity_words(identity: str) -> str:
    if identity.startswith("seq:"):
        return f"its result at seq {identity[4:]}"
    return identity


def _version_seqs(conn: Connection, task_id: str) -> dict[str, int]:
    """Each artifact's current version's seq: when its identity last changed."""
    a, v = t.artifacts, t.artifact_versions
    q = sa.select(v.c.artifact_id, v.c.seq).join(
        a,
        sa.and_(
            a.c.task_id == v.c.task_id,
            a.c.artifact_id == v.c.artifact_id,
            a.c.current_version == v.c.version,
        ),
    )
    return {aid: int(seq) for aid, seq in conn.execute(q.where(v.c.task_id == task_id))}


def _rev(rows: dict[str, dict[str, Any]], phase_id: str, version_seqs: dict[str, int]) -> int:
    marks = [0]

    def results(row: dict[str, Any]) -> None:
        for h in row["history"]:
            marks.append(int(h.get("seq") or 0))
            marks.append(int(h.get("retired_at_seq") or 0))

    row = rows[phase_id]
    results(row)
    for i in row["inputs"]:
        if i["kind"] == "artifact":
            marks.append(version_seqs.get(i["ref"], 0))
        elif i["kind"] == "phase" and i["ref"] in rows:
            results(rows[i["ref"]])
    return max(marks)


def _phase_rows(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    return queries._rows(conn, t.phases, task_id, t.phases.c.position)


def phase_rev(conn: Connection, task_id: str, phase_id: str) -> int:
    """The phase's revision (see the module): 0 before anything it rests on happened."""
    rows = {r["phase_id"]: r for r in _phase_rows(conn, task_id)}
    if phase_id not in rows:
        raise CommandRejected(f"task {task_id} has no phase {phase_id!r}")
    return _rev(rows, phase_id, _version_seqs(conn, task_id))


def _after(
    rows: list[dict[str, Any]],
    artifacts: dict[str, Any],
    approvals: dict[str, Any],
    phase_id: str,
    ok: bool,
    identities: dict[str, str],
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The readiness after completing `phase_id`, and the phases whose result it retires, as
    the projection leaves them (`_phase_completed`, `_invalidate_dependents`)."""
    rows = [dict(r) for r in rows]
    by_id = {r["phase_id"]: r for r in rows}
    by_id[phase_id]["result"] = {"ok": ok, "seq": 0, "input_identities": identities}
    key = f"phase:{phase_id}"
    retired: list[str] = []
    used = any(
        r["result"] is not None and key in r["result"].get("input_identities", {})
        for r in rows
        if r["phase_id"] != phase_id
    )
    pending, seen = ([key] if used else []), set()
    while pending:
        k = pending.pop()
        if k in seen:
            continue
        seen.add(k)
        for r in rows:
            if r["result"] is None or k not in {f"{i['kind']}:{i['ref']}" for i in r["inputs"]}:
                continue
            r["result"] = None
            retired.append(r["phase_id"])
            pending.append(f"phase:{r['phase_id']}")
    return queries.readiness_of(rows, artifacts, approvals), retired


def phase_completion(
    conn: Connection, blobs: BlobStore, task_id: str, phase_id: str, now: str
) -> PhaseCompletion:
    """The completion of one phase as the store would record it, read now."""
    from .state import pending_of, task_state

    state = task_state(conn, blobs, task_id, now)
    rows = _phase_rows(conn, task_id)
    by_id = {r["phase_id"]: r for r in rows}
    if phase_id not in by_id:
        raise CommandRejected(f"task {task_id} has no phase {phase_id!r}")
    artifacts = {a.artifact_id: a.current_version for a in state.artifacts}
    approvals = {r["approval_id"]: r["state"] for r in queries._rows(conn, t.approvals, task_id)}
    before = queries.readiness_of(rows, artifacts, approvals)
    phase = before[phase_id]
    blocked = tuple(phase["blocked_by"])
    rev = _rev(by_id, phase_id, _version_seqs(conn, task_id))
    # The raw reasons, shown even for a done phase (whose readiness hides them).
    raw = queries.readiness_of(
        [dict(r, result=None) if r["phase_id"] == phase_id else r for r in rows],
        artifacts,
        approvals,
    )[phase_id]["blocked_by"]
    inputs = []
    for i in phase["inputs"]:
        key = f"{i['kind']}:{i['ref']}"
        reason = next((b for b in raw if b.startswith(f"{i['kind']} {i['ref']} ")), None)
        inputs.append(
            PhaseInputView(i["kind"], i["ref"], phase["input_identities"].get(key), reason)
        )
    final_now = tuple(state.pending_work)
    outcomes = []
    for ok in (True, False):
        after, retired = _after(rows, artifacts, approvals, phase_id, ok, phase["input_identities"])
        users = [
            p
            for p in after.values()
            if any(i["kind"] == "phase" and i["ref"] == phase_id for i in p["inputs"])
        ]
        ready = tuple(
            pid
            for pid, p in after.items()
            if pid != phase_id
            and p["readiness"] == rules.PhaseReadiness.READY
            and before[pid]["readiness"] != rules.PhaseReadiness.READY
        )
        still = tuple(
            (p["phase_id"], tuple(p["blocked_by"]))
            for p in users
            if p["readiness"] == rules.PhaseReadiness.BLOCKED
        )
        final = tuple(pending_of(state, [(p["phase_id"], p["readiness"]) for p in after.values()]))
        outcomes.append(PhaseOutcome(ok, ready, still, tuple(retired), final))
    result = phase["result"]
    said = None
    if result:
        by = (result.get("actor") or {}).get("name") or (result.get("actor") or {}).get("id", "")
        said = (
            f"{'done' if result['ok'] else 'failed'} at seq {result['seq']}"
            + (f" by {by}" if by else "")
            + (f": {result['summary']}" if result.get("summary") else "")
        )
    return PhaseCompletion(
        task_id=task_id,
        phase_id=phase_id,
        name=phase["name"],
        readiness=rules.PhaseReadiness(phase["readiness"]),
        rev=rev,
        last_change=change_at(conn, task_id, rev) if rev else None,
        inputs=tuple(inputs),
        blocked_by=blocked,
        refusal=rules.phase_completion_refusal(phase_id, blocked),
        result=said,
        earlier=len([h for h in phase["history"] if h != result]),
        final_now=final_now,
        outcomes=(outcomes[0], outcomes[1]),
    )
