"""The reviewer's action dialogs: approve / reject, stop, checkpoint, and the edits.

Each shows what the action rests on, takes the reviewer's note or reason, and runs one store
command on a worker (see `actions`). What may be done is the store's rule (`store.rules`),
asked here, never copied: why a request cannot be decided, what stopping will do, what work
is pending. The deciding dialogs follow the store while open (`follow.Follower`): a request
decided elsewhere, expired or revoked, a changed stop plan or new pending work is shown in
place, with who did it, and what is no longer allowed is disabled before the reviewer clicks.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFormLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QWidget,
)

from store import rules
from store.status import can_stop

from . import text as t
from .actions import ActionDialog, no_default
from .content_view import ContentView, subject_of
from .follow import Follower
from .host import Host
from .icons import words
from .widgets import TextPane, heading, notice_banner, plain_label, pretty_json


def _note_edit(placeholder: str, name: str) -> QPlainTextEdit:
    """A note: Return is a new line in it (never a decision), Tab leaves it."""
    edit = QPlainTextEdit()
    edit.setPlaceholderText(placeholder)
    edit.setAccessibleName(name)
    edit.setTabChangesFocus(True)
    edit.setMinimumHeight(60)
    edit.setMaximumHeight(110)
    return edit


def why_not_decidable(a: dict[str, Any], now: str | None) -> str | None:
    """Why the loaded request cannot be decided (`rules.why_undecidable`; the store checks
    again when it is decided)."""
    return rules.why_undecidable(a["state"], a["expires_at"], now or "", a.get("decided_by"))


class _Following(ActionDialog):
    """A dialog about one task that reads the task again whenever the store changes."""

    def follow(self, task_id: str, now: str | None = None) -> None:
        self.changed = notice_banner("What changed while this was open")
        self.changed.hide()
        self.follower = Follower(self.host, task_id, self._guarded, self)
        self.finished.connect(lambda _r: self.follower.stop())
        self._now = now

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if not self.follower.running:
            self.follower.start()

    def _guarded(self, task: dict[str, Any]) -> None:
        if self.isVisible() or not self.result():
            self._now = task.get("now") or self._now
            self.task_changed(task)

    def task_changed(self, task: dict[str, Any]) -> None:
        """Show the task as the store has it now. Every dialog that follows the store defines
        it (a test checks): the base knows nothing of what its subclass shows."""
        raise NotImplementedError(f"{type(self).__name__} does not follow its task")

    def tell_change(self, text: str) -> None:
        self.changed.setText(text)
        self.changed.show()


class ApproveDialog(_Following):
    """What the request authorizes, as the reviewer will recognise it (the email, the diff,
    the upload), its digest beside it; the consequence, policy, requester and expiry."""

    irreversible = True

    def __init__(self, host: Host, task_id: str, approval: dict[str, Any], now: str):
        super().__init__(host, f"Decide approval {approval['approval_id']}", "&Approve")
        self.task_id, self.approval = task_id, approval
        self.follow(task_id, now)
        self.reject_button = self.add_button("&Reject", "Reject this request (with a note)")
        self.reject_button.clicked.connect(lambda: self.decide("rejected"))
        self.ok.setToolTip("Approve exactly the content shown, whose digest is beside it")
        self.final_refusal: Exception | None = None
        a = approval
        form = QFormLayout()
        self.fields = {}
        for key, label in (
            ("consequence", "Consequence"),
            ("policy", "Policy"),
            ("requester", "Requested by"),
            ("expiry", "Expires"),
            ("state", "State"),
            ("digest", "Payload digest"),
        ):
            self.fields[key] = plain_label("", name=label)
            form.addRow(label + ":", self.fields[key])
        box = QWidget()
        box.setLayout(form)
        self.add(self.changed)
        self.add(box)
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
        self.note = _note_edit("A note for the record (optional)", "Note")
        self.add(plain_label("Note:"))
        self.add(self.note)
        self.why: str | None = None
        self._show(a, now)
        self.follower.at(a["expires_at"], now)
        self.resize(860, 760)

    def first_field(self) -> QWidget:
        return self.note

    def _show(self, a: dict[str, Any], now: str) -> None:
        self.approval = a
        self.fields["consequence"].setText(a["consequence"])
        self.fields["policy"].setText(a["policy"])
        self.fields["requester"].setText(
            f"{t.actor(a['requester'])} at {t.when(a['requested_at'])}"
        )
        self.fields["expiry"].setText(f"{t.when(a['expires_at'])} (database clock)")
        self.fields["digest"].setText(a["payload_digest"])
        self.fields["state"].setText(words(a["state"]))
        self.payload.show_text(pretty_json(a["payload"]), "json")
        self.content.show_subject(subject_of(a["payload"]))
        self.why = why_not_decidable(a, now)
        if self.why:
            self.refuse(f"This request cannot be decided: {self.why}.")
        self.refresh_buttons()

    def task_changed(self, task: dict[str, Any]) -> None:
        aid = self.approval["approval_id"]
        a = next((x for x in task["approvals"] if x["approval_id"] == aid), None)
        if a is None:
            return
        old = self.approval
        now = task.get("now") or ""
        if a["state"] != old["state"]:
            if a["state"] == rules.ApprovalState.EXPIRED:
                self.tell_change(f"It expired at {t.when(a['expires_at'])} while this was open.")
            elif a.get("decided_by"):
                self.tell_change(
                    f"{words(a['state']).capitalize()} by {t.actor(a['decided_by'])} at "
                    f"{t.when(a.get('decided_at'))}, while this was open"
                    + (f": “{a['note']}”" if a.get("note") else ".")
                )
            else:
                self.tell_change(f"It became {words(a['state'])} while this was open.")
        if a["payload_digest"] != old["payload_digest"]:
            self.rearm()  # different content: read it before deciding
        self._show(a, now)
        self.follower.at(a["expires_at"], now)

    def ready(self) -> bool:
        return self.why is None and self.final_refusal is None

    def refresh_buttons(self) -> None:
        super().refresh_buttons()
        self.reject_button.setEnabled(self.ok.isEnabled())

    def command(self) -> Any:
        return self._command("approved")

    def _command(self, decision: str) -> Any:
        from store.commands.approvals import DecideApproval

        return DecideApproval(
            task_id=self.task_id,
            approval_id=self.approval["approval_id"],
            decision=decision,  # type: ignore[arg-type]
            note=self.note.toPlainText().strip(),
        )

    def decide(self, decision: str) -> None:
        self.run(lambda: self._command(decision))

    def _failed(self, error: Exception) -> None:
        from store.errors import CommandRejected

        if isinstance(error, CommandRejected):
            # Decided, expired, stale, or not the reviewer's to decide: a refusal of the
            # command, which cannot become decidable again. (StoreBusy and the like can.)
            self.final_refusal = error
            self.follower.force()
        super()._failed(error)


def stop_plan(task: dict[str, Any]) -> rules.StopPlan:
    """What StopRun will do, by the store's rule (`rules.stop_plan`) over the loaded state."""
    return rules.stop_plan(
        [(a["approval_id"], a["state"], a["expires_at"]) for a in task["approvals"]],
        [(e["effect_id"], e["stage"], e["outcome"]) for e in task["effects"]],
        task.get("now") or "",
    )


