"""The reviewer's decision screens: the thing decided is shown, decisions are deliberate, and
an open dialog follows the store (another Store object stands in for another process).

Each test clicks or types into a real dialog and reads the result back from the store."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QPushButton
from test_desktop_actions import WAIT_MS, HeldClock, armed, done, open_window, viewed

from store import Actor, Store
from store import commands as c
from store.commands import approvals as ap
from store.commands import effects as lg
from store.commands.checkpoints import StopRun
from store.events import FileState
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")
OWNER = Actor(kind="person", id="olga", name="Olga Owner")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture
def demo(qtbot, store: Store):
    fill_demo(store)
    return store


def _approval(store: Store, task: str) -> dict:
    return store.task(task)["approvals"][0]


def _open_approve(qtbot, store: Store, task: str):
    w = open_window(qtbot, store, task)
    w.menu_actions.approve_action.trigger()
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    viewed(qtbot, d)
    return w, d


def _task(store: Store, ws: Path, task_id: str = "t", destinations=()) -> None:
    store.execute(
        c.CreateTask(task_id=task_id, title="T", owner="olga", objective="x",
                     scope_paths=[str(ws)], destinations=list(destinations)),
        OWNER,
    )  # fmt: skip


# --- deliberate decisions ------------------------------------------------------------------


def test_typing_a_note_cannot_approve(qtbot, demo: Store) -> None:
    w, d = _open_approve(qtbot, demo, "note")
    # Focus starts in the note, and typing at once (before the buttons are armed) goes there.
    assert d.focusWidget() is d.note
    qtbot.keyClicks(d.focusWidget(), "Looks fine ")
    armed(qtbot, d.ok)
    # Armed now: more typing, a space and Return still only write the note.
    qtbot.keyClicks(d.focusWidget(), "to send ")
    qtbot.keyClick(d.focusWidget(), Qt.Key.Key_Return)
    qtbot.keyClick(d.focusWidget(), Qt.Key.Key_Space)
    qtbot.wait(300)
    assert d.isVisible() and not d.running
    assert d.note.toPlainText() == "Looks fine to send \n "
    assert _approval(demo, "note")["state"] == "pending"
    # No decision button is the default (Return never presses one).
    buttons = d.findChildren(QPushButton)
    assert buttons and not [b.text() for b in buttons if b.isDefault() or b.autoDefault()]
    d.ok.click()
    done(qtbot, w, d)
    assert _approval(demo, "note")["state"] == "approved"
    assert _approval(demo, "note")["note"] == "Looks fine to send"


def test_decisions_are_armed_only_a_moment_after_the_dialog_opened(qtbot, demo: Store) -> None:
    _w, d = _open_approve(qtbot, demo, "note")
    assert not d.ok.isEnabled() and not d.reject_button.isEnabled()
    d.ok.click()  # a stray click at once does nothing
    assert not d.running and _approval(demo, "note")["state"] == "pending"
    armed(qtbot, d.ok)
    assert d.reject_button.isEnabled()
    d.reject()


def _mnemonics(dialog) -> list[str]:
    """The mnemonic letters of the dialog's buttons other than Cancel (whose text, and so
    its Alt+C, comes from the platform's style)."""
    from PySide6.QtWidgets import QDialogButtonBox

    cancel = dialog.buttons.button(QDialogButtonBox.StandardButton.Cancel)
    out = []
    for b in dialog.findChildren(QAbstractButton):
        if b is cancel:
            continue
        text = b.text().replace("&&", "")
        if "&" in text and b.isVisible():
            out.append(text[text.index("&") + 1].lower())
    return out


