"""Finishing a run by a person's decision: close a task that will not be finished, or resume
a stopped one. Each says what it changes before it is sent; the store decides (its rules
`close_targets` and `can_resume` are what enable the choices shown here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtWidgets import QButtonGroup, QLineEdit, QRadioButton, QWidget

from boris_desktop.decide.base import confirmation
from boris_desktop.decide.following import Following
from boris_desktop.host import Host
from boris_desktop.ui.icons import words
from boris_desktop.ui.widgets import heading, plain_label
from store import api


@dataclass(frozen=True)
class CloseAs:
    """One way of closing a run: the status it becomes and what that means, in the
    reviewer's words."""

    status: api.RunStatus
    label: str
    meaning: str


CLOSE_AS = (
    CloseAs(
        api.RunStatus.FAILED,
        "&Failed — it will not be finished",
        "The run becomes failed. The record stays open: a person may still reopen it.",
    ),
    CloseAs(
        api.RunStatus.SUPERSEDED,
        "&Superseded — another task replaces it",
        "The run becomes superseded and its record closes: nothing more is written to it.",
    ),
)


def _bullets(lines: list[str]) -> str:
    return "\n".join(f"• {x}" for x in lines)


def revoked_approvals(task: api.TaskState) -> list[str]:
    return [a.approval_id for a in task.approvals if a.state == api.ApprovalState.REVOKED]


class CloseDialog(Following):
    """Close a task that will not be finished: failed or superseded, with the person's reason.
    Closing cannot be taken back from here, so like a stop it is armed a moment after the
    content last changed and asks for the task id (or the word close) typed out."""

    irreversible = True

    def __init__(self, host: Host, task: api.TaskState) -> None:
        super().__init__(host, f"Close {task.id}", "&Close the task")
        self.task = task
        self.follow(task.id, task.now)
        self.add(self.changed)
        self.add(heading("What closing will do"))
        self.what = plain_label(name="What closing will do")
        self.add(self.what)
        self.add(heading("Close it as"))
        self.group = QButtonGroup(self)
        self.radios: dict[api.RunStatus, QRadioButton] = {}
        for way in CLOSE_AS:
            r = QRadioButton(way.label)
            r.setAccessibleName(way.status)
            r.toggled.connect(self._choice_changed)
            self.group.addButton(r)
            self.radios[way.status] = r
            self.add(r)
        self.reason = self.reason_field("Why it will not be finished (required)")
        self.confirm = confirmation(QLineEdit())
        self.confirm.setAccessibleName("Type the task id or close to confirm")
        self.confirm.setPlaceholderText(f"{task.id}  or  close")
        self.confirm.textChanged.connect(self.refresh_buttons)
        self.add(plain_label(f"To confirm, type the task id ({task.id}) or the word close:"))
        self.add(self.confirm)
        self.targets: tuple[api.RunStatus, ...] = ()
        self._show_targets(task)
        self.refresh_buttons()  # nothing typed yet: Close is not a button Tab stops at
        self.fit(560)

    def first_field(self) -> QWidget:
        return self.reason

    def chosen(self) -> api.RunStatus | None:
        return next((s for s, r in self.radios.items() if r.isChecked() and r.isEnabled()), None)

    def _show_targets(self, task: api.TaskState) -> None:
        self.targets = tuple(api.RunStatus(s) for s in api.close_targets(task.status))
        for status, r in self.radios.items():
            r.setEnabled(status in self.targets)
            if status not in self.targets and r.isChecked():
                self.group.setExclusive(False)
                r.setChecked(False)
                self.group.setExclusive(True)
        if self.targets and self.chosen() is None:
            self.radios[self.targets[0]].setChecked(True)
        self._show_what()

    def _show_what(self) -> None:
        status = self.task.status
        if not self.targets:
            why = (
                "Stop the run first (Actions › Stop the Run): stopping revokes its approvals "
                "and cancels its planned effects."
                if api.can_stop(status)
                else "Its record is closed."
            )
            self.what.setText(f"A run that is {words(status)} cannot be closed. {why}")
            return
        chosen = self.chosen() or self.targets[0]
        self.what.setText(
            _bullets(
                [
                    f"Status: {words(status)} → {words(chosen)}",
                    next(way.meaning for way in CLOSE_AS if way.status is chosen),
                    "Your reason is recorded with the change, under your name.",
                ]
            )
        )

    def _choice_changed(self) -> None:
        self._show_what()
        self.refresh_buttons()

    def task_changed(self, task: api.TaskState) -> None:
        before = (self.task.status, self.targets)
        self.task = task
        self._show_targets(task)
        if (task.status, self.targets) != before:
            self.tell_change(
                f"The run became {words(task.status)} while this was open"
                + (f" ({task.status_reason})" if task.status_reason else "")
                + "; what closing will do is shown again."
            )
            self.rearm()
        self.refresh_buttons()

    def ready(self) -> bool:
        typed = self.confirm.text().strip()
        return (
            self.chosen() is not None
            and bool(self.reason.text().strip())
            and (typed == self.task.id or typed.lower() == "close")
        )

    def command(self) -> Any:
        from store.api import CloseTask

        # The status is one of the store's `close_targets` (`ready` said one is chosen),
        # validated as the CLI's JSON is: the command's field names its values, not the enum.
        return CloseTask.model_validate(
            {
                "task_id": self.task.id,
                "status": self.chosen(),
                "reason": self.reason.text().strip(),
            }
        )


