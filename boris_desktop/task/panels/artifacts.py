"""Artifacts: versions with digest, size, producer; missing, unreadable or changed-on-disk
marks; a highlighted preview of the selected version and a diff between two versions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QVBoxLayout, QWidget

from boris_desktop.runtime.loader import Loader
from boris_desktop.runtime.preview import Preview, diff, preview
from boris_desktop.runtime.task_watch import Mark, MarkState
from boris_desktop.task.bundle import TaskBrief, TaskBundle
from boris_desktop.task.panels import retired
from boris_desktop.task.panels.base import TreePanel
from boris_desktop.ui import text as t
from boris_desktop.ui.records import Node
from boris_desktop.ui.widgets import elided_label, plain_label
from store import api

if TYPE_CHECKING:
    from store.api import (
        Artifact,
        ArtifactBrief,
        ArtifactVersion,
        FileObservation,
        RetiredItem,
        TaskState,
    )


def producer(v: ArtifactVersion) -> str:
    p = v.producer
    who = t.actor_short(p.actor)
    if p.effect_id:
        who += f" via {p.effect_id}#{p.attempt_no}"
    return who


@dataclass(frozen=True)
class VersionRow:
    """A version's row: the artifact and the version it shows (previewed when selected)."""

    artifact: Artifact
    version: ArtifactVersion


