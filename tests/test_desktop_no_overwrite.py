"""Judging is deliberate and nobody overwrites anybody: the Judge dialog on a stale criterion
opens with no verdict and the old evidence unticked, a one-click pass is refused, and a
judgement or an artifact edit raced by another process (another Store object; both engines)
shows the conflict in the open dialog and overwrites nothing.

Each test clicks or types into a real dialog and reads the result back from the store."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, done, open_window

from store import Actor, Store
from store import commands as c
from store.api import Conflict, CriterionState
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="writer", name="Writer agent")
BEN = Actor(kind="person", id="ben", name="Ben")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


# The desktop's tests run on SQLite only (conftest); these race another process on both
# engines, so they open their stores themselves: on PostgreSQL "another process" is another
# machine sharing the database, with its own blob cache.
@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(engine: str, request: pytest.FixtureRequest) -> str | None:
    return str(request.getfixturevalue("pg_url")) if engine == "postgresql" else None


@pytest.fixture
def demo(qtbot, tmp_path: Path, url: str | None) -> Iterator[Store]:
    s = Store.open(tmp_path / "reviewer", url=url)
    fill_demo(s)
    yield s
    # The window's last reads finish on the pool before the store closes.
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    s.close()


@pytest.fixture
def open_store(tmp_path: Path, url: str | None) -> Callable[[], Store]:
    """Another process's Store on the same record."""
    return lambda: Store.open(tmp_path / ("elsewhere" if url else "reviewer"), url=url)


def _another(open_store: Callable[..., Store], write: Callable[[Store], object]) -> None:
    """Write through another Store object on the same record: another process."""
    other = open_store()
    try:
        write(other)
    finally:
        other.close()


def _judge(qtbot, w, criterion_id: str = "structure"):
    from boris_desktop.decide.judge import JudgeDialog

    task = w.task_view.bundle["task"]
    crit = next(x for x in task["criteria"] if x["criterion_id"] == criterion_id)
    d = JudgeDialog(w, task, crit)
    qtbot.addWidget(d)
    d.show()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)
    return d


def _items(d) -> dict[str, tuple[str, bool]]:
    out = {}
    for i in range(d.evidence.count()):
        item = d.evidence.item(i)
        out[item.data(Qt.ItemDataRole.UserRole)] = (
            item.text(),
            item.checkState() == Qt.CheckState.Checked,
        )
    return out


def _tick(d, evidence_id: str) -> None:
    for i in range(d.evidence.count()):
        item = d.evidence.item(i)
        if item.data(Qt.ItemDataRole.UserRole) == evidence_id:
            item.setCheckState(Qt.CheckState.Checked)


def _status(store: Store, task_id: str, criterion_id: str) -> str:
    return next(
        x["status"] for x in store.task(task_id)["criteria"] if x["criterion_id"] == criterion_id
    )


def test_a_stale_criterion_opens_with_no_verdict_and_old_evidence_unticked(
    qtbot, demo: Store
) -> None:
    w = open_window(qtbot, demo, "guide")
    d = _judge(qtbot, w)
    assert d.decision.state == CriterionState.STALE
    assert d.verdict.currentText() == "Choose…" and d.chosen_verdict() is None
    assert not d.ok.isEnabled()
    assert "choose a verdict" in d.needs.text()
    text, ticked = _items(d)["check-1"]
    assert not ticked
    assert "made on guide v1; the guide is now v2" in text
    assert d.artifact.currentData() == "guide"

    # Satisfied on the v1 evidence: the reason field appears, and Judge waits for it.
    d.set_status("satisfied")
    assert not d.ok.isEnabled()  # no evidence ticked
    _tick(d, "check-1")
    assert d.older_reason.isVisible()
    assert not d.ok.isEnabled() and "older version" in d.needs.text()
    d.close()
    assert _status(demo, "guide", "structure") == "stale"


