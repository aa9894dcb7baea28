"""Blobs: every blob an artifact version, evidence or note names exists and its content
(streamed) hashes to its name; an effect's intended state is checked when its blob is there
(the intent may name a state the store was never given: then its absence is only noted),
and a blob gone after every item naming it was retired is accounted for, not missing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ... import events as ev
from ...errors import BlobProblem
from ...record import Event
from ...store import Store
from .findings import TaskFindings


class BlobsCheck:
    """The blobs the log names, kept as it streams by (`see`), then looked at in the blob
    store (`check`). `cache` is shared by every task of one verify run: a blob named by
    several tasks is hashed once."""

    def __init__(self, found: TaskFindings, store: Store, cache: dict[str, str | None]) -> None:
        self.found = found
        self.store = store
        self.cache = cache
        self.refs: dict[tuple[str, bool], str] = {}
        # How many items name each digest, and how many of them a tombstone retired: a blob
        # gone after all its items were retired is accounted for, not missing.
        self.item_refs: Counter[str] = Counter()
        self.retired_refs: Counter[str] = Counter()

    def see(self, e: Event) -> None:
        if isinstance(e.payload, ev.ContentRetired):
            self.retired_refs[e.payload.digest] += 1
        for digest, owner, required in _referenced_blobs((e,)):
            self.refs.setdefault((digest, required), owner)
            self.item_refs[digest] += required

    def check(self) -> None:
        for (digest, required), owner in self.refs.items():
            problem = self._problem(digest)
            if problem is None:
                continue
            if problem == "missing" and required and self._retired(digest):
                self.found.note(
                    "blob_retired",
                    f"blob {digest} ({owner}) was retired by its retention class; its "
                    "tombstone keeps the digest, size and media type",
                    digest,
                )
            elif problem == "missing" and not required:
                self.found.note(
                    "blob_absent",
                    f"blob {digest} ({owner}) is not in the blob store; the intent may name "
                    "content the store was never given",
                    digest,
                )
            elif problem == "missing":
                self.found.problem(
                    "blob_missing", f"blob {digest} ({owner}) is missing", digest=digest
                )
            else:
                self.found.problem(
                    "blob_corrupt", f"blob {digest} ({owner}) is {problem}", digest=digest
                )

    def _retired(self, digest: str) -> bool:
        """Every item of this task naming the digest was retired (store.commands.retention):
        the blob may have gone. One live item left, and it is missing, not retired."""
        return 0 < self.item_refs[digest] <= self.retired_refs[digest]

    def _problem(self, digest: str) -> str | None:
        if digest not in self.cache:
            try:
                self.cache[digest] = self.store.blobs.problem(digest, verify=True)
            except BlobProblem as exc:
                self.cache[digest] = exc.problem
        return self.cache[digest]


def _referenced_blobs(events: Iterable[Event]) -> Iterable[tuple[str, str, bool]]:
    """(digest, owner, required) of every blob the log names; `required` is False for an
    effect's intended state, which may never have been given to the store."""
    for e in events:
        p = e.payload
        if isinstance(p, ev.ArtifactVersionRecorded):
            yield p.digest, f"artifact {p.artifact_id} v{p.version}, seq {e.seq}", True
        elif isinstance(p, ev.EvidenceAttached):
            yield p.digest, f"evidence {p.evidence_id}, seq {e.seq}", True
        elif isinstance(p, ev.NoteStored):
            yield p.digest, f"note {p.note_id}, seq {e.seq}", True
        elif (
            isinstance(p, ev.EffectPlanned | ev.EffectRevised)
            and p.intended.exists
            and p.intended.digest
        ):
            yield p.intended.digest, f"effect {p.effect_id} intended state, seq {e.seq}", False
