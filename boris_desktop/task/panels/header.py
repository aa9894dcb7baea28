"""The task header: objective (with its amendments), status, owner, head checkpoint, fork,
and how the record is signed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QPlainTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from boris_desktop import settings
from boris_desktop.signers import summary_words
from boris_desktop.ui import holder
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import icon, status_icon, words
from boris_desktop.ui.widgets import elided_label, heading, plain_label
from store import api

if TYPE_CHECKING:
    from store.api import Checkpoint, Checkpoints, DecisionSigners, LateChanges, TaskState


def head_checkpoint(cps: Checkpoints) -> Checkpoint | None:
    rows = [c for c in cps.checkpoints if c.checkpoint_id in cps.heads]
    return max(rows, key=lambda c: (c.seq, c.at)) if rows else None


class Banner(QWidget):
    """A warning line: an icon and words (never colour alone)."""

    def __init__(self, icon_name: str, name: str) -> None:
        super().__init__()
        self.icon = QLabel()
        self.icon.setPixmap(icon(icon_name).pixmap(16, 16))
        self.label = plain_label(name=name)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 2, 0, 2)
        row.addWidget(self.icon, 0)
        row.addWidget(self.label, 1)
        self.setAccessibleName(name)

    def say(self, text: str) -> None:
        self.label.setText(text)
        self.setVisible(bool(text))


class Header(QWidget):
    def __init__(self) -> None:
        super().__init__()
        self.setAccessibleName("Task header")
        self.title = heading("")
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        self.title.setFont(font)
        self.title.setAccessibleName("Task title")
        self.status_icon = QLabel()
        self.status = plain_label(name="Status")
        self.owner = plain_label(wrap=False, name="Owner")
        self.head = plain_label(name="Head checkpoint")
        # Who works on the task now and what it waits for, judged against the database
        # clock as it moves on between reads (a lease that runs out reads as idle at once).
        self.working = plain_label(name="Working now")
        self.clock = holder.Clock()
        self._task: TaskState | None = None
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._show_working)
        # One line, elided: wrapped beside the owner it was clipped to its first line at 1024
        # wide (the whole text is the tooltip).
        self.signatures = elided_label(name="Signatures")
        self.objective = plain_label(name="Current objective")
        self.history_button = QToolButton()
        self.history_button.setCheckable(True)
        self.history_button.setAccessibleName("Show the objective's amendment history")
        self.history_button.toggled.connect(self._toggle_history)
        self.history = QPlainTextEdit()
        self.history.setReadOnly(True)
        self.history.setAccessibleName("Objective amendment history")
        self.history.setMaximumHeight(130)
        self.history.hide()
        self.fork = Banner("fork", "Fork warning")
        self.problems = Banner("attention", "Missing or unreadable records")
        self.unsigned = Banner("attention", "Signature warning")
        # What changed after the task completed, and where a follow-up task came from
        # (store.reads.late; issue 35 part L).
        self.late = Banner("attention", "Changed after completion")
        self.origin = Banner("pending", "Follow-up of")
        self._lay_out()

    def _lay_out(self) -> None:
        obj_row = QHBoxLayout()
        obj_row.addWidget(self.objective, 1)
        obj_row.addWidget(self.history_button, 0)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addWidget(self.title)
        layout.addLayout(obj_row)
        layout.addWidget(self.history)
        layout.addLayout(self._grid())
        for banner in (self.fork, self.problems, self.unsigned, self.late, self.origin):
            layout.addWidget(banner)
            banner.hide()

    def _grid(self) -> QGridLayout:
        """The named lines: status, owner and signatures, head checkpoint, working now."""
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(3)
        row_status = QHBoxLayout()
        row_status.setSpacing(6)
        row_status.addWidget(self.status_icon)
        row_status.addWidget(self.status, 1)
        # Who signs the record shares the owner's line: a row of its own cost the inbox a
        # row at 1024×700.
        row_owner = QHBoxLayout()
        row_owner.setSpacing(10)
        row_owner.addWidget(self.owner, 0)
        signed_label = plain_label("·   Signatures:", wrap=False)
        signed_label.setEnabled(False)
        row_owner.addWidget(signed_label, 0)
        row_owner.addWidget(self.signatures, 1)
        rows: tuple[tuple[str, QWidget | QLayout], ...] = (
            ("Status", row_status),
            ("Owner", row_owner),
            ("Head checkpoint", self.head),
            ("Working now", self.working),
        )
        for row, (label, part) in enumerate(rows):
            name = plain_label(label + ":", wrap=False)
            name.setEnabled(False)  # the palette's dimmed text: a label, not content
            grid.addWidget(name, row, 0)
            if isinstance(part, QLayout):
                grid.addLayout(part, row, 1)
            else:
                grid.addWidget(part, row, 1)
        grid.setColumnStretch(1, 1)
        return grid

    def show_signing(self, signing: DecisionSigners | None) -> None:
        """Whether the store signs its records, who signed last, and any unsigned tail."""
        line, alarm = summary_words(signing.summary if signing else None)
        self.signatures.setText(line)
        self.unsigned.say(alarm)

    def _toggle_history(self, on: bool) -> None:
        self.history.setVisible(on)

    def show_clock(self, now: str | None) -> None:
        """The task was read again at `now` (database clock)."""
        self.clock.set(now)
        self._show_working()

    def _show_working(self) -> None:
        task = self._task
        if task is None:
            return
        now = self.clock.now()
        reviewer = settings.reviewer()
        held = holder.holder_line(
            task.lease, task.updated_at, now, reviewer[1] if reviewer else None
        )
        self.working.setText(f"{held}   ·   Waits: {holder.waits_line(task.waits, now)}")
        if not self._ticker.isActive():
            self._ticker.start()

    def show_task(self, task: TaskState) -> None:
        self._task = task
        self.show_clock(task.now)
        self.title.setText(task.title)
        obj = task.objective
        revs = task.objective_revisions
        self.objective.setText(
            f"Objective (revision {obj.rev} of {len(revs)}): {obj.text}" if obj else "No objective"
        )
        self.history_button.setText(
            t.count(len(revs) - 1, "amendment", "amendments") if len(revs) > 1 else "History"
        )
        self.history_button.setEnabled(len(revs) > 1)
        self.history.setPlainText(
            "\n\n".join(
                f"Revision {r.rev} — {t.when(r.at)} by {t.actor(r.actor)}\n"
                f"Why: {r.reason}\n{r.text}"
                for r in reversed(revs)
            )
        )
        self.status_icon.setPixmap(status_icon(task.status).pixmap(16, 16))
        self.status.setText(status_line(task))
        self.owner.setText(
            f"{task.owner}   ·   task id {task.id}   ·   last event seq {task.last_seq}"
        )
        self._show_lineage(task.checkpoints)
        self.problems.say(
            "; ".join(f"{p.kind.replace('_', ' ')} {p.id}: blob {p.problem}" for p in task.problems)
        )
        self.late.say(late_line(task.late))
        origin = task.late.origin
        self.origin.say(
            f"A follow-up of {origin.task_id}, opened for what changed after it completed "
            f"(through #{origin.through_seq})"
            if origin
            else ""
        )

    def _show_lineage(self, cps: Checkpoints) -> None:
        """The head checkpoint, and the fork's warning when there is more than one."""
        head = head_checkpoint(cps)
        self.head.setText(
            f"{head.checkpoint_id} ({head.reason}, seq {head.seq}, by "
            f"{t.actor_short(head.author)}, {t.when(head.at)})"
            if head
            else "none yet: a resume rests on the whole event log"
        )
        heads = cps.heads
        self.fork.say(
            f"The checkpoint lineage has forked: {len(heads)} heads ({', '.join(heads)}). "
            "None is picked: a person chooses which to continue from (and whether to merge "
            "the others) before anyone resumes."
            if len(heads) > 1
            else ""
        )