def test_mnemonics_never_collide_with_cancel(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    dialogs = [
        w.menu_actions.approve(),
        w.menu_actions.reconcile(),
        w.menu_actions.checkpoint(),
        w.stop_task(),
    ]
    for d in dialogs:
        d.show()
        qtbot.waitExposed(d, timeout=WAIT_MS)
        keys = _mnemonics(d)
        assert "c" not in keys, (d.windowTitle(), keys)  # Alt+C is Cancel's alone
        assert len(keys) == len(set(keys)), (d.windowTitle(), keys)
        d.reject()


def test_stop_needs_the_task_id_typed_and_fits_its_ids(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "guide")
    d = w.stop_task()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert d.focusWidget() is d.reason
    d.reason.setText("enough")
    qtbot.waitUntil(lambda: d.armed, timeout=WAIT_MS)  # past the arming delay
    assert not d.ok.isEnabled()
    d.confirm.setText("gui")
    assert not d.ok.isEnabled()
    d.confirm.setText("stop")
    assert d.ok.isEnabled()
    # Sized to its content: the plan's ids are not broken mid-word.
    assert d.width() >= 560
    assert d.what.sizeHint().width() <= d.what.width() + 1 or d.what.wordWrap()
    d.reject()


def test_a_run_stopped_elsewhere_while_the_stop_dialog_is_open_is_not_stopped_again(
    qtbot, demo: Store
) -> None:
    w = open_window(qtbot, demo, "guide")
    d = w.stop_task()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    d.reason.setText("enough")
    d.confirm.setText("stop")
    demo.execute(StopRun(task_id="guide", reason="the owner stopped it from the CLI"), OWNER)
    qtbot.waitUntil(lambda: "nothing to stop" in d.changed.text(), timeout=WAIT_MS)
    assert "The run became stopped while this was open" in d.changed.text()
    assert not d.ok.isEnabled()
    d.reject()


# --- the thing decided -----------------------------------------------------------------------


def test_the_email_is_shown_with_its_headers_and_body(qtbot, demo: Store) -> None:
    _w, d = _open_approve(qtbot, demo, "note")
    qtbot.waitUntil(
        lambda: d.content.result is not None and not d.content.loading(), timeout=WAIT_MS
    )
    shown = d.content.pane.toPlainText()
    assert "To: project-team@example.org" in shown
    assert "Subject: Project note, this week" in shown
    assert "Backups are kept 90 days" in shown  # the body
    assert d.content.title.text().startswith("Email to project-team@example.org")
    digest = _approval(demo, "note")["payload"]["intended"]["digest"]
    assert d.content.digest.toolTip() == digest  # the digest beside it
    assert d.fields.digest.text() == _approval(demo, "note")["payload_digest"]
    d.reject()


def test_a_file_write_is_shown_as_a_diff_against_the_file_now(qtbot, store: Store, ws: Path):
    _task(store, ws)
    f = ws / "notes.md"
    f.write_text("one\ntwo\nthree\n", encoding="utf-8")
    store.execute(
        lg.PlanEffect(task_id="t", effect_id="w", kind="file_write", target=str(f),
                      consequence="Rewrite notes.md",
                      content=c.Content(text="one\nTWO\nthree\n"), requires_approval=True,
                      policy="p"),
        AGENT,
    )  # fmt: skip
    store.execute(ap.RequestApproval(task_id="t", approval_id="ap", effect_id="w", policy="p",
                                     expires_in_seconds=3600), AGENT)  # fmt: skip
    f.write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")  # the file as it is now
    _w, d = _open_approve(qtbot, store, "t")
    qtbot.waitUntil(
        lambda: d.content.result is not None and not d.content.loading(), timeout=WAIT_MS
    )
    shown = d.content.pane.toPlainText()
    assert "notes.md as it is now" in shown and "notes.md as it will be" in shown
    assert "-two\n" in shown and "+TWO\n" in shown and "-four\n" in shown
    d.reject()


def test_a_large_upload_is_paged_and_a_binary_one_peeked(qtbot, store: Store, ws: Path):
    _task(store, ws, destinations=["https://up.example.org/"])
    big = ws / "big.txt"
    big.write_bytes(b"line of text\n" * 100_000)  # 1.3 MB
    blob = ws / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 40)
    for eid, path in (("big", big), ("bin", blob)):
        store.execute(
            lg.PlanEffect(task_id="t", effect_id=eid, kind="upload",
                          target=f"https://up.example.org/{path.name}", consequence="Upload",
                          content=c.Content(path=str(path)), requires_approval=True, policy="p",
                          pre_state=FileState(exists=False)),
            AGENT,
        )  # fmt: skip
        store.execute(ap.RequestApproval(task_id="t", approval_id=f"ap-{eid}", effect_id=eid,
                                         policy="p", expires_in_seconds=3600), AGENT)  # fmt: skip
    from boris_desktop.decide.approve import ApproveDialog

    w = open_window(qtbot, store, "t")
    task = w.task_view.bundle["task"]
    d = ApproveDialog(w, "t", task["approvals"][0], task["now"])
    qtbot.addWidget(d)
    qtbot.waitUntil(
        lambda: d.content.result is not None and not d.content.loading(), timeout=WAIT_MS
    )
    from boris_desktop.decide.content_view import PAGE

    pages = -(-big.stat().st_size // PAGE)
    assert pages > 1 and f"page 1 of {pages}" in d.content.note.text()
    assert not d.content.next.isHidden() and not d.content.prev.isEnabled()
    d.content.next.click()
    qtbot.waitUntil(lambda: d.content.result.page == 1, timeout=WAIT_MS)
    assert f"page 2 of {pages}" in d.content.note.text() and d.content.prev.isEnabled()
    b = ApproveDialog(w, "t", task["approvals"][1], task["now"])
    qtbot.addWidget(b)
    qtbot.waitUntil(lambda: b.content.result is not None, timeout=WAIT_MS)
    assert "binary content" in b.content.note.text() and "10,240 bytes" in b.content.note.text()
    assert b.content.pane.toPlainText().startswith("00000000  00 01 02 03")


# --- following the store ---------------------------------------------------------------------


def test_approved_elsewhere_the_open_dialog_says_so(qtbot, demo: Store) -> None:
    _w, d = _open_approve(qtbot, demo, "note")
    armed(qtbot, d.ok)
    other = Store.open(demo.location.directory)
    try:
        other.execute(
            ap.DecideApproval(task_id="note", approval_id="apr-note-mail", decision="approved",
                              note="sent it myself"),
            OWNER,
        )  # fmt: skip
        # How soon a write elsewhere reaches the window is bench_live.py's to measure: a
        # loaded machine missed a second here.
        qtbot.waitUntil(lambda: not d.ok.isEnabled(), timeout=WAIT_MS)
    finally:
        other.close()
    assert not d.reject_button.isEnabled()
    assert d.changed.isVisible()
    assert "Approved by Olga Owner" in d.changed.text() and "sent it myself" in d.changed.text()
    assert d.fields.state.text() == "approved"
    assert "already approved by olga" in d.error.text()
    d.reject()


def test_an_expiry_disables_the_open_dialog_just_after_it(
    qtbot, store: Store, ws: Path, monkeypatch
) -> None:
    """The dialog reads the request again 50 ms after its expiry by the database clock, and
    then disables its verdicts. The clock is the test's (HeldClock): an expiry eight seconds
    away, to be seen within a second, was a margin a loaded machine missed."""
    _task(store, ws)
    store.execute(
        ap.RequestApproval(task_id="t", approval_id="ap", payload={"x": 1}, consequence="Do x",
                           policy="p", expires_in_seconds=600),
        AGENT,
    )  # fmt: skip
    _w, d = _open_approve(qtbot, store, "t")
    armed(qtbot, d.ok)
    from boris_desktop.ui.text import parse

    expires = _approval(store, "t")["expires_at"]
    deadline = d.follower._deadline
    left = parse(expires) - parse(d.decision.now)
    assert deadline.isActive()
    assert abs(deadline.interval() - (left.total_seconds() * 1000 + 50)) <= 1
    clock = HeldClock(monkeypatch)
    clock.hold()
    clock.move((parse(expires) - parse(store.now())).total_seconds() + 0.05)
    deadline.timeout.emit()  # as its timer does, 50 ms past the expiry
    qtbot.waitUntil(lambda: not d.ok.isEnabled(), timeout=WAIT_MS)
    assert "expired" in d.changed.text() and "expired" in d.error.text()
    assert d.fields.state.text() == "expired unanswered"
    d.reject()


def test_the_checkpoint_dialogs_pending_list_follows_new_work(qtbot, store: Store, ws: Path):
    _task(store, ws)
    w = open_window(qtbot, store, "t")
    d = w.menu_actions.checkpoint()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert d.pending == [] and d.radios["final"].isChecked()
    assert "can be final" in d.pending_label.text()
    other = Store.open(store.location.directory)
    try:
        other.execute(c.AddCriterion(task_id="t", criterion_id="more", text="One more"), AGENT)
        qtbot.waitUntil(lambda: "more" in d.pending_label.text(), timeout=WAIT_MS)
    finally:
        other.close()
    assert "criterion more is unverified" in d.pending_label.text()
    assert not d.radios["final"].isEnabled() and d.radios["handoff"].isChecked()
    assert "new pending work: criterion more is unverified" in d.changed.text()
    d.reject()


# --- reconcile ------------------------------------------------------------------------------


def _mail_in_doubt(store: Store, ws: Path) -> None:
    _task(store, ws, destinations=["mailto:team@example.org"])
    store.execute(
        lg.PlanEffect(task_id="t", effect_id="m", kind="send", target="mailto:team@example.org",
                      consequence="Mail the team", content=c.Content(text="Subject: Hi\n\nHello"),
                      pre_state=FileState(exists=False)),
        AGENT,
    )  # fmt: skip
    store.execute(lg.DispatchEffect(task_id="t", effect_id="m", executor="mailer"), AGENT)
    store.execute(lg.RecordResponse(task_id="t", effect_id="m", reported="timeout"), AGENT)


def test_a_mailto_effect_is_reconciled_from_the_window(qtbot, store: Store, ws: Path) -> None:
    _mail_in_doubt(store, ws)
    w = open_window(qtbot, store, "t")
    assert w.menu_actions.reconcile_action.isEnabled()
    effects = w.task_view.panel("Effects")
    step = effects.tree.index_at(("m",)).siblingAtColumn(len(effects.headers) - 1).data()
    assert step == "Reconcile: check the destination and decide (Ctrl+R)"  # not "the file"
    d = w.menu_actions.reconcile()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert not d.file_target
    assert "cannot read this destination" in d.obs_label.text()
    assert d.target_line.text().endswith("→ mailto:team@example.org")  # named once, above
    assert "Could not observe" not in d.obs_label.text() and d.error.isHidden()
    d.note.setText("the message is in the team's archive")
    armed(qtbot, d.decide_buttons["present"])
    d.decide_buttons["present"].click()
    done(qtbot, w, d)
    assert d.result() == d.DialogCode.Accepted, d.error.text()
    eff = store.task("t")["effects"][0]
    assert eff["stage"] == "reconciled" and eff["reconciliation"]["verdict"] == "present"
    assert eff["reconciliation"]["by_person"] and eff["reconciliation"]["by"]["id"] == "rita"


def test_a_file_verdict_is_overridden_only_explicitly(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    d = w.menu_actions.reconcile()
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    assert d.observation.verdict == "absent"  # the file still holds its pre-state
    d.note.setText("the tool wrote it to the other copy, which is the one that counts")
    armed(qtbot, d.decide_buttons["absent"])
    assert not d.decide_buttons["present"].isEnabled()  # contradicts the observation
    assert d.override.isVisible()
    d.override.setChecked(True)
    assert d.decide_buttons["present"].isEnabled()
    assert not d.decide_buttons["absent"].isEnabled()  # nothing to override with absent
    d.decide_buttons["present"].click()
    done(qtbot, w, d)
    rec = demo.task("note")["effects"][0]["reconciliation"]
    assert rec["verdict"] == "present" and rec["overrode"] == "absent"


def test_after_a_conflict_the_dialog_says_what_to_do(qtbot, demo: Store) -> None:
    target = Path(demo.task("note")["effects"][0]["target"])
    target.write_text("# Someone else's note\n", encoding="utf-8")
    demo.execute(lg.ReconcileEffect(task_id="note", effect_id="save-note"), AGENT)
    assert demo.task("note")["effects"][0]["conflict_undecided"]
    w = open_window(qtbot, demo, "note")
    d = w.menu_actions.reconcile()
    text = d.next_step.text()
    assert "conflict" in text and "A person decides it" in text and "inspect the target" in text
    assert d.target_line.text().endswith(str(target))  # the target, named once above it
    d.reject()


def test_a_reconciliation_elsewhere_disables_the_open_dialog(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "note")
    d = w.menu_actions.reconcile()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    d.note.setText("absent")
    armed(qtbot, d.decide_buttons["absent"])
    other = Store.open(demo.location.directory)
    try:
        other.execute(lg.ReconcileEffect(task_id="note", effect_id="save-note"), OWNER)
    finally:
        other.close()
    qtbot.waitUntil(lambda: not d.decide_buttons["absent"].isEnabled(), timeout=WAIT_MS)
    assert "became reconciled" in d.store_changed.text()
    d.reject()


def test_a_newer_observation_elsewhere_names_who_observed(qtbot, demo: Store) -> None:
    """Someone else observes the target while the dialog is open: decisions wait for a new
    look, and the banner says whose observation is newer (an observation's `observer`)."""
    w = open_window(qtbot, demo, "note")
    d = w.menu_actions.reconcile()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    d.note.setText("absent")
    armed(qtbot, d.decide_buttons["absent"])
    other = Store.open(demo.location.directory)
    try:
        other.execute(lg.ObserveEffect(task_id="note", effect_id="save-note"), OWNER)
    finally:
        other.close()
    qtbot.waitUntil(lambda: d.banner.isVisible(), timeout=WAIT_MS)
    assert "a newer observation" in d.banner.text()
    assert "by Olga Owner" in d.banner.text()
    assert not d.decide_buttons["absent"].isEnabled()
    d.reject()


# --- judging --------------------------------------------------------------------------------


def test_judge_picks_evidence_from_a_list(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "guide")
    task = w.task_view.bundle["task"]
    crit = next(c for c in task["criteria"] if c["evidence"])
    from boris_desktop.decide.judge import JudgeDialog

    d = JudgeDialog(w, task, crit)
    qtbot.addWidget(d)
    qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)  # the store's read
    ids = [d.evidence.item(i).data(Qt.ItemDataRole.UserRole) for i in range(d.evidence.count())]
    assert ids == [e["evidence_id"] for e in crit["evidence"]]
    # No verdict is chosen for the person, and nothing is ticked that speaks for an older
    # version (tests/test_desktop_no_overwrite.py has the stale case in full).
    assert d.chosen_verdict() is None and not d.ok.isEnabled()
    for i in range(d.evidence.count()):
        d.evidence.item(i).setCheckState(Qt.CheckState.Unchecked)
    d.set_status("satisfied")
    assert not d.ok.isEnabled()  # satisfied needs evidence
    d.evidence.item(0).setCheckState(Qt.CheckState.Checked)
    if d.older():  # made on an older version of the artifact: the person says why
        assert not d.ok.isEnabled()
        d.older_reason.setText("still holds")
    assert d.ok.isEnabled()
    assert d.command().evidence_ids == [ids[0]]


def test_no_verdict_is_enabled_before_the_request_is_read(qtbot, demo: Store) -> None:
    # The dialog reads the store's view of the request on a worker: until it is shown, and
    # until the verdicts are armed, neither button decides anything.
    from boris_desktop.decide.approve import ApproveDialog

    w = open_window(qtbot, demo, "note")
    d = ApproveDialog(w, "note", "apr-note-mail")
    qtbot.addWidget(d)
    assert d.decision is None
    assert not d.ok.isEnabled() and not d.reject_button.isEnabled()
    viewed(qtbot, d)
    assert "Email" in d.fields.consequence.text()
    armed(qtbot, d.ok)
    assert d.reject_button.isEnabled()
