"""Stop the run: what stopping revokes, what stays unresolved, and the task id typed to confirm."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtWidgets import (
    QLineEdit,
    QWidget,
)

from boris_desktop.decide.base import confirmation
from boris_desktop.decide.following import Following
from boris_desktop.decide.lineage import HeadChoice, fork_sentence, lineage_rows
from boris_desktop.host import Host
from boris_desktop.ui.icons import words
from boris_desktop.ui.widgets import heading, plain_label
from store import api
from store.api import can_stop


def stop_plan(
    task: api.TaskState, continue_from: str | None = None, merge: Sequence[str] = ()
) -> api.StopPlan:
    """What StopRun will do, by the store's rule (`api.stop_plan`) over the loaded state,
    with the head the person chose to continue from and the heads they chose to merge."""
    heads = list(task.checkpoints.heads)
    return api.stop_plan(
        [(a.approval_id, a.state, a.expires_at) for a in task.approvals],
        [(e.effect_id, e.stage, e.outcome) for e in task.effects],
        task.now,
        heads,
        continue_from=continue_from if continue_from in heads else None,
        merge=[m for m in merge if m in heads],
    )


def _lineage_line(plan: api.StopPlan) -> str:
    if not plan.fork:
        return "A stopped checkpoint and an account of the stop are written."
    if plan.continue_from is None:
        return (
            "A stopped checkpoint and an account are written. It continues from none of the "
            "heads and merges nothing: the fork stays, named in the account as unresolved."
        )
    line = f"A stopped checkpoint continuing from {plan.continue_from}"
    line += f" and merging {', '.join(plan.merge)}" if plan.merge else ""
    line += " is written, with an account."
    if plan.left_open:
        line += f" Not merged, still heads: {', '.join(plan.left_open)}."
    return line


def _plan_lines(plan: api.StopPlan) -> list[str]:
    return [
        "Approvals revoked: " + (", ".join(plan.revoke) or "none"),
        "Planned effects cancelled: " + (", ".join(plan.cancel) or "none"),
        "Sent effects whose outcome is not settled, left for you to reconcile: "
        + (", ".join(plan.unresolved) or "none"),
        _lineage_line(plan),
    ]


class StopDialog(Following):
    """Stop the run. Stopping revokes and cancels at once and only a person reopens the run,
    so besides the reason it asks for the task id (or the word stop) typed out: a keystroke
    meant for another window, or a Return, cannot stop a run, and typing the id also says
    which run the reviewer means when several windows are open."""

    irreversible = True

    def __init__(self, host: Host, task: api.TaskState) -> None:
        super().__init__(host, f"Stop the run of {task.id}", "&Stop the run")
        self.task = task
        self.follow(task.id, task.now)
        self.plan = stop_plan(task)
        self.add(self.changed)
        # A forked lineage: shown first, and the head chosen only by the person.
        self.fork_heading = heading("The lineage is forked")
        self.fork_text = plain_label(name="The fork")
        self.heads = HeadChoice("&Leave the fork for whoever resumes (choose none)")
        self.heads.changed.connect(self._choice_changed)
        for w in (self.fork_heading, self.fork_text, self.heads):
            self.add(w)
        self._show_fork(task)
        self.add(heading("What stopping will do"))
        self.what = plain_label(name="Stop plan")
        self.add(self.what)
        self._show_plan()
        self.reason = self.reason_field("Why you are stopping the run (required)")
        self.confirm = confirmation(QLineEdit())
        self.confirm.setAccessibleName("Type the task id or stop to confirm")
        self.confirm.setPlaceholderText(f"{task.id}  or  stop")
        self.confirm.textChanged.connect(self.refresh_buttons)
        self.add(plain_label(f"To confirm, type the task id ({task.id}) or the word stop:"))
        self.add(self.confirm)
        self.closed: str | None = None
        self.refresh_buttons()
        self.fit(560)

    def first_field(self) -> QWidget:
        return self.reason

    def _show_plan(self) -> None:
        self.what.setText("\n".join(f"• {x}" for x in _plan_lines(self.plan)))

    def _show_fork(self, task: api.TaskState) -> bool:
        """Show the fork the stop plan names (hidden without one). True when the head the
        person had chosen is no longer a head."""
        fork = self.plan.fork
        for w in (self.fork_heading, self.fork_text, self.heads):
            w.setVisible(bool(fork))
        lost = self.heads.show_heads(fork, lineage_rows(task))
        if fork:
            self.fork_text.setText(
                f"This task's lineage is forked: {fork_sentence(fork, lineage_rows(task))}. "
                "Stopping does not choose between them; choose one to continue from, or leave "
                + ("both" if len(fork) == 2 else "them all")
                + " for whoever resumes."
            )
        return lost

    def _choice_changed(self) -> None:
        self.plan = stop_plan(self.task, self.heads.chosen(), self.heads.merged())
        self._show_plan()
        self.refresh_buttons()

    def task_changed(self, task: api.TaskState) -> None:
        self.task = task
        plan = stop_plan(task, self.heads.chosen(), self.heads.merged())
        fork_changed = plan.fork != self.plan.fork
        if not can_stop(task.status):
            self.closed = f"the run is already {words(task.status)}"
            self.tell_change(
                f"The run became {words(task.status)} while this was open"
                + (f" ({task.status_reason})" if task.status_reason else "")
                + ": there is nothing to stop."
            )
        elif plan != self.plan:
            self.tell_change(
                "What stopping will do changed while this was open (new or decided work); "
                "the plan below is the current one."
            )
            self.rearm()
        self.plan = plan
        if (self._show_fork(task) or fork_changed) and self.closed is None:
            if plan.fork:
                self.tell_change(
                    "The lineage changed while this was open: its heads are now "
                    f"{', '.join(plan.fork)}. Choose again; nothing was chosen for you."
                )
            self.plan = stop_plan(task, self.heads.chosen(), self.heads.merged())
            self.rearm()
        self._show_plan()
        self.refresh_buttons()

    def ready(self) -> bool:
        typed = self.confirm.text().strip()
        return (
            self.closed is None
            and bool(self.reason.text().strip())
            and (typed == self.task.id or typed.lower() == "stop")
        )

    def command(self) -> Any:
        from store.api import StopRun

        # Only what the person chose: a head to continue from, heads to merge; else neither.
        return StopRun(
            task_id=self.task.id,
            reason=self.reason.text().strip(),
            supersedes=self.plan.continue_from if self.plan.fork else None,
            merge=list(self.plan.merge),
        )
