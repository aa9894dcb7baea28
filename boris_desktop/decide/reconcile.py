"""Reconcile an uncertain effect: intent, attempts, a current observation, a decision.

A file target is observed by the store itself (`store.services.reconcile.observe_and_judge`:
hashed once, outside the write lock, recorded as an observation) and the verdict it supports is shown
beside a diff of the intended content against the file as it is now. The decision names that
observation, so it rests on exactly what the reviewer saw. Deciding other than the store's
verdict is an override of its observation: offered only as such, explicitly, with the
reason in the note (`api.decision_refusal` says which decisions need it).

A destination (https://…, smtp://…, mailto:…; `api.is_destination`) is not readable by
the store: the reviewer checks it by hand, and the decision records what they found.

While the dialog is open a watchdog watcher follows a file target; if a fresh hash differs
from the observation shown, the decisions are disabled and a banner says what changed, until
the reviewer observes again. The dialog also follows the store: an effect reconciled or
observed by someone else meanwhile is said so, and the decisions are disabled.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLineEdit, QProgressBar, QWidget

from boris_desktop.decide.base import ActionDialog, reviewer_actor
from boris_desktop.decide.content_view import DIFF_CAP, _file_diff, file_state, same
from boris_desktop.host import Host
from boris_desktop.runtime.follow import Follower
from boris_desktop.runtime.watch import FileWatcher
from boris_desktop.ui import text as t
from boris_desktop.ui.widgets import (
    TextPane,
    elided_label,
    notice_banner,
    plain_label,
    pretty_json,
)
from store import api

if TYPE_CHECKING:
    from store.api import FileState

_serial = itertools.count(1)


@dataclass(frozen=True)
class Looked:
    """What the reviewer's decision rests on: the observation shown, and for a file what
    the store made of it (its verdict and reasons) with the diff beside it."""

    #: None: a destination nothing was observed at yet (the decision records the finding).
    observation_id: str | None
    at: str | None = None
    #: The file as the store observed it (None for a destination: the store cannot read it).
    state: FileState | None = None
    #: The store's verdict on a file (None for a destination: the person decides by hand).
    verdict: api.Verdict | None = None
    reasons: tuple[str, ...] = ()
    diff: str = ""


def _diff(store: Any, target: str, digest: str | None, exists: bool) -> str:
    if not digest:
        return "(the intent has no content: nothing to compare)"
    try:
        with open(store.blobs.path_of(digest), "rb") as f:
            intended = f.read(DIFF_CAP + 1)
    except OSError:
        return "(the intended content is not in the blob store: no diff)"
    current = None
    if exists:
        try:
            with open(target, "rb") as f:
                current = f.read(DIFF_CAP + 1)
        except OSError:
            current = None
    cut = len(intended) > DIFF_CAP or (current is not None and len(current) > DIFF_CAP)
    try:
        return _file_diff(
            intended[:DIFF_CAP], None if current is None else current[:DIFF_CAP], target, cut
        )
    except UnicodeDecodeError:
        return "(binary content: no text diff)"


def observe(store: Any, actor: Any, task_id: str, effect_id: str) -> Looked:
    """On a worker: the store observes the target (one hash), records it and judges it; the
    diff of the intended content against the file as it is now."""
    from store.api import observe_and_judge

    obs = observe_and_judge(store, actor, task_id, effect_id)
    return Looked(
        obs.observation_id,
        obs.at,
        obs.state,
        obs.verdict,
        obs.reasons,
        _diff(store, obs.target, obs.intended_digest, obs.state.exists),
    )


def what_next(effect: api.Effect) -> str:
    """What the reviewer can do about this effect, from the rules the brief uses."""
    rec = effect.reconciliation
    stage, outcome = effect.stage, effect.outcome
    if api.conflict_undecided(stage, outcome, rec.verdict if rec else None):
        why = "; ".join(rec.reasons if rec else [])
        return (
            "Reconciling found a conflict" + (f" ({why})" if why else "") + ". A person decides "
            "it: inspect the target, then decide Present (the intended content is there), "
            "Absent (it did not happen: a new attempt is allowed) or Conflict (it stays for "
            "someone to sort out), with a note saying what you found."
        )
    return "Next: " + api.recovery(stage, outcome, effect.requires_approval) + "."


def _intent_json(e: api.Effect) -> str:
    """The effect's intent and attempts as recorded, for the JSON pane."""
    intent = e.intent
    return pretty_json({
        "target": e.target,
        "pre_state": intent.pre_state.to_json() if intent.pre_state else None,
        "intended": intent.intended.to_json(),
        "attempts": [
            a.model_dump(mode="json", include={"attempt_no", "executor", "started_at",
                                               "ended_at", "response", "error", "outcome"})
            for a in e.attempts
        ],
    })  # fmt: skip