class ArtifactsPanel(TreePanel):
    title = "Artifacts"
    uses_disk = True
    headers = ("Artifact / version", "Marks", "Digest", "Size", "Producer", "Note")

    def __init__(self, loader: Loader) -> None:
        super().__init__(loader)
        #: The resume brief's artifacts by id: each current file as the brief observed it.
        self.brief_artifacts: dict[str, ArtifactBrief] = {}
        self._bundle: TaskBundle | None = None
        #: The task's retired items: a version's tombstone and weight.
        self._retired: dict[retired.ItemKey, RetiredItem] = {}
        self._selected: VersionRow | None = None
        self.split.setOrientation(Qt.Orientation.Horizontal)
        self.what = plain_label(name="Previewed version")
        self.compare = QComboBox()
        self.compare.setAccessibleName("Compare with version")
        self.compare.setToolTip("Show the changes from another version to this one")
        self.compare.currentIndexChanged.connect(self._refresh_content)
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.what, 1)
        bar.addWidget(plain_label("Compare with:", wrap=False))
        bar.addWidget(self.compare)
        side = QWidget()
        col = QVBoxLayout(side)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(bar)
        # The file behind the version, and whether the bytes on disk are still these: one
        # line, its path elided in the middle (whole in the tooltip).
        self.file_line = elided_label(name="File on disk")
        col.addWidget(self.file_line)
        col.addWidget(self.detail, 1)
        self.split.insertWidget(1, side)
        self.split.setSizes([700, 560])
        self.detail.setPlaceholderText("Select a version to preview it.")

    def tab_note(self, task: TaskState) -> str:
        problems = sum(p.kind.startswith("artifact") for p in task.problems)
        said = [t.count(problems, "problem", "problems")] if problems else []
        # Retired versions by weight, blocking before degraded (retired evidence is shown,
        # and counted as open, under its criterion).
        weights = [r.weight for r in task.retired if r.kind == retired.VERSION]
        order = (api.RetiredWeight.BLOCKING, api.RetiredWeight.DEGRADED)
        said += [f"{weights.count(w)} retired {w}" for w in order if w in weights]
        return ", ".join(said)

    def summary(self, bundle: TaskBundle) -> str:
        arts = bundle.task.artifacts
        n = sum(len(a.versions) for a in arts)
        bad = sum(1 for a in arts if self._worst(a))
        problems = (
            f"; {t.count(bad, 'has a problem', 'have problems')}, listed first" if bad else ""
        )
        return (
            f"{t.count(len(arts), 'artifact', 'artifacts')}, {t.count(n, 'version', 'versions')}"
            f"{problems}. Select a version to preview it."
        )

    def _worst(self, a: Artifact) -> str | None:
        return next((s for v in a.versions if (s := self._marks(a, v)[1])), None)

    def show_task(self, bundle: TaskBundle) -> None:
        if self._bundle is not None and self._bundle.task.id != bundle.task.id:
            # Another task: the last one's observations of its files are not this one's.
            self.brief_artifacts = {}
        self._bundle = bundle
        self._retired = retired.items(bundle.task)
        super().show_task(bundle)

    def clear_detail(self) -> None:
        super().clear_detail()
        self._selected = None
        self.what.setText("")
        self.file_line.setText("")
        self.compare.blockSignals(True)
        self.compare.clear()
        self.compare.blockSignals(False)

    def show_brief(self, brief: TaskBrief) -> None:
        self.brief_artifacts = {a.artifact_id: a for a in brief.artifacts}
        if self._bundle is not None:
            self.tree.set_nodes(self.nodes(self._bundle), expand_all=False)
        self._show_identity()

    def _gone(self, a: Artifact, v: ArtifactVersion) -> RetiredItem | None:
        """The version's retired item (its tombstone and weight), if it was retired."""
        return self._retired.get(retired.version_key(a.artifact_id, v.version))

    def _marks(self, a: Artifact, v: ArtifactVersion) -> tuple[str, str | None]:
        marks, status = [], None
        gone = self._gone(a, v)
        if gone:  # a typed absence by its retention class, not a missing blob
            word, status = retired.mark(gone)
            marks.append(word)
        elif v.blob_problem:
            marks.append(f"blob {v.blob_problem}")
            status = "missing"
        if v.version == a.current_version:
            # The resume brief's observation of the file (store data the brief reads).
            seen = self.brief_artifacts.get(a.artifact_id)
            obs = self._observed(a)
            watched = self._watched(a)
            if watched is not None:  # the watcher's fresh hash is newer than the brief's
                if watched.state == MarkState.CHANGED:
                    marks.append("changed on disk")
                    status = "changed"
                elif watched.state == MarkState.MISSING:
                    marks.append("missing on disk")
                    status = "missing"
            elif seen is not None and seen.changed_on_disk:
                marks.append("changed on disk")
                status = "changed"
            elif obs is not None and (not obs.readable or not obs.exists):
                marks.append("file missing on disk")
                status = "missing"
            marks.insert(0, "current")
        return ", ".join(marks) or "—", status

    def _observed(self, a: Artifact) -> FileObservation | None:
        """The resume brief's observation of the artifact's current file, if it has one."""
        seen = self.brief_artifacts.get(a.artifact_id)
        return seen.observed if seen is not None else None

    def _watched(self, a: Artifact) -> Mark | None:
        """What the file watcher found of the artifact's file, if it watches it."""
        return self.disk.artifacts.get(a.artifact_id)

    def _disk_tip(self, a: Artifact, v: ArtifactVersion) -> str:
        watched = self._watched(a)
        if watched is None or v.version != a.current_version or watched.state == MarkState.SAME:
            return ""
        return f"\nwatcher: {watched.state} on disk ({watched.what} at {watched.at})"

    def nodes(self, bundle: TaskBundle) -> list[Node]:
        out = [self._artifact(a) for a in bundle.task.artifacts]
        # Problems first: a missing blob or a changed file is what the reviewer looks for.
        out.sort(key=lambda n: n.status is None)
        return out

    def _artifact(self, a: Artifact) -> Node:
        kids = []
        worst = None
        for v in reversed(a.versions):
            marks, status = self._marks(a, v)
            worst = worst or status
            kids.append(
                Node(
                    key=f"v{v.version}",
                    cells=(
                        f"v{v.version}",
                        marks,
                        t.digest(v.digest),
                        t.size(v.size),
                        producer(v),
                        v.note,
                    ),
                    status=status,
                    icon_name=None if status else "ok",
                    tip=f"{v.digest}\n{v.media_type}\n{v.path or 'no file path'}"
                    + self._disk_tip(a, v),
                    detail=VersionRow(a, v),
                )
            )
        cur = a.current
        return Node(
            key=a.artifact_id,
            cells=(
                a.name,
                f"{a.role}, {t.count(len(a.versions), 'version', 'versions')}"
                + (f"; {self._marks(a, cur)[0]}" if cur and worst else ""),
                t.digest(cur.digest) if cur else "—",
                t.size(cur.size) if cur else "—",
                producer(cur) if cur else "—",
                f"current v{a.current_version}",
            ),
            status=worst,
            icon_name=None if worst else "ok",
            detail=VersionRow(a, cur) if cur else None,
            children=kids,
        )

    def _show_identity(self) -> None:
        if self._selected is not None:
            self.file_line.setText(self.identity(self._selected))

    def identity(self, row: VersionRow) -> str:
        """Which file this version is, and for the current one what is on disk now: the
        watcher's fresh hash when it has one, else the brief's observation."""
        a, v = row.artifact, row.version
        path = v.path
        if v.version != a.current_version:
            return f"file when recorded: {path}" if path else "recorded without a file"
        if not path:
            return "recorded without a file: the digest is its only identity"
        watched = self._watched(a)
        if watched is not None and watched.state != MarkState.SAME:
            return f"file: {path} · on disk now: {watched.state} ({watched.what} at {watched.at})"
        obs = self._observed(a)
        if obs is None:
            return f"file: {path} · on disk: not observed yet"
        if not obs.readable or not obs.exists:
            return f"file: {path} · on disk now: {obs.problem or 'missing'}"
        if obs.digest == v.digest:
            return f"file: {path} · on disk now: the same bytes as v{v.version}"
        return (
            f"file: {path} · on disk now: different bytes "
            f"({t.digest(obs.digest or '')}, {t.size(obs.size or 0)})"
        )

    def show_detail(self, node: Node) -> None:
        row = node.detail
        if not isinstance(row, VersionRow):
            self.detail.show_text(str(row or ""))
            return
        a, v = row.artifact, row.version
        if self._selected != row:
            self._selected = row
            self.compare.blockSignals(True)
            self.compare.clear()
            self.compare.addItem("(none: preview)", None)
            for other in a.versions:
                if other.version != v.version:
                    self.compare.addItem(f"v{other.version}", other.version)
            self.compare.blockSignals(False)
        self._refresh_content()

    def _refresh_content(self) -> None:
        if self._selected is None or self.store is None:
            return
        a, v = self._selected.artifact, self._selected.version
        store = self.store
        head = f"{a.name} v{v.version} · {v.media_type} · {t.size(v.size)}"
        other_no = self.compare.currentData()
        other = next((x for x in a.versions if x.version == other_no), None)
        for shown in (v, other):
            gone = self._gone(a, shown) if shown else None
            if shown and gone:  # retired: the tombstone's words, the blob is never asked for
                self.what.setText(head)
                self._show_identity()
                label = f"{a.name} v{shown.version}"
                self.detail.show_text(retired.detail(label, gone), keep=False)
                return
        if v.blob_problem:
            self.what.setText(head)
            self._show_identity()
            self.detail.show_text(
                f"The retained copy of {a.name} v{v.version} is {v.blob_problem}.\n"
                f"digest {v.digest}\nNothing can be accepted on the strength of this version.",
                keep=False,
            )
            return
        if other is None:
            job = lambda: preview(store, v.digest, v.media_type, a.name)  # noqa: E731
        else:
            old, new = sorted((other, v), key=lambda x: x.version)
            job = lambda: diff(store, old, new, a.name)  # noqa: E731
        self.what.setText(head + " · loading…")
        self._show_identity()
        self.loader.submit(self.detail_job, job, lambda r: self._content(head, r))

    def _content(self, head: str, r: Preview) -> None:
        self.what.setText(f"{head} · {r.note}")
        self._show_identity()
        if r.problem:
            self.detail.show_text(r.problem, keep=False)
        else:
            self.detail.show_text(r.text, r.media_type, r.name, keep=False)
