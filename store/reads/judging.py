"""What a person decides on when they judge a criterion, and the versions decisions rest on.

`judge_decision` is the judge dialog's whole picture, built by the store: the criterion with
its state and revision (what a judgement is based on), the artifacts with their current
versions, the evidence offered with the artifact version each was made on and whether that
is current, and the verdicts allowed with what each needs. The window renders it and adds no
rule. `change_at` names who changed a subject and when, for a `Conflict`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from ..errors import CommandRejected
from ..model import Actor
from ..rules import ActorKind
from .actors import ActorRef


@dataclass(frozen=True)
class VersionChange:
    """One event that changed a subject: who, when, and what they did, in words."""

    seq: int
    by: str  # the actor's label
    at: str
    what: str
    actor: ActorRef  # who made it
    # Why, in their words: the event's note, reason or summary ("" when it gives none).
    why: str = ""


def _describe(type_: str, payload: dict[str, Any]) -> str:
    if type_ == "criterion.judged":
        what = f"judged it {payload.get('status')}"
        if payload.get("artifact_id"):
            what += f" against {payload['artifact_id']} v{payload.get('artifact_version')}"
        return what
    if type_ == "criterion.changed":
        return "changed its text"
    if type_ == "criterion.added":
        return "added it"
    if type_ == "evidence.attached":
        return f"attached evidence {payload.get('evidence_id')}"
    if type_ == "artifact.version_recorded":
        return f"recorded {payload.get('artifact_id')} v{payload.get('version')}"
    if type_ == "effect.reconciled":
        who = "decided" if payload.get("decided_by_person") else "reconciled"
        return f"{who} it {payload.get('verdict')}"
    if type_ == "phase.completed":
        failed = "" if payload.get("ok", True) else " (failed)"
        return f"completed phase {payload.get('phase_id')}{failed}"
    if type_ == "objective.amended":
        return f"amended it to revision {payload.get('rev')}"
    if type_ == "budget.limit_set":
        limit = payload.get("limit")
        return f"set its limit to {'none' if limit is None else f'{limit:g}'}"
    return type_


def change_at(conn: Connection, task_id: str, seq: int) -> VersionChange:
    """The event at `seq` of the task as a change somebody made."""
    row = conn.execute(
        sa.select(
            t.events.c.type,
            t.events.c.payload,
            t.events.c.actor_kind,
            t.events.c.actor_id,
            t.events.c.actor_name,
            t.events.c.at,
        ).where(t.events.c.task_id == task_id, t.events.c.seq == seq)
    ).one()
    actor = Actor(kind=row.actor_kind, id=row.actor_id, name=row.actor_name)
    payload = json.loads(row.payload)
    return VersionChange(
        seq,
        actor.label(),
        row.at,
        _describe(row.type, payload),
        ActorRef(ActorKind(row.actor_kind), row.actor_id, row.actor_name or ""),
        str(payload.get("note") or payload.get("reason") or payload.get("summary") or ""),
    )


def budget_limit_rev(conn: Connection, task_id: str, counter: str) -> tuple[int, int | None]:
    """The counter's limit revision (how many times a limit was set on it) and the seq of the
    last setting. Limits are set rarely; charges, which are frequent, do not move it."""
    rev, last = 0, None
    for seq, payload in conn.execute(
        sa.select(t.events.c.seq, t.events.c.payload)
        .where(t.events.c.task_id == task_id, t.events.c.type == "budget.limit_set")
        .order_by(t.events.c.seq)
    ):
        if json.loads(payload).get("counter") == counter:
            rev, last = rev + 1, int(seq)
    return rev, last


def version_seqs(conn: Connection, task_id: str) -> dict[str, list[tuple[int, int]]]:
    """Per artifact, (version, seq it was recorded at)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for aid, version, seq in conn.execute(
        sa.select(
            t.artifact_versions.c.artifact_id,
            t.artifact_versions.c.version,
            t.artifact_versions.c.seq,
        ).where(t.artifact_versions.c.task_id == task_id)
    ):
        out.setdefault(aid, []).append((int(version), int(seq)))
    return out


