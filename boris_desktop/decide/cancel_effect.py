"""Cancel a planned effect: what it would have done, what goes with it, and the person's reason.

The picture is the store's `CancelEffectView`: the effect's consequence, its prepared object
as the change it makes (rendered by `content_view.ContentView`, as the Approve dialog shows
it), the approvals the cancel revokes with it, whether it can be cancelled now (the store's
rule `why_not_cancellable`) and the run's status afterwards. A cancelled effect is never sent
and cannot be un-cancelled, so like Stop and Close the decision is armed a moment after the
content last changed and asks for the effect id (or the word cancel) typed out.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QDialogButtonBox, QLineEdit, QWidget

from boris_desktop.decide.base import confirmation
from boris_desktop.decide.content_view import ContentView
from boris_desktop.decide.following import Following
from boris_desktop.host import Host
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import words
from boris_desktop.ui.widgets import elided_label, heading, plain_label
from store import api


def plan_lines(view: api.CancelEffectView) -> list[str]:
    """What cancelling does, in the reviewer's words, from the store's view."""
    revoked = ", ".join(f"{r.approval_id} ({words(r.state)})" for r in view.revoked)
    lines = [
        f"Effect {view.effect_id}: {words(view.stage)} → cancelled. It is never sent; "
        "the agent plans a new effect if it still needs one",
        "Approvals revoked with it: " + (revoked or "none"),
    ]
    if view.status_after != view.status:
        lines.append(
            f"Status: {words(view.status)} → {words(view.status_after)} ({view.status_after_why})"
        )
    else:
        lines.append(f"Status stays {words(view.status)}")
    if view.attempts:
        lines.append(
            f"Its {t.count(view.attempts, 'attempt', 'attempts')} (none of which happened) "
            "stay in the record"
        )
    lines.append("Your reason is recorded with the cancel, under your name.")
    return lines


class CancelEffectDialog(Following):
    """Cancel one planned (or failed, never sent) effect, with the person's reason."""

    irreversible = True

    def __init__(self, host: Host, task: api.TaskState, effect: api.Effect) -> None:
        super().__init__(host, f"Cancel effect {effect.effect_id}", "Cancel the &effect")
        self.task_id, self.effect_id = task.id, effect.effect_id
        keep = self.buttons.button(QDialogButtonBox.StandardButton.Cancel)
        if keep is not None:
            keep.setText("&Keep it")
            keep.setAccessibleName("Keep it")
        self.view: api.CancelEffectView | None = None
        tid, eid = self.task_id, self.effect_id
        self.follow(tid, fetch=lambda store: api.cancel_effect_view(store, tid, eid))
        self.add(self.changed)
        self.add(heading("What cancelling will do"))
        self.what = plain_label("Reading the effect…", name="What cancelling will do")
        self.add(self.what)
        self.why_not = plain_label("", name="Why it cannot be cancelled")
        self.why_not.hide()
        self.add(self.why_not)
        self.add(heading("What it would have done"))
        self.consequence = plain_label(effect.consequence, name="Consequence")
        self.add(self.consequence)
        self.prepared = elided_label(name="Prepared object")  # it names the target
        self.add(self.prepared)
        self.content = ContentView(host, "What the effect would have sent or written")
        self.content.setMinimumHeight(140)
        self.add(self.content, 1)
        self.reason = self.reason_field("Why it is cancelled (required)")
        self.confirm = confirmation(QLineEdit())
        self.confirm.setAccessibleName("Type the effect id or cancel to confirm")
        self.confirm.setPlaceholderText(f"{self.effect_id}  or  cancel")
        self.confirm.textChanged.connect(self.refresh_buttons)
        self.add(
            plain_label(f"To confirm, type the effect id ({self.effect_id}) or the word cancel:")
        )
        self.add(self.confirm)
        self.refresh_buttons()
        self.follower.force()  # the first read fills the dialog
        self.fit(620)

    def first_field(self) -> QWidget:
        return self.reason

    def task_changed(self, task: Any) -> None:
        view: api.CancelEffectView = task
        before, self.view = self.view, view
        self.what.setText("\n".join(f"• {x}" for x in plan_lines(view)))
        self.why_not.setText(f"It cannot be cancelled now: {view.why_not}" if view.why_not else "")
        self.why_not.setVisible(view.why_not is not None)
        self.consequence.setText(view.consequence)
        line = f"{words(view.kind)} → {view.target} · prepared object"
        self.prepared.setText(
            f"{line} {t.digest(view.prepared_digest)}", f"{line} {view.prepared_digest}"
        )
        self.content.show_change(view.change)
        if before is None and self.isVisible():
            # Sized again for what the first read filled in (the dialog opened empty).
            self.body_scroll.updateGeometry()  # the content's new size, past the scroll area
            self.fit(620)
            self.fit_screen()
        if before is not None and _shown(before) != _shown(view):
            self.tell_change(
                f"The effect became {words(view.stage)} while this was open: {view.why_not}"
                if view.why_not
                else "What cancelling will do changed while this was open (the effect "
                "was revised, or its approvals decided); what is shown is the current one."
            )
            self.rearm()
        self.refresh_buttons()

    def ready(self) -> bool:
        typed = self.confirm.text().strip()
        return (
            self.view is not None
            and self.view.cancellable
            and bool(self.reason.text().strip())
            and (typed == self.effect_id or typed.lower() == "cancel")
        )

    def command(self) -> Any:
        from store.api import CancelEffect

        return CancelEffect(
            task_id=self.task_id, effect_id=self.effect_id, reason=self.reason.text().strip()
        )


def _shown(view: api.CancelEffectView) -> tuple[Any, ...]:
    """What the person decides on: a change in any of it re-arms the decision."""
    return (
        view.stage,
        view.outcome,
        view.prepared_digest,
        view.revoked,
        view.status_after,
        view.why_not,
    )