def status_line(task: TaskState) -> str:
    """The run's status and why. Awaiting approval, the approvals pending now by their state
    (the status's stored reason names the request that made it so, which a person may have
    sent back since while another keeps it waiting); a request sent back and not asked again
    is said so, with who sent it back and what they asked."""
    status = task.status
    why = task.status_reason
    approvals = task.approvals
    pending = [a.approval_id for a in approvals if a.state == api.ApprovalState.PENDING]
    if status == api.RunStatus.AWAITING_APPROVAL and pending:
        why = (
            f"approval {pending[0]} is pending"
            if len(pending) == 1
            else f"approvals {', '.join(pending)} are pending"
        )
    parts = [why] if why else []
    for i, a in enumerate(approvals):
        if a.state != api.ApprovalState.SENT_BACK:
            continue
        effect = a.effect_id
        if effect is not None and any(x.effect_id == effect for x in approvals[i + 1 :]):
            continue  # asked again: the newer request is the news
        who = a.decided_by
        parts.append(
            f"approval {a.approval_id} was sent back"
            + (f" by {t.actor(who)}" if who else "")
            + (f": “{a.note}”" if a.note else "")
        )
    return words(status) + (" — " + "; ".join(parts) if parts else "")


def late_line(late: LateChanges | None, shown: int = 3) -> str:
    """The banner: "Changed after completion: N facts since <date>" and what changed, newest
    last; the task stays completed until a person answers (the decision queue)."""
    if not late or not late.count:
        return ""
    facts = late.facts
    what = "; ".join(f"#{f.seq} {f.what}" for f in facts[-shown:])
    more = f" (and {len(facts) - shown} earlier)" if len(facts) > shown else ""
    said = late.words or ""
    return (
        f"{said[:1].upper()}{said[1:]}: {what}{more}. It stays completed: "
        "acknowledge it or open a follow-up task (Decisions)."
    )
