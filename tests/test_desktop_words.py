"""Words and signals: plurals, counts that say what they count, an exhausted budget red and
under "Needs you", and what the reviewer can do on every row that needs a person."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from test_desktop_actions import WAIT_MS

from store import Actor, Store
from store import commands as c
from store.commands.approvals import DecideApproval
from store.commands.effects import ReconcileEffect
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")
PERSON = Actor(kind="person", id="maria", name="Maria Keller")


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


def open_window(qtbot, store: Store):
    from boris_desktop.main_window import MainWindow

    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1280, 780)
    w.show()
    w.reload_now()
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    return w


def select_task(qtbot, w, task_id: str) -> None:
    row = w.inbox.row_of(task_id)
    w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
    qtbot.waitUntil(lambda: w.task_view.task_id == task_id, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)


def tab_titles(w) -> dict[str, str]:
    tabs = w.task_view.tabs
    return {tabs.tabText(i).split(" · ")[0]: tabs.tabText(i) for i in range(tabs.count())}


def cell(w, panel: str, path: tuple[str, ...], col: int) -> str:
    ix = w.task_view.panel(panel).tree.index_at(path)
    assert ix.isValid(), path
    return ix.siblingAtColumn(col).data()


def test_count_says_the_noun_in_its_number() -> None:
    from boris_desktop.ui import text as t

    assert t.count(1, "criterion", "criteria") == "1 criterion"
    assert t.count(2, "criterion", "criteria") == "2 criteria"
    assert t.count(0, "criterion", "criteria") == "0 criteria"
    assert t.count(1, "discrepancy", "discrepancies") == "1 discrepancy"
    assert t.count(1200, "event", "events") == "1,200 events"


def test_one_of_each_is_singular(qtbot, store: Store) -> None:
    store.execute_all(
        [
            c.CreateTask(task_id="t", title="One", owner="o", objective="x"),
            c.AddCriterion(task_id="t", text="the one criterion"),
        ],
        AGENT,
    )
    w = open_window(qtbot, store)
    assert w.task_view.panel("Criteria").caption.text() == "1 criterion: 1 unverified"
    assert w.statusBar().currentMessage().startswith("1 task, 0 need you")
    assert w.task_view.panel("Timeline").caption.text().startswith("2 events shown of 2")
    assert w.task_view.panel("Dependencies").caption.text() == "No phases."
    w.close()


def test_tab_titles_say_what_they_count_and_problems_come_first(qtbot, store: Store) -> None:
    fill_demo(store)
    w = open_window(qtbot, store)
    titles = tab_titles(w)
    assert titles["Artifacts"] == "Artifacts · 1 problem"
    assert titles["Criteria"] == "Criteria · 2 to check"
    assert titles["Effects"] == "Effects · 1 to reconcile"
    assert titles["Approvals"] == "Approvals"  # the guide's approval was used: nothing pending
    assert titles["Checkpoints"] == "Checkpoints · forked"
    arts = w.task_view.panel("Artifacts")
    first = arts.tree.records.index(0, 0)
    assert first.data(Qt.ItemDataRole.DisplayRole) == "build.log"  # the one with a problem
    assert "1 has a problem, listed first" in arts.caption.text()
    w.close()


def test_an_approved_unsent_effect_is_not_to_reconcile(qtbot, store: Store) -> None:
    fill_demo(store)
    store.execute(
        DecideApproval(task_id="note", approval_id="apr-note-mail", decision="approved"), PERSON
    )
    w = open_window(qtbot, store)
    row = next(r for r in w.inbox.rows if r["id"] == "note")
    from boris_desktop.inbox.table import needs_text

    assert needs_text(row["needs"], row["status"]) == "1 effect to reconcile"
    select_task(qtbot, w, "note")
    assert tab_titles(w)["Effects"] == "Effects · 1 to reconcile"
    assert cell(w, "Effects", ("mail-note",), 5) == "—"
    assert cell(w, "Effects", ("save-note",), 5).startswith("Reconcile: observe the file")
    assert w.task_view.panel("Effects").caption.text().startswith("2 effects, 1 to reconcile")
    w.close()


def test_an_exhausted_budget_is_red_and_needs_you(qtbot, store: Store) -> None:
    from boris_desktop.inbox.table import BUDGET, NEEDS, InboxFilter

    store.execute_all(
        [
            c.CreateTask(task_id="spent", title="Spent", owner="o", objective="x"),
            c.SetBudget(task_id="spent", counter="model_calls", limit=20),
            c.ChargeBudget(task_id="spent", counter="model_calls", amount=21),
        ],
        AGENT,
    )
    w = open_window(qtbot, store)
    row = w.inbox.row_of("spent")
    assert "budget exhausted" in w.inbox.index(row, NEEDS).data()
    assert w.inbox.index(row, BUDGET).data() == "105% exhausted"
    red = w.inbox.index(row, BUDGET).data(Qt.ItemDataRole.ForegroundRole).color()
    assert red.red() > 150 and red.green() < 100
    assert w.inbox.index(row, BUDGET).data(Qt.ItemDataRole.DecorationRole) is not None
    w.status_filter.setCurrentIndex(w.status_filter.findData(InboxFilter.NEEDS_YOU))
    assert w.proxy.rowCount() == 1

    panel = w.task_view.panel("Budgets")
    _mark, bar, words, _label = panel.rows["model_calls"]
    assert bar.format() == "21 / 20  (105%)"
    assert bar.palette().color(QPalette.ColorRole.Highlight) == QColor("#c62828")
    assert "exhausted" in words.text() and "#c62828" in words.styleSheet()
    assert words.wordWrap()  # the sentence wraps rather than being cut off
    assert tab_titles(w)["Budgets"] == "Budgets · 1 exhausted"
    w.close()


def test_rows_that_need_a_person_say_what_to_do(qtbot, store: Store) -> None:
    fill_demo(store)
    w = open_window(qtbot, store)
    # The guide: a stale and an unverified criterion, an upload whose outcome is unknown.
    assert cell(w, "Criteria", ("structure",), 4).startswith("Re-check: judge it")
    assert cell(w, "Criteria", ("citations",), 4).startswith("Verify: judge it satisfied")
    assert cell(w, "Effects", ("upload-guide",), 5) == (
        "Reconcile: check the destination and decide (Ctrl+R)"
    )
    select_task(qtbot, w, "note")
    assert cell(w, "Approvals", ("apr-note-mail",), 5) == "Decide: approve or reject (Ctrl+Return)"
    approvals = w.task_view.panel("Approvals")
    approvals.tree.setCurrentIndex(approvals.tree.index_at(("apr-note-mail",)))
    assert approvals.fields.next.text() == "Decide: approve or reject (Ctrl+Return)"
    assert cell(w, "Effects", ("mail-note",), 5) == (
        "Decide: approve or reject apr-note-mail (Ctrl+Return)"
    )
    # A conflict: the file holds neither the old nor the intended bytes.
    note = next(
        Path(e["target"]) for e in store.task("note")["effects"] if e["effect_id"] == "save-note"
    )
    note.write_text("someone else's words\n", encoding="utf-8")
    assert store.execute(ReconcileEffect(task_id="note", effect_id="save-note"), AGENT) == (
        "conflict"
    )
    w.reload()
    qtbot.waitUntil(
        lambda: cell(w, "Effects", ("save-note",), 5).startswith("Conflict: a person decides"),
        timeout=WAIT_MS,
    )
    w.close()


def test_a_task_that_needs_you_always_says_why(store: Store) -> None:
    """The inbox's attention icon and its words come from the same counts: a task scored as
    needing a person never reads "—" (a budget near its limit is said when it is all)."""
    from boris_desktop.inbox.table import needs_text

    fill_demo(store)
    store.execute(
        DecideApproval(task_id="note", approval_id="apr-note-mail", decision="approved"), PERSON
    )
    store.execute_all(
        [
            c.CreateTask(task_id="near", title="Near", owner="o", objective="x"),
            c.SetBudget(task_id="near", counter="tool_calls", limit=10),
            c.ChargeBudget(task_id="near", counter="tool_calls", amount=9),
        ],
        PERSON,
    )
    for r in store.tasks():
        assert (r["attention"] > 0) == (needs_text(r["needs"], r["status"]) != "—"), r["id"]
    near = next(r for r in store.tasks() if r["id"] == "near")
    assert needs_text(near["needs"], near["status"]) == "budget near limit"


def _held(store: Store, limit: int, used: int, reserved: int) -> None:
    store.execute_all(
        [
            c.CreateTask(task_id="held", title="Held", owner="o", objective="x"),
            c.SetBudget(task_id="held", counter="model_calls", limit=limit),
            c.ChargeBudget(task_id="held", counter="model_calls", amount=used),
            c.ReserveBudget(task_id="held", counter="model_calls", amount=reserved),
        ],
        AGENT,
    )


def _inbox_says(w: Any, task_id: str) -> tuple[str, str, int]:
    """The inbox row's Budget and Needs-you cells, and its attention score."""
    from boris_desktop.inbox.table import BUDGET, NEEDS

    row = w.inbox.row_of(task_id)
    cells = (w.inbox.index(row, BUDGET).data(), w.inbox.index(row, NEEDS).data())
    return (*cells, w.inbox.rows[row]["attention"])


