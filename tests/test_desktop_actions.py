"""Reviewer actions from the window: each clicks the menu entry or the dialog's button and
reads the result back from the store and the UI."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from store import Actor, Store
from store import commands as c
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")

# How long a test waits for the window's workers. Generous: CI runs two workers beside a
# PostgreSQL server on two cores, and a wait that ends early costs nothing.
WAIT_MS = 20_000


class HeldClock:
    """The clocks a window judges an expiry by, held by the test: the database's (SQLite's
    'now' is this process's system clock, read through store.clock) and the window's
    between reads (ui.holder.Clock, which moves the last read's time on by time.monotonic).
    From `hold` on, neither moves but by `move`: what the window shows a millisecond either
    side of an expiry is then the same on a loaded machine as on an idle one."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._monkeypatch = monkeypatch
        self.wall_ns = 0
        self.mono = 0.0

    def hold(self) -> None:
        from boris_desktop.ui import holder
        from store import clock

        self.wall_ns, self.mono = time.time_ns(), time.monotonic()
        self._monkeypatch.setattr(clock, "time", _Held(self))
        self._monkeypatch.setattr(holder, "time", _Held(self))

    def move(self, seconds: float) -> None:
        self.wall_ns += round(seconds * 1e9)
        self.mono += seconds


class _Held:
    """The `time` module, but for the two clocks a HeldClock holds."""

    def __init__(self, held: HeldClock) -> None:
        self._held = held

    def time_ns(self) -> int:
        return self._held.wall_ns

    def monotonic(self) -> float:
        return self._held.mono

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def until_seen(qtbot, write: Callable[[int], None], seen: Callable[[], bool]) -> None:
    """`write(0)`, and `write(1)`, `write(2)`… a second apart, until `seen()` (for up to
    WAIT_MS): a polling watcher sees only what changed after its first snapshot, which a
    loaded machine may take late (a single write 300 ms after the start is then missed)."""
    give_up = time.monotonic() + WAIT_MS / 1000
    n = 0
    while True:
        write(n)
        try:
            qtbot.waitUntil(seen, timeout=1000)
            return
        except qtbot.TimeoutError:
            assert time.monotonic() < give_up, "the change was never seen"
        n += 1


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def settle(qtbot, w) -> None:
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)


@contextlib.contextmanager
def store_for_window(directory: Path, url: str | None = None, **kw: Any) -> Iterator[Store]:
    """The store opened again, as the window opens it (beside the agent's, which signs with
    the agent's key: the reviewer signs with her own); closed once the window's reads end,
    as the app's own exit waits for them."""
    s = Store.open(directory, url=url, **kw)
    try:
        yield s
    finally:
        from PySide6.QtCore import QThreadPool

        QThreadPool.globalInstance().waitForDone(10_000)
        s.close()


def open_window(qtbot, store: Store, task_id: str | None = None):
    from boris_desktop.main_window import MainWindow

    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1200, 760)
    w.show()
    w.reload_now()
    settle(qtbot, w)
    if task_id is not None:
        select_task(qtbot, w, task_id)
    return w


def select_task(qtbot, w, task_id: str) -> None:
    row = w.inbox.row_of(task_id)
    w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
    qtbot.waitUntil(lambda: w.task_view.task_id == task_id, timeout=WAIT_MS)
    settle(qtbot, w)


def armed(qtbot, button) -> None:
    """A decision button is armed a moment after the dialog opened (see actions.ARM_MS)."""
    qtbot.waitUntil(button.isEnabled, timeout=WAIT_MS)


def viewed(qtbot, dialog) -> None:
    """An approval dialog reads the store's view of what is decided on a worker: wait for it."""
    qtbot.waitUntil(lambda: dialog.decision is not None, timeout=WAIT_MS)


def done(qtbot, w, dialog) -> None:
    """Wait for the dialog's command to come back (accepted, or refused and shown)."""
    qtbot.waitUntil(lambda: not dialog.running, timeout=WAIT_MS)
    settle(qtbot, w)


@pytest.fixture
def demo(qtbot, store: Store):
    fill_demo(store)
    return store


# --- approve / reject ----------------------------------------------------------------------


