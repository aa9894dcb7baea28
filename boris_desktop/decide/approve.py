"""Approve or reject a pending approval: the store's decision view, rendered.

What is decided is the store's `ApprovalDecision` (store.api): the change the request makes
(a message, a write, a replacement, an upload, a removal, or an object the store cannot
classify), the request's state as an enum, why it cannot be decided and the verdicts
allowed. The dialog shows that and adds no rule; it reads the view again whenever the store
changes (another reviewer's decision, a revocation) and when the request expires.

A write is shown as a diff against the file as it is now, so the dialog follows the file as
the Reconcile dialog does: a watchdog hint has the file hashed again on a worker and, where
it differs from the file the diff was read from, the diff is read again, the change is said,
and the verdicts wait until a moment after the new diff is on screen.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFormLayout, QLabel, QPushButton, QWidget

from boris_desktop.decide.base import no_default, reviewer_actor
from boris_desktop.decide.call_edits import CallEdits
from boris_desktop.decide.content_view import ContentView, file_state, same
from boris_desktop.decide.following import Following, note_edit
from boris_desktop.decide.message_edits import MessageEdits
from boris_desktop.decide.offered import OfferedRules
from boris_desktop.decide.respond import RespondPanel
from boris_desktop.host import Host
from boris_desktop.runtime.watch import FileWatcher
from boris_desktop.ui import text as t
from boris_desktop.ui.widgets import TextPane, elided_label, plain_label
from store.api import (
    Actor,
    Approval,
    ApprovalDecision,
    ApprovalState,
    ApprovalVerdict,
    CommandRejected,
    DecideApproval,
    FileState,
    OfferedRule,
    Opaque,
    Write,
)

_serial = itertools.count(1)


@dataclass(frozen=True)
class _Fields:
    """The request's facts, one labelled line each, in the form above its content."""

    consequence: QLabel
    policy: QLabel
    requester: QLabel
    expiry: QLabel
    state: QLabel
    approved: QLabel  # shown only where the request needs several people (its quorum)
    digest: QLabel

    @classmethod
    def into(cls, form: QFormLayout) -> _Fields:
        """The labels, each added to `form` as a row named as the reviewer reads it."""
        fields = cls(
            consequence=plain_label(),
            policy=plain_label(),
            requester=plain_label(),
            expiry=plain_label(),
            state=plain_label(),
            approved=plain_label(),
            # One unbroken word: elided to the room there is, whole in its tooltip and
            # when copied.
            digest=elided_label(),
        )
        for name, label in (
            ("Consequence", fields.consequence),
            ("Policy", fields.policy),
            ("Requested by", fields.requester),
            ("Expires", fields.expiry),
            ("State", fields.state),
            ("Approved so far", fields.approved),
            ("Payload digest", fields.digest),
        ):
            label.setAccessibleName(name)
            form.addRow(name + ":", label)
        form.setRowVisible(fields.approved, False)
        return fields


def _who(actor: Actor | None) -> str:
    return t.actor(actor.model_dump() if actor is not None else None)


