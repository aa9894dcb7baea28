"""Complete a phase and attach evidence from a file, from the window's Actions menu (issue 32).

Each test selects a row, opens the dialog through the menu action, types and clicks, then
reads the store's record back, on SQLite and on PostgreSQL (a team store's window).
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, armed, done, open_window, settle

from store import Actor, Store
from store import commands as c
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="drafter-7", name="Drafting agent")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path: Path):
    """Both engines (the conftest runs desktop tests on SQLite only: those open a second
    Store on the directory; these do not, so a team store's window is tested too)."""
    url = None if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = Store.open(tmp_path / "store", url=url)
    yield s
    # The window's last reads finish on the pool before the store closes (test_desktop_live).
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    s.close()


@pytest.fixture
def demo(qtbot, store: Store) -> Store:
    fill_demo(store)
    return store


def _open_phase(qtbot, w, phase_id: str):
    from boris_desktop.decide.phase import CompletePhaseDialog

    w.task_view.show_part("Dependencies", phase_id)
    assert w.current_key("Dependencies") == phase_id
    w.menu_actions.update()
    assert w.menu_actions.phase_action.isEnabled()
    w.menu_actions.phase_action.trigger()
    d = w.menu_actions.dialog
    assert isinstance(d, CompletePhaseDialog) and d.phase_id == phase_id
    qtbot.waitUntil(lambda: d.view is not None, timeout=WAIT_MS)
    return d


def _pending_in_window(w) -> list[str]:
    return list(w.task_view.bundle["task"]["pending_work"])


# --- complete a phase ------------------------------------------------------------------------


def test_completing_the_guide_s_review_unblocks_its_final_checkpoint(qtbot, demo: Store) -> None:
    w = open_window(qtbot, demo, "guide")
    # Before: the Checkpoint dialog's Final is blocked by the phase, among others.
    w.menu_actions.checkpoint_action.trigger()
    cp = w.menu_actions.dialog
    assert "phase review is ready" in cp.pending
    cp.reject()
    d = _open_phase(qtbot, w, "review")
    assert "Structural review (review) is ready" in d.about.text()
    assert "artifact guide: ready (v2)" in d.inputs.text()
    assert "phase draft: ready" in d.inputs.text()
    assert "no longer blocked by: phase review is ready" in d.what.text()
    assert "still blocked by: criterion structure is stale" in d.what.text()
    assert not d.why_not.isVisible()
    d.summary.setText("read v2 section by section: one per source")
    armed(qtbot, d.ok)  # armed a moment after it opened, like every decision
    d.ok.click()
    done(qtbot, w, d)
    assert d.result() == d.DialogCode.Accepted, d.error.text()
    review = next(p for p in demo.task("guide")["phases"] if p["phase_id"] == "review")
    assert review["readiness"] == "done"
    r = review["result"]
    assert r["ok"] and r["summary"] == "read v2 section by section: one per source"
    assert r["actor"]["id"] == "rita" and r["input_identities"]["artifact:guide"] == "v2"
    # The Checkpoint dialog's Final is no longer blocked by the phase.
    qtbot.waitUntil(lambda: "phase review is ready" not in _pending_in_window(w), timeout=WAIT_MS)
    w.menu_actions.checkpoint_action.trigger()
    cp = w.menu_actions.dialog
    assert not any(x.startswith("phase review") for x in cp.pending)
    assert "phase review" not in cp.pending_label.text()


def test_a_failed_outcome_says_what_stays_blocked(qtbot, store: Store, ws: Path) -> None:
    tid = store.execute(
        c.CreateTask(task_id="t", title="t", owner="o", objective="x", scope_paths=[str(ws)]),
        AGENT,
    )
    from store.model import PhaseInput

    store.execute_all(
        [
            c.AddPhase(task_id=tid, phase_id="build", name="Build"),
            c.AddPhase(task_id=tid, phase_id="test", name="Test",
                       inputs=[PhaseInput(kind="phase", ref="build")]),
        ],
        AGENT,
    )  # fmt: skip
    w = open_window(qtbot, store, tid)
    d = _open_phase(qtbot, w, "build")
    assert "Becomes ready: test" in d.what.text()
    d.radios[False].setChecked(True)
    assert "recorded as failed" in d.what.text()
    assert "Stays blocked: test (phase build failed)" in d.what.text()
    d.summary.setText("the build broke on the new compiler")
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    build = store.task(tid)["phases"][0]
    assert build["result"]["ok"] is False and build["result"]["actor"]["id"] == "rita"
    assert store.task(tid)["phases"][1]["blocked_by"] == ["phase build failed"]


def test_a_blocked_phase_cannot_be_completed(qtbot, store: Store, ws: Path) -> None:
    tid = store.execute(
        c.CreateTask(task_id="t", title="t", owner="o", objective="x", scope_paths=[str(ws)]),
        AGENT,
    )
    from store.model import PhaseInput

    store.execute(
        c.AddPhase(task_id=tid, phase_id="ship", name="Ship",
                   inputs=[PhaseInput(kind="artifact", ref="bundle")]),
        AGENT,
    )  # fmt: skip
    w = open_window(qtbot, store, tid)
    d = _open_phase(qtbot, w, "ship")
    assert d.why_not.isVisible()
    assert d.why_not.text() == (
        "It cannot be completed: phase ship is not ready: artifact bundle has no version yet."
    )
    assert "artifact bundle: not ready (artifact bundle has no version yet)" in d.inputs.text()
    # Past the arming delay: still not enabled.
    qtbot.waitUntil(lambda: d.armed, timeout=WAIT_MS)
    assert not d.ok.isEnabled() and not d.radios[True].isEnabled()
    # The store refuses it by type too, whatever the dialog shows.
    from store.errors import PhaseBlocked

    with pytest.raises(PhaseBlocked):
        store.execute(c.CompletePhase(task_id=tid, phase_id="ship"), AGENT)


def test_an_input_that_moves_while_open_is_shown_and_never_recorded_unseen(
    qtbot, demo: Store
) -> None:
    w = open_window(qtbot, demo, "guide")
    d = _open_phase(qtbot, w, "review")
    guide = Path(next(a for a in demo.task("guide")["artifacts"] if a["artifact_id"] == "guide")
                 ["current"]["path"])  # fmt: skip
    guide.write_text(guide.read_text() + "\n## 7. Audit\n", encoding="utf-8")
    demo.execute(c.RecordArtifact(task_id="guide", artifact_id="guide", name="guide.md",
                                  content=c.Content(path=str(guide))), AGENT)  # fmt: skip
    qtbot.waitUntil(d.changed.isVisible, timeout=WAIT_MS)
    assert "recorded guide v3" in d.changed.text() and "Drafting agent" in d.changed.text()
    assert not d.ok.isEnabled() and d.rebase.isVisible()
    assert "(v2)" in d.inputs.text()  # still what the person saw
    d.rebase.click()
    assert "(v3)" in d.inputs.text()
    armed(qtbot, d.ok)
    d.ok.click()
    done(qtbot, w, d)
    review = next(p for p in demo.task("guide")["phases"] if p["phase_id"] == "review")
    assert review["result"]["input_identities"]["artifact:guide"] == "v3"


# --- attach evidence from a file -------------------------------------------------------------


def _open_evidence(qtbot, w, criterion_id: str, path: Path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    from boris_desktop.decide.evidence import AttachEvidenceDialog

    w.task_view.show_part("Criteria", criterion_id)
    assert w.current_key("Criteria") == criterion_id
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(path), ""))
    w.menu_actions.update()
    assert w.menu_actions.evidence_action.isEnabled()
    w.menu_actions.evidence_action.trigger()
    d = w.menu_actions.dialog
    assert isinstance(d, AttachEvidenceDialog) and d.criterion_id == criterion_id
    qtbot.waitUntil(lambda: d.target is not None, timeout=WAIT_MS)
    return d