def test_a_one_click_pass_on_old_evidence_is_refused_by_the_store(qtbot, demo: Store) -> None:
    """Even a command built past the dialog's checks is refused: the rule is the store's."""
    w = open_window(qtbot, demo, "guide")
    d = _judge(qtbot, w)
    d.set_status("satisfied")
    _tick(d, "check-1")
    one_click = d.command()  # what the old dialog sent on one click
    from store.api import OlderEvidence

    with pytest.raises(OlderEvidence):
        demo.execute(one_click, Actor(kind="person", id="rita", name="Rita Reviewer"))
    assert _status(demo, "guide", "structure") == "stale"

    # With the reason said, it is the person's deliberate judgement, and is recorded.
    d.older_reason.setText("v2 only reworded the title; the structure check still holds")
    assert d.ok.isEnabled()
    d.ok.click()
    done(qtbot, w, d)
    assert _status(demo, "guide", "structure") == "satisfied"
    judged = [e for e in demo.events("guide") if e["type"] == "criterion.judged"][-1]
    assert judged["payload"]["older_evidence_reason"].startswith("v2 only reworded")
    assert judged["payload"]["based_on"] == d.decision.rev


def test_a_judgement_elsewhere_shows_at_once_and_the_click_overwrites_nothing(
    qtbot, demo: Store, open_store
) -> None:
    w = open_window(qtbot, demo, "guide")
    d = _judge(qtbot, w)
    d.set_status("waived")
    d.note.setText("not needed for this release")
    assert d.ok.isEnabled()
    _another(
        open_store,
        lambda s: s.execute(
            c.JudgeCriterion(
                task_id="guide", criterion_id="structure", status="failed", note="headings"
            ),
            BEN,
        ),
    )
    qtbot.waitUntil(d.changed.isVisible, timeout=WAIT_MS)
    banner = d.changed.text()
    assert "Ben" in banner and "judged it failed" in banner
    assert not d.ok.isEnabled()  # no click can overwrite what Ben decided
    assert d.note.text() == "not needed for this release"  # the person's text is kept
    assert _status(demo, "guide", "structure") == "failed"

    # Looking at what is there now is the person's explicit step; then they may decide.
    d.rebase.click()
    assert d.decision.state == CriterionState.FAILED
    assert d.note.text() == "not needed for this release"
    assert d.ok.isEnabled()
    d.ok.click()
    done(qtbot, w, d)
    assert _status(demo, "guide", "structure") == "waived"


def test_a_judgement_racing_the_click_is_refused_as_a_conflict_in_the_dialog(
    qtbot, demo: Store, open_store
) -> None:
    w = open_window(qtbot, demo, "guide")
    d = _judge(qtbot, w)
    d.follower.stop()  # the other write lands between the last read and the click
    d.set_status("failed")
    d.note.setText("my note")
    _another(
        open_store,
        lambda s: s.execute(
            c.JudgeCriterion(
                task_id="guide", criterion_id="structure", status="waived", note="ok as is"
            ),
            BEN,
        ),
    )
    d.ok.click()
    done(qtbot, w, d)
    assert isinstance(d.last_error, Conflict)
    assert d.isVisible() and d.error.isVisible()
    assert "changed since you read it" in d.error.text()
    assert "Ben" in d.changed.text() and d.rebase.isVisible()
    assert d.note.text() == "my note"
    assert _status(demo, "guide", "structure") == "waived"  # Ben's, not overwritten


def _edit_note(qtbot, w):
    from boris_desktop.decide.edits import EditArtifactDialog

    w.menu_actions.edit_artifact_action.trigger()
    qtbot.waitUntil(lambda: isinstance(w.menu_actions.dialog, EditArtifactDialog), timeout=WAIT_MS)
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    return d


def _agent_records_v2(open_store) -> None:
    _another(
        open_store,
        lambda s: s.execute(
            c.RecordArtifact(
                task_id="note",
                artifact_id="project-note",
                name="project-note.md",
                content=c.Content(text="# Project note\n\nThe agent's change.\n"),
                note="the agent's v2",
            ),
            AGENT,
        ),
    )


def test_an_artifact_edit_raced_by_the_agent_shows_it_live_and_saves_nothing(
    qtbot, demo: Store, open_store
) -> None:
    w = open_window(qtbot, demo, "note")
    d = _edit_note(qtbot, w)
    assert d.based_on == 1
    mine = d.editor.toPlainText() + "\nReviewed by Rita.\n"
    d.editor.setPlainText(mine)
    assert d.ok.isEnabled()
    _agent_records_v2(open_store)
    qtbot.waitUntil(d.changed.isVisible, timeout=WAIT_MS)
    assert "Writer agent" in d.changed.text() and "v2" in d.changed.text()
    assert not d.ok.isEnabled()
    assert d.editor.toPlainText() == mine
    (art,) = demo.task("note")["artifacts"]
    assert art["current_version"] == 2


