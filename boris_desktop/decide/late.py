"""What changed after a task completed (issue 35 part L): a person acknowledges it, or opens
a follow-up task from a draft of this one's objective and scope.

The dialog follows the store while open. Its decision is based on the newest late fact the
person was shown (`through_seq`, the store's `based_on`): a newer fact arriving while it is
open is said at once, and deciding on the older one is refused by the store as a conflict
(shown here) until the person steps onto what is there now. Neither choice reopens the task:
it stays completed.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from PySide6.QtWidgets import QButtonGroup, QLineEdit, QRadioButton, QWidget

from boris_desktop.decide.following import Following, note_edit
from boris_desktop.decide.versioned import Versioned
from boris_desktop.host import Host
from boris_desktop.ui import text as t
from boris_desktop.ui.widgets import heading, plain_label
from store import api


class Answer(StrEnum):
    """How a person answers what changed after completion."""

    ACKNOWLEDGE = "acknowledge"
    FOLLOW_UP = "follow_up"


def _bullets(lines: list[str]) -> str:
    return "\n".join(f"• {x}" for x in lines)


class LateChangesDialog(Versioned, Following):
    """Acknowledge what changed after completion, or open a follow-up task for it."""

    irreversible = True
    acting = "deciding"

    def __init__(self, host: Host, task: api.TaskState) -> None:
        super().__init__(host, f"Changed after completion — {task.id}", "&Decide")
        self.task = task
        self.newest: api.TaskState | None = None
        self.follow(task.id, task.now)
        self.keep_versions(
            "Decide on what is &there now",
            "Show the newest late facts; your choice and text are kept",
        )
        self.add(self.changed)
        self.add(heading("What changed after completion"))
        self.facts = plain_label(name="What changed after completion")
        self.add(self.facts)
        self.add(heading("Your decision"))
        self.group = QButtonGroup(self)
        self.choices: dict[Answer, QRadioButton] = {}
        for key, label in (
            (Answer.ACKNOWLEDGE, "&Acknowledge — no further task is needed"),
            (Answer.FOLLOW_UP, "Open a &follow-up task for it"),
        ):
            r = QRadioButton(label)
            r.setAccessibleName(label.replace("&", ""))
            self.group.addButton(r)
            self.choices[key] = r
            self.add(r)
        self.title_field = QLineEdit()
        self.title_field.setAccessibleName("Follow-up task title")
        self.title_field.setPlaceholderText("The follow-up task's title (required)")
        self.title_field.textChanged.connect(self._choice_changed)
        self.objective = note_edit("Its objective", "Follow-up task objective")
        # The draft: this task's objective as it stands, for the person to edit.
        self.objective.setPlainText(task.objective.text if task.objective else "")
        self.objective.textChanged.connect(self.refresh_buttons)
        self.draft_label = plain_label("The follow-up task (a draft of this one, scope copied):")
        self.objective_label = plain_label("Its objective (this task's, to edit):")
        for w in (self.draft_label, self.title_field, self.objective_label, self.objective):
            self.add(w)
        self.note = note_edit("Why (optional)", "Note")
        self.add(plain_label("Note:"))
        self.add(self.note)
        self.add(heading("What it changes"))
        self.what = plain_label(name="What it changes")
        self.add(self.what)
        self.choices[Answer.ACKNOWLEDGE].setChecked(True)
        for r in self.choices.values():
            r.toggled.connect(self._choice_changed)
        self._show(task)
        self._choice_changed()
        self.fit(620)

    def first_field(self) -> QWidget:
        return self.note

    def chosen(self) -> Answer:
        return (
            Answer.FOLLOW_UP if self.choices[Answer.FOLLOW_UP].isChecked() else Answer.ACKNOWLEDGE
        )

    # --- what the store says ---------------------------------------------------------------

    def _show(self, task: api.TaskState) -> None:
        self.task = task
        late = task.late
        self.based_on = late.last_seq
        self.facts.setText(
            (late.words or "nothing waits: it was answered")
            + "\n"
            + _bullets([f"#{f.seq} {t.when(f.at)} by {f.by}: {f.what}" for f in late.facts])
        )
        self._show_what()

    def task_changed(self, task: api.TaskState) -> None:
        late = task.late
        latest = late.last_seq
        if latest is None or self.based_on is None:
            self._show(task)
            return
        if latest != self.based_on:
            self.newest = task
            newest = late.facts[-1] if late.facts else None
            self.moved(
                latest,
                f"A newer late fact arrived while this was open: #{latest} "
                + (f"{newest.what} by {newest.by}" if newest else "by somebody"),
            )
            self.rearm()
        elif not late.count:
            self.tell_change("Somebody answered these late facts while this was open.")
            self._show(task)
        self.refresh_buttons()

    def rebased(self) -> None:
        if self.newest is not None:
            self._show(self.newest)

    def _choice_changed(self) -> None:
        follow = self.chosen() == Answer.FOLLOW_UP
        for w in (self.draft_label, self.title_field, self.objective_label, self.objective):
            w.setEnabled(follow)
        self._show_what()
        self.refresh_buttons()

    def _show_what(self) -> None:
        through = f"#{self.based_on}" if self.based_on is not None else "—"
        lines = ["Status: completed → completed (it never reopens by itself)"]
        if self.chosen() == Answer.FOLLOW_UP:
            title = self.title_field.text().strip() or "(its title)"
            lines += [
                f"A new task “{title}” is created, naming {self.task.id} as its origin, "
                "with the objective above and this task's scope",
                f"The late facts through {through} count as answered by it",
            ]
        else:
            lines.append(f"The late facts through {through} are acknowledged under your name")
        lines.append("A newer late fact arriving first makes this a conflict, never unseen")
        self.what.setText(_bullets(lines))

    # --- deciding --------------------------------------------------------------------------

    def ready(self) -> bool:
        if self.based_on is None:
            return False
        if self.chosen() == Answer.FOLLOW_UP:
            return bool(self.title_field.text().strip() and self.objective.toPlainText().strip())
        return True

    def command(self) -> Any:
        from store.api import AcknowledgeLateChanges, OpenFollowup

        note = self.note.toPlainText().strip()
        assert self.based_on is not None  # ready() said so
        if self.chosen() == Answer.FOLLOW_UP:
            return OpenFollowup(
                task_id=self.task.id,
                through_seq=self.based_on,
                title=self.title_field.text().strip(),
                objective=self.objective.toPlainText().strip(),
                note=note,
            )
        return AcknowledgeLateChanges(task_id=self.task.id, through_seq=self.based_on, note=note)