def test_attach_evidence_made_on_the_current_guide(qtbot, demo: Store, monkeypatch) -> None:
    w = open_window(qtbot, demo, "guide")
    scope = Path(demo.task("guide")["scope"]["paths"][0])
    check = scope / "out" / "citations-check.txt"
    check.write_text("$ check-citations out/guide.md\n6 figures, 6 cited\nOK\n", encoding="utf-8")
    d = _open_evidence(qtbot, w, "citations", check, monkeypatch)
    assert d.made_on.text() == "The evidence is made on guide v2."
    assert "citations-check.txt" in d.file.text()
    assert str(scope) in d.scope.text()
    assert not d.ok.isEnabled()  # a kind is chosen by the person
    d.set_kind("command_output")
    d.description.setText("check-citations on guide v2")
    assert d.ok.isEnabled()
    d.ok.click()
    done(qtbot, w, d)
    assert d.result() == d.DialogCode.Accepted, d.error.text()
    crit = next(x for x in demo.task("guide")["criteria"] if x["criterion_id"] == "citations")
    (ev,) = crit["evidence"]
    assert (ev["artifact_id"], ev["artifact_version"], ev["kind"]) == ("guide", 2, "command_output")
    assert ev["description"] == "check-citations on guide v2" and ev["actor"]["id"] == "rita"
    assert demo.blobs.read(ev["digest"]).endswith(b"6 figures, 6 cited\nOK\n")


