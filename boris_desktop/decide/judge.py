"""Judge a criterion, deliberately: what is judged is the store's `JudgeDecision`.

No verdict is chosen for the person; evidence made on a superseded artifact version says so
and is not ticked (ticking it asks for the reason it still holds); what each verdict still
needs is the store's word (`JudgeDecision.missing`), never worked out here. The dialog follows
the criterion while open: another judgement shows at once, and the judgement carries the
revision the person saw, so it can be refused as a conflict but never overwrite.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QWidget,
)

from boris_desktop.decide.following import Following
from boris_desktop.decide.versioned import Versioned, change_words
from boris_desktop.host import Host
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import words
from boris_desktop.ui.widgets import plain_label
from store import api

CHOOSE = "Choose…"


class JudgeDialog(Versioned, Following):
    """Satisfied (against an artifact's current version, on evidence picked from the
    criterion's list), failed, or waived: the person picks one."""

    acting = "judging"

    def __init__(self, host: Host, task: api.TaskState, criterion: api.Criterion) -> None:
        cid = criterion.criterion_id
        super().__init__(host, f"Judge criterion {cid}", "&Judge")
        self.task_id, self.criterion_id = task.id, cid
        self.criterion = criterion  # as the window had it when the dialog was opened
        self.decision: api.JudgeDecision | None = None
        self.newest: api.JudgeDecision | None = None
        self.follow(self.task_id, fetch=lambda store: store.judge_decision(self.task_id, cid))
        self.keep_versions(
            "&Look at it now", "Show the criterion as it is now; your note and choices stay"
        )
        self.add(self.changed)
        self.about = plain_label(criterion.text, name="Criterion")
        self.add(self.about)
        self.state = plain_label("Reading the criterion…", name="State")
        self.add(self.state)
        self.verdict = QComboBox()
        self.verdict.setAccessibleName("Judgement")
        self.artifact = QComboBox()
        self.artifact.setAccessibleName("Checked against artifact")
        self.evidence = QListWidget()
        self.evidence.setAccessibleName("Evidence")
        self.evidence.setWordWrap(True)
        self.evidence.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.no_evidence = plain_label(
            "No evidence is attached to this criterion: an agent (or you, with Actions › "
            "Attach Evidence… or `boris attach-evidence`) attaches it before it can be judged "
            "satisfied.",
            name="No evidence",
        )
        self.no_evidence.hide()
        self.older_reason = QLineEdit()
        self.older_reason.setAccessibleName("Why the older evidence still holds")
        self.older_reason.setPlaceholderText(
            "Ticked evidence was made on an older version: why does it still hold?"
        )
        self.note = QLineEdit()
        self.note.setAccessibleName("Note or reason")
        self.note.setPlaceholderText("A note; a waiver needs its reason")
        self.needs = plain_label("", name="What the judgement still needs")
        self.form = QFormLayout()
        self.form.addRow("Judgement:", self.verdict)
        self.form.addRow("Against:", self.artifact)
        self.form.addRow("Evidence:", self.evidence)
        self.form.addRow("", self.no_evidence)
        self.form.addRow("Older evidence:", self.older_reason)
        self.form.addRow("Note / reason:", self.note)
        self.form.addRow("", self.needs)
        box = QWidget()
        box.setLayout(self.form)
        self.add(box)
        self.verdict.currentIndexChanged.connect(self._inputs_changed)
        self.artifact.currentIndexChanged.connect(self._artifact_changed)
        self.evidence.itemChanged.connect(lambda _i: self._inputs_changed())
        self.note.textChanged.connect(self._inputs_changed)
        self.older_reason.textChanged.connect(self._inputs_changed)
        self._set_enabled(False)
        self.follower.force()  # the first read fills the dialog
        self.fit(600)

    def first_field(self) -> QWidget:
        return self.verdict

    # --- what the store says ------------------------------------------------------------

    def task_changed(self, task: Any) -> None:
        decision: api.JudgeDecision = task
        self.newest = decision
        if self.decision is None:
            self._show(decision)
            return
        self.moved(
            decision.rev,
            f"{change_words(decision.last_change, 'The criterion changed')}, while this was "
            f"open (it is {words(decision.state)} now)",
        )
        shown = self.decision
        if decision.rev == self.based_on and _versions(decision) != _versions(shown):
            # An artifact has a newer version though the criterion did not change: what the
            # judgement and its evidence are checked against moved.
            now = ", ".join(
                f"{a.artifact_id} v{a.current_version}"
                for a in decision.artifacts
                if (a.artifact_id, a.current_version) not in _versions(shown)
            )
            self.moved(
                decision.rev,
                f"A newer version was recorded while this was open: {now}",
                beside=True,
            )

    def rebased(self) -> None:
        if self.newest is not None:
            self._show(self.newest)

    def _show(self, d: api.JudgeDecision) -> None:
        """Show the decision; what the person already chose, ticked or wrote stays."""
        first = self.decision is None
        picked_verdict = self.chosen_verdict()
        picked_artifact = self.artifact.currentData()
        ticked = set(self.evidence_ids())
        self.decision, self.based_on = d, d.rev
        state = f"It is {words(d.state)}"
        if d.judged_artifact and d.judged_version is not None:
            state += f", judged against {d.judged_artifact} v{d.judged_version}"
        if d.stale_reason:
            state += f": {d.stale_reason}"
        self.about.setText(d.text)
        self.state.setText(state + ".")
        with _quiet(self.verdict, self.artifact, self.evidence):
            self.verdict.clear()
            self.verdict.addItem(CHOOSE, None)
            for v in d.verdicts:
                self.verdict.addItem(words(v.verdict), v.verdict)
                self.verdict.setItemData(
                    self.verdict.count() - 1, f"Needs {v.words}", Qt.ItemDataRole.ToolTipRole
                )
            self.verdict.setCurrentIndex(max(self.verdict.findData(picked_verdict), 0))
            self.artifact.clear()
            for a in d.artifacts:
                self.artifact.addItem(f"{a.artifact_id} v{a.current_version}", a.artifact_id)
            want = picked_artifact if not first else d.default_artifact
            self.artifact.setCurrentIndex(self.artifact.findData(want) if want else -1)
            self.evidence.clear()
            artifact = self.artifact.currentData()
            for e in d.evidence:
                item = QListWidgetItem(self._evidence_text(e, artifact))
                item.setData(Qt.ItemDataRole.UserRole, e.evidence_id)
                item.setToolTip(
                    f"Attached at {t.when(e.at)}" + (f"; {e.locator}" if e.locator else "")
                )
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                # Cited by the last judgement and speaking for the current version: offered
                # ticked. Evidence of a superseded version is never ticked for the person.
                on = e.evidence_id in ticked if not first else e.cited
                on = on and (not first or e.current_for(artifact))
                item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
                self.evidence.addItem(item)
        self._fit_evidence()
        self.no_evidence.setVisible(self.evidence.count() == 0)
        self._set_enabled(True)
        self._inputs_changed()

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self._fit_evidence()  # wrapped lines take the height the new width gives them

    def _fit_evidence(self) -> None:
        rows = [self.evidence.sizeHintForRow(i) for i in range(self.evidence.count())]
        shown = sum(rows[:4]) if rows else 24
        self.evidence.setFixedHeight(shown + 2 * self.evidence.frameWidth() + 4)

    @staticmethod
    def _evidence_text(e: api.EvidenceOffered, artifact: str | None) -> str:
        # Two lines: what it is, then which version it speaks for (never scrolled out of
        # sight: that is what the person must see before ticking it).
        what = e.description or words(e.kind)
        # The version the record says it was made on, whatever it is judged against; where
        # the record names none, the one the store dates it to for the artifact chosen.
        origin = e.made_on or e.origin(artifact)
        made = "" if origin is None else ("" if origin.current else "⚠ ") + origin.words
        problem = f"⚠ {e.problem}" if e.problem else ""
        about = " · ".join(x for x in (made, problem) if x)
        facts = f"{words(e.kind)}, {t.size(e.size)}"
        return f"{e.evidence_id}: {what} ({facts})" + (f"\n{about}" if about else "")

    # --- the person's input -------------------------------------------------------------

    def chosen_verdict(self) -> api.CriterionState | None:
        data = self.verdict.currentData()
        return None if data is None else api.CriterionState(data)

    def set_status(self, status: str) -> None:
        self.verdict.setCurrentIndex(self.verdict.findData(status))

    def evidence_ids(self) -> list[str]:
        out = []
        for i in range(self.evidence.count()):
            item = self.evidence.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                out.append(str(item.data(Qt.ItemDataRole.UserRole)))
        return out

    def _needs(self, verdict: api.CriterionState | None) -> api.VerdictNeeds | None:
        d = self.decision
        return next((v for v in d.verdicts if v.verdict == verdict), None) if d else None

    def _artifact_changed(self) -> None:
        d = self.decision
        if d is not None:
            artifact = self.artifact.currentData()
            by_id = {e.evidence_id: e for e in d.evidence}
            with _quiet(self.evidence):
                for i in range(self.evidence.count()):
                    item = self.evidence.item(i)
                    e = by_id[str(item.data(Qt.ItemDataRole.UserRole))]
                    item.setText(self._evidence_text(e, artifact))
        self._inputs_changed()

    def older(self) -> list[str]:
        d = self.decision
        if d is None:
            return []
        return d.older(self.artifact.currentData(), self.evidence_ids())

    def _inputs_changed(self) -> None:
        needs = self._needs(self.chosen_verdict())
        on_artifact = bool(needs and needs.artifact)
        # Before a verdict is chosen the evidence stays readable (what it was made on is
        # what the person weighs); a verdict that takes none greys it out.
        self.artifact.setEnabled(needs is None or needs.artifact)
        self.evidence.setEnabled(needs is None or needs.evidence)
        older = self.older() if on_artifact else []
        self.older_reason.setVisible(bool(older))
        label = self.form.labelForField(self.older_reason)
        if label is not None:
            label.setVisible(bool(older))
        missing = self.missing()
        self.needs.setText(f"Still needed: {missing}." if missing else "")
        self.refresh_buttons()

    def missing(self) -> str | None:
        """What the chosen verdict still needs, in the store's words (None: ready)."""
        d = self.decision
        if d is None:
            return "the criterion is still being read"
        verdict = self.chosen_verdict()
        needs = self._needs(verdict)
        on_artifact = bool(needs and needs.artifact)
        return d.missing(
            verdict,
            artifact_id=self.artifact.currentData() if on_artifact else None,
            evidence_ids=self.evidence_ids() if needs and needs.evidence else [],
            note=self.note.text(),
            older_evidence_reason=self.older_reason.text(),
        )

    def ready(self) -> bool:
        return self.missing() is None and self.latest is None

    def _set_enabled(self, on: bool) -> None:
        for w in (self.verdict, self.note):
            w.setEnabled(on)

    def command(self) -> Any:
        verdict = self.chosen_verdict()
        if verdict is None:
            raise ValueError("choose a verdict first")
        needs = self._needs(verdict)
        on_artifact = bool(needs and needs.artifact)
        artifact = self.artifact.currentData() if on_artifact else None
        version = None
        if artifact and self.decision is not None:
            version = next(
                a.current_version for a in self.decision.artifacts if a.artifact_id == artifact
            )
        older = self.older() if on_artifact else []
        # Validated as the CLI's JSON is: the verdict offered is one of the store's VERDICTS
        # (a CriterionState), whose value the command's `status` takes.
        return api.JudgeCriterion.model_validate(
            {
                "task_id": self.task_id,
                "criterion_id": self.criterion_id,
                "status": verdict,
                "artifact_id": artifact,
                "artifact_version": version,
                "evidence_ids": self.evidence_ids() if needs and needs.evidence else [],
                "note": self.note.text().strip(),
                "based_on": self.based_on,
                "older_evidence_reason": self.older_reason.text().strip() if older else None,
            }
        )


def _versions(d: api.JudgeDecision) -> set[tuple[str, int]]:
    return {(a.artifact_id, a.current_version) for a in d.artifacts}


@contextmanager
def _quiet(*widgets: QWidget) -> Iterator[None]:
    """Block the widgets' signals while they are refilled (no half-filled re-checks)."""
    for w in widgets:
        w.blockSignals(True)
    try:
        yield
    finally:
        for w in widgets:
            w.blockSignals(False)