def _plan_lines(plan: rules.StopPlan) -> list[str]:
    return [
        "Approvals revoked: " + (", ".join(plan.revoke) or "none"),
        "Planned effects cancelled: " + (", ".join(plan.cancel) or "none"),
        "Sent effects whose outcome is not settled, left for you to reconcile: "
        + (", ".join(plan.unresolved) or "none"),
        "A stopped checkpoint and an account of the stop are written.",
    ]


class StopDialog(_Following):
    """Stop the run. Stopping revokes and cancels at once and only a person reopens the run,
    so besides the reason it asks for the task id (or the word stop) typed out: a keystroke
    meant for another window, or a Return, cannot stop a run, and typing the id also says
    which run the reviewer means when several windows are open."""

    irreversible = True

    def __init__(self, host: Host, task: dict[str, Any]) -> None:
        super().__init__(host, f"Stop the run of {task['id']}", "&Stop the run")
        self.task = task
        self.follow(task["id"], task.get("now"))
        self.plan = stop_plan(task)
        self.add(self.changed)
        self.add(heading("What stopping will do"))
        self.what = self.add(plain_label(name="Stop plan"))
        self._show_plan()
        self.reason = QLineEdit()
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("Why you are stopping the run (required)")
        self.reason.textChanged.connect(self.refresh_buttons)
        self.add(plain_label("Reason:"))
        self.add(self.reason)
        self.confirm = QLineEdit()
        self.confirm.setAccessibleName("Type the task id or stop to confirm")
        self.confirm.setPlaceholderText(f"{task['id']}  or  stop")
        self.confirm.textChanged.connect(self.refresh_buttons)
        self.add(plain_label(f"To confirm, type the task id ({task['id']}) or the word stop:"))
        self.add(self.confirm)
        self.closed: str | None = None
        self.refresh_buttons()
        self.fit(560)

    def first_field(self) -> QWidget:
        return self.reason

    def _show_plan(self) -> None:
        self.what.setText("\n".join(f"• {x}" for x in _plan_lines(self.plan)))  # type: ignore[attr-defined]

    def task_changed(self, task: dict[str, Any]) -> None:
        self.task = task
        plan = stop_plan(task)
        if not can_stop(task["status"]):
            self.closed = f"the run is already {words(task['status'])}"
            self.tell_change(
                f"The run became {words(task['status'])} while this was open"
                + (f" ({task['status_reason']})" if task.get("status_reason") else "")
                + ": there is nothing to stop."
            )
        elif plan != self.plan:
            self.tell_change(
                "What stopping will do changed while this was open (new or decided work); "
                "the plan below is the current one."
            )
            self.rearm()
        self.plan = plan
        self._show_plan()
        self.refresh_buttons()

    def ready(self) -> bool:
        typed = self.confirm.text().strip()
        return (
            self.closed is None
            and bool(self.reason.text().strip())
            and (typed == self.task["id"] or typed.lower() == "stop")
        )

    def command(self) -> Any:
        from store.commands.checkpoints import StopRun

        return StopRun(task_id=self.task["id"], reason=self.reason.text().strip())


