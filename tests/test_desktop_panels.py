"""Every panel of the task view against a temp store filled with the demo tasks."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS

from store import Actor, Store
from store import commands as c
from store.commands.narrative import ClaimIn, RecordNarrative
from store.model import PhaseInput
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")
TABS = (
    "Criteria",
    "Artifacts",
    "Approvals",
    "Effects",
    "Budgets",
    "Dependencies",
    "Checkpoints",
    "Timeline",
    "Brief",
)


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


def settle(qtbot, w) -> None:
    """Wait until no worker result is outstanding (loads, brief, previews, highlighting)."""
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)


@pytest.fixture
def demo(qtbot, store: Store):
    from boris_desktop.main_window import MainWindow

    fill_demo(store)
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1280, 780)
    w.show()
    w.reload_now()
    settle(qtbot, w)
    yield w
    w.close()


def select_task(qtbot, w, task_id: str) -> None:
    row = w.inbox.row_of(task_id)
    w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
    qtbot.waitUntil(lambda: w.task_view.task_id == task_id, timeout=WAIT_MS)
    settle(qtbot, w)


def rows(tree, parent=None) -> list[list[str]]:
    from PySide6.QtCore import QModelIndex

    parent = parent or QModelIndex()
    m = tree.records
    return [
        [str(m.index(r, col, parent).data()) for col in range(m.columnCount())]
        for r in range(m.rowCount(parent))
    ]


def select(tree, *keys: str) -> None:
    ix = tree.index_at(keys)
    assert ix.isValid(), keys
    tree.setCurrentIndex(ix)


def test_first_task_needing_attention_is_selected(demo) -> None:
    assert demo.selected == "guide"  # the highest attention score in the demo
    assert demo.task_view.header.title.text() == "Reference guide from six source documents"


def test_every_panel_model_passes_modeltester(demo, qtmodeltester) -> None:
    for title in demo.task_view.panels:
        panel = demo.task_view.panel(title)  # filled now if its turn had not come
        trees = [getattr(panel, "tree", None), getattr(panel, "narratives", None)]
        for tree in filter(None, trees):
            # The demo records no wait (test_desktop_leases_waits checks a Waits model).
            assert tree.records.rowCount() or title in {"Brief", "Waits"}, title
            qtmodeltester.check(tree.records)


def test_header_objective_history_head_and_fork(demo) -> None:
    h = demo.task_view.header
    assert "revision 2 of 2" in h.objective.text()
    assert "auditors" in h.objective.text()
    assert h.history_button.isEnabled()
    assert "the audience includes auditors" in h.history.toPlainText()
    assert "Revision 1" in h.history.toPlainText()
    assert "outcome unknown" in h.status.text()
    assert h.head.text().startswith("ckpt-handoff")
    assert h.fork.isVisible()
    assert "forked" in h.fork.label.text() and "ckpt-milestone" in h.fork.label.text()
    assert "build-log v1: blob missing" in h.problems.label.text()
    for label in (h.title, h.objective, h.status, h.fork.label):
        assert label.textFormat() == Qt.TextFormat.PlainText


def test_criteria_show_version_checked_and_evidence(qtbot, demo) -> None:
    panel = demo.task_view.panel("Criteria")
    got = {r[0]: r for r in rows(panel.tree)}
    assert got["structure"][1:3] == ["stale", "guide v1"]
    assert got["citations"][1] == "unverified"
    ev = rows(panel.tree, panel.tree.index_at(("structure",)))
    assert ev[0][0] == "check-1" and "command output" in ev[0][2]
    select(panel.tree, "structure", "evidence:check-1")
    qtbot.waitUntil(lambda: "3 sections found" in panel.detail.toPlainText(), timeout=WAIT_MS)
    select(panel.tree, "structure")
    assert "stale because: guide has version 2" in panel.detail.toPlainText()


def test_artifacts_preview_diff_and_marks(qtbot, demo) -> None:
    panel = demo.task_view.panel("Artifacts")
    log = rows(panel.tree, panel.tree.index_at(("build-log",)))
    assert "blob missing" in log[0][1]
    select(panel.tree, "guide", "v2")
    qtbot.waitUntil(lambda: "Reference guide" in panel.detail.toPlainText(), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: bool(panel.detail.highlighter.spans), timeout=WAIT_MS)  # markdown
    panel.compare.setCurrentIndex(panel.compare.findData(1))
    qtbot.waitUntil(lambda: "+4. Restore" in panel.detail.toPlainText(), timeout=WAIT_MS)
    assert "-3. Backups run nightly and are kept 30 days" in panel.detail.toPlainText()
    select(panel.tree, "build-log", "v1")
    qtbot.waitUntil(lambda: "missing" in panel.detail.toPlainText(), timeout=WAIT_MS)


def test_artifact_changed_on_disk_is_marked(qtbot, demo, store: Store) -> None:
    guide = store.task("guide")["artifacts"]
    path = next(a for a in guide if a["artifact_id"] == "guide")["current"]["path"]
    Path(path).write_text("edited outside the task\n", encoding="utf-8")
    demo.reload()
    qtbot.wait(100)
    demo.task_view.bundle = None  # the record is unchanged: force the brief to be redone
    demo.reload()
    panel = demo.task_view.panel("Artifacts")
    qtbot.waitUntil(
        lambda: "changed on disk" in rows(panel.tree, panel.tree.index_at(("guide",)))[0][1],
        timeout=WAIT_MS,
    )
    # The version's file, and what is on disk now, under the preview.
    select(panel.tree, "guide", "v2")
    qtbot.waitUntil(lambda: "on disk now" in panel.file_line.text(), timeout=WAIT_MS)
    assert panel.file_line.text().startswith(f"file: {path} · on disk now: ")
    assert "the same bytes" not in panel.file_line.text()
    select(panel.tree, "guide", "v1")
    assert panel.file_line.text().startswith("file when recorded: ")


def test_artifact_html_is_shown_as_text(qtbot, store: Store, tmp_path: Path) -> None:
    from boris_desktop.main_window import MainWindow

    store.execute_all(
        [
            c.CreateTask(task_id="t", title="T", owner="o", objective="x"),
            c.RecordArtifact(
                task_id="t",
                artifact_id="page",
                name="page.html",
                role="output",
                content=c.Content(
                    text='<img src="http://example.org/x.png"><a href="http://e">link</a>',
                    media_type="text/html",
                ),
            ),
        ],
        AGENT,
    )
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.reload_now()
    panel = w.task_view.panel("Artifacts")
    select(panel.tree, "page", "v1")
    qtbot.waitUntil(lambda: "<img src=" in panel.detail.toPlainText(), timeout=WAIT_MS)
    assert panel.detail.toPlainText().startswith("<img")
    w.close()


def test_approval_shows_prepared_object_and_counts_down(qtbot, demo) -> None:
    select_task(qtbot, demo, "note")
    panel = demo.task_view.panel("Approvals")
    demo.task_view.tabs.setCurrentWidget(panel)
    select(panel.tree, "apr-note-mail")
    assert panel.fields.state.text() == "waiting for a decision"
    assert panel.fields.digest.text().startswith("sha256:")
    assert "project-team@example.org" in panel.fields.consequence.text()
    assert "mail to people outside" in panel.fields.policy.text()
    assert "Drafting agent" in panel.fields.requester.text()
    first = panel.fields.expiry.text()
    assert first.startswith("in 3 h 5") or first.startswith("in 3 h 4"), first
    assert '"target": "smtp://mail.example.org/project-team@example.org"' in (
        panel.detail.toPlainText()
    )
    qtbot.waitUntil(lambda: panel.fields.expiry.text() != first, timeout=WAIT_MS)


def test_effects_show_attempts_responses_and_observations(qtbot, demo) -> None:
    select_task(qtbot, demo, "note")
    panel = demo.task_view.panel("Effects")
    save = rows(panel.tree, panel.tree.index_at(("save-note",)))
    assert save[0][0] == "intent"
    assert save[1][0] == "attempt 1" and "reported success" in save[1][3]
    assert save[2][0].startswith("observation") and save[2][1] == "post_dispatch"
    top = {r[0]: r for r in rows(panel.tree)}
    assert top["save-note"][1] == "observed"
    assert top["mail-note"][1] == "planned"
    select(panel.tree, "save-note", "attempt:1")
    assert '"bytes_written"' in panel.detail.toPlainText()


def test_budgets_bars_with_numbers(demo) -> None:
    panel = demo.task_view.panel("Budgets")
    _mark, bar, words, _ = panel.rows["model_calls"]
    assert bar.format().startswith("171 / 180")
    assert bar.value() == 950
    assert "near its limit" in words.text() and "9 left" in words.text()
    assert "no limit" in panel.rows["effects"][2].text()


def test_dependencies_name_the_blocking_input(qtbot, store: Store) -> None:
    from boris_desktop.main_window import MainWindow

    store.execute_all(
        [
            c.CreateTask(task_id="t", title="T", owner="o", objective="x"),
            c.AddPhase(
                task_id="t",
                phase_id="build",
                name="Build",
                inputs=[PhaseInput(kind="artifact", ref="spec")],
            ),
        ],
        AGENT,
    )
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.reload_now()
    panel = w.task_view.panel("Dependencies")
    top = rows(panel.tree)
    assert top[0][1] == "blocked" and "artifact spec has no version yet" in top[0][2]
    kid = rows(panel.tree, panel.tree.index_at(("build",)))
    assert kid[0][:2] == ["artifact spec", "blocks"]
    w.close()


def test_checkpoints_lineage_with_heads_and_fork(demo) -> None:
    panel = demo.task_view.panel("Checkpoints")
    assert "Forked lineage: 2 heads" in panel.caption.text()
    top = rows(panel.tree)
    assert top[0][0] == "ckpt-initial" and top[0][2] == ""
    kids = {r[0]: r for r in rows(panel.tree, panel.tree.index_at(("ckpt-initial",)))}
    assert kids["ckpt-milestone"][2] == "head (fork)"
    assert kids["ckpt-handoff"][2] == "head (fork)"
    assert "resumed session" in kids["ckpt-handoff"][3]
    assert "upload's outcome is unknown" in kids["ckpt-handoff"][panel.headers.index("Note")]


def test_checkpoints_diff_of_the_state_between_two(qtbot, demo) -> None:
    panel = demo.task_view.panel("Checkpoints")
    select(panel.tree, "ckpt-initial", "ckpt-handoff")
    assert '"checkpoint_id": "ckpt-handoff"' in panel.detail.toPlainText()
    panel.compare.setCurrentIndex(panel.compare.findData("ckpt-initial"))
    qtbot.waitUntil(
        lambda: panel.detail.toPlainText().startswith("--- ckpt-initial"), timeout=WAIT_MS
    )
    text = panel.detail.toPlainText()
    assert "+++ ckpt-handoff" in text
    # Between the two the upload was planned and dispatched: it shows as an added effect.
    assert '+      "id": "upload-guide",' in text
    panel.compare.setCurrentIndex(0)
    assert '"checkpoint_id": "ckpt-handoff"' in panel.detail.toPlainText()


def test_timeline_filters_by_type_and_actor(demo) -> None:
    panel = demo.task_view.panel("Timeline")
    everything = len(rows(panel.tree))
    assert everything == len(demo.task_view.bundle["timeline"]["events"])
    assert everything == demo.task_view.bundle["task"]["last_seq"]  # one page holds them all
    panel.type_filter.setCurrentIndex(panel.type_filter.findText("checkpoint.written"))
    assert {r[2] for r in rows(panel.tree)} == {"checkpoint.written"}
    assert len(rows(panel.tree)) == 3
    panel.type_filter.setCurrentIndex(0)
    panel.actor_filter.setCurrentIndex(panel.actor_filter.findText("Maria Keller"))
    assert {r[3] for r in rows(panel.tree)} == {"Maria Keller"}
    assert 0 < len(rows(panel.tree)) < everything


def test_brief_and_narrative_discrepancies(qtbot, demo, store: Store) -> None:
    panel = demo.task_view.panel("Brief")
    assert "# Resume brief: Reference guide" in panel.brief.toPlainText()
    assert "## Blockers" in panel.brief.toPlainText()
    assert "Generated from the record" in panel.summary.toPlainText()
    # The demo's resumed session left the seeds' stale narrative: shown, with the record winning.
    qtbot.waitUntil(lambda: panel.narratives.records.rowCount() == 1, timeout=WAIT_MS)
    assert "the record says stale" in panel.narrative_text.toPlainText()
    store.execute(
        RecordNarrative(
            task_id="guide",
            text="All done: structure is satisfied and <b>citations</b> too.",
            claims=[ClaimIn(criterion_id="structure", status="satisfied")],
        ),
        AGENT,
    )
    qtbot.waitUntil(lambda: panel.narratives.records.rowCount() == 2, timeout=WAIT_MS)
    assert not panel.discrepancies.isHidden()
    assert "the record wins" in panel.discrepancies.label.text()
    panel.narratives.setCurrentIndex(panel.narratives.records.index(1, 0))
    kids = rows(panel.narratives, panel.narratives.records.index(1, 0).siblingAtColumn(0))
    assert kids[0][:2] == ["claims structure is satisfied", "stale"]
    text = panel.narrative_text.toPlainText()
    assert "the record says stale" in text and "<b>citations</b>" in text
    assert panel.narrative_text.extraSelections()  # the wrong claim is marked in the text


def test_live_update_keeps_selection_and_scroll(qtbot, demo, store: Store) -> None:
    view = demo.task_view
    view.tabs.setCurrentWidget(view.panel("Timeline"))
    tl = view.panel("Timeline")
    demo.resize(1280, 600)
    qtbot.wait(50)
    select(tl.tree, "30")
    tl.tree.verticalScrollBar().setValue(5)
    scroll = tl.tree.verticalScrollBar().value()
    other = Store.open(store.location.directory)
    try:
        other.execute(c.AddCriterion(task_id="guide", text="Added elsewhere"), AGENT)
    finally:
        other.close()
    qtbot.waitUntil(lambda: len(rows(tl.tree)) == 45, timeout=WAIT_MS)
    assert tl.tree.current_node().key == "30"
    assert tl.tree.verticalScrollBar().value() == scroll
    assert demo.selected == "guide"
    assert demo.table.selectionModel().selectedRows()[0].data(Qt.ItemDataRole.UserRole + 3) == (
        "guide"
    )


def test_a_long_timeline_is_read_a_page_at_a_time(qtbot, store: Store, ws: Path) -> None:
    """A task with more events than a page: the newest page comes with the task, older
    pages as the reviewer scrolls to the end, a filter asks the store (and so finds an old
    event no page loaded), and an agent's new events go on top without losing the rest."""
    from boris_desktop.main_window import MainWindow
    from boris_desktop.runtime.jobs import TIMELINE_PAGE

    agent = Actor(kind="agent", id="chatty")
    tid = store.execute(
        c.CreateTask(title="long", owner="ana", objective="talk", scope_paths=[str(ws)]), agent
    )
    store.execute(c.AddCriterion(task_id=tid, text="an old criterion"), agent)
    n = 2 * TIMELINE_PAGE + 50
    store.execute_all([c.RecordNote(task_id=tid, text=f"tick {i}") for i in range(n)], agent)
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1280, 780)
    w.show()
    w.reload_now()
    w.task_view.tabs.setCurrentWidget(w.task_view.panel("Timeline"))
    panel = w.task_view.panel("Timeline")
    total = n + 2
    assert len(rows(panel.tree)) == TIMELINE_PAGE
    assert rows(panel.tree)[0][0] == str(total)  # newest first
    assert f"{TIMELINE_PAGE} events shown of {total}" in panel.caption.text()

    bar = panel.tree.verticalScrollBar()
    bar.setValue(bar.maximum())  # the end of the list: the next page is read
    qtbot.waitUntil(lambda: len(rows(panel.tree)) == 2 * TIMELINE_PAGE, timeout=WAIT_MS)
    panel.load_older()
    qtbot.waitUntil(lambda: len(rows(panel.tree)) == total, timeout=WAIT_MS)
    assert [r[0] for r in rows(panel.tree)] == [str(s) for s in range(total, 0, -1)]
    assert not panel.older.isEnabled()

    panel.type_filter.setCurrentIndex(panel.type_filter.findText("criterion.added"))
    qtbot.waitUntil(
        lambda: [r[2] for r in rows(panel.tree)] == ["criterion.added"], timeout=WAIT_MS
    )
    panel.type_filter.setCurrentIndex(0)
    assert len(rows(panel.tree)) == total  # the unfiltered view kept what it had loaded

    store.execute_all([c.RecordNote(task_id=tid, text="late") for _ in range(3)], agent)
    w.reload()
    qtbot.waitUntil(lambda: len(rows(panel.tree)) == total + 3, timeout=WAIT_MS)
    assert rows(panel.tree)[0][0] == str(total + 3)
    w.close()
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
