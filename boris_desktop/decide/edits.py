"""The reviewer's edits of the record: the objective, a criterion's wording, an artifact's text.

Each names the version it edits (`based_on`) and follows the store while open: a newer
version recorded meanwhile (an agent's, another reviewer's) shows at once, the person's text
stays, and saving is refused rather than dropping the other change (`Versioned`).
"""

from __future__ import annotations

import itertools
from typing import Any

from PySide6.QtWidgets import (
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from boris_desktop.decide.following import Following
from boris_desktop.decide.versioned import Versioned, change_words
from boris_desktop.host import Host
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import words
from boris_desktop.ui.widgets import TextPane, plain_label
from store import api

_serial = itertools.count(1)

_KEEP = (
    "&Base my edit on it",
    "Keep your text and make it an edit of the newer version: what you save replaces it, "
    "so bring over any of its changes you want to keep",
)


class AmendDialog(Versioned, Following):
    acting = "amending"

    def __init__(self, host: Host, task: api.TaskState) -> None:
        super().__init__(host, f"Amend the objective of {task.id}", "&Amend")
        self.task = task
        objective = task.objective
        self.based_on = objective.rev if objective is not None else 0
        self.follow(task.id)
        self.keep_versions(*_KEEP)
        self.add(self.changed)
        self.text = QPlainTextEdit(objective.text if objective is not None else "")
        self.text.setAccessibleName("Objective")
        self.text.setTabChangesFocus(True)
        self.reason = QLineEdit()
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("Why the objective changes (required)")
        for w in (plain_label("Objective:"), self.text, plain_label("Reason:"), self.reason):
            self.add(w)
        self.text.textChanged.connect(self.refresh_buttons)
        self.reason.textChanged.connect(self.refresh_buttons)
        self.refresh_buttons()
        self.fit(600)

    def first_field(self) -> QWidget:
        return self.text

    def ready(self) -> bool:
        if self.latest is not None:
            return False
        return bool(self.text.toPlainText().strip() and self.reason.text().strip())

    def task_changed(self, task: api.TaskState) -> None:
        obj = task.objective
        if obj is None:
            return
        self.moved(
            obj.rev,
            f"{t.actor(obj.actor)} amended the objective to revision {obj.rev} at "
            f"{t.when(obj.at)}"
            + (f" (“{obj.reason}”)" if obj.reason else "")
            + f", while this was open: “{obj.text}”",
        )

    def command(self) -> Any:
        return api.AmendObjective(
            task_id=self.task.id,
            text=self.text.toPlainText().strip(),
            reason=self.reason.text().strip(),
            based_on=self.based_on,
        )


class CriterionDialog(Versioned, Following):
    """Add a criterion, or change the wording of one."""

    acting = "saving"

    def __init__(
        self, host: Host, task: api.TaskState, criterion: api.Criterion | None = None
    ) -> None:
        title = "Change criterion" if criterion else "Add a criterion"
        super().__init__(host, f"{title} of {task.id}", "&Save" if criterion else "&Add")
        self.task, self.criterion = task, criterion
        if criterion is None:
            self.follow(task.id)
        else:
            tid, cid = task.id, criterion.criterion_id
            self.based_on = criterion.rev
            self.follow(tid, fetch=lambda store: store.judge_decision(tid, cid))
        self.keep_versions(*_KEEP)
        self.add(self.changed)
        self.text = QLineEdit(criterion.text if criterion else "")
        self.text.setAccessibleName("Criterion")
        self.text.setPlaceholderText("What must be true for the task to be done")
        self.text.textChanged.connect(self.refresh_buttons)
        self.add(plain_label("Criterion:"))
        self.add(self.text)
        self.reason = QLineEdit()
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("Why the wording changes")
        if criterion:
            self.add(plain_label("Reason:"))
            self.add(self.reason)
        self.refresh_buttons()
        self.fit(520)

    def first_field(self) -> QWidget:
        return self.text

    def ready(self) -> bool:
        return bool(self.text.text().strip()) and self.latest is None

    def task_changed(self, task: Any) -> None:
        if self.criterion is None or not isinstance(task, api.JudgeDecision):
            return  # adding: nothing is overwritten
        self.moved(
            task.rev,
            f"{change_words(task.last_change, 'The criterion changed')}, while this was open "
            f"(it reads “{task.text}” and is {words(task.state)})",
        )

    def command(self) -> Any:
        if self.criterion is None:
            return api.AddCriterion(task_id=self.task.id, text=self.text.text().strip())
        return api.ChangeCriterion(
            task_id=self.task.id,
            criterion_id=self.criterion.criterion_id,
            text=self.text.text().strip(),
            reason=self.reason.text().strip(),
            based_on=self.based_on,
        )


class EditArtifactDialog(Versioned, Following):
    """A new version of a text artifact, written in the built-in editor, by the reviewer."""

    acting = "saving"

    def __init__(self, host: Host, task: api.TaskState, artifact: api.Artifact, text: str) -> None:
        cur = artifact.current
        if cur is None:
            raise ValueError(f"{artifact.artifact_id} has no version to edit")
        super().__init__(host, f"Edit {artifact.name} (v{cur.version})", "&Save as a new version")
        self.task, self.artifact, self.original = task, artifact, text
        self.media_type = cur.media_type
        self.newest: api.ArtifactVersion | None = None
        self.based_on = cur.version
        self.follow(task.id)
        self.keep_versions(*_KEEP)
        self.add(self.changed)
        self.editor = QPlainTextEdit(text)
        self.editor.setAccessibleName("Artifact text")
        self.note = QLineEdit()
        self.note.setAccessibleName("Note")
        self.note.setPlaceholderText("What you changed (optional)")
        self.editing = plain_label(
            f"Editing version {cur.version} ({t.digest(cur.digest)}); saving records "
            "a new version attributed to you.",
            name="Editing",
        )
        self.add(self.editing)
        self.add(self.editor, 1)
        self.add(self.note)
        # The version the edit was moved onto ("Base my edit on it"), shown before saving
        # can replace it; hidden until then.
        self.theirs_label = plain_label(name="The version your edit replaces")
        self.theirs = TextPane(host.loader, "The version your edit replaces")
        self.theirs.setMinimumHeight(120)
        self.theirs_label.hide()
        self.theirs.hide()
        self.add(self.theirs_label)
        self.add(self.theirs, 1)
        #: The version the edit is based on whose text could not be shown (saving waits).
        self.reading: int | None = None
        #: Newer versions' text as read on a worker (or why it could not be), by version.
        self._read: dict[int, tuple[api.ArtifactVersion, str | Exception]] = {}
        self._id = next(_serial)
        self.editor.textChanged.connect(self.refresh_buttons)
        self.resize(760, 560)
        self.refresh_buttons()

    def first_field(self) -> QWidget:
        return self.editor

    def ready(self) -> bool:
        return (
            self.editor.toPlainText() != self.original
            and self.latest is None
            and self.reading is None
        )

    def task_changed(self, task: Any) -> None:
        aid = self.artifact.artifact_id
        a = next((x for x in task.artifacts if x.artifact_id == aid), None)
        cur = a.current if a else None
        if a is None or cur is None:
            return
        self.newest = cur
        self.moved(
            cur.version,
            f"{t.actor(cur.producer.actor)} recorded {a.name} v{cur.version} at "
            f"{t.when(cur.at)}, while you edited v{self.based_on}"
            + (f" (“{cur.note}”)" if cur.note else ""),
        )

    def moved(self, latest: int, what: str, *, beside: bool = False) -> None:
        super().moved(latest, what, beside=beside)
        # The step onto the newer version is offered once its text is read (on a worker),
        # so that taking it shows that text at once.
        if self.latest == latest and latest not in self._read:
            self.rebase.hide()
            cur = self.newest
            if cur is not None and cur.version == latest:
                self._prefetch(cur)

    def _prefetch(self, cur: api.ArtifactVersion) -> None:
        store = self.host.store
        kind = f"theirs:{self._id}:{cur.version}"
        if store is None or self.host.loader.busy(kind):
            return
        digest = cur.digest
        self.host.loader.submit(
            kind,
            lambda: store.blobs.read(digest),
            lambda data: self._fetched(cur, data.decode("utf-8", "replace")),
            lambda error: self._fetched(cur, error),
        )

    def _fetched(self, cur: api.ArtifactVersion, text: str | Exception) -> None:
        version = cur.version
        self._read[version] = (cur, text)
        if self.latest == version:
            self.rebase.show()
        elif self.reading == version and self.based_on == version:
            self.rebased()  # the step was taken before its text was in: show it now

    def rebased(self) -> None:
        """The edit is now based on the newest version: its text is shown under the
        person's and the title names it, before saving can replace it."""
        read = self._read.get(self.based_on or 0)
        if read is None:  # not offered before it was read: nothing to show yet
            self.reading = self.based_on
            self.refresh_buttons()
            return
        cur, text = read
        if isinstance(text, Exception):
            # Never saved over a version the person could not see: saving stays refused.
            self.reading = self.based_on
            self.editing.setText(
                f"Version {cur.version} cannot be read ({t.failure(text)}): your edit is "
                "not saved over a version you have not seen."
            )
            self.refresh_buttons()
            return
        version = cur.version
        who = t.actor(cur.producer.actor)
        self.theirs_label.setText(
            f"Version {version}, as {who} recorded it ({t.digest(cur.digest)}): saving "
            "replaces it with your text above; bring over what you want to keep."
        )
        self.theirs.show_text(text, cur.media_type, self.artifact.name)
        if self.theirs.isHidden():
            self.theirs_label.show()
            self.theirs.show()
            # Room for both texts, as the screen allows (`fit_screen`).
            self.resize(self.width(), self.height() + 180)
            self.fit_screen()
        self.original = text  # saving their text unchanged would record nothing new
        self.setWindowTitle(f"Edit {self.artifact.name} (v{version})")
        self.editing.setText(
            f"Your text, as an edit of version {version} ({t.digest(cur.digest)}); "
            "saving records a new version attributed to you."
        )
        self.reading = None
        self.refresh_buttons()

    def command(self) -> Any:
        return api.RecordArtifact(
            task_id=self.task.id,
            artifact_id=self.artifact.artifact_id,
            name=self.artifact.name,
            content=api.Content(text=self.editor.toPlainText(), media_type=self.media_type),
            note=self.note.text().strip() or "edited by the reviewer",
            based_on=self.based_on,
        )