def checkpoint_view(task: dict[str, Any]) -> dict[str, Any]:
    """The loaded task in the shape `rules.pending_work` reads (a checkpoint state)."""
    return {
        "criteria": [
            {"id": c["criterion_id"], "status": c.get("state") or c["status"]}
            for c in task["criteria"]
        ],
        "unresolved_effects": [
            {
                "id": e["effect_id"],
                "stage": e["stage"],
                "outcome": e["outcome"],
                "safe_recovery": rules.recovery(
                    e["stage"], e["outcome"], bool(e.get("requires_approval"))
                ),
            }
            for e in task["effects"]
            if rules.effect_unresolved(e["stage"], e["outcome"])
        ],
        "open_approvals": [
            {"id": a["approval_id"], "state": a["state"]}
            for a in task["approvals"]
            if a["state"]
            in {
                rules.ApprovalState.PENDING,
                rules.ApprovalState.APPROVED,
                rules.ApprovalState.EXPIRED,
            }
        ],
        "pending_phases": [
            {"id": p["phase_id"], "status": p["readiness"]}
            for p in task.get("phases", [])
            if p.get("readiness") != "done"
        ],
    }


def pending_work(task: dict[str, Any]) -> list[str]:
    """The loaded state's pending work, by the store's rule (`rules.pending_work`)."""
    return rules.pending_work(checkpoint_view(task))