def test_a_fully_reserved_budget_is_red_and_said_apart_from_exhausted(qtbot, store: Store) -> None:
    _held(store, limit=20, used=5, reserved=15)
    w = open_window(qtbot, store)
    _mark, bar, words, _label = w.task_view.panel("Budgets").rows["model_calls"]
    assert words.text().endswith("0 left — nothing left to reserve")
    assert bar.palette().color(QPalette.ColorRole.Highlight) == QColor("#c62828")
    assert tab_titles(w)["Budgets"] == "Budgets · 1 fully reserved"
    # The inbox says it as the tab does (the store's standing), not by the share used alone.
    budget, needs, attention = _inbox_says(w, "held")
    assert (budget, needs) == ("25% nothing left to reserve", "budget: nothing left to reserve")
    assert attention > 0
    w.close()


def test_a_budget_near_its_limit_by_reservations_says_so_in_the_inbox_too(
    qtbot, store: Store
) -> None:
    """Half used and a third more reserved: "near its limit" in the Budgets tab, and in the
    inbox (whose share shown is what is used); the task counts as needing a person."""
    _held(store, limit=100, used=50, reserved=35)
    w = open_window(qtbot, store)
    _mark, _bar, words, _label = w.task_view.panel("Budgets").rows["model_calls"]
    assert words.text().endswith("near its limit")
    budget, needs, attention = _inbox_says(w, "held")
    assert (budget, needs) == ("50% near limit", "budget near limit")
    assert attention > 0
    w.close()