def made_on(
    artifact_id: str,
    evidence: Any,
    criterion: Any,
    seqs: dict[str, list[tuple[int, int]]],
) -> int | None:
    """`rules.evidence_made_on` for one evidence row of `criterion` (its projection row)."""
    vouched = None
    if (
        criterion.artifact_id == artifact_id
        and criterion.artifact_version is not None
        and evidence.evidence_id in (criterion.evidence_ids or [])
        and criterion.status in (rules.CriterionState.SATISFIED, rules.CriterionState.STALE)
    ):
        vouched = int(criterion.artifact_version)
    return rules.evidence_made_on(
        artifact_id,
        stated=(evidence.artifact_id, evidence.artifact_version),
        attached_seq=evidence.seq,
        version_seqs=seqs.get(artifact_id, ()),
        vouched_on=vouched,
    )


def criterion_row(conn: Connection, task_id: str, criterion_id: str) -> Any:
    row = conn.execute(
        sa.select(t.criteria).where(
            t.criteria.c.task_id == task_id, t.criteria.c.criterion_id == criterion_id
        )
    ).first()
    if row is None:
        raise CommandRejected(f"task {task_id} has no criterion {criterion_id!r}")
    return row


def evidence_rows(conn: Connection, task_id: str, criterion_id: str) -> list[Any]:
    return list(
        conn.execute(
            sa.select(t.evidence)
            .where(t.evidence.c.task_id == task_id, t.evidence.c.criterion_id == criterion_id)
            .order_by(t.evidence.c.seq)
        )
    )


def older_evidence(
    conn: Connection,
    task_id: str,
    criterion: Any,
    artifact_id: str,
    version: int,
    cited: Sequence[str],
) -> list[str]:
    """The cited evidence known to be made on an older version of the artifact than `version`."""
    seqs = version_seqs(conn, task_id)
    rows = {e.evidence_id: e for e in evidence_rows(conn, task_id, criterion.criterion_id)}
    return [
        eid
        for eid in cited
        if eid in rows
        and not rules.evidence_is_current(made_on(artifact_id, rows[eid], criterion, seqs), version)
    ]


# --- the judge decision ------------------------------------------------------------------------


@dataclass(frozen=True)
class ArtifactOffered:
    artifact_id: str
    name: str
    current_version: int
    role: str = ""


@dataclass(frozen=True)
class EvidenceOrigin:
    """The version of one artifact a piece of evidence was made on, against its current one."""

    artifact_id: str
    made_on: int | None
    current_version: int
    current: bool
    words: str


@dataclass(frozen=True)
class EvidenceOffered:
    evidence_id: str
    kind: str
    description: str
    locator: str
    size: int
    at: str
    problem: str | None  # its blob cannot be read now: why
    origins: tuple[EvidenceOrigin, ...]
    # Cited by the criterion's last judgement.
    cited: bool
    # The version the record says it was made on, whichever artifact it is judged against:
    # the one its writer named, else the one a satisfied judgement citing it vouched for
    # (None: the record names no artifact; `origin` then dates it per artifact).
    made_on: EvidenceOrigin | None = None

    def origin(self, artifact_id: str | None) -> EvidenceOrigin | None:
        return next((o for o in self.origins if o.artifact_id == artifact_id), None)

    def current_for(self, artifact_id: str | None) -> bool:
        """Whether it speaks for the artifact's current version (ticked by default if so)."""
        o = self.origin(artifact_id)
        return o is None or o.current