class CheckpointDialog(_Following):
    """A final checkpoint, or a handoff (or milestone) with the reviewer's note."""

    REASONS = ("final", "handoff", "milestone")
    irreversible = True

    def __init__(self, host: Host, task: dict[str, Any]) -> None:
        super().__init__(host, f"Checkpoint {task['id']}", "&Write checkpoint")
        self.task = task
        self.follow(task["id"], task.get("now"))
        self.pending = pending_work(task)
        self.add(self.changed)
        self.add(heading("Pending work"))
        self.pending_label = self.add(plain_label(name="Pending work"))
        self.note = _note_edit("Your note for whoever resumes (required)", "Note")
        self.group = QButtonGroup(self)
        self.radios: dict[str, QRadioButton] = {}
        for reason in self.REASONS:
            r = QRadioButton(
                {
                    "final": "&Final — the task is done",
                    "handoff": "&Handoff — another actor resumes from here",
                    "milestone": "&Milestone — a point worth returning to",
                }[reason]
            )
            r.setAccessibleName(reason)
            self.radios[reason] = r
            self.group.addButton(r)
            self.add(r)
            r.toggled.connect(self.refresh_buttons)
        self.final_why = self.add(plain_label(name="Why final is unavailable"))
        self._show_pending()
        self.radios["handoff" if self.pending else "final"].setChecked(True)
        self.stop_button = no_default(QPushButton("Stop the run instead…"))
        self.stop_button.setAccessibleName("Stop the run instead")
        self.stop_button.clicked.connect(self._stop_instead)
        self.add(self.stop_button)
        self.note.textChanged.connect(self.refresh_buttons)
        self.add(plain_label("Note:"))
        self.add(self.note)
        self.refresh_buttons()
        self.fit(560)

    def first_field(self) -> QWidget:
        return self.note

    def _show_pending(self) -> None:
        self.pending_label.setText(  # type: ignore[attr-defined]
            "\n".join(f"• {x}" for x in self.pending) or "None: the task can be final."
        )
        final = self.radios["final"]
        final.setEnabled(not self.pending)
        if self.pending:
            final.setToolTip("Pending work remains")
            self.final_why.setText(  # type: ignore[attr-defined]
                "Final is unavailable while work is pending. Write a handoff to pass it on, "
                "or stop the run (stopped)."
            )
            self.final_why.show()
            if final.isChecked():
                self.radios["handoff"].setChecked(True)
        else:
            final.setToolTip("")
            self.final_why.hide()

    def task_changed(self, task: dict[str, Any]) -> None:
        self.task = task
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

    def reason(self) -> str:
        return next((r for r, b in self.radios.items() if b.isChecked()), "handoff")

    def ready(self) -> bool:
        if self.reason() == "final" and self.pending:
            return False
        return bool(self.note.toPlainText().strip())

    def command(self) -> Any:
        from store.commands.checkpoints import WriteCheckpoint

        heads = list((self.task.get("checkpoints") or {}).get("heads") or [])
        kw: dict[str, Any] = {}
        if len(heads) > 1:  # a forked lineage: continue from the newest head, merge the rest
            kw = {"supersedes": [heads[-1]], "merge": heads[:-1]}
        return WriteCheckpoint(
            task_id=self.task["id"],
            reason=self.reason(),  # type: ignore[arg-type]
            note=self.note.toPlainText().strip(),
            **kw,
        )

    def _stop_instead(self) -> None:
        self.reject()
        self.host.stop_task()


