"""Taking a task over from the agent working on it, and cancelling a scheduled wait: a
person's decisions, each with a reason, each saying what it changes before it is sent.

The store decides (store.commands.leases `TakeOver`, store.commands.waits `CancelWait`); the
dialogs follow the task while open, so a lease that ends or a wait that is settled meanwhile
is shown and the decision armed again only after a moment.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from boris_desktop import settings
from boris_desktop.decide.following import Following
from boris_desktop.host import Host
from boris_desktop.ui import holder
from boris_desktop.ui import text as t
from boris_desktop.ui.widgets import heading, plain_label
from store import api


def _bullets(lines: list[str]) -> str:
    return "\n".join(f"• {x}" for x in lines)


def _reviewer_id() -> str | None:
    who = settings.reviewer()
    return who[1] if who else None


class TakeOverDialog(Following):
    """Take the task over: the session working on it stops. Its lease ends, its fencing
    token stops working (its next write is refused, nothing of it recorded), and the
    reviewer holds the task under a new token until they hand it back."""

    irreversible = True

    def __init__(self, host: Host, task: api.TaskState) -> None:
        super().__init__(host, f"Take over {task.id}", "&Take the task over")
        self.task = task
        self.follow(task.id, task.now)
        self.add(self.changed)
        self.add(heading("Who holds it now"))
        self.holder = plain_label(name="Who holds it now")
        self.add(self.holder)
        self.add(heading("What taking over does"))
        self.what = plain_label(name="What taking over does")
        self.add(self.what)
        self.reason = self.reason_field("Why you take it over (required; the agent is told)")
        self._show()
        self.refresh_buttons()
        self.fit(560)

    def first_field(self) -> QWidget:
        return self.reason

    def _held_by_me(self) -> bool:
        lease = self.task.lease
        return bool(
            lease
            and holder.standing(lease, self._now or "") == api.LeaseStanding.ALIVE
            and holder.is_reviewer(lease.holder, _reviewer_id())
        )

    def _show(self) -> None:
        task, now = self.task, self._now or ""
        lease = task.lease
        self.holder.setText(holder.holder_line(lease, task.updated_at, now, _reviewer_id()))
        if self._held_by_me():
            self.what.setText("You hold this task already: there is nothing to take over.")
            return
        token = lease.token if lease else None
        alive = lease is not None and holder.standing(lease, now) == api.LeaseStanding.ALIVE
        agent = t.actor(lease.holder) if lease else "no session"
        lines = [
            (
                f"{agent}'s lease ends now: its token {token} stops working. Its next write "
                "is refused (exit code 7, lease_lost) and nothing it sends is recorded; an "
                "agent waiting for an approval over MCP is told at once."
                if alive
                else "Nobody works on it now"
                + (f" ({agent}'s lease, token {token}, is no longer alive)" if lease else "")
                + ": taking over makes sure a session that wakes up cannot write beside you."
            ),
            f"You hold the task under token {(token or 0) + 1}, with no expiry, until you "
            "hand it back: a handoff checkpoint (Actions › Checkpoint / Handoff…), then "
            f"`boris lease release {task.id}`.",
            "Approvals, effects and waits stay as they are: stop the run to revoke them.",
            "Your reason is recorded with the takeover, under your name.",
        ]
        self.what.setText(_bullets(lines))

    def task_changed(self, task: api.TaskState) -> None:
        before = self.task.lease.token if self.task.lease else None
        self.task = task
        if (task.lease.token if task.lease else None) != before:
            self.tell_change(
                f"The lease changed while this was open: {holder.holder_line(task.lease, task.updated_at, self._now or '', _reviewer_id())}."
            )
            self.rearm()
        self._show()
        self.refresh_buttons()

    def ready(self) -> bool:
        return (
            api.record_open(self.task.status)
            and not self._held_by_me()
            and bool(self.reason.text().strip())
        )

    def command(self) -> Any:
        from store.api import TakeOver

        return TakeOver(task_id=self.task.id, reason=self.reason.text().strip())


class CancelWaitDialog(Following):
    """Cancel a scheduled wait: it ends as cancelled, its reservation goes back to the
    budget, and no process will consider it again."""

    irreversible = True

    def __init__(self, host: Host, task: api.TaskState, wait: api.Wait) -> None:
        super().__init__(host, f"Cancel wait {wait.wait_id} of {task.id}", "Cancel the &wait")
        self.task, self.wait = task, wait
        self.follow(task.id, task.now)
        self.add(self.changed)
        self.add(heading("The wait"))
        self.about = plain_label(name="The wait")
        self.add(self.about)
        self.add(heading("What cancelling does"))
        self.what = plain_label(name="What cancelling does")
        self.add(self.what)
        self.reason = self.reason_field("Why it no longer waits (required)")
        self._show()
        self.refresh_buttons()
        self.fit(560)

    def first_field(self) -> QWidget:
        return self.reason

    def _open(self) -> bool:
        return self.wait.state is api.WaitState.OPEN

    def _show(self) -> None:
        w, now = self.wait, self._now or ""
        from boris_desktop.task.panels.waits import condition_text, reservation_text

        self.about.setText(
            _bullets(
                [
                    f"Waiting for {w.waiting_for}",
                    f"Next consideration: {holder.next_consideration(w, now)} "
                    f"({t.when(w.not_before)}, database clock)",
                    f"Reservation: {reservation_text(w)}",
                    f"Condition: {condition_text(w)}",
                    f"Recorded by {t.actor(w.recorded_by)} at {t.when(w.recorded_at)}",
                    f"State: {w.state}",
                ]
            )
        )
        if not self._open():
            self.what.setText(
                f"The wait is {w.state}"
                + (f" ({w.end_reason})" if w.end_reason else "")
                + ": there is nothing to cancel."
            )
            return
        r = w.reservation
        self.what.setText(
            _bullets(
                [
                    "The wait ends as cancelled: no process considers it again, and the "
                    "resume brief no longer lists it to re-evaluate.",
                    f"Its reservation goes back to the budget: {t.number(r.amount)} {r.counter}"
                    if r
                    else "It holds no budget.",
                    "Your reason is recorded with it, under your name.",
                ]
            )
        )

    def task_changed(self, task: api.TaskState) -> None:
        self.task = task
        fresh = next((w for w in task.waits if w.wait_id == self.wait.wait_id), None)
        if fresh is not None and fresh.state != self.wait.state:
            self.tell_change(f"The wait became {fresh.state} while this was open.")
            self.rearm()
        if fresh is not None:
            self.wait = fresh
        self._show()
        self.refresh_buttons()

    def ready(self) -> bool:
        return self._open() and bool(self.reason.text().strip())

    def command(self) -> Any:
        from store.api import CancelWait

        return CancelWait(
            task_id=self.task.id, wait_id=self.wait.wait_id, reason=self.reason.text().strip()
        )
