"""Complete a phase, deliberately: what is completed is the store's `PhaseCompletion`.

The dialog shows the phase, each input and whether it is available (with the identity the
result will record), and for the outcome chosen what completing it changes: the phases that
become ready or stay blocked, the results it retires, and what a final checkpoint is still
blocked by. All of it is the store's reading; the dialog adds no rule. A blocked phase cannot
be completed (`rules.phase_completion_refusal`, shown in the store's words). The completion
carries the phase's revision the person saw (`based_on`): if an input moves under the open
dialog (the guide gets a new version), it says so and a click is refused, never recorded as
made on what the person did not see.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QButtonGroup, QLineEdit, QRadioButton, QWidget

from boris_desktop.decide.base import ActionDialog
from boris_desktop.decide.following import Following
from boris_desktop.decide.versioned import Versioned, change_words
from boris_desktop.host import Host
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import words
from boris_desktop.ui.widgets import heading, plain_label
from store import api

#: The outcomes a person records, in their words (`CompletePhase.ok`).
OUTCOMES = {
    True: "&Done — the phase's work is finished",
    False: "F&ailed — it did not work out",
}


def _bullets(lines: list[str]) -> str:
    return "\n".join(f"• {x}" for x in lines)


def grow_to_content(dialog: ActionDialog) -> None:
    """The store's first read filled the dialog after it opened: make it as tall as its
    content now, within the screen's room (the content scrolls beyond that)."""
    # The layout keeps the size hint it had before the content came (QScrollArea does not
    # tell it otherwise): ask the content how tall it is at the width it has.
    body, view = dialog.body_widget, dialog.body_scroll.viewport()
    want = body.heightForWidth(view.width()) if body.hasHeightForWidth() else -1
    if want < 0:
        want = body.sizeHint().height()
    if want > view.height():
        dialog.resize(dialog.width(), dialog.height() + want - view.height())
        dialog.fit_screen()


class CompletePhaseDialog(Versioned, Following):
    """Done or failed, with a summary, for the phase as the store reads it now."""

    irreversible = True
    acting = "completing it"

    def __init__(self, host: Host, task: api.TaskState, phase_id: str) -> None:
        super().__init__(host, f"Complete phase {phase_id}", "Co&mplete the phase")
        self.task_id, self.phase_id = task.id, phase_id
        self.view: api.PhaseCompletion | None = None
        self.newest: api.PhaseCompletion | None = None
        self.follow(
            self.task_id,
            task.now,
            fetch=lambda store: store.phase_completion(self.task_id, phase_id),
        )
        self.keep_versions(
            "&Look at it now", "Show the phase as it is now; your outcome and summary stay"
        )
        self.add(self.changed)
        self.about = plain_label("Reading the phase…", name="Phase")
        self.add(self.about)
        self.add(heading("Its inputs"))
        self.inputs = plain_label(name="Its inputs")
        self.add(self.inputs)
        self.add(heading("Outcome"))
        self.group = QButtonGroup(self)
        self.radios: dict[bool, QRadioButton] = {}
        for ok, label in OUTCOMES.items():
            r = QRadioButton(label)
            r.setAccessibleName("done" if ok else "failed")
            r.toggled.connect(self._outcome_changed)
            self.group.addButton(r)
            self.radios[ok] = r
            self.add(r)
        self.radios[True].setChecked(True)
        self.summary = QLineEdit()
        self.summary.setAccessibleName("Summary")
        self.summary.setPlaceholderText("What was checked, or why it failed (kept with the result)")
        self.add(plain_label("Summary:"))
        self.add(self.summary)
        self.add(heading("What completing it changes"))
        self.what = plain_label(name="What completing it changes")
        self.add(self.what)
        self.why_not = plain_label(name="Why it cannot be completed")
        self.why_not.hide()
        self.add(self.why_not)
        self.follower.force()  # the first read fills the dialog
        self.refresh_buttons()
        self.fit(600)

    def first_field(self) -> QWidget:
        return self.summary

    # --- what the store says ------------------------------------------------------------

    def task_changed(self, task: Any) -> None:
        view: api.PhaseCompletion = task
        self.newest = view
        if self.view is None or view.rev == self.based_on:
            # The phase is as the person saw it; what else is pending may have moved.
            changed = self.view is not None and self._shown(self.view) != self._shown(view)
            self._show(view)
            if changed:
                self.rearm()
            return
        who = change_words(view.last_change, "The phase changed")
        self.moved(view.rev, f"{who}, while this was open")

    def rebased(self) -> None:
        if self.newest is not None:
            self._show(self.newest)
            self.rearm()

    @staticmethod
    def _shown(v: api.PhaseCompletion) -> tuple[Any, ...]:
        return (v.readiness, v.inputs, v.refusal, v.final_now, v.outcomes)

    def _show(self, v: api.PhaseCompletion) -> None:
        first = self.view is None
        self.view, self.based_on = v, v.rev
        state = f"{v.name} ({v.phase_id}) is {words(v.readiness)}"
        if v.result:
            state += f": {v.result}. Completing it again records a new result"
        if v.earlier:
            state += f"; {t.count(v.earlier, 'earlier result', 'earlier results')} kept as history"
        self.about.setText(state + ".")
        self.inputs.setText(_bullets([i.words for i in v.inputs]) or "None: it needs nothing.")
        self.why_not.setText(f"It cannot be completed: {v.refusal}." if v.refusal else "")
        self.why_not.setVisible(v.refusal is not None)
        for r in self.radios.values():
            r.setEnabled(v.refusal is None)
        self._show_what()
        self.refresh_buttons()
        if first:
            grow_to_content(self)

    def _show_what(self) -> None:
        v = self.view
        if v is None:
            return
        if v.refusal is not None:
            self.what.setText("Nothing: a blocked phase is not completed.")
            return
        self.what.setText(_bullets(v.outcome(self.chosen()).lines(v.phase_id, v.final_now)))

    def _outcome_changed(self) -> None:
        self._show_what()
        self.refresh_buttons()

    # --- the person's input -------------------------------------------------------------

    def chosen(self) -> bool:
        return not self.radios[False].isChecked()

    def ready(self) -> bool:
        return self.view is not None and self.view.refusal is None and self.latest is None

    def command(self) -> Any:
        return api.CompletePhase(
            task_id=self.task_id,
            phase_id=self.phase_id,
            ok=self.chosen(),
            summary=self.summary.text().strip(),
            based_on=self.based_on,
        )