class AmendDialog(ActionDialog):
    def __init__(self, host: Host, task: dict[str, Any]) -> None:
        super().__init__(host, f"Amend the objective of {task['id']}", "&Amend")
        self.task = task
        self.text = QPlainTextEdit(task["objective"]["text"])
        self.text.setAccessibleName("Objective")
        self.text.setTabChangesFocus(True)
        self.reason = QLineEdit()
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("Why the objective changes (required)")
        for w in (plain_label("Objective:"), self.text, plain_label("Reason:"), self.reason):
            self.add(w)
        self.text.textChanged.connect(self.refresh_buttons)
        self.reason.textChanged.connect(self.refresh_buttons)
        self.refresh_buttons()
        self.fit(600)

    def first_field(self) -> QWidget:
        return self.text

    def ready(self) -> bool:
        return bool(self.text.toPlainText().strip() and self.reason.text().strip())

    def command(self) -> Any:
        from store.commands import AmendObjective

        return AmendObjective(
            task_id=self.task["id"],
            text=self.text.toPlainText().strip(),
            reason=self.reason.text().strip(),
        )


class CriterionDialog(ActionDialog):
    """Add a criterion, or change the wording of one."""

    def __init__(
        self, host: Host, task: dict[str, Any], criterion: dict[str, Any] | None = None
    ) -> None:
        title = "Change criterion" if criterion else "Add a criterion"
        super().__init__(host, f"{title} of {task['id']}", "&Save" if criterion else "&Add")
        self.task, self.criterion = task, criterion
        self.text = QLineEdit(criterion["text"] if criterion else "")
        self.text.setAccessibleName("Criterion")
        self.text.setPlaceholderText("What must be true for the task to be done")
        self.text.textChanged.connect(self.refresh_buttons)
        self.add(plain_label("Criterion:"))
        self.add(self.text)
        self.reason = QLineEdit()
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("Why the wording changes")
        if criterion:
            self.add(plain_label("Reason:"))
            self.add(self.reason)
        self.refresh_buttons()
        self.fit(520)

    def first_field(self) -> QWidget:
        return self.text

    def ready(self) -> bool:
        return bool(self.text.text().strip())

    def command(self) -> Any:
        from store import commands as c

        if self.criterion is None:
            return c.AddCriterion(task_id=self.task["id"], text=self.text.text().strip())
        fields = c.ChangeCriterion.model_fields
        kw: dict[str, Any] = {
            "task_id": self.task["id"],
            "criterion_id": self.criterion["criterion_id"],
            "text": self.text.text().strip(),
        }
        if "reason" in fields:
            kw["reason"] = self.reason.text().strip()
        return c.ChangeCriterion(**kw)


