"""A checkpoint or handoff: the pending work, a note for whoever resumes, Final only when nothing is pending."""

from __future__ import annotations

from typing import Any, Literal

from PySide6.QtWidgets import (
    QButtonGroup,
    QPushButton,
    QRadioButton,
    QWidget,
)

from boris_desktop.decide.base import no_default
from boris_desktop.decide.following import Following, note_edit
from boris_desktop.decide.lineage import HeadChoice, fork_sentence, lineage_rows
from boris_desktop.host import Host
from boris_desktop.ui.widgets import heading, notice_banner, plain_label
from store import api


def forked_heads(task: api.TaskState) -> list[str]:
    """The lineage's heads when it is forked (two or more), else none."""
    heads = list(task.checkpoints.heads)
    return heads if len(heads) > 1 else []


def pending_work(task: api.TaskState) -> list[str]:
    """The task's pending work, as the store read it with the task (its rule, not ours)."""
    return list(task.pending_work)


#: The kinds of checkpoint a person writes here (a stopped one is the Stop dialog's): the
#: store's checkpoint reasons (WriteCheckpoint `reason`), named once.
Kind = Literal["final", "handoff", "milestone"]
FINAL: Kind = "final"
HANDOFF: Kind = "handoff"
MILESTONE: Kind = "milestone"

#: Each kind as the reviewer chooses it.
KIND_LABELS: dict[Kind, str] = {
    FINAL: "&Final — the task is done",
    HANDOFF: "&Handoff — another actor resumes from here",
    MILESTONE: "&Milestone — a point worth returning to",
}