@dataclass(frozen=True)
class JudgeDecision:
    """A criterion as a person judging it must see it. `rev` is what the judgement is based
    on: the store refuses it (`Conflict`) if the criterion changed since."""

    task_id: str
    criterion_id: str
    text: str
    state: rules.CriterionState
    rev: int
    last_change: VersionChange
    judged_artifact: str | None
    judged_version: int | None
    note: str
    stale_reason: str
    artifacts: tuple[ArtifactOffered, ...]
    evidence: tuple[EvidenceOffered, ...]
    verdicts: tuple[rules.VerdictNeeds, ...]

    @property
    def default_artifact(self) -> str | None:
        """The artifact a satisfied verdict is most likely checked against: the one it was
        judged against, else the only one, else none (the person picks)."""
        ids = [a.artifact_id for a in self.artifacts]
        if self.judged_artifact in ids:
            return self.judged_artifact
        return ids[0] if len(ids) == 1 else None

    def older(self, artifact_id: str | None, evidence_ids: Sequence[str]) -> list[str]:
        """The picked evidence made on an older version of the artifact than its current."""
        by_id = {e.evidence_id: e for e in self.evidence}
        return [
            eid for eid in evidence_ids if eid in by_id and not by_id[eid].current_for(artifact_id)
        ]

    def missing(
        self,
        verdict: rules.CriterionState | None,
        *,
        artifact_id: str | None,
        evidence_ids: Sequence[str],
        note: str,
        older_evidence_reason: str = "",
    ) -> str | None:
        """What the chosen verdict still needs (`rules.judgement_missing`); None: ready."""
        if verdict is None:
            return "choose a verdict"
        return rules.judgement_missing(
            verdict,
            artifact_id=artifact_id,
            evidence_ids=evidence_ids,
            note=note,
            older_evidence=self.older(artifact_id, evidence_ids),
            older_evidence_reason=older_evidence_reason,
        )


def judge_decision(
    conn: Connection,
    task_id: str,
    criterion_id: str,
    problem: Any = None,
) -> JudgeDecision:
    """The judge decision on one criterion. `problem(digest)`: why a blob cannot be read now
    (None when it can), as the caller's blob store says; without one, blobs are not read."""
    crit = criterion_row(conn, task_id, criterion_id)
    arts = tuple(
        ArtifactOffered(a.artifact_id, a.name, int(a.current_version))
        for a in conn.execute(
            sa.select(t.artifacts)
            .where(t.artifacts.c.task_id == task_id)
            .order_by(t.artifacts.c.position)
        )
    )
    seqs = version_seqs(conn, task_id)
    offered = []
    cited = set(crit.evidence_ids or [])
    vouching = crit.status in (rules.CriterionState.SATISFIED, rules.CriterionState.STALE)
    for e in evidence_rows(conn, task_id, criterion_id):
        named = e.artifact_id if e.artifact_version is not None else None
        if named is None and vouching and e.evidence_id in cited:
            named = crit.artifact_id
        origins = []
        for a in arts:
            on = made_on(a.artifact_id, e, crit, seqs)
            origins.append(
                EvidenceOrigin(
                    a.artifact_id,
                    on,
                    a.current_version,
                    rules.evidence_is_current(on, a.current_version),
                    rules.evidence_version_words(a.artifact_id, on, a.current_version),
                )
            )
        offered.append(
            EvidenceOffered(
                e.evidence_id,
                e.kind,
                e.description,
                e.locator,
                int(e.size),
                e.at,
                problem(e.digest) if problem is not None else None,
                tuple(origins),
                e.evidence_id in cited,
                next((o for o in origins if o.artifact_id == named), None),
            )
        )
    return JudgeDecision(
        task_id=task_id,
        criterion_id=criterion_id,
        text=crit.text,
        state=rules.CriterionState(crit.status),
        rev=int(crit.rev),
        last_change=change_at(conn, task_id, int(crit.rev_seq)),
        judged_artifact=crit.artifact_id,
        judged_version=crit.artifact_version,
        note=crit.note,
        stale_reason=crit.stale_reason,
        artifacts=arts,
        evidence=tuple(offered),
        verdicts=rules.VERDICTS,
    )