class JudgeDialog(ActionDialog):
    """Satisfied (against the current artifact, on evidence picked from the criterion's
    list), failed, or waived."""

    def __init__(self, host: Host, task: dict[str, Any], criterion: dict[str, Any]) -> None:
        super().__init__(host, f"Judge criterion {criterion['criterion_id']}", "&Judge")
        self.task, self.criterion = task, criterion
        self.add(plain_label(criterion["text"], name="Criterion"))
        self.status = QComboBox()
        self.status.setAccessibleName("Judgement")
        for s in ("satisfied", "failed", "waived"):
            self.status.addItem(words(s), s)
        self.artifact = QComboBox()
        self.artifact.setAccessibleName("Checked against artifact")
        for a in task["artifacts"]:
            self.artifact.addItem(f"{a['artifact_id']} v{a['current_version']}", a["artifact_id"])
        if criterion.get("artifact_id"):
            self.artifact.setCurrentIndex(max(self.artifact.findData(criterion["artifact_id"]), 0))
        self.evidence = QListWidget()
        self.evidence.setAccessibleName("Evidence")
        chosen = set(criterion.get("evidence_ids") or [])
        for e in criterion.get("evidence") or []:
            what = e.get("description") or e.get("kind") or ""
            problem = f" — ⚠ {e['blob_problem']}" if e.get("blob_problem") else ""
            item = QListWidgetItem(
                f"{e['evidence_id']}: {what} ({e.get('kind')}, {t.size(e.get('size'))}, "
                f"{t.when(e.get('at'))}){problem}"
            )
            item.setData(Qt.ItemDataRole.UserRole, e["evidence_id"])
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(
                Qt.CheckState.Checked if e["evidence_id"] in chosen else Qt.CheckState.Unchecked
            )
            self.evidence.addItem(item)
        rows = max(self.evidence.count(), 1)
        self.evidence.setMaximumHeight(min(rows, 6) * 24 + 8)
        self.no_evidence = plain_label(
            "No evidence is attached to this criterion: an agent (or you, with `boris "
            "evidence`) attaches it before it can be judged satisfied.",
            name="No evidence",
        )
        self.no_evidence.setVisible(self.evidence.count() == 0)
        self.evidence.itemChanged.connect(lambda _i: self.refresh_buttons())
        self.note = QLineEdit()
        self.note.setAccessibleName("Note or reason")
        self.note.setPlaceholderText("A note; a waiver needs its reason")
        form = QFormLayout()
        form.addRow("Judgement:", self.status)
        form.addRow("Against:", self.artifact)
        form.addRow("Evidence:", self.evidence)
        form.addRow("", self.no_evidence)
        form.addRow("Note / reason:", self.note)
        box = QWidget()
        box.setLayout(form)
        self.add(box)
        self.status.currentIndexChanged.connect(self._status_changed)
        self.note.textChanged.connect(self.refresh_buttons)
        self._status_changed()
        self.fit(600)

    def first_field(self) -> QWidget:
        return self.status

    def set_status(self, status: str) -> None:
        self.status.setCurrentIndex(self.status.findData(status))

    def evidence_ids(self) -> list[str]:
        out = []
        for i in range(self.evidence.count()):
            item = self.evidence.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                out.append(str(item.data(Qt.ItemDataRole.UserRole)))
        return out

    def _status_changed(self) -> None:
        satisfied = self.status.currentData() == "satisfied"
        self.artifact.setEnabled(satisfied)
        self.evidence.setEnabled(satisfied)
        self.refresh_buttons()

    def ready(self) -> bool:
        status = self.status.currentData()
        if status == "waived":
            return bool(self.note.text().strip())
        if status == "satisfied":
            return bool(self.evidence_ids())
        return True

    def command(self) -> Any:
        from store.commands import JudgeCriterion

        status = self.status.currentData()
        satisfied = status == "satisfied"
        return JudgeCriterion(
            task_id=self.task["id"],
            criterion_id=self.criterion["criterion_id"],
            status=status,
            artifact_id=self.artifact.currentData() if satisfied else None,
            evidence_ids=self.evidence_ids() if satisfied else [],
            note=self.note.text().strip(),
        )


class EditArtifactDialog(ActionDialog):
    """A new version of a text artifact, written in the built-in editor, by the reviewer."""

    def __init__(
        self, host: Host, task: dict[str, Any], artifact: dict[str, Any], text: str
    ) -> None:
        cur = artifact["current"]
        super().__init__(
            host, f"Edit {artifact['name']} (v{cur['version']})", "&Save as a new version"
        )
        self.task, self.artifact, self.original = task, artifact, text
        self.editor = QPlainTextEdit(text)
        self.editor.setAccessibleName("Artifact text")
        self.note = QLineEdit()
        self.note.setAccessibleName("Note")
        self.note.setPlaceholderText("What you changed (optional)")
        self.add(
            plain_label(
                f"Editing version {cur['version']} ({t.digest(cur['digest'])}); saving records "
                "a new version attributed to you."
            )
        )
        self.add(self.editor, 1)
        self.add(self.note)
        self.editor.textChanged.connect(self.refresh_buttons)
        self.resize(760, 560)
        self.refresh_buttons()

    def first_field(self) -> QWidget:
        return self.editor

    def ready(self) -> bool:
        return self.editor.toPlainText() != self.original

    def command(self) -> Any:
        from store.commands import Content, RecordArtifact

        return RecordArtifact(
            task_id=self.task["id"],
            artifact_id=self.artifact["artifact_id"],
            name=self.artifact["name"],
            content=Content(
                text=self.editor.toPlainText(), media_type=self.artifact["current"]["media_type"]
            ),
            note=self.note.text().strip() or "edited by the reviewer",
        )
