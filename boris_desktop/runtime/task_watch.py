"""Watch the files of the task on screen: artifact files and effect targets.

`TaskFileWatcher` is owned by the main window and told the selected task's state whenever it
loads. It watches the current artifact versions that have a path and the effect targets that
are files (not destinations). A watchdog event is only a hint: the path is hashed again on a
worker and the fresh digest decides, compared with what the record holds (the artifact
version's digest; for an effect its latest observation before any watch, or else its
pre-state or intended post-state). A change is marked in the task view at once (artifact
"changed on disk", criteria satisfied against it "stale on disk", effect "target changed") and,
for an unresolved effect, recorded in the store as an observation with purpose "watch" so
the record knows what the reviewer saw. At each task load every watched path is compared
once, which finds the edits made while the app was closed.

Only PySide6 and `watch` (which loads watchdog lazily) are imported here: the store and the
hashing load on workers, after the first paint. A handler that raises is logged and the
watcher goes on.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from PySide6.QtCore import QObject, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from boris_desktop import settings
from boris_desktop.runtime.keyed import Keyed
from boris_desktop.runtime.loader import Loader
from boris_desktop.runtime.watch import FileWatcher, WatchState
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import icon
from boris_desktop.ui.text import tip as plain_tip

if TYPE_CHECKING:
    from store.api import Observation, TargetState, TaskState

log = logging.getLogger(__name__)

WATCH_ACTOR_ID = "boris-desktop-watch"


def is_file_target(target: str) -> bool:
    """A file the store can hash, not a destination (`api.is_destination`: https://…,
    smtp://…, mailto:…). Imported here, not at the top: the store loads after the first paint."""
    from store.api import is_destination

    return bool(target) and not is_destination(target)


class MarkState(StrEnum):
    """What the watcher found at a path, against what the record holds there."""

    CHANGED = "changed"
    MISSING = "missing"
    SAME = "same"


@dataclass(frozen=True)
class DiskState(Keyed):
    """A file's state: whether it exists and its digest (the store's `State`), as the record
    holds it or as the watcher hashed it now (then its size, or why it could not be read)."""

    exists: bool
    digest: str | None = None
    size: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class Watched:
    """What in the record rests on a watched path: an artifact's current version or an
    effect's target, the states the record expects there, and for an effect the latest
    observation and whether it is still to be resolved (a change is then recorded)."""

    kind: Literal["artifact", "effect"]
    id: str
    expected: tuple[DiskState, ...]
    latest: DiskState | None = None
    unresolved: bool = False


@dataclass(frozen=True)
class Mark(Keyed):
    """What the watcher says of a path on screen: its state, what event found it and when."""

    state: MarkState
    what: str
    at: str  # the wall clock's time of day
    now: DiskState


@dataclass(frozen=True)
class DiskMarks(Keyed):
    """What the task view shows of the watcher's marks, by record: each artifact's and
    effect's mark (by id), and why each criterion judged against a changed file is stale."""

    artifacts: dict[str, Mark] = field(default_factory=dict)
    effects: dict[str, Mark] = field(default_factory=dict)
    criteria: dict[str, str] = field(default_factory=dict)


def _state(s: Observation | TargetState | None) -> DiskState | None:
    """An observation's or an intent's state (the store's record), if any."""
    if s is None:
        return None
    return DiskState(s.exists, s.digest)


def same(a: DiskState | None, b: DiskState | None) -> bool:
    """The same state by the store's rule (`api.same_state`)."""
    from store import api

    if a is None or b is None:
        return False
    return api.same_state(api.State(a.exists, a.digest), api.State(b.exists, b.digest))


def watched_files(task: TaskState) -> dict[str, list[Watched]]:
    """Each watched path and what in the record rests on it."""
    out: dict[str, list[Watched]] = {}
    for a in task.artifacts:
        cur = a.current
        if cur is not None and cur.path:
            expected = (DiskState(True, cur.digest),)
            out.setdefault(os.path.abspath(cur.path), []).append(
                Watched("artifact", a.artifact_id, expected)
            )
    for e in task.effects:
        if not is_file_target(e.target):
            continue
        obs = e.observations
        before_watch = [o for o in obs if o.purpose != "watch"]
        if before_watch:
            states = [_state(before_watch[-1])]
        else:
            states = [_state(e.intent.pre_state), _state(e.intent.intended)]
        out.setdefault(os.path.abspath(e.target), []).append(
            Watched(
                "effect",
                e.effect_id,
                tuple(x for x in states if x is not None),
                _state(obs[-1]) if obs else None,
                e.unresolved,
            )
        )
    return out


def hash_paths(paths: list[str]) -> dict[str, DiskState]:
    """On a worker: each path's state now (a file that cannot be read counts as missing)."""
    from boris_desktop.decide.content_view import file_state
    from store.api import ScopeViolation

    out = {}
    for p in paths:
        try:
            now = file_state(p)
            out[p] = DiskState(now.exists, now.digest, now.size)
        except OSError as exc:
            out[p] = DiskState(False, error=exc.strerror)
        except ScopeViolation as exc:
            out[p] = DiskState(False, error=str(exc))
    return out


def record_watch(
    store: Any, who: tuple[str, str] | None, task_id: str, effect_id: str
) -> str | None:
    """On a worker: the store observes the target itself and records it as the reviewer's;
    nothing when the latest observation (a reconcile meanwhile, say) already holds it."""
    from boris_desktop.decide.content_view import file_state
    from store.api import Actor, ObserveEffect

    eff = next(e for e in store.task(task_id).effects if e.effect_id == effect_id)
    if eff.observations:
        now = file_state(eff.target)
        if same(DiskState(now.exists, now.digest), _state(eff.observations[-1])):
            return None
    if who is None:
        actor = Actor(kind="system", id=WATCH_ACTOR_ID)
    else:
        actor = Actor(kind="person", id=who[1], name=who[0])
        # A person's observation is signed with their key in a signed store; the system's
        # is signed with whichever key this window last signed with (a system write may be).
        store.sign_as(actor)
    return str(
        store.execute(ObserveEffect(task_id=task_id, effect_id=effect_id, purpose="watch"), actor)
    )


class WatchIndicator(QWidget):
    """The status bar's word on the watcher: an icon and a line of text."""

    def __init__(self) -> None:
        super().__init__()
        self.setAccessibleName("File watcher")
        self.icon = QLabel()
        self.text = QLabel("not watching")
        self.text.setTextFormat(Qt.TextFormat.PlainText)  # it may name a watched file
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 0, 4, 0)
        row.setSpacing(4)
        row.addWidget(self.icon)
        row.addWidget(self.text)
        self.show_state("not watching", "pending")

    def show_state(self, text: str, icon_name: str, tip: str = "") -> None:
        self.text.setText(text)
        self.icon.setPixmap(icon(icon_name).pixmap(QSize(14, 14)))
        self.setToolTip(plain_tip(tip or text))
        self.text.setAccessibleName(text)