def test_two_windows_race_one_approval(qtbot, demo: Store) -> None:
    other = Store.open(demo.location.directory)
    try:
        w1 = open_window(qtbot, demo, "note")
        w2 = open_window(qtbot, other, "note")
        assert (
            w1.menu_actions.approve_action.isEnabled()
            and w2.menu_actions.approve_action.isEnabled()
        )
        w1.menu_actions.approve_action.trigger()
        w2.menu_actions.approve_action.trigger()
        d1, d2 = w1.menu_actions.dialog, w2.menu_actions.dialog
        viewed(qtbot, d1)
        viewed(qtbot, d2)
        assert "Email this week's project note" in d1.fields.consequence.text()
        assert d1.fields.digest.text().startswith("sha256:")
        assert '"kind": "send"' in d1.payload.toPlainText()
        armed(qtbot, d1.ok)
        armed(qtbot, d2.ok)
        d1.note.setPlainText("fine to send")
        d1.ok.click()
        done(qtbot, w1, d1)
        assert d1.result() == d1.DialogCode.Accepted
        d2.ok.click()  # refused by the store, or already disabled by the dialog following it
        done(qtbot, w2, d2)
        assert d2.isVisible()
        qtbot.waitUntil(lambda: "cannot be decided" in d2.error.text(), timeout=WAIT_MS)
        assert "rita" in d2.error.text() or "meanwhile" in d2.error.text()
        assert not d2.ok.isEnabled() and not d2.reject_button.isEnabled()
        a = next(x for x in demo.task("note")["approvals"] if x["approval_id"] == "apr-note-mail")
        assert a["state"] == "approved"
        assert a["decided_by"]["id"] == "rita" and a["note"] == "fine to send"
        # Both windows refreshed: no pending approval left to decide.
        qtbot.waitUntil(lambda: not w2.menu_actions.approve_action.isEnabled(), timeout=WAIT_MS)
        assert not w1.menu_actions.approve_action.isEnabled()
        w1.close()
        w2.close()
    finally:
        other.close()