def test_an_artifact_save_racing_the_agent_is_refused_as_a_conflict(
    qtbot, demo: Store, open_store
) -> None:
    w = open_window(qtbot, demo, "note")
    d = _edit_note(qtbot, w)
    d.follower.stop()
    mine = d.editor.toPlainText() + "\nReviewed by Rita.\n"
    d.editor.setPlainText(mine)
    _agent_records_v2(open_store)
    d.ok.click()
    done(qtbot, w, d)
    assert isinstance(d.last_error, Conflict)
    assert (d.last_error.based_on, d.last_error.current) == (1, 2)
    assert d.isVisible() and "changed since you read it" in d.error.text()
    assert d.editor.toPlainText() == mine  # the person's text is kept
    (art,) = demo.task("note")["artifacts"]
    assert art["current_version"] == 2  # no v3 made from v1's text
    assert demo.blobs.read(art["current"]["digest"]).decode().endswith("The agent's change.\n")

    # Basing the edit on v2 is the person's explicit step; then it saves as v3.
    qtbot.waitUntil(d.rebase.isVisible, timeout=WAIT_MS)
    d.rebase.click()
    assert d.based_on == 2 and d.ok.isEnabled()
    d.ok.click()
    done(qtbot, w, d)
    (art,) = demo.task("note")["artifacts"]
    assert art["current_version"] == 3
    recorded = [e for e in demo.events("note") if e["type"] == "artifact.version_recorded"]
    assert recorded[-1]["payload"]["based_on"] == 2


def test_an_objective_amended_elsewhere_keeps_the_persons_text(
    qtbot, demo: Store, open_store
) -> None:
    from boris_desktop.decide.edits import AmendDialog

    w = open_window(qtbot, demo, "note")
    d = AmendDialog(w, w.task_view.bundle["task"])
    qtbot.addWidget(d)
    d.show()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    d.text.setPlainText("Record this week's decisions, with owners.")
    d.reason.setText("owners matter")
    _another(
        open_store,
        lambda s: s.execute(
            c.AmendObjective(task_id="note", text="Record decisions.", reason="shorter"), BEN
        ),
    )
    qtbot.waitUntil(d.changed.isVisible, timeout=WAIT_MS)
    assert "revision 2" in d.changed.text() and not d.ok.isEnabled()
    assert d.text.toPlainText() == "Record this week's decisions, with owners."
    d.rebase.click()
    d.ok.click()
    done(qtbot, w, d)
    revs = demo.task("note")["objective_revisions"]
    assert [r["rev"] for r in revs] == [1, 2, 3]
    assert revs[-1]["text"] == "Record this week's decisions, with owners."


def test_a_reconcile_verdict_racing_another_is_refused_as_a_conflict(
    qtbot, demo: Store, open_store
) -> None:
    # The upload to the docs site is a destination the store cannot read: Ben records his
    # finding from another process while this reviewer's dialog is open on it.
    from store.api import Verdict
    from store.services.reconcile import reconcile_by_hand

    w = open_window(qtbot, demo, "guide")
    d = w.menu_actions.reconcile()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    d.follower.stop()  # Ben's verdict lands between the dialog's last read and the click
    effect_id = d.effect["effect_id"]
    _another(
        open_store,
        lambda s: reconcile_by_hand(
            s, BEN, "guide", effect_id, Verdict.CONFLICT, "the page is there but different"
        ),
    )
    d.note.setText("checked the site: nothing there")
    button = d.decide_buttons[Verdict.ABSENT]
    qtbot.waitUntil(button.isEnabled, timeout=WAIT_MS)
    button.click()
    done(qtbot, w, d)
    assert isinstance(d.last_error, Conflict)
    assert d.isVisible() and d.error.isVisible()
    assert d.note.text() == "checked the site: nothing there"
    rec = next(e for e in demo.task("guide")["effects"] if e["effect_id"] == effect_id)
    assert rec["reconciliation"]["verdict"] == "conflict"  # Ben's, not overwritten
    assert rec["reconciliation"]["note"] == "the page is there but different"