class ApproveDialog(Following):
    """What the request authorizes, as the reviewer will recognise it (the email, the diff,
    the upload), its digest beside it; the consequence, policy, requester and expiry.

    `approval` is the store's view of it, or the approval's id (a task's approval is
    taken for its id alone): the view is then read on a worker, as every later read is when
    the store changes; the verdicts are armed only once it is shown."""

    irreversible = True
    #: What happened to the file a write changes (watchdog's words) while its diff is read
    #: again: the verdicts wait for the new diff.
    file_moved: str | None = None

    def __init__(
        self,
        host: Host,
        task_id: str,
        approval: ApprovalDecision | Approval | str,
        now: str | None = None,
    ) -> None:
        aid = approval if isinstance(approval, str) else approval.approval_id
        super().__init__(host, f"Decide approval {aid}", "&Approve")
        self.task_id, self.approval_id = task_id, aid
        self.decision: ApprovalDecision | None = None
        self.follow(task_id, now, fetch=lambda store: store.approval_decision(task_id, aid))
        self._add_verdicts()
        self.ok.setToolTip("Approve exactly the content shown, whose digest is beside it")
        self.final_refusal: Exception | None = None
        self.form = QFormLayout()
        self.fields = _Fields.into(self.form)
        box = QWidget()
        box.setLayout(self.form)
        self.add(self.changed)
        self.add(box)
        self._add_content(host)
        # The file a write changes, followed while the dialog is open (`_file_hint`).
        self._id = next(_serial)
        self.watcher = FileWatcher(self)
        self.watcher.changed.connect(self._file_hint)
        self.finished.connect(lambda _r: self.watcher.stop())
        self._hint: str | None = None  # a hint that came while the content was loading
        self.content.shown.connect(self._content_shown)
        if isinstance(approval, ApprovalDecision):
            self._show(approval)
        else:
            # Read on a worker, never on the GUI thread: until the view arrives nothing can
            # be decided (`ready` wants it), so nobody decides on a half-drawn request.
            self.fields.state.setText("reading the request…")
            self.follower.force()
            self.refresh_buttons()  # nothing to decide on yet: no verdict is enabled
        self.resize(860, 760)

    def _add_verdicts(self) -> None:
        """Reject, Send back and Edit beside Approve (the dialog's own button)."""
        self.reject_button = self.add_button("&Reject", "Reject this request (with a note)")
        self.reject_button.clicked.connect(lambda: self.decide(ApprovalVerdict.REJECT))
        self.send_back_button = self.add_button(
            "Send &back…", "Ask for changes, neither approving nor rejecting: the note says what"
        )
        self.send_back_button.clicked.connect(self.send_back)
        self.edit_button = self.add_button(
            "&Edit…", "Edit what is asked (a message's words, a call's arguments), then approve"
        )
        self.edit_button.setCheckable(True)
        self.edit_button.toggled.connect(self._editing)
        # "Allow calls like this": the Rules panel, its grant drawn from this call (issue 42).
        self.always_button = self.add_button(
            "A&lways…", "Decide calls like this one from now on: a standing rule"
        )
        self.always_button.clicked.connect(lambda: self._always())
        # Answer as the tool (issue 42): where the request accepts it, the reviewer's result.
        self.respond_button = self.add_button(
            "Ans&wer as the tool…", "Give the tool's result yourself: the call is never run"
        )
        self.respond_button.setCheckable(True)
        self.respond_button.toggled.connect(self._responding)

    def _always(self, offered: OfferedRule | None = None) -> None:
        """The Rules form for this call; `offered`: filled in from the framework's answer."""
        from boris_desktop.rules_panel import RulesDialog

        self.rules_dialog = RulesDialog(self.host)
        self.rules_dialog.answer(self.task_id, self.approval_id, offered)
        self.rules_dialog.show()

    def _add_content(self, host: Host) -> None:
        """The change itself, the prepared object behind a toggle, the note and the edits."""
        self.content = ContentView(host)
        self.add(self.content, 1)
        self.raw_toggle = no_default(QPushButton("Show the prepared object (JSON)"))
        self.raw_toggle.setCheckable(True)
        self.raw_toggle.setAccessibleName("Show the prepared object")
        self.payload = TextPane(host.loader, "Prepared object (JSON)")
        self.payload.hide()
        self.raw_toggle.toggled.connect(self.payload.setVisible)
        self.add(self.raw_toggle)
        self.add(self.payload, 1)
        # Claude Code's "always" answers for the call, each as the rule it would be.
        self.offered = OfferedRules()
        self.offered.chosen.connect(self._always)
        self.add(self.offered)
        self.note = note_edit("A note for the record (optional)", "Note")
        self.add(plain_label("Note:"))
        self.add(self.note)
        self.edits = MessageEdits()
        self.edits.hide()
        self.add(self.edits)
        # A tool call's arguments, where the store offers them for editing (issue 42).
        self.call_edits = CallEdits()
        self.call_edits.hide()
        self.add(self.call_edits)
        self.respond_panel = RespondPanel()
        self.respond_panel.hide()
        self.respond_panel.answer_button.clicked.connect(self.respond)
        self.add(self.respond_panel)

    def first_field(self) -> QWidget:
        return self.note

    def _show(self, d: ApprovalDecision) -> None:
        self.decision = d
        self.fields.consequence.setText(d.consequence)
        # A routed policy says who the request waits on and when it escalates (issue 42).
        self.fields.policy.setText(f"{d.policy} — {d.routing}" if d.routing else d.policy)
        self.fields.requester.setText(f"{_who(d.requester)} at {t.when(d.requested_at)}")
        self.fields.expiry.setText(f"{t.when(d.expires_at)} (database clock)")
        self.fields.digest.setText(d.payload_digest)
        self.fields.state.setText(d.state.label)
        self._show_quorum(d)
        self.payload.show_text(d.prepared_json, "json")
        self.content.show_change(d.change)
        if isinstance(d.change, Write):
            self.watcher.watch([d.change.target])
        else:
            self.watcher.stop()
        # An object the store cannot classify is shown as its JSON already: no second copy.
        opaque = isinstance(d.change, Opaque)
        if opaque:
            self.raw_toggle.setChecked(False)
        self.raw_toggle.setVisible(not opaque)
        self.edits.offer(d)
        self.call_edits.offer(d)
        self.offered.show_view(d)
        if self.respond_button.isChecked():
            self.respond_panel.show_view(d)
        self.edit_button.setVisible(bool(d.editable) or d.edits_call)
        if d.why_not:
            self.refuse(f"This request cannot be decided: {d.why_not}.")
        self.follower.at(d.expires_at, d.now)
        self.refresh_buttons()

    def _show_quorum(self, d: ApprovalDecision) -> None:
        """Who approved so far, where several people must: "maria (1 of 2)"; and what the
        Approve button does, "Approve (2nd of 2)"."""
        quorum = d.approvers_needed > 1
        self.form.setRowVisible(self.fields.approved, quorum)
        if quorum:
            people = ", ".join(a.id for a in d.approved_by) or "nobody yet"
            line = f"{people} ({len(d.approved_by)} of {d.approvers_needed})"
            if self._approved_by_me(d):
                line += " — you approved it; another person must approve it"
            self.fields.approved.setText(line)
        self._label_approve()

    @staticmethod
    def _approved_by_me(d: ApprovalDecision) -> bool:
        me = reviewer_actor()
        return me is not None and d.approved_already(me.id)

    def _label_approve(self) -> None:
        editing = self.edit_button.isChecked()
        text = "&Approve edited" if editing else "&Approve"
        d = self.decision
        which = d.next_approval(edited=editing) if d is not None else None
        self.ok.setText(f"{text} ({which})" if which else text)
        self.ok.setAccessibleName(self.ok.text().replace("&", ""))
        if editing:
            tip = "Approve your edited version (recorded as yours; the agent's is kept)"
        else:
            tip = "Approve exactly the content shown, whose digest is beside it"
        if which and d is not None:
            tip += (
                f"; it is approved once {d.approvers_needed} people have approved it, "
                "each counted once"
            )
            if editing:
                tip += "; your edit is a new object: approvals of the old one no longer count"
        self.ok.setToolTip(tip)

    def task_changed(self, task: ApprovalDecision) -> None:
        old = self.decision
        if old is not None and task.state != old.state:
            self.tell_change(self._what_changed(task))
        elif old is not None and task.approved_by != old.approved_by:
            who = ", ".join(a.id for a in task.approved_by) or "nobody"
            self.tell_change(
                f"Approved so far: {who} ({len(task.approved_by)} of "
                f"{task.approvers_needed}), while this was open."
            )
        if old is not None and task.change != old.change:
            self.rearm()  # different content: read it before deciding
        self._show(task)

    @staticmethod
    def _what_changed(d: ApprovalDecision) -> str:
        if d.state is ApprovalState.EXPIRED:
            return f"It expired at {t.when(d.expires_at)} while this was open."
        if d.decided_by is not None:
            return (
                f"{d.state.label.capitalize()} by {_who(d.decided_by)} at "
                f"{t.when(d.decided_at)}, while this was open"
                + (f": “{d.note}”" if d.note else ".")
            )
        return f"It became {d.state.label} while this was open."

    # --- following the file a write changes -------------------------------------------

    def _file_hint(self, _path: str, what: str) -> None:
        """watchdog says the file changed: a hint, checked with a fresh hash on a worker."""
        shown = self.content.result
        if shown is None or self.content.loading():
            self._hint = what  # checked once the diff in flight is on screen
            return
        change = self.content.change
        if not isinstance(change, Write) or shown.target_state is None:
            return
        target, before = change.target, shown.target_state

        def fresh(state: FileState) -> None:
            if self.content.result is shown and not same(state, before):
                self._read_again(what)

        self.host.loader.submit(f"approve-hash:{self._id}", lambda: file_state(target), fresh)

    def _read_again(self, what: str) -> None:
        self.file_moved = what
        self.rearm()  # nothing is approved over a diff the person has not seen
        self.content.refresh()

    def _content_shown(self) -> None:
        hint, self._hint = self._hint, None
        if self.file_moved is not None:
            change = self.content.change
            name = os.path.basename(change.target) if isinstance(change, Write) else "The file"
            self.tell_change(
                f"{name} changed on disk while this was open ({self.file_moved}): the diff "
                "below is against the file as it is now. Read it again before deciding."
            )
            self.file_moved = None
            self.rearm()  # armed a moment after the new diff is on screen
        if hint is not None:
            self._file_hint("", hint)

    def ready(self) -> bool:
        d = self.decision
        return (
            d is not None
            and bool(d.verdicts)
            and self.final_refusal is None
            and self.file_moved is None
        )

    def refresh_buttons(self) -> None:
        super().refresh_buttons()
        d = self.decision
        allowed = d.verdicts if d is not None else ()
        # One person counts once: a second approval by the same reviewer is not offered.
        # (An edit is a new object, which they may approve as its first.)
        mine = d is not None and self._approved_by_me(d) and not self.edit_button.isChecked()
        self.ok.setEnabled(self.ok.isEnabled() and ApprovalVerdict.APPROVE in allowed and not mine)
        self.reject_button.setEnabled(self.can_decide() and ApprovalVerdict.REJECT in allowed)
        self.send_back_button.setEnabled(self.can_decide() and ApprovalVerdict.SEND_BACK in allowed)
        respond = ApprovalVerdict.RESPOND in allowed
        self.respond_button.setEnabled(not self.running and respond)
        self.respond_panel.answer_button.setEnabled(self.can_decide() and respond)
        # Opening the editor decides nothing: it is not held back by the arming delay.
        self.edit_button.setEnabled(
            not self.running
            and self.final_refusal is None
            and d is not None
            and (bool(d.editable) or d.edits_call)
        )

    def command(self) -> Any:
        return self._command(ApprovalVerdict.APPROVE)

    def _command(self, verdict: ApprovalVerdict) -> DecideApproval:
        # Validated as the CLI's JSON is: the verdict's value is the command's `decision`.
        editing = self.edit_button.isChecked() and verdict is ApprovalVerdict.APPROVE
        words = self._message_editing()
        return DecideApproval.model_validate(
            {
                "task_id": self.task_id,
                "approval_id": self.approval_id,
                "decision": verdict.value,
                "note": self.note.toPlainText().strip(),
                # Approve the reviewer's version (the store records it as their revision):
                # a message's words, or a tool call's arguments.
                "edited_message": self.edits.changed() if editing and words else None,
                "edited": self.call_edits.changed() if editing and not words else None,
            }
        )

    def act(self) -> None:
        """Approve (the dialog's own button): an edit that is no JSON object is said here and
        can be mended, never sent (a refusal of the command would end the dialog)."""
        if self.edit_button.isChecked() and not self._message_editing():
            try:
                self.call_edits.changed()
            except ValueError as problem:
                self.refuse(f"Not approved: {problem}.")
                self.call_edits.text.setFocus()
                return
        super().act()

    def _message_editing(self) -> bool:
        """Edit edits a tool call's arguments where the store offers them (the whole call),
        else a message's words."""
        d = self.decision
        return d is None or (bool(d.editable) and not d.edits_call)

    def decide(self, verdict: ApprovalVerdict) -> None:
        self.run(lambda: self._command(verdict))

    def send_back(self) -> None:
        """Changes requested: the note is what the agent will read, so it is asked for."""
        if not self.note.toPlainText().strip():
            self.refuse("Write in the note what should change, then send it back.")
            self.note.setFocus()
            return
        self.decide(ApprovalVerdict.SEND_BACK)

    def _responding(self, on: bool) -> None:
        if self.decision is not None:
            self.respond_panel.show_view(self.decision)
        self.respond_panel.setVisible(on)
        if on:
            self.respond_panel.result.setFocus()
            # Below the note: in sight on a short screen too, once laid out.
            QTimer.singleShot(0, lambda: self.body_scroll.ensureWidgetVisible(self.respond_panel))

    def respond(self) -> None:
        d, note = self.decision, self.note.toPlainText().strip()
        if d is not None:
            self.run(lambda: self.respond_panel.command(d, note))

    def _editing(self, on: bool) -> None:
        words = self._message_editing()
        self.edits.setVisible(on and words)
        self.call_edits.setVisible(on and not words)
        self._label_approve()
        self.rearm()  # what Approve means changed: a moment before it is armed again
        if on:
            (self.edits.subject if words else self.call_edits.text).setFocus()

    def _failed(self, error: Exception) -> None:
        if isinstance(error, CommandRejected):
            # Decided, expired, stale, or not the reviewer's to decide: a refusal of the
            # command, which cannot become decidable again. (StoreBusy and the like can.)
            self.final_refusal = error
            self.follower.force()
        super()._failed(error)