def test_a_satisfied_criterion_whose_evidence_is_gone_is_to_check_again(
    qtbot, store: Store
) -> None:
    """The tab counts what the store judges open, not the stored status: satisfied on
    evidence nobody can read any more is not done."""
    store.execute_all(
        [
            c.CreateTask(task_id="t", title="One", owner="o", objective="x"),
            c.AddCriterion(task_id="t", criterion_id="ok", text="it works"),
            c.RecordArtifact(task_id="t", artifact_id="r", name="r", content=c.Content(text="r")),
        ],
        AGENT,
    )
    eid = store.execute(
        c.AttachEvidence(
            task_id="t", criterion_id="ok", kind="command_output", content=c.Content(text="ok")
        ),
        AGENT,
    )
    store.execute(
        c.JudgeCriterion(
            task_id="t", criterion_id="ok", status="satisfied", artifact_id="r", evidence_ids=[eid]
        ),
        AGENT,
    )
    w = open_window(qtbot, store)
    assert tab_titles(w)["Criteria"] == "Criteria"
    w.close()
    digest = store.task("t")["criteria"][0]["evidence"][0]["digest"]
    store.blobs.path_of(digest).unlink()
    w = open_window(qtbot, store)
    assert tab_titles(w)["Criteria"] == "Criteria · 1 to check"
    assert cell(w, "Criteria", ("ok",), 1) == "evidence missing"
    assert cell(w, "Criteria", ("ok",), 4).startswith("Evidence missing: restore it")
    assert w.task_view.panel("Criteria").caption.text() == "1 criterion: 1 evidence missing"
    w.close()
