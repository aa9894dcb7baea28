"""What a person sees before attaching evidence from a file, built by the store.

`evidence_target` names the criterion, the kinds of evidence the store takes, the task's
scope (the file must lie inside it: the store refuses any other, after resolving `..` and
symbolic links, `store.scope.resolve_path`) and the artifacts with their current version,
so the dialog can say what the evidence will be made on ("made on guide v2") and send
exactly that version (`AttachEvidence.artifact_id/artifact_version`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import schema as t
from ..model import EvidenceKind
from . import queries
from .judging import ArtifactOffered, criterion_row

#: The kinds of evidence the store takes, in its own words.
EVIDENCE_KINDS: tuple[str, ...] = get_args(EvidenceKind)

#: Roles of artifacts that are what the task makes (evidence is usually made on one of them).
_MADE = ("draft", "output")


@dataclass(frozen=True)
class EvidenceTarget:
    task_id: str
    criterion_id: str
    criterion_text: str
    criterion_state: str
    # Where the judgement last put it (the artifact evidence most likely speaks for).
    judged_artifact: str | None
    artifacts: tuple[ArtifactOffered, ...]
    kinds: tuple[str, ...]
    scope_paths: tuple[str, ...]

    @property
    def default_artifact(self) -> str | None:
        """The artifact the criterion was judged against, else the one artifact the task
        makes (a draft or output), else none: the person picks."""
        ids = [a.artifact_id for a in self.artifacts]
        if self.judged_artifact in ids:
            return self.judged_artifact
        made = [a.artifact_id for a in self.artifacts if a.role in _MADE]
        return made[0] if len(made) == 1 else None

    def current_version(self, artifact_id: str | None) -> int | None:
        return next(
            (a.current_version for a in self.artifacts if a.artifact_id == artifact_id), None
        )

    def made_on_words(self, artifact_id: str | None) -> str:
        version = self.current_version(artifact_id)
        if artifact_id is None or version is None:
            return "made on no artifact version"
        return f"made on {artifact_id} v{version}"


def evidence_target(conn: Connection, task_id: str, criterion_id: str) -> EvidenceTarget:
    task = queries.task_row(conn, task_id)
    crit = criterion_row(conn, task_id, criterion_id)
    arts = tuple(
        ArtifactOffered(a.artifact_id, a.name, int(a.current_version), a.role)
        for a in conn.execute(
            sa.select(t.artifacts)
            .where(t.artifacts.c.task_id == task_id)
            .order_by(t.artifacts.c.position)
        )
    )
    return EvidenceTarget(
        task_id=task_id,
        criterion_id=criterion_id,
        criterion_text=crit.text,
        criterion_state=crit.status,
        judged_artifact=crit.artifact_id,
        artifacts=arts,
        kinds=EVIDENCE_KINDS,
        scope_paths=tuple((task["scope"] or {}).get("paths") or ()),
    )