class CheckpointDialog(Following):
    """A final checkpoint, or a handoff (or milestone) with the reviewer's note."""

    REASONS: tuple[Kind, ...] = (FINAL, HANDOFF, MILESTONE)
    irreversible = True

    def __init__(self, host: Host, task: api.TaskState) -> None:
        super().__init__(host, f"Checkpoint {task.id}", "&Write checkpoint")
        self.task = task
        self.follow(task.id, task.now)
        self.pending = pending_work(task)
        self.add(self.changed)
        self.add(heading("Pending work"))
        self.pending_label = plain_label(name="Pending work")
        self.add(self.pending_label)
        # A forked lineage: the person chooses the head this continues from, and what (if
        # anything) it merges; the write waits for that choice.
        self.fork_heading = heading("The lineage is forked: choose the head to continue from")
        self.fork_text = plain_label(name="The fork")
        self.heads = HeadChoice(None)
        self.heads.changed.connect(self.refresh_buttons)
        # A final checkpoint closes the lineage: every head named, or the store refuses it
        # (`fork_open`); its words, shown while a head is left (store.rules).
        self.final_fork = notice_banner("What a final checkpoint needs of the fork")
        self._refused_style = self.final_fork.styleSheet()  # boxed while a head is left
        for w in (self.fork_heading, self.fork_text, self.heads, self.final_fork):
            self.add(w)
        self._show_fork(task)
        self.note = note_edit("Your note for whoever resumes (required)", "Note")
        self.group = QButtonGroup(self)
        self.add(heading("What kind of checkpoint"))
        self.radios: dict[Kind, QRadioButton] = {}
        for reason in self.REASONS:
            r = QRadioButton(KIND_LABELS[reason])
            r.setAccessibleName(reason)
            self.radios[reason] = r
            self.group.addButton(r)
            self.add(r)
            r.toggled.connect(self.refresh_buttons)
        self.final_why = plain_label(name="Why final is unavailable")
        self.add(self.final_why)
        self._show_pending()
        self.radios[HANDOFF if self.pending else FINAL].setChecked(True)
        self.stop_button = no_default(QPushButton("Stop the run instead…"))
        self.stop_button.setAccessibleName("Stop the run instead")
        self.stop_button.clicked.connect(self._stop_instead)
        self.add(self.stop_button)
        self.note.textChanged.connect(self.refresh_buttons)
        self.add(plain_label("Note:"))
        self.add(self.note)
        self._write_before_cancel()
        self.refresh_buttons()
        self.fit(560)

    def _write_before_cancel(self) -> None:
        """Tab from the note reaches Write before Cancel (the button box's own order, on
        some styles, puts Cancel first)."""
        from PySide6.QtWidgets import QDialogButtonBox

        cancel = self.buttons.button(QDialogButtonBox.StandardButton.Cancel)
        QWidget.setTabOrder(self.note, self.ok)
        if cancel is not None:
            QWidget.setTabOrder(self.ok, cancel)

    def first_field(self) -> QWidget:
        return self.note

    def _show_pending(self) -> None:
        self.pending_label.setText(
            "\n".join(f"• {x}" for x in self.pending) or "None: the task can be final."
        )
        final = self.radios[FINAL]
        final.setEnabled(not self.pending)
        if self.pending:
            final.setToolTip("Pending work remains")
            self.final_why.setText(
                "Final is unavailable while work is pending. Write a handoff to pass it on, "
                "or stop the run (stopped)."
            )
            self.final_why.show()
            if final.isChecked():
                self.radios[HANDOFF].setChecked(True)
        else:
            final.setToolTip("")
            self.final_why.hide()

    def _show_fork(self, task: api.TaskState) -> bool:
        """Show the fork, if any; True when the head the person had chosen is gone."""
        fork = forked_heads(task)
        for w in (self.fork_heading, self.fork_text, self.heads):
            w.setVisible(bool(fork))
        self.final_fork.setVisible(False)  # shown by refresh_buttons, for Final
        lost = self.heads.show_heads(fork, lineage_rows(task))
        return lost

    def task_changed(self, task: api.TaskState) -> None:
        self.task = task
        before = self.heads.heads
        if self._show_fork(task) or tuple(forked_heads(task)) != before:
            self.tell_change(
                "The lineage changed while this was open"
                + (
                    f": its heads are now {', '.join(forked_heads(task))}. Choose again."
                    if forked_heads(task)
                    else ": it is no longer forked."
                )
            )
            self.rearm()
        pending = pending_work(task)
        if pending != self.pending:
            new = [x for x in pending if x not in self.pending]
            done = [x for x in self.pending if x not in pending]
            parts = []
            if new:
                parts.append("new pending work: " + "; ".join(new))
            if done:
                parts.append("no longer pending: " + "; ".join(done))
            self.tell_change("While this was open — " + " · ".join(parts) + ".")
            self.pending = pending
            self._show_pending()
            self.rearm()
        self.refresh_buttons()

    def reason(self) -> Kind:
        return next((r for r, b in self.radios.items() if b.isChecked()), HANDOFF)

    def final_refusal(self) -> str | None:
        """Why the store would refuse Final on this fork as chosen so far (a head neither
        continued from nor merged), in its words; None when every head is named or the
        lineage has one head."""
        if not self.heads.heads:
            return None
        chosen = self.heads.chosen()
        return api.final_fork_refusal(
            list(self.heads.heads), [chosen] if chosen else None, self.heads.merged()
        )

    def _show_final_fork(self) -> None:
        """The fork in words, for the kind of checkpoint chosen; for Final, what is still
        to name (the store's refusal) or what the checkpoint will close."""
        heads = self.heads.heads
        final = self.reason() == FINAL and bool(heads)
        self.final_fork.setVisible(final)
        if not heads:
            return
        fork = fork_sentence(heads, lineage_rows(self.task))
        if not final:
            self.fork_text.setText(
                f"This task's lineage is forked: {fork}. Nothing is chosen for you: choose the "
                "head this checkpoint continues from, and tick another head only if you mean "
                "to merge it."
            )
            self.heads.set_merge_prompt(None)
            return
        self.fork_text.setText(
            f"This task's lineage is forked: {fork}. A final checkpoint closes it: choose "
            "the head it continues from and tick every other head to merge it. Nothing is "
            "chosen for you."
        )
        self.heads.set_merge_prompt("Merge every other head into it (Final leaves none open):")
        refusal = self.final_refusal()
        self.final_fork.setStyleSheet(self._refused_style if refusal is not None else "")
        if refusal is not None:
            self.final_fork.setText(f"Not yet: {refusal}.")
        else:
            self.final_fork.setText(
                f"Final continues from {self.heads.chosen()} and merges "
                f"{', '.join(self.heads.merged())}: the finished task keeps one head."
            )

    def refresh_buttons(self) -> None:
        if hasattr(self, "radios"):  # built: the kind of checkpoint is chosen
            self._show_final_fork()
        super().refresh_buttons()

    def ready(self) -> bool:
        if self.reason() == FINAL and self.pending:
            return False
        if self.heads.heads and self.heads.chosen() is None:
            return False  # a fork: the person has not chosen the head to continue from
        if self.reason() == FINAL and self.final_refusal() is not None:
            return False  # a head left open: Final would be refused (fork_open)
        return bool(self.note.toPlainText().strip())

    def command(self) -> Any:
        from store.api import WriteCheckpoint

        # A fork: only what the person chose. One head: the store continues from it.
        chosen = self.heads.chosen() if self.heads.heads else None
        return WriteCheckpoint(
            task_id=self.task.id,
            reason=self.reason(),
            note=self.note.toPlainText().strip(),
            supersedes=None if chosen is None else [chosen],
            merge=[] if chosen is None else self.heads.merged(),
        )

    def _stop_instead(self) -> None:
        self.reject()
        self.host.stop_task()