class TaskFileWatcher(QObject):
    marks_changed = Signal()  # `marks` changed: the task view shows them
    recorded = Signal(str)  # an observation was recorded (its id): the view reloads

    def __init__(self, loader: Loader, parent: QObject | None = None, *, debounce_ms: int = 150):
        super().__init__(parent)
        self.loader = loader
        self.watcher = FileWatcher(self, debounce_ms=debounce_ms)
        self.watcher.changed.connect(lambda p, what: self._guard(self._changed, p, what))
        self.watcher.state_changed.connect(lambda _s: self._guard(self._show_state))
        self.indicator = WatchIndicator()
        self.store: Any = None
        self.task_id: str | None = None
        self.files: dict[str, list[Watched]] = {}
        self.marks: dict[str, Mark] = {}  # path -> what the watcher found there
        self._recorded: dict[str, DiskState] = {}  # effect id -> state recorded
        # Effects another part of the window observes itself (an open reconcile dialog):
        # the watcher marks their changes but records no observation in between.
        self.hold: set[str] = set()
        self.error: str | None = None
        self.handler_errors = 0
        self.checks = 0
        self._health = QTimer(self)
        self._health.setInterval(3000)
        self._health.timeout.connect(lambda: self._guard(self._check_health))

    # --- what is watched -----------------------------------------------------------------

    def set_task(self, store: Any, task: TaskState) -> None:
        """The task on screen loaded: watch its files; compare them once when they changed."""
        self._guard(self._set_task, store, task)

    def _set_task(self, store: Any, task: TaskState) -> None:
        files = watched_files(task)
        new_task = task.id != self.task_id or store is not self.store
        if not new_task and files == self.files:
            return
        if new_task:
            self.marks, self._recorded = {}, {}
            self.marks_changed.emit()
        self.store, self.task_id, self.files = store, task.id, files
        self._watch()
        if files:
            self._check(list(files), "loaded", "watch:load")

    def clear(self) -> None:
        self.store, self.task_id, self.files = None, None, {}
        self.marks, self._recorded = {}, {}
        self.watcher.stop()
        self._health.stop()
        self.marks_changed.emit()
        self._show_state()

    def stop(self) -> None:
        self._health.stop()
        self.watcher.stop()

    def _watch(self, *, polling: bool = False) -> None:
        try:
            self.watcher.watch(list(self.files), polling=polling)
            self.error = None
        except Exception as exc:  # even polling could not start
            log.exception("the file watcher could not start")
            self.watcher.stop()
            self.error = str(exc) or type(exc).__name__
        if self.files and self.error is None:
            self._health.start()
        self._show_state()

    def _check_health(self) -> None:
        obs = self.watcher._observer
        if obs is not None and not obs.is_alive():
            log.warning("the file watcher's thread ended: falling back to polling")
            self.watcher.stop()
            self._watch(polling=True)

    def _show_state(self) -> None:
        n = len(self.files)
        files = t.count(n, "file", "files")
        state = self.watcher.state
        if self.error is not None:
            text, name = f"watcher stopped: {self.error}", "failed"
        elif state == WatchState.WATCHING:
            text, name = f"watching {files} (inotify)", "ok"
        elif state == WatchState.POLLING_AT_LIMIT:
            text, name = f"watching {files} (polling: inotify limit reached)", "attention"
        elif state == WatchState.POLLING:
            text, name = f"watching {files} (polling)", "attention"
        elif not n:
            text, name = "not watching: no files on screen", "pending"
        else:
            text, name = "watcher off", "stopped"
        tip = text
        if self.handler_errors:
            errors = t.count(self.handler_errors, "handler error", "handler errors")
            tip += f"\n{errors} logged; the watcher went on"
        self.indicator.show_state(text, name, tip)

    # --- hints and fresh hashes ----------------------------------------------------------

    def _guard(self, fn: Callable[..., Any], *args: Any) -> None:
        """A handler that raises is logged; the watcher goes on."""
        try:
            fn(*args)
        except Exception:
            self.handler_errors += 1
            log.exception("file watcher handler failed")
            try:
                self._show_state()
            except Exception:
                log.exception("the watcher's indicator failed")

    def _changed(self, path: str, what: str) -> None:
        if path in self.files:
            self._check([path], what, f"watch:{path}")

    def _check(self, paths: list[str], what: str, kind: str) -> None:
        task_id = self.task_id
        self.loader.submit(
            kind,
            lambda: hash_paths(paths),
            lambda states: self._guard(self._hashed, task_id, states, what),
            lambda err: log.warning("hashing watched files failed: %s", err),
        )

    def _hashed(self, task_id: str | None, states: dict[str, DiskState], what: str) -> None:
        if task_id != self.task_id:
            return
        self.checks += 1
        at = time.strftime("%H:%M:%S")
        before = dict(self.marks)
        for path, now in states.items():
            entries = self.files.get(path)
            if not entries:
                continue
            differs = any(not any(same(now, x) for x in e.expected) for e in entries)
            if differs:
                state = MarkState.CHANGED if now.exists else MarkState.MISSING
                old = self.marks.get(path)
                if old is None or not same(old.now, now):
                    self.marks[path] = Mark(state, what, at, now)
            else:
                self.marks[path] = Mark(MarkState.SAME, what, at, now)
            for e in entries:
                if e.kind == "effect" and e.unresolved:
                    self._maybe_record(e, now)
        if self.marks != before:
            self.marks_changed.emit()

    def _maybe_record(self, effect: Watched, now: DiskState) -> None:
        latest = self._recorded.get(effect.id) or effect.latest
        if latest is not None:
            if same(now, latest):
                return
        elif any(same(now, x) for x in effect.expected):
            return  # nothing observed yet and the target holds what the intent expects
        store, task_id, effect_id = self.store, self.task_id, effect.id
        if store is None or task_id is None or effect_id in self.hold:
            return
        self._recorded[effect_id] = now
        who = settings.reviewer()
        self.loader.submit(
            f"watch-record:{effect_id}",
            lambda: record_watch(store, who, task_id, effect_id),
            lambda obs_id: self.recorded.emit(obs_id) if obs_id else None,
            lambda err: log.warning("recording the watch observation failed: %s", err),
        )

    # --- what the task view shows --------------------------------------------------------

    def disk_marks(self, task: TaskState | None) -> DiskMarks:
        """The marks of the task on screen, by record (none for another task)."""
        out = DiskMarks()
        if task is None or task.id != self.task_id:
            return out
        for path, mark in self.marks.items():
            for e in self.files.get(path, []):
                (out.artifacts if e.kind == "artifact" else out.effects)[e.id] = mark
        from store import api

        for c in task.criteria:
            m = out.artifacts.get(c.artifact_id or "")
            if api.criterion_stales_on_change(c.status) and m and m.state != MarkState.SAME:
                out.criteria[c.criterion_id] = (
                    f"{c.artifact_id} {m.state} on disk ({m.what} at {m.at})"
                )
        return out