def test_reject_with_note(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    w.menu_actions.approve_action.trigger()
    d = w.menu_actions.dialog
    viewed(qtbot, d)
    d.note.setPlainText("not before Friday")
    armed(qtbot, d.reject_button)
    d.reject_button.click()
    done(qtbot, w, d)
    a = demo.task("note")["approvals"][0]
    assert a["state"] == "rejected" and a["note"] == "not before Friday"


def test_expired_request_cannot_be_approved(qtbot, store: Store, ws: Path) -> None:
    store.execute(c.CreateTask(task_id="t", title="T", owner="o", objective="x",
                               scope_paths=[str(ws)]), AGENT)  # fmt: skip
    from store.commands.approvals import RequestApproval

    store.execute(
        RequestApproval(task_id="t", approval_id="ap", payload={"x": 1}, consequence="Do x",
                        policy="p", expires_in_seconds=0.05),
        AGENT,
    )  # fmt: skip
    import time

    time.sleep(0.1)
    w = open_window(qtbot, store, "t")
    from boris_desktop.decide.approve import ApproveDialog

    task = w.task_view.bundle["task"]
    d = ApproveDialog(w, "t", task["approvals"][0], task["now"])
    qtbot.addWidget(d)
    viewed(qtbot, d)
    assert "expired" in d.error.text()
    assert not d.ok.isEnabled()
    # Even if forced past the dialog's own rule, the store refuses and the dialog says why.
    d.why, d.armed = None, True
    d.run(d.command)
    done(qtbot, w, d)
    assert "expired" in d.error.text()
    assert store.task("t")["approvals"][0]["decided_by"] is None


# --- reconcile, with the watchdog ----------------------------------------------------------


def _note_file(store: Store) -> Path:
    return Path(store.task("note")["effects"][0]["target"])


def test_reconcile_watchdog_disables_until_observed_again(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    assert w.menu_actions.reconcile_action.isEnabled()
    w.menu_actions.reconcile_action.trigger()
    d = w.menu_actions.dialog
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    first = d.observation.observation_id
    assert "as it will be" in d.diff.toPlainText()
    assert "Decisions this week" in d.diff.toPlainText()  # intended lines missing from file
    assert '"pre_state"' in d.intent.toPlainText() and "reported_success" in d.intent.toPlainText()
    d.note.setText("the file still holds the old note")
    armed(qtbot, d.decide_buttons["absent"])
    # An atomic save: a temp file renamed over the target.
    target = _note_file(demo)
    tmp = target.with_name(".project-note.md.tmp")
    tmp.write_text("# Project note\n\nSomeone else edited it.\n", encoding="utf-8")
    os.replace(tmp, target)
    qtbot.waitUntil(lambda: d.banner.isVisible(), timeout=WAIT_MS)
    assert "changed" in d.banner.text() and "replaced" in d.banner.text()
    assert not any(b.isEnabled() for b in d.decide_buttons.values())
    d.again.click()
    qtbot.waitUntil(
        lambda: d.observation is not None and d.observation.observation_id != first,
        timeout=WAIT_MS,
    )
    second = d.observation.observation_id
    assert not d.banner.isVisible()
    armed(qtbot, d.decide_buttons["conflict"])
    d.note.setText("someone else rewrote the note: sort it out with them")
    d.decide_buttons["conflict"].click()
    done(qtbot, w, d)
    eff = demo.task("note")["effects"][0]
    assert eff["reconciliation"]["observation_id"] == second
    assert eff["reconciliation"]["verdict"] == "conflict"
    assert any(o["observation_id"] == second and o["observer"]["id"] == "rita"
               for o in eff["observations"])  # fmt: skip
    qtbot.waitUntil(
        lambda: w.task_view.bundle["task"]["effects"][0]["reconciliation"] is not None,
        timeout=WAIT_MS,
    )
    assert w.task_view.panel("Effects").tree.index_at(("save-note", "reconciliation")).isValid()


def test_reconcile_deleted_target_is_seen(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    d = w.menu_actions.reconcile()
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    _note_file(demo).unlink()
    qtbot.waitUntil(lambda: d.banner.isVisible(), timeout=WAIT_MS)
    assert "missing" in d.banner.text()
    d.note.setText("x")
    assert not d.ok.isEnabled()
    d.reject()
    assert d.watcher.state == "off"


def test_reconcile_without_a_reviewer_says_nothing_was_observed(qtbot, demo: Store) -> None:
    from boris_desktop import settings

    w = open_window(qtbot, demo, "note")
    s = settings.settings()
    s.remove("reviewer")
    s.sync()
    d = w.menu_actions.reconcile()
    assert d.observation is None and d.progress.isHidden()
    assert d.obs_label.text().startswith("Not observed yet")
    assert "say who you are first" in d.error.text()
    assert not d.ok.isEnabled()
    settings.set_reviewer("Rita Reviewer", "rita")
    from PySide6.QtCore import Qt

    qtbot.mouseClick(d.again, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    d.reject()


def test_watcher_handler_error_does_not_kill_it(qtbot, tmp_path: Path) -> None:
    from watchdog.events import FileModifiedEvent

    from boris_desktop.runtime.watch import FileWatcher, _handler

    f = tmp_path / "a.txt"
    f.write_text("1")

    class Broken:
        class hint:
            @staticmethod
            def emit(*_a):
                raise RuntimeError("handler bug")

    _handler(Broken(), {str(f)}).on_any_event(FileModifiedEvent(str(f)))  # swallowed
    seen: list[str] = []
    watcher = FileWatcher(debounce_ms=50)
    watcher.changed.connect(lambda _p, what: seen.append(what))
    watcher.watch([str(f)])
    assert watcher.state == "watching"
    f.write_text("2")
    qtbot.waitUntil(lambda: bool(seen), timeout=WAIT_MS)
    assert "modified" in seen[0]
    watcher.stop()
    assert watcher.state == "off"


def test_watcher_falls_back_to_polling(qtbot, tmp_path: Path, monkeypatch) -> None:
    from boris_desktop.runtime import watch

    f = tmp_path / "b.txt"
    f.write_text("1")
    real = watch.FileWatcher._start

    def limited(self, dirs, polling):
        if not polling:
            raise OSError(28, "inotify watch limit reached")
        return real(self, dirs, polling)

    monkeypatch.setattr(watch.FileWatcher, "_start", limited)
    seen: list[str] = []
    watcher = watch.FileWatcher(debounce_ms=50)
    watcher.changed.connect(lambda _p, what: seen.append(what))
    watcher.watch([str(f)])
    assert watcher.state.startswith("polling")
    until_seen(qtbot, lambda n: f.write_text(f"2{n}"), lambda: bool(seen))
    watcher.stop()


# --- stop and checkpoints ------------------------------------------------------------------


def test_a_tall_dialog_keeps_its_fields_at_the_top(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "guide")
    d = w.stop_task()
    d.resize(800, 900)
    d.show()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    # The reason field sits under the list of what stopping does, not halfway down (the
    # demo's lineage is forked, so the choice of head comes first: measured from the plan).
    assert d.reason.geometry().top() - d.what.geometry().bottom() < 60
    assert d.reason.geometry().bottom() < 450 < d.buttons.geometry().top()
    d.reject()


def test_stop_keeps_the_unknown_effect_visible(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "guide")
    assert w.menu_actions.stop_action.isEnabled()
    w.menu_actions.stop_action.trigger()
    d = w.menu_actions.dialog
    assert "upload-guide" in d.what.text()  # stays for manual reconciliation
    assert d.plan.unresolved == ("upload-guide",) and d.plan.cancel == ()
    d.reason.setText("the owner takes it from here")
    qtbot.waitUntil(lambda: d.armed, timeout=WAIT_MS)  # past the arming delay
    assert not d.ok.isEnabled()  # the task id (or "stop") typed out is required too
    d.confirm.setText("guide")
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    task = demo.task("guide")
    assert task["status"] == "stopped"
    assert task["effects"][0]["unresolved"]
    qtbot.waitUntil(lambda: w.task_view.bundle["task"]["status"] == "stopped", timeout=WAIT_MS)
    assert w.task_view.panel("Effects").tree.index_at(("upload-guide",)).isValid()
    assert "stopped" in w.task_view.header.status.text().lower()
    assert not w.menu_actions.stop_action.isEnabled()
    reasons = [k["reason"] for k in task["checkpoints"]["checkpoints"]]
    assert "stopped" in reasons
    # Stopped is not closed: the unknown upload is still reconciled by hand, the task still
    # edited, and the handoff the next actor resumes from still written here.
    for act in (
        w.menu_actions.reconcile_action,
        w.menu_actions.checkpoint_action,
        w.menu_actions.amend_action,
        w.menu_actions.judge_action,
    ):
        assert act.isEnabled(), act.text()
    w.menu_actions.checkpoint_action.trigger()
    d = w.menu_actions.dialog
    assert d.radios["handoff"].isChecked() and not d.radios["final"].isEnabled()
    qtbot.waitUntil(lambda: d.follower.version is not None, timeout=WAIT_MS)
    d.note.setPlainText("stopped by the owner; check the docs site before uploading again")
    # The stop chose no head (the demo's lineage is forked): the handoff waits for the
    # reviewer's choice of the head it continues from, and merges nothing by itself.
    stopped = task["checkpoints"]["checkpoints"][-1]["checkpoint_id"]
    assert task["checkpoints"]["heads"] == ["ckpt-milestone", "ckpt-handoff", stopped]
    d.heads.radios[stopped].click()
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    last = demo.task("guide")["checkpoints"]["checkpoints"][-1]
    assert last["reason"] == "handoff" and last["note"].startswith("stopped by the owner")
    assert (last["supersedes"], last["merged"]) == ([stopped], [])


def test_a_completed_task_takes_no_more_decisions(qtbot, store: Store) -> None:
    store.execute_all(
        [
            c.CreateTask(task_id="t", title="Done", owner="o", objective="x"),
            c.SetStatus(task_id="t", status="completed"),
        ],
        Actor(kind="person", id="rita", name="Rita"),
    )
    w = open_window(qtbot, store, "t")
    assert store.task("t")["status"] == "completed"
    for act in (
        w.menu_actions.stop_action,
        w.menu_actions.checkpoint_action,
        w.menu_actions.amend_action,
        w.menu_actions.source_action,
    ):
        assert not act.isEnabled(), act.text()


def test_final_refused_with_pending_work_handoff_written(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    w.menu_actions.checkpoint_action.trigger()
    d = w.menu_actions.dialog
    assert d.pending and any("save-note" in p for p in d.pending)
    assert "save-note" in d.pending_label.text()
    assert not d.radios["final"].isEnabled() and d.radios["handoff"].isChecked()
    assert "unavailable" in d.final_why.text()
    # Forced past the dialog's rule, the store refuses a final checkpoint with pending work,
    # and the dialog says so. (After the dialog's first read of the store, which would show
    # the pending work again.)
    qtbot.waitUntil(lambda: d.follower.version is not None, timeout=WAIT_MS)
    d.pending = []
    d.radios["final"].setEnabled(True)
    d.radios["final"].setChecked(True)
    d.note.setPlainText("done, I think")
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    assert "pending work" in d.error.text() and d.isVisible()
    d.radios["handoff"].setChecked(True)
    d.note.setPlainText("handing over: the save is unknown, the mail awaits approval")
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    cps = demo.task("note")["checkpoints"]["checkpoints"]
    assert cps[-1]["reason"] == "handoff" and cps[-1]["author"]["id"] == "rita"
    qtbot.waitUntil(
        lambda: w.task_view.bundle["task"]["checkpoints"]["checkpoints"][-1]["reason"] == "handoff",
        timeout=WAIT_MS,
    )
    cp_id = cps[-1]["checkpoint_id"]
    assert cp_id in all_keys(w.task_view.panel("Checkpoints").tree.records.roots)


def all_keys(nodes) -> set[str]:
    out: set[str] = set()
    for n in nodes:
        out |= {n.key} | all_keys(n.children)
    return out


# --- edits ---------------------------------------------------------------------------------


def test_amend_objective(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    w.menu_actions.amend_action.trigger()
    d = w.menu_actions.dialog
    d.text.setPlainText("Keep the project note current, decisions first.")
    assert not d.ok.isEnabled()
    d.reason.setText("the team reads only the top")
    d.ok.click()
    done(qtbot, w, d)
    assert (
        demo.task("note")["objective"]["text"] == "Keep the project note current, decisions first."
    )
    qtbot.waitUntil(
        lambda: "decisions first" in w.task_view.header.objective.text(), timeout=WAIT_MS
    )


def test_add_and_judge_criterion_waived(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    w.menu_actions.add_criterion_action.trigger()
    d = w.menu_actions.dialog
    d.text.setText("The note names the owner.")
    d.ok.click()
    done(qtbot, w, d)
    crits = demo.task("note")["criteria"]
    assert crits[-1]["text"] == "The note names the owner."
    w.menu_actions.judge_action.trigger()
    j = w.menu_actions.dialog
    assert j.criterion["criterion_id"] == "saved"
    qtbot.waitUntil(lambda: j.decision is not None, timeout=WAIT_MS)  # the store's read
    j.set_status("waived")
    assert not j.ok.isEnabled()  # a waiver needs its reason
    j.note.setText("the owner checks this by hand")
    j.ok.click()
    done(qtbot, w, j)
    c0 = demo.task("note")["criteria"][0]
    assert c0["status"] == "waived" and c0["judged_by"]["id"] == "rita"
    assert c0["note"] == "the owner checks this by hand"


def test_supply_source_inside_and_outside_scope(qtbot, demo: Store, tmp_path, monkeypatch) -> None:
    from PySide6.QtWidgets import QFileDialog

    w = open_window(qtbot, demo, "guide")
    scope = Path(demo.task("guide")["scope"]["paths"][0])
    inside = scope / "sources" / "07-audit.md"
    inside.write_text("# Audit\n\nAuditors get read-only access.\n", encoding="utf-8")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(inside), ""))
    w.menu_actions.source_action.trigger()
    qtbot.waitUntil(
        lambda: any(a["name"] == "07-audit.md" for a in demo.task("guide")["artifacts"]),
        timeout=WAIT_MS,
    )
    settle(qtbot, w)
    art = next(a for a in demo.task("guide")["artifacts"] if a["name"] == "07-audit.md")
    assert art["role"] == "source" and art["current"]["producer"]["actor"]["id"] == "rita"
    outside = tmp_path / "elsewhere.md"
    outside.write_text("not in scope", encoding="utf-8")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(outside), ""))
    w.menu_actions.source_action.trigger()
    qtbot.waitUntil(lambda: w.menu_actions.message_box is not None, timeout=WAIT_MS)
    assert (
        "Not recorded" in w.menu_actions.message_box.text()
        and "scope" in w.menu_actions.message_box.text()
    )
    assert not any(a["name"] == "elsewhere.md" for a in demo.task("guide")["artifacts"])


def test_edit_artifact_text(qtbot, demo: Store) -> None:
    from boris_desktop.decide.edits import EditArtifactDialog

    w = open_window(qtbot, demo, "note")
    w.menu_actions.edit_artifact_action.trigger()
    qtbot.waitUntil(lambda: isinstance(w.menu_actions.dialog, EditArtifactDialog), timeout=WAIT_MS)
    d = w.menu_actions.dialog
    assert "Kick-off on Monday" in d.editor.toPlainText()
    assert not d.ok.isEnabled()
    d.editor.setPlainText(d.editor.toPlainText() + "\nReviewed by Rita.\n")
    d.ok.click()
    done(qtbot, w, d)
    art = demo.task("note")["artifacts"][0]
    assert art["current_version"] == 2
    assert art.current.producer.actor.to_json() == {
        "kind": "person",
        "id": "rita",
        "name": "Rita Reviewer",
    }
    assert demo.blobs.read(art["current"]["digest"]).decode().endswith("Reviewed by Rita.\n")


def test_shortcuts_in_menu_and_tooltips(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    texts = {a.text(): a for a in w.menu_actions.menu.actions() if a.text()}
    assert texts["&Approve / Reject…"].shortcut().toString() == "Ctrl+Return"
    assert texts["&Reconcile Effect…"].shortcut().toString() == "Ctrl+R"
    assert texts["&Stop the Run…"].shortcut().toString() == "Ctrl+."
    assert texts["&Checkpoint / Handoff…"].shortcut().toString() == "Ctrl+K"
    assert "Ctrl+K" in texts["&Checkpoint / Handoff…"].toolTip()


# --- a signed store ------------------------------------------------------------------------


def test_a_signed_store_takes_the_reviewers_decision_signed_with_their_key(
    qtbot, store: Store, ws: Path
) -> None:
    from store.services.verify import verify
    from store.signing.check import task_signatures
    from store.signing.keys import SigningKey, person_key
    from store.signing.trust import add_key, require

    rita = person_key("rita")  # the reviewer's own key, in the user's config dir
    bot = SigningKey.generate()
    require(store, rita, Actor(kind="person", id="rita", name="Rita Reviewer"))
    add_key(store, rita, bot.public_raw, AGENT)
    store.signer = bot
    tid = store.execute(
        c.CreateTask(title="Signed", owner="rita", objective="first", scope_paths=[str(ws)]),
        AGENT,
    )
    store.signer = None  # the window signs as the reviewer by itself
    w = open_window(qtbot, store, tid)
    w.menu_actions.amend_action.trigger()
    d = w.menu_actions.dialog
    d.text.setPlainText("Keep the project note current, decisions first.")
    d.reason.setText("the team reads only the top")
    d.ok.click()
    done(qtbot, w, d)
    assert store.task(tid)["objective"]["text"].endswith("decisions first.")
    with store.read() as conn:
        sigs = task_signatures(conn, tid)
    assert sigs["signed"] and sigs["unsigned_after"] is None
    assert [s["key_id"] for s in sigs["signatures"].values()] == [bot.key_id, rita.key_id]
    assert verify(store, remember=False).problems == []


def test_a_signed_store_refuses_a_reviewer_it_does_not_trust_and_says_so(
    qtbot, demo: Store
) -> None:
    from store.signing.keys import SigningKey
    from store.signing.trust import require

    require(demo, SigningKey.generate(), Actor(kind="person", id="owner"))
    before = demo.task("note")["objective"]["text"]
    w = open_window(qtbot, demo, "note")
    w.menu_actions.amend_action.trigger()
    d = w.menu_actions.dialog
    d.text.setPlainText("Something else entirely.")
    d.reason.setText("testing trust")
    d.ok.click()
    done(qtbot, w, d)
    assert d.isVisible() and "not in this store's keyring" in d.error.text()
    assert demo.task("note")["objective"]["text"] == before
