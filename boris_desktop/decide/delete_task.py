"""Deleting a task by a person's decision (Actions › Delete Task…).

The dialog shows what the store would remove, counted (the store's own plan, read again
whenever the store changes: `api.plan_deletion`), and what stays (a receipt). It asks for
the task id typed out and a reason, arms a moment after what it shows last changed, and has
no default button. The store decides: a live agent's lease or an effect in doubt refuses it
(the plan says why), and the deletion runs on a worker (`api.delete_task`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtWidgets import QLineEdit, QWidget

from boris_desktop.decide.base import confirmation, reviewer_actor
from boris_desktop.decide.following import Following
from boris_desktop.host import Host
from boris_desktop.ui.widgets import heading, plain_label
from store import api

RECEIPT_WORDS = (
    "A receipt stays in the store: the task id, a digest of its title (not the title), its "
    "last event's hash, these counts, your name, the time and your reason."
)


@dataclass(frozen=True)
class Deletion:
    """What is sent: not a command on the task's log (the log is what goes), the store's
    deletion workflow with the typed id and the reason."""

    task_id: str
    confirm: str
    reason: str


def _bullets(lines: list[str]) -> str:
    return "\n".join(f"• {x}" for x in lines)


class DeleteTaskDialog(Following):
    """Delete the task and everything of it; the store keeps a receipt."""

    irreversible = True

    def __init__(self, host: Host, task: api.TaskState) -> None:
        super().__init__(host, f"Delete {task.id}", "&Delete the task")
        self.task = task
        self.plan: Any = None
        task_id = task.id
        self.follow(task_id, task.now, fetch=lambda store: api.plan_deletion(store, task_id))
        self.add(self.changed)
        self.add(heading("What deleting will remove"))
        self.what = plain_label("Reading what the store would remove…", name="What will be removed")
        self.add(self.what)
        self.add(plain_label(RECEIPT_WORDS, name="What stays"))
        self.why_not = plain_label(name="Why it cannot be deleted now")
        self.why_not.hide()
        self.add(self.why_not)
        self.reason = self.reason_field("Why the task is deleted (required, kept in the receipt)")
        self.confirm = confirmation(QLineEdit())
        self.confirm.setAccessibleName("Type the task id to confirm")
        self.confirm.setPlaceholderText(task_id)
        self.confirm.textChanged.connect(self.refresh_buttons)
        self.add(plain_label(f"To confirm, type the task id ({task_id}):"))
        self.add(self.confirm)
        self.refresh_buttons()
        self.fit(560)

    def first_field(self) -> QWidget:
        return self.reason

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if self.plan is None:
            # The first count now: on a team store the follower reads only when it hears a
            # commit.
            self.follower.force()

    def task_changed(self, plan: Any) -> None:
        first = self.plan is None
        before = None if first else (self.plan.tables, self.plan.blobs, self.plan.refusal)
        self.plan = plan
        self.what.setText(_bullets(plan.lines()))
        if plan.refusal is not None:
            self.why_not.setText(f"The store refuses it now: {plan.refusal.message}")
            self.why_not.show()
        else:
            self.why_not.hide()
        if not first and (plan.tables, plan.blobs, plan.refusal) != before:
            self.tell_change("The task changed while this was open; what goes is counted again.")
        # Armed a moment after what is shown last changed (the first count included).
        if first or (plan.tables, plan.blobs, plan.refusal) != before:
            self.rearm()
        if first:
            self.fit(560)  # sized again for the counts, which came after it opened
            self.fit_screen()
        self.refresh_buttons()

    def ready(self) -> bool:
        return (
            self.plan is not None
            and self.plan.refusal is None
            and bool(self.reason.text().strip())
            and self.confirm.text().strip() == self.task.id
        )

    def command(self) -> Deletion:
        return Deletion(self.task.id, self.confirm.text().strip(), self.reason.text().strip())

    def act(self) -> None:
        if self.running or not self.can_decide():
            return
        store, actor = self.host.store, reviewer_actor()
        if store is None or actor is None:
            self.refuse("say who you are first (File → Reviewer…): decisions are attributed to you")
            return
        asked = self.command()
        self.running = True
        self.refresh_buttons()
        self.error.hide()

        def work() -> Any:
            store.sign_as(actor)  # a signed store's receipt is signed with the person's key
            return api.delete_task(
                store, asked.task_id, actor, confirm=asked.confirm, reason=asked.reason
            )

        def done(receipt: Any) -> None:
            self._done(receipt)
            self.host.reload()

        def failed(error: Exception) -> None:
            self._failed(error)
            self.host.reload()

        self.host.loader.submit(f"delete:{asked.task_id}", work, done, failed)