@pytest.mark.parametrize("how", ["symlink", "dotdot"])
def test_a_file_outside_the_scope_is_refused_in_one_line(
    qtbot, demo: Store, monkeypatch, tmp_path: Path, how: str
) -> None:
    w = open_window(qtbot, demo, "guide")
    scope = Path(demo.task("guide")["scope"]["paths"][0])
    secret = tmp_path / "secret.txt"
    secret.write_text("not the task's", encoding="utf-8")
    if how == "symlink":
        path = scope / "out" / "looks-inside.txt"
        os.symlink(secret, path)
    else:
        rel = os.path.relpath(secret, scope / "out")
        path = scope / "out" / rel
        assert ".." in str(path)
    d = _open_evidence(qtbot, w, "citations", path, monkeypatch)
    d.set_kind("other")
    d.ok.click()
    done(qtbot, w, d)
    assert d.isVisible() and d.error.isVisible()
    assert "outside the task's scope" in d.error.text() and "\n" not in d.error.text()
    from store.errors import ScopeViolation

    assert isinstance(d.last_error, ScopeViolation)
    crit = next(x for x in demo.task("guide")["criteria"] if x["criterion_id"] == "citations")
    assert crit["evidence"] == []


def test_the_artifact_moving_while_open_is_shown(qtbot, demo: Store, monkeypatch) -> None:
    w = open_window(qtbot, demo, "guide")
    scope = Path(demo.task("guide")["scope"]["paths"][0])
    check = scope / "out" / "check.txt"
    check.write_text("OK\n", encoding="utf-8")
    d = _open_evidence(qtbot, w, "citations", check, monkeypatch)
    d.set_kind("command_output")
    guide = scope / "out" / "guide.md"
    guide.write_text(guide.read_text() + "\nmore\n", encoding="utf-8")
    demo.execute(c.RecordArtifact(task_id="guide", artifact_id="guide", name="guide.md",
                                  content=c.Content(path=str(guide))), AGENT)  # fmt: skip
    qtbot.waitUntil(d.changed.isVisible, timeout=WAIT_MS)
    assert "guide has version 3 now" in d.changed.text()
    assert not d.ok.isEnabled() and d.made_on.text() == "The evidence is made on guide v2."
    d.rebase.click()
    assert d.made_on.text() == "The evidence is made on guide v3." and d.ok.isEnabled()
    d.ok.click()
    done(qtbot, w, d)
    crit = next(x for x in demo.task("guide")["criteria"] if x["criterion_id"] == "citations")
    assert crit["evidence"][0]["artifact_version"] == 3
    settle(qtbot, w)


def test_the_judge_dialog_names_the_real_command(qtbot, demo: Store) -> None:
    from boris_desktop.decide.judge import JudgeDialog

    w = open_window(qtbot, demo, "guide")
    crit = next(x for x in demo.task("guide")["criteria"] if not x["evidence"])
    j = JudgeDialog(w, demo.task("guide"), crit)
    qtbot.addWidget(j)
    text = j.no_evidence.text()
    assert "`boris attach-evidence`" in text and "Attach Evidence" in text
    assert "boris evidence" not in text