class ResumeDialog(Following):
    """Resume a stopped run (or one whose budget ran out): it becomes running again. Nothing
    the stop revoked comes back: the agent asks again for what it still needs."""

    def __init__(self, host: Host, task: api.TaskState) -> None:
        super().__init__(host, f"Resume {task.id}", "&Resume the run")
        self.task = task
        self.follow(task.id, task.now)
        self.add(self.changed)
        self.add(heading("What resuming will do"))
        self.what = plain_label(name="What resuming will do")
        self.add(self.what)
        self.reason = self.reason_field("Why the run goes on (required)")
        self._show_what()
        self.refresh_buttons()
        self.fit(560)

    def first_field(self) -> QWidget:
        return self.reason

    def _show_what(self) -> None:
        task = self.task
        status = task.status
        if not api.can_resume(status):
            self.what.setText(f"A run that is {words(status)} has nothing to resume.")
            return
        doubt = [e.effect_id for e in task.effects if api.effect_to_reconcile(e.stage, e.outcome)]
        # The store settles a resumed run as its ledger has it (`settle_status`).
        after = words(api.RunStatus.OUTCOME_UNKNOWN) if doubt else words(api.RunStatus.RUNNING)
        lines = [f"Status: {words(status)} → {after}"]
        if task.status_reason:
            lines.append(f"It was {words(status)}: {task.status_reason}")
        revoked = revoked_approvals(task)
        lines.append(
            "Approvals revoked stay revoked: "
            + (
                ", ".join(revoked) + ". The agent asks again for what it still needs"
                if revoked
                else "none"
            )
        )
        if doubt:
            lines.append("Still to reconcile before anything is sent again: " + ", ".join(doubt))
        exhausted = [b.counter for b in task.budgets if b.exhausted]
        if exhausted:
            lines.append(
                "Still at its limit: "
                + ", ".join(exhausted)
                + ". The next charge stops the run again unless the limit is raised"
            )
        self.what.setText(_bullets(lines))

    def task_changed(self, task: api.TaskState) -> None:
        before = task.status != self.task.status
        self.task = task
        if before:
            self.tell_change(
                f"The run became {words(task.status)} while this was open"
                + (f" ({task.status_reason})" if task.status_reason else "")
                + "."
            )
        self._show_what()
        self.refresh_buttons()

    def ready(self) -> bool:
        return api.can_resume(self.task.status) and bool(self.reason.text().strip())

    def command(self) -> Any:
        from store.api import SetStatus

        # Validated as the CLI's JSON is: the command's field names the values, not the enum.
        return SetStatus.model_validate(
            {
                "task_id": self.task.id,
                "status": api.RunStatus.RUNNING,
                "reason": self.reason.text().strip(),
            }
        )
