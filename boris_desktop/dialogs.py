"""The reviewer's action dialogs: approve / reject, stop, checkpoint, and the edits.

Each shows what the action rests on (from the task state the window loaded), takes the
reviewer's note or reason, and runs one store command on a worker (see `actions`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFormLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QWidget,
)

from . import text as t
from .actions import ActionDialog
from .icons import words
from .widgets import TextPane, heading, plain_label, pretty_json

if TYPE_CHECKING:
    from .main_window import MainWindow


def _note_edit(placeholder: str, name: str) -> QPlainTextEdit:
    edit = QPlainTextEdit()
    edit.setPlaceholderText(placeholder)
    edit.setAccessibleName(name)
    edit.setTabChangesFocus(True)
    edit.setMaximumHeight(90)
    return edit


def why_not_decidable(a: dict[str, Any], now: str | None) -> str | None:
    """Why the loaded request cannot be decided (the store re-checks: this only warns)."""
    if a["state"] == "pending" and now and a["expires_at"] <= now:
        return f"it expired at {t.when(a['expires_at'])}; ask for a new request"
    if a["state"] == "expired":
        return f"it expired at {t.when(a['expires_at'])}; ask for a new request"
    if a["state"] == "stale":
        return "its payload changed after it was requested; a new request is needed"
    if a["state"] == "revoked":
        return "it was revoked (the run stopped or the effect was cancelled)"
    if a["state"] != "pending":
        return f"it was already {words(a['state'])} by {t.actor(a.get('decided_by'))}"
    return None


class ApproveDialog(ActionDialog):
    """The exact prepared object with its digest, consequence, policy, requester, expiry."""

    def __init__(self, window: MainWindow, task_id: str, approval: dict[str, Any], now: str):
        super().__init__(window, f"Decide approval {approval['approval_id']}", "&Approve")
        self.task_id, self.approval = task_id, approval
        self.reject_button = QPushButton("&Reject")
        self.reject_button.setAccessibleName("Reject")
        self.buttons.addButton(self.reject_button, self.buttons.ButtonRole.ActionRole)
        self.reject_button.clicked.connect(lambda: self.decide("rejected"))
        self.ok.setToolTip("Approve this exact object (Ctrl+Return)")
        self.ok.setShortcut("Ctrl+Return")
        a = approval
        form = QFormLayout()
        self.fields = {}
        for key, label, value in (
            ("consequence", "Consequence", a["consequence"]),
            ("digest", "Digest", a["payload_digest"]),
            ("policy", "Policy", a["policy"]),
            (
                "requester",
                "Requested by",
                f"{t.actor(a['requester'])} at {t.when(a['requested_at'])}",
            ),
            ("expiry", "Expires", f"{t.when(a['expires_at'])} (database clock)"),
            ("state", "State", words(a["state"])),
        ):
            self.fields[key] = plain_label(value, name=label)
            form.addRow(label + ":", self.fields[key])
        box = QWidget()
        box.setLayout(form)
        self.add(box)
        self.add(plain_label("The exact prepared object you are approving:"))
        self.payload = TextPane(window.loader, "Prepared object (JSON)")
        self.payload.show_text(pretty_json(a["payload"]), "json")
        self.add(self.payload, 1)
        self.note = _note_edit("A note for the record (optional)", "Note")
        self.add(self.note)
        why = why_not_decidable(a, now)
        if why:
            self.refuse(f"This request cannot be decided: {why}.")
            self.ok.setEnabled(False)
            self.reject_button.setEnabled(False)

    def command(self) -> Any:
        return self._command("approved")

    def _command(self, decision: str) -> Any:
        from store.approvals import DecideApproval

        return DecideApproval(
            task_id=self.task_id,
            approval_id=self.approval["approval_id"],
            decision=decision,  # type: ignore[arg-type]
            note=self.note.toPlainText().strip(),
        )

    def decide(self, decision: str) -> None:
        self.run(lambda: self._command(decision))

    def refresh_buttons(self) -> None:
        super().refresh_buttons()
        self.reject_button.setEnabled(self.ok.isEnabled())

    def _failed(self, message: str) -> None:
        super()._failed(message)
        # Decided, expired or stale meanwhile: it cannot become decidable again.
        self.ok.setEnabled(False)
        self.reject_button.setEnabled(False)


def stop_plan(task: dict[str, Any]) -> dict[str, list[str]]:
    """What StopRun will do, computed from the loaded state (the store decides for real)."""
    now = task.get("now") or ""
    revoke = [
        a["approval_id"]
        for a in task["approvals"]
        if a["state"] in {"pending", "approved"} and a["expires_at"] > now
    ]
    cancel = [e["effect_id"] for e in task["effects"] if e["stage"] in {"planned", "approved"}]
    stay = [
        e["effect_id"]
        for e in task["effects"]
        if e["effect_id"] not in cancel and e.get("unresolved")
    ]
    return {"revoke": revoke, "cancel": cancel, "stay": stay}


class StopDialog(ActionDialog):
    def __init__(self, window: MainWindow, task: dict[str, Any]) -> None:
        super().__init__(window, f"Stop the run of {task['id']}", "&Stop the run")
        self.task = task
        self.plan = stop_plan(task)
        self.add(heading("What stopping will do"))
        lines = [
            "Approvals revoked: " + (", ".join(self.plan["revoke"]) or "none"),
            "Planned effects cancelled: " + (", ".join(self.plan["cancel"]) or "none"),
            "Unknown or unresolved effects that stay for manual reconciliation: "
            + (", ".join(self.plan["stay"]) or "none"),
            "A stopped checkpoint and an account of the stop are written.",
        ]
        self.what = self.add(plain_label("\n".join(f"• {x}" for x in lines), name="Stop plan"))
        self.reason = QLineEdit()
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("Why you are stopping the run (required)")
        self.reason.textChanged.connect(self.refresh_buttons)
        self.add(plain_label("Reason:"))
        self.add(self.reason)
        self.refresh_buttons()

    def ready(self) -> bool:
        return bool(self.reason.text().strip())

    def command(self) -> Any:
        from store.checkpoints import StopRun

        return StopRun(task_id=self.task["id"], reason=self.reason.text().strip())


def pending_work(task: dict[str, Any]) -> list[str]:
    """The loaded state's pending work, in the store's words (`checkpoints.pending_work`)."""
    now = task.get("now") or ""
    out = [
        f"criterion {c['criterion_id']} is {c['status']}"
        for c in task["criteria"]
        if c["status"] not in {"satisfied", "waived"}
    ]
    out += [
        f"effect {e['effect_id']} is {e['stage']}" + (f" ({e['outcome']})" if e["outcome"] else "")
        for e in task["effects"]
        if e.get("unresolved")
    ]
    out += [
        f"approval {a['approval_id']} is " + ("expired" if a["expires_at"] <= now else a["state"])
        for a in task["approvals"]
        if a["state"] in {"pending", "approved"}
    ]
    out += [
        f"phase {p['phase_id']} is {p['readiness']}"
        for p in task.get("phases", [])
        if p.get("readiness") != "done"
    ]
    return out


class CheckpointDialog(ActionDialog):
    """A final checkpoint, or a handoff (or milestone) with the reviewer's note."""

    REASONS = ("final", "handoff", "milestone")

    def __init__(self, window: MainWindow, task: dict[str, Any]) -> None:
        super().__init__(window, f"Checkpoint {task['id']}", "&Write checkpoint")
        self.task = task
        self.pending = pending_work(task)
        self.add(heading("Pending work"))
        self.pending_label = self.add(
            plain_label(
                "\n".join(f"• {x}" for x in self.pending) or "None: the task can be final.",
                name="Pending work",
            )
        )
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
        if self.pending:
            self.radios["final"].setEnabled(False)
            self.radios["final"].setToolTip("Pending work remains")
            self.final_why.setText(
                "Final is unavailable while work is pending. Write a handoff to pass it on, "
                "or stop the run (stopped)."
            )
            self.radios["handoff"].setChecked(True)
        else:
            self.final_why.hide()
            self.radios["final"].setChecked(True)
        self.stop_button = QPushButton("Stop the run instead…")
        self.stop_button.setAccessibleName("Stop the run instead")
        self.stop_button.clicked.connect(self._stop_instead)
        self.add(self.stop_button)
        self.note.textChanged.connect(self.refresh_buttons)
        self.add(plain_label("Note:"))
        self.add(self.note)
        self.refresh_buttons()

    def reason(self) -> str:
        return next((r for r, b in self.radios.items() if b.isChecked()), "handoff")

    def ready(self) -> bool:
        return bool(self.note.toPlainText().strip())

    def command(self) -> Any:
        from store.checkpoints import WriteCheckpoint

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
        self.window_.stop_task()