class ReconcileDialog(ActionDialog):
    irreversible = True

    def __init__(self, host: Host, task_id: str, effect: api.Effect) -> None:
        super().__init__(host, f"Reconcile effect {effect.effect_id}", "&Present")
        self.task_id, self.effect = task_id, effect
        # The effect's reconciliation as this reviewer saw it: their verdict is refused as a
        # conflict if another is recorded meanwhile, never written over it.
        self.based_on = _reconciliation_seq(effect)
        self.observation: Looked | None = None
        self.changed_note: str | None = None
        self.gone: str | None = None
        self._hint_since_observe = False
        self._id = next(_serial)
        self.file_target = not api.is_destination(effect.target)
        self._add_effect(effect)
        self._add_observation()
        self._add_decision()
        self._follow(effect)
        self.resize(860, 720)
        self.refresh_buttons()
        self.observe()

    def _add_effect(self, e: api.Effect) -> None:
        """The target, what happens there, what can be done next, and the intent with its
        attempts as recorded."""
        # The target in one line, elided in the middle (the whole of it in the tooltip): a
        # path's length never sets the dialog's width. The sentences below say "the target".
        self.target_line = elided_label(f"{e.kind} → {e.target}", name="Target", bold=True)
        self.add(self.target_line)
        self.add(plain_label(e.consequence, name="Consequence"))
        self.next_step = plain_label(what_next(e), name="What you can do next")
        self.add(self.next_step)
        self.store_changed = notice_banner("Changed in the store")
        self.store_changed.hide()
        self.add(self.store_changed)
        self.intent = TextPane(self.host.loader, "Intent, attempts and responses")
        self.intent.show_text(_intent_json(e), "json")
        self.add(self.intent, 2)

    def _add_observation(self) -> None:
        """The current observation (Observe again beside it), the banner saying the target
        moved since, and the diff against the file as it is now."""
        row = QWidget()
        rl = QHBoxLayout(row)
        rl.setContentsMargins(0, 0, 0, 0)
        self.obs_label = plain_label("Observing the target…", name="Current observation")
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Observing the target")
        self.progress.setRange(0, 0)
        self.again = self.add_button("&Observe again", "Observe the target again")
        self.buttons.removeButton(self.again)
        self.again.clicked.connect(self.observe)
        rl.addWidget(self.obs_label, 1)
        rl.addWidget(self.progress)
        rl.addWidget(self.again)
        self.add(row)
        self.banner = notice_banner("Target changed")
        self.banner.hide()
        self.add(self.banner)
        self.diff = TextPane(self.host.loader, "Intended content against the current file")
        self.add(self.diff, 2)

    def _add_decision(self) -> None:
        """The override, the note, and a button per verdict (Present is the dialog's own)."""
        self.override = QCheckBox(
            "Over&ride the store's observation: I decide otherwise, for the reason in my note"
        )
        self.override.setAccessibleName("Override the observation")
        self.override.toggled.connect(self.refresh_buttons)
        self.override.hide()
        self.add(self.override)
        self.note = QLineEdit()
        self.note.setAccessibleName("Note")
        self.note.setPlaceholderText("What you found and why you decide so (required)")
        self.note.textChanged.connect(self.refresh_buttons)
        self.add(self.note)
        self.decide_buttons = {api.Verdict.PRESENT: self.ok}
        self.ok.setToolTip("The intended post-state is at the target")
        # Mnemonics: Alt+P, Alt+B, Alt+N; never Alt+C, which is Cancel's.
        for d, label, tip in (
            (api.Verdict.ABSENT, "A&bsent", "The effect did not happen"),
            (
                api.Verdict.CONFLICT,
                "Co&nflict",
                "Something else is there: it stays for a person to sort out",
            ),
        ):
            b = self.add_button(label, tip)
            b.clicked.connect(lambda _=False, d=d: self.decide(d))
            self.decide_buttons[d] = b

    def _follow(self, e: api.Effect) -> None:
        """Follow the target on disk and the task in the store while the dialog is open."""
        self.watcher = FileWatcher(self)
        self.watcher.changed.connect(self._target_changed)
        if self.file_target:
            self.watcher.watch([e.target])
        self.follower = Follower(self.host, self.task_id, self._task_changed, self)
        self.finished.connect(self._stop_following)
        # The dialog records its own observations of this effect; the window's watcher must
        # not slip one in between the reviewer's observation and decision.
        hold = getattr(getattr(self.host, "file_watch", None), "hold", None)
        if hold is not None:
            eid = e.effect_id
            hold.add(eid)
            self.finished.connect(lambda _r: hold.discard(eid))

    def first_field(self) -> QWidget:
        return self.note

    def _stop_following(self, _result: int) -> None:
        self.watcher.stop()
        self.follower.stop()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.follower.start()

    # --- observing -----------------------------------------------------------------------

    def observe(self) -> None:
        store, actor = self.host.store, reviewer_actor()
        self.observation = None
        self.changed_note = None
        self._hint_since_observe = False
        # Looking again is looking at the effect as it is now, a verdict recorded meanwhile
        # included: the decision is based on that.
        self.based_on = _reconciliation_seq(self.effect)
        self.banner.hide()
        self.error.hide()
        if not self.file_target:
            self._observed_destination()
            return
        if store is None or actor is None:
            # The observation is recorded in the reviewer's name: none is made without one.
            self.progress.hide()
            self.obs_label.setText("Not observed yet: say who you are, then Observe again.")
            self.refuse("say who you are first (File → Reviewer…)")
            return
        self.progress.setRange(0, 0)
        self.progress.show()
        self.obs_label.setText("The store is observing the target…")
        self.refresh_buttons()
        effect_id, task_id = self.effect.effect_id, self.task_id
        self.host.loader.submit(
            f"observe:{self._id}",
            lambda: observe(store, actor, task_id, effect_id),
            self._observed,
            self._observe_failed,
        )

    def _observed_destination(self) -> None:
        obs = self.effect.observations[-1] if self.effect.observations else None
        self.progress.hide()
        self.again.hide()
        if obs is None:
            self.obs_label.setText(
                "The store cannot read this destination itself and nothing was observed there "
                "yet: check it by hand; your decision records what you found, and your note "
                "says how you checked."
            )
            self.observation = Looked(None)
        else:
            self.observation = Looked(obs.observation_id, obs.at)
            self.obs_label.setText(
                f"Latest observation {obs.observation_id} at {t.when(obs.at)}: "
                + ("absent" if not obs.exists else t.digest(obs.digest))
                + ". The store cannot read this destination: decide by hand, with a note."
            )
        self.diff.show_text("(a destination: the store cannot read it, so there is no diff)")
        self.rearm()

    def _observe_failed(self, error: Exception) -> None:
        self.progress.hide()
        self.obs_label.setText("Could not observe the target.")
        self.refuse(str(error))
        self.refresh_buttons()

    def _observed(self, result: Looked) -> None:
        self.progress.hide()
        self.observation = result
        s = result.state
        what = (
            f"{t.digest(s.digest)}, {t.size(s.size)}" if s is not None and s.exists else "missing"
        )
        self.obs_label.setText(
            f"Observation {result.observation_id} at {t.when(result.at)}: {what}. "
            f"The store's verdict: {result.verdict} — {'; '.join(result.reasons)}"
        )
        self.diff.show_text(result.diff, "diff")
        self.override.setVisible(result.verdict is not api.Verdict.CONFLICT)
        self.override.setChecked(False)
        if self._hint_since_observe:
            self._rehash("modified")
        self.rearm()

    # --- the watchdog --------------------------------------------------------------------

    def _target_changed(self, _path: str, what: str) -> None:
        if self.observation is None:
            self._hint_since_observe = True
            return
        self._rehash(what)

    def _rehash(self, what: str) -> None:
        target, shown = self.effect.target, self.observation

        def fresh(state: FileState) -> None:
            if self.observation is shown and shown is not None and not same(state, shown.state):
                now = t.digest(state.digest) if state.exists else "missing"
                self._mark_changed(f"{what}; it now holds {now}")

        self.host.loader.submit(f"rehash:{self._id}", lambda: file_state(target), fresh)

    def _mark_changed(self, what: str) -> None:
        self.changed_note = what
        self.banner.setText(
            f"The target changed after the observation shown ({what}). Decisions are "
            "disabled until you observe it again."
        )
        self.banner.show()
        self.refresh_buttons()

    # --- following the store -------------------------------------------------------------

    def _task_changed(self, task: api.TaskState) -> None:
        eid = self.effect.effect_id
        e = next((x for x in task.effects if x.effect_id == eid), None)
        if e is None:
            return
        self.next_step.setText(what_next(e))
        if not api.effect_reconcilable(e.stage):
            rec = e.reconciliation
            self.gone = f"it is {words(e.stage)}" + (f" ({rec.verdict})" if rec else "")
            self.store_changed.setText(
                f"While this was open the effect became {words(e.stage)}"
                + (f", verdict {rec.verdict}, by {t.actor(rec.by)}" if rec else "")
                + ": there is nothing left to decide here."
            )
            self.store_changed.show()
        else:
            mine = self.observation.observation_id if self.observation else None
            latest = e.observations[-1] if e.observations else None
            if mine and latest and latest.observation_id != mine and self.file_target:
                self._mark_changed(
                    f"a newer observation {latest.observation_id} was recorded at "
                    f"{t.when(latest.at)} by {t.actor(latest.observer)}"
                )
        self.effect = e if self.gone is None else self.effect
        self.refresh_buttons()

    # --- deciding ------------------------------------------------------------------------

    def ready(self) -> bool:
        return (
            self.gone is None
            and self.observation is not None
            and self.changed_note is None
            and bool(self.note.text().strip())
        )

    def allowed(self, decision: api.Verdict) -> bool:
        """Whether the store's rules accept this decision now (`api.decision_refusal`)."""
        obs = self.observation
        if obs is None:
            return False
        computed = obs.verdict or api.Verdict.CONFLICT
        override = self.override.isChecked() and self.override.isVisible()
        return (
            api.decision_refusal(
                self.effect.target, computed, decision, override,
                self.note.text(),
            )
            is None
        )  # fmt: skip

    def refresh_buttons(self) -> None:
        super().refresh_buttons()
        on = self.can_decide()
        for d, b in getattr(self, "decide_buttons", {}).items():
            b.setEnabled(on and self.allowed(d))
        if hasattr(self, "again"):
            self.again.setEnabled(
                not self.running and not self.host.loader.busy(f"observe:{self._id}")
            )

    def decide(self, decision: api.Verdict) -> None:
        if self.allowed(decision):
            self.run(lambda: self._command(decision))

    def act(self) -> None:
        self.decide(api.Verdict.PRESENT)

    def command(self) -> Any:
        return self._command(api.Verdict.PRESENT)

    def _command(self, decision: api.Verdict) -> Any:
        from store.api import ReconcileEffect

        assert self.observation is not None
        if not self.file_target:
            return _ByHand(self.task_id, self.effect.effect_id, decision, self.note.text().strip())
        computed = self.observation.verdict
        return ReconcileEffect.model_validate(
            {
                "task_id": self.task_id,
                "effect_id": self.effect.effect_id,
                "observation_id": self.observation.observation_id,
                "decision": decision.value,
                "override": bool(self.override.isChecked() and decision != computed),
                "note": self.note.text().strip(),
                "based_on": self.based_on,
            }
        )

    def run(self, make: Callable[[], Any]) -> None:
        if self.file_target:
            super().run(make)
            return
        # A destination with no observation needs two writes (the reviewer's finding, then
        # the decision): one worker call.
        if self.running or not self.can_decide():
            return
        store, actor = self.host.store, reviewer_actor()
        if store is None or actor is None:
            super().run(make)  # says why (no store, no reviewer)
            return
        d = make()
        self.running = True
        self.refresh_buttons()
        self.error.hide()

        def done(r: Any) -> None:
            self._done(r)
            self.host.reload()

        def failed(err: Exception) -> None:
            self._failed(err)
            self.host.reload()

        based_on = self.based_on
        self.host.loader.submit(
            f"decide:{self._id}",
            lambda: api.reconcile_by_hand(
                store, actor, d.task_id, d.effect_id, d.decision, d.note, based_on
            ),
            done,
            failed,
        )

    def _failed(self, error: Exception) -> None:
        from store.api import TargetChanged

        super()._failed(error)
        if isinstance(error, TargetChanged):
            self._mark_changed("the store saw it differ when deciding")


def _reconciliation_seq(effect: api.Effect) -> int:
    """The version of an effect's reconciliation (the seq of its last verdict; 0: none)."""
    return effect.reconciliation.seq if effect.reconciliation else 0


@dataclass(frozen=True)
class _ByHand:
    """A destination's decision, reconciled by the person's finding (`reconcile_by_hand`)."""

    task_id: str
    effect_id: str
    decision: api.Verdict
    note: str


def words(s: str | None) -> str:
    return (s or "—").replace("_", " ")
