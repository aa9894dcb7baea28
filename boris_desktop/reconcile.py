"""Reconcile an uncertain effect: intent, attempts, a current observation, a decision.

The target is hashed on a worker (with progress) and the observation is recorded in the
store (ObserveEffect) so the decision rests on exactly what the reviewer saw: ReconcileEffect
names that observation's id. While the dialog is open a watchdog watcher follows the target;
if a fresh hash differs from the observation shown, the decisions are disabled and a banner
says what changed and when, until the reviewer observes again.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QProgressBar, QPushButton, QWidget

from . import text as t
from .actions import ActionDialog, message_of, reviewer_actor
from .runtime import paused
from .watch import FileWatcher
from .widgets import TextPane, heading, notice_banner, plain_label, pretty_json

if TYPE_CHECKING:
    from .main_window import MainWindow

CHUNK = 1 << 20
DIFF_CAP = 2_000_000  # bytes of each side compared as text
_serial = itertools.count(1)


class _Progress(QObject):
    progress = Signal(int, int)  # bytes done, total (signals carry ints up to 2**31: KiB)


def hash_file(path: str, report: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """The target's state now: exists, sha256 digest, size (streamed)."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return {"exists": False, "digest": None, "size": None}
    h = hashlib.sha256()
    done = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            done += len(chunk)
            if report is not None:
                report(done // 1024, max(size // 1024, 1))
    return {"exists": True, "digest": "sha256:" + h.hexdigest(), "size": done}


def same(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    if a is None or b is None:
        return False
    return bool(a.get("exists")) == bool(b.get("exists")) and (
        not a.get("exists") or a.get("digest") == b.get("digest")
    )


def _diff(intended: bytes | None, current: bytes | None, target: str) -> str:
    if intended is None:
        return "(the intended content is not in the blob store: no diff)"
    if current is None:
        return "(the target is missing: nothing to compare with the intended content)"
    try:
        a = intended[:DIFF_CAP].decode("utf-8").splitlines(keepends=True)
        b = current[:DIFF_CAP].decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return "(binary content: no text diff)"
    with paused():  # difflib makes a container per line: see runtime
        out = "".join(
            difflib.unified_diff(a, b, fromfile="intended", tofile=f"current {target}", n=3)
        )
    return out or "(the current file is the intended content)"


def observe(store: Any, actor: Any, task_id: str, effect: dict[str, Any], report: Any) -> Any:
    """On a worker: hash the target, record the store's observation, diff with the intent."""
    from store.events import FileState
    from store.ledger import ObserveEffect, compute_verdict

    target = effect["target"]
    seen = hash_file(target, report)
    obs_id = store.execute(
        ObserveEffect(task_id=task_id, effect_id=effect["effect_id"], purpose="reconcile"), actor
    )
    task = store.task(task_id)
    eff = next(x for x in task["effects"] if x["effect_id"] == effect["effect_id"])
    obs = next(o for o in eff["observations"] if o["observation_id"] == obs_id)
    recorded = {"exists": bool(obs["exists"]), "digest": obs["digest"], "size": obs["size"]}
    intended_digest = (effect["intent"].get("intended") or {}).get("digest")
    blob = None
    if intended_digest:
        try:
            blob = store.blobs.read(intended_digest)
        except Exception:
            blob = None
    current = None
    if recorded["exists"]:
        try:
            with open(target, "rb") as f:
                current = f.read(DIFF_CAP)
        except OSError:
            current = None
    responses = [a["response"] for a in eff["attempts"] if a.get("response")]
    verdict, reasons = compute_verdict(
        eff["intent"], FileState.model_validate(recorded), responses, target
    )
    return {
        "observation_id": obs_id,
        "at": obs.get("at"),
        "state": recorded,
        "hashed": seen,
        "diff": _diff(blob, current, os.path.basename(target)),
        "verdict": verdict,
        "reasons": reasons,
    }


class ReconcileDialog(ActionDialog):
    DECISIONS = ("present", "absent", "conflict")

    def __init__(self, window: MainWindow, task_id: str, effect: dict[str, Any]) -> None:
        super().__init__(window, f"Reconcile effect {effect['effect_id']}", "&Present")
        self.task_id, self.effect = task_id, effect
        self.observation: dict[str, Any] | None = None
        self.changed_note: str | None = None
        self._hint_since_observe = False
        self._id = next(_serial)
        self.file_target = "://" not in effect["target"]
        e = effect
        self.add(heading(f"{e['kind']} → {e['target']}"))
        self.add(plain_label(e["consequence"], name="Consequence"))
        intent = e["intent"]
        self.intent = TextPane(window.loader, "Intent, attempts and responses")
        self.intent.show_text(
            pretty_json(
                {
                    "target": e["target"],
                    "pre_state": intent.get("pre_state"),
                    "intended": intent.get("intended"),
                    "attempts": [
                        {k: a.get(k) for k in ("attempt_no", "executor", "started_at",
                                                "ended_at", "response", "error", "outcome")}
                        for a in e["attempts"]
                    ],
                }
            ),
            "json",
        )  # fmt: skip
        self.add(self.intent, 2)
        row = QWidget()
        rl = QHBoxLayout(row)
        rl.setContentsMargins(0, 0, 0, 0)
        self.obs_label = plain_label("Observing the target…", name="Current observation")
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Hashing the target")
        self.progress.setRange(0, 0)
        self.again = QPushButton("&Observe again")
        self.again.setAccessibleName("Observe again")
        self.again.clicked.connect(self.observe)
        rl.addWidget(self.obs_label, 1)
        rl.addWidget(self.progress)
        rl.addWidget(self.again)
        self.add(row)
        self.banner = notice_banner("Target changed")
        self.banner.hide()
        self.add(self.banner)
        self.diff = TextPane(window.loader, "Intended content against the current file")
        self.add(self.diff, 2)
        self.note = QLineEdit()
        self.note.setAccessibleName("Note")
        self.note.setPlaceholderText("Why you decide so (required)")
        self.note.textChanged.connect(self.refresh_buttons)
        self.add(self.note)
        self.decide_buttons: dict[str, QPushButton] = {"present": self.ok}
        self.ok.setToolTip("The intended post-state is at the target")
        for d, tip in (
            ("absent", "The effect did not happen"),
            ("conflict", "Something else is there: a person must sort it out"),
        ):
            b = QPushButton(f"&{d.capitalize()}")
            b.setAccessibleName(d.capitalize())
            b.setToolTip(tip)
            b.clicked.connect(lambda _=False, d=d: self.decide(d))
            self.buttons.addButton(b, self.buttons.ButtonRole.ActionRole)
            self.decide_buttons[d] = b
        self._relay = _Progress(self)
        self._relay.progress.connect(self._progress)
        self.watcher = FileWatcher(self)
        self.watcher.changed.connect(self._target_changed)
        if self.file_target:
            self.watcher.watch([e["target"]])
        self.finished.connect(lambda _r: self.watcher.stop())
        # The dialog records its own observations of this effect; the window's watcher must
        # not slip one in between the reviewer's observation and decision.
        hold = getattr(getattr(window, "file_watch", None), "hold", None)
        if hold is not None:
            hold.add(e["effect_id"])
            self.finished.connect(lambda _r: hold.discard(e["effect_id"]))
        self.resize(820, 680)
        self.refresh_buttons()
        self.observe()

    # --- observing -----------------------------------------------------------------------

    def observe(self) -> None:
        store, actor = self.window_.store, reviewer_actor()
        if store is None or actor is None:
            # The observation is recorded in the reviewer's name: none is made without one.
            self.progress.hide()
            self.obs_label.setText("Not observed yet: say who you are, then Observe again.")
            self.refuse("say who you are first (File → Reviewer…)")
            return
        self.observation = None
        self.changed_note = None
        self._hint_since_observe = False
        self.banner.hide()
        self.error.hide()
        self.progress.setRange(0, 0)
        self.progress.show()
        self.obs_label.setText("Observing the target…")
        self.refresh_buttons()
        if not self.file_target:
            self._observed_destination()
            return
        relay, effect, task_id = self._relay, self.effect, self.task_id

        def report(done: int, total: int) -> None:
            relay.progress.emit(done, total)

        self.window_.loader.submit(
            f"observe:{self._id}",
            lambda: observe(store, actor, task_id, effect, report),
            self._observed,
            lambda err: self._observe_failed(message_of(err)),
        )

    def _observed_destination(self) -> None:
        obs = (self.effect.get("observations") or [None])[-1]
        self.progress.hide()
        if obs is None:
            self.obs_label.setText(
                "The store cannot read this destination itself and nothing was observed there "
                "yet: check it by hand; the decision rests on your note."
            )
            self.observation = {"observation_id": None, "state": None}
        else:
            self.observation = {"observation_id": obs["observation_id"], "state": obs}
            self.obs_label.setText(
                f"Latest observation {obs['observation_id']} at {t.when(obs.get('at'))}: "
                + ("absent" if not obs.get("exists") else t.digest(obs.get("digest")))
            )
        self.diff.show_text("(a destination: no file to compare)")
        self.refresh_buttons()

    def _progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, total)
        self.progress.setValue(done)

    def _observe_failed(self, message: str) -> None:
        self.progress.hide()
        self.obs_label.setText("Could not observe the target.")
        self.refuse(message)
        self.refresh_buttons()

    def _observed(self, result: dict[str, Any]) -> None:
        self.progress.hide()
        self.observation = result
        s = result["state"]
        what = "missing" if not s["exists"] else f"{t.digest(s['digest'])}, {t.size(s['size'])}"
        self.obs_label.setText(
            f"Observation {result['observation_id']} at {t.when(result['at'])}: {what}. "
            f"Suggested: {result['verdict']} — {'; '.join(result['reasons'])}"
        )
        self.diff.show_text(result["diff"], "diff")
        if not same(result["hashed"], s):
            self._mark_changed("changed while it was being observed")
        elif self._hint_since_observe:
            self._rehash("modified")
        self.refresh_buttons()

    # --- the watchdog --------------------------------------------------------------------

    def _target_changed(self, _path: str, what: str) -> None:
        if self.observation is None:
            self._hint_since_observe = True
            return
        self._rehash(what)

    def _rehash(self, what: str) -> None:
        target, shown = self.effect["target"], self.observation

        def fresh(state: dict[str, Any]) -> None:
            if self.observation is shown and shown is not None and not same(state, shown["state"]):
                now = "missing" if not state["exists"] else t.digest(state["digest"])
                self._mark_changed(f"{what}; it now holds {now}")

        self.window_.loader.submit(f"rehash:{self._id}", lambda: hash_file(target), fresh)

    def _mark_changed(self, what: str) -> None:
        self.changed_note = what
        self.banner.setText(
            f"The target changed after the observation shown ({what}). Decisions are "
            "disabled until you observe it again."
        )
        self.banner.show()
        self.refresh_buttons()

    # --- deciding ------------------------------------------------------------------------

    def ready(self) -> bool:
        return (
            self.observation is not None
            and self.changed_note is None
            and bool(self.note.text().strip())
        )

    def refresh_buttons(self) -> None:
        super().refresh_buttons()
        on = self.ok.isEnabled()
        for b in getattr(self, "decide_buttons", {}).values():
            b.setEnabled(on)
        if hasattr(self, "again"):
            self.again.setEnabled(not self.running and self.window_.loader.busy(
                f"observe:{self._id}") is False)  # fmt: skip

    def decide(self, decision: str) -> None:
        self.run(lambda: self._command(decision))

    def command(self) -> Any:
        return self._command("present")

    def _command(self, decision: str) -> Any:
        from store.ledger import ReconcileEffect

        assert self.observation is not None
        return ReconcileEffect(
            task_id=self.task_id,
            effect_id=self.effect["effect_id"],
            observation_id=self.observation["observation_id"],
            decision=decision,  # type: ignore[arg-type]
            note=self.note.text().strip(),
        )

    def _failed(self, message: str) -> None:
        super()._failed(message)
        if "changed since observation" in message:
            self._mark_changed("the store saw it differ when deciding")