class AmendDialog(ActionDialog):
    def __init__(self, window: MainWindow, task: dict[str, Any]) -> None:
        super().__init__(window, f"Amend the objective of {task['id']}", "&Amend")
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
        self, window: MainWindow, task: dict[str, Any], criterion: dict[str, Any] | None = None
    ) -> None:
        title = "Change criterion" if criterion else "Add a criterion"
        super().__init__(window, f"{title} of {task['id']}", "&Save" if criterion else "&Add")
        self.task, self.criterion = task, criterion
        self.text = QLineEdit(criterion["text"] if criterion else "")
        self.text.setAccessibleName("Criterion")
        self.text.setPlaceholderText("What must be true for the task to be done")
        self.text.textChanged.connect(self.refresh_buttons)
        self.add(plain_label("Criterion:"))
        self.add(self.text)
        self.reason = QLineEdit()
        self.reason.setAccessibleName("Reason")
        if criterion:
            self.add(plain_label("Reason:"))
            self.add(self.reason)
        self.refresh_buttons()

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
    """Satisfied (against the current artifact, with evidence ids), failed, or waived."""

    def __init__(self, window: MainWindow, task: dict[str, Any], criterion: dict[str, Any]) -> None:
        super().__init__(window, f"Judge criterion {criterion['criterion_id']}", "&Judge")
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
        self.evidence = QLineEdit(", ".join(criterion.get("evidence_ids") or []))
        self.evidence.setAccessibleName("Evidence ids")
        self.evidence.setPlaceholderText("evidence ids, comma separated")
        self.note = QLineEdit()
        self.note.setAccessibleName("Note or reason")
        self.note.setPlaceholderText("a note; a waiver needs its reason")
        form = QFormLayout()
        form.addRow("Judgement:", self.status)
        form.addRow("Against:", self.artifact)
        form.addRow("Evidence:", self.evidence)
        form.addRow("Note / reason:", self.note)
        box = QWidget()
        box.setLayout(form)
        self.add(box)
        self.status.currentIndexChanged.connect(self._status_changed)
        self.note.textChanged.connect(self.refresh_buttons)
        self._status_changed()

    def set_status(self, status: str) -> None:
        self.status.setCurrentIndex(self.status.findData(status))

    def _status_changed(self) -> None:
        satisfied = self.status.currentData() == "satisfied"
        self.artifact.setEnabled(satisfied)
        self.evidence.setEnabled(satisfied)
        self.refresh_buttons()

    def ready(self) -> bool:
        return self.status.currentData() != "waived" or bool(self.note.text().strip())

    def command(self) -> Any:
        from store.commands import JudgeCriterion

        status = self.status.currentData()
        satisfied = status == "satisfied"
        return JudgeCriterion(
            task_id=self.task["id"],
            criterion_id=self.criterion["criterion_id"],
            status=status,
            artifact_id=self.artifact.currentData() if satisfied else None,
            evidence_ids=[
                x.strip() for x in self.evidence.text().split(",") if x.strip() and satisfied
            ],
            note=self.note.text().strip(),
        )


class EditArtifactDialog(ActionDialog):
    """A new version of a text artifact, written in the built-in editor, by the reviewer."""

    def __init__(
        self, window: MainWindow, task: dict[str, Any], artifact: dict[str, Any], text: str
    ) -> None:
        cur = artifact["current"]
        super().__init__(
            window, f"Edit {artifact['name']} (v{cur['version']})", "&Save as a new version"
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
