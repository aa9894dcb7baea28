"""Attach evidence from a file to a criterion, made on the artifact version the person sees.

What the evidence is attached to is the store's `EvidenceTarget`: the criterion, the kinds
the store takes, the task's scope and each artifact's current version. The file must lie in
the scope: the store refuses any other (after `..` and symbolic links are resolved) with a
`ScopeViolation`, shown here in one line; the dialog does not judge paths itself. The
evidence is recorded as made on the version shown ("made on guide v2"); if the artifact gets
a newer version while the dialog is open, it says so and waits for the person to look again.
"""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtWidgets import QComboBox, QFormLayout, QLineEdit, QWidget

from boris_desktop.decide.following import Following
from boris_desktop.decide.phase import grow_to_content
from boris_desktop.decide.versioned import Versioned
from boris_desktop.host import Host
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import words
from boris_desktop.ui.widgets import elided_label, plain_label
from store import api

CHOOSE = "Choose…"


class AttachEvidenceDialog(Versioned, Following):
    """A file, a kind and a description, attached to one criterion on one artifact version."""

    acting = "attaching"

    def __init__(
        self, host: Host, task: api.TaskState, criterion: api.Criterion, path: str
    ) -> None:
        cid = criterion.criterion_id
        super().__init__(host, f"Attach evidence to {cid}", "&Attach")
        self.task_id, self.criterion_id, self.path = task.id, cid, path
        self.target: api.EvidenceTarget | None = None
        self.newest: api.EvidenceTarget | None = None
        self.follow(self.task_id, fetch=lambda store: store.evidence_target(self.task_id, cid))
        self.keep_versions(
            "&Look at it now", "Make it on the artifact's newest version; your choices stay"
        )
        self.add(self.changed)
        self.about = plain_label(f"{cid}: {criterion.text}", name="Criterion")
        self.add(self.about)
        # Full-width lines, outside the form, each elided in the middle (whole in its
        # tooltip): a path's length never sets the dialog's width.
        self.file = elided_label(self._file_words(), name="File")
        self.add(self.file)
        self.kind = QComboBox()
        self.kind.setAccessibleName("Kind")
        self.kind.addItem(CHOOSE, None)
        self.artifact = QComboBox()
        self.artifact.setAccessibleName("Made on artifact")
        self.made_on = plain_label("", name="Made on")
        self.description = QLineEdit()
        self.description.setAccessibleName("Description")
        self.description.setPlaceholderText(
            "What it shows, e.g. the check's output on this version"
        )
        self.scope = elided_label(name="Scope")
        form = QFormLayout()
        form.addRow("Kind:", self.kind)
        form.addRow("Description:", self.description)
        form.addRow("Made on:", self.artifact)
        form.addRow("", self.made_on)
        box = QWidget()
        box.setLayout(form)
        self.add(box)
        self.add(self.scope)
        self.kind.currentIndexChanged.connect(self.refresh_buttons)
        self.artifact.currentIndexChanged.connect(self._artifact_changed)
        self.follower.force()  # the first read fills the dialog
        self.refresh_buttons()
        self.fit(600)

    def first_field(self) -> QWidget:
        return self.kind

    def _file_words(self) -> str:
        try:
            size = t.size(os.stat(self.path).st_size)
        except OSError as exc:
            size = exc.strerror or "cannot be read"
        return f"File: {os.path.basename(self.path)} ({size}), at {self.path}"

    # --- what the store says ------------------------------------------------------------

    def task_changed(self, task: Any) -> None:
        target: api.EvidenceTarget = task
        self.newest = target
        if self.target is None:
            self._show(target, target.default_artifact)
            return
        chosen = self.artifact.currentData()
        now = target.current_version(chosen)
        if chosen is not None and now is not None and now != self.based_on:
            self.moved(
                now,
                f"{chosen} has version {now} now (you chose it at v{self.based_on}), "
                "recorded while this was open",
            )

    def rebased(self) -> None:
        if self.newest is not None:
            self._show(self.newest, self.artifact.currentData())

    def _show(self, target: api.EvidenceTarget, want: str | None) -> None:
        first = self.target is None
        self.target = target
        self.about.setText(
            f"{target.criterion_id}: {target.criterion_text} "
            f"(it is {words(target.criterion_state)})"
        )
        kind = self.kind.currentData()
        self.kind.blockSignals(True)
        self.kind.clear()
        self.kind.addItem(CHOOSE, None)
        for k in target.kinds:
            self.kind.addItem(words(k), k)
        self.kind.setCurrentIndex(max(self.kind.findData(kind), 0))
        self.kind.blockSignals(False)
        self.artifact.blockSignals(True)
        self.artifact.clear()
        for a in target.artifacts:
            self.artifact.addItem(f"{a.artifact_id} v{a.current_version}", a.artifact_id)
        self.artifact.addItem("no artifact", None)
        self.artifact.setCurrentIndex(max(self.artifact.findData(want), 0))
        self.artifact.blockSignals(False)
        self.scope.setText(
            "The file must lie inside the task's scope: "
            + (", ".join(target.scope_paths) or "it has none, so no file can be attached")
        )
        self._artifact_changed()
        if first:
            grow_to_content(self)

    def _artifact_changed(self) -> None:
        target = self.target
        if target is None:
            return
        chosen = self.artifact.currentData()
        self.based_on, self.latest = target.current_version(chosen), None
        self.rebase.hide()
        self.changed.hide()
        self.made_on.setText(f"The evidence is {target.made_on_words(chosen)}.")
        self.refresh_buttons()

    # --- the person's input -------------------------------------------------------------

    def chosen_kind(self) -> str | None:
        data = self.kind.currentData()
        return None if data is None else str(data)

    def set_kind(self, kind: str) -> None:
        self.kind.setCurrentIndex(self.kind.findData(kind))

    def ready(self) -> bool:
        return self.target is not None and self.chosen_kind() is not None and self.latest is None

    def command(self) -> Any:
        kind = self.chosen_kind()
        if kind is None:
            raise ValueError("choose the kind of evidence first")
        artifact = self.artifact.currentData()
        # Validated as the CLI's JSON is: the kind is one of the store's EVIDENCE_KINDS.
        return api.AttachEvidence.model_validate(
            {
                "task_id": self.task_id,
                "criterion_id": self.criterion_id,
                "kind": kind,
                "content": api.Content(path=self.path),
                "description": self.description.text().strip(),
                "artifact_id": artifact,
                "artifact_version": self.based_on if artifact is not None else None,
            }
        )
