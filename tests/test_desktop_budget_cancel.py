"""A reviewer changes a budget and cancels a planned effect from the window (issue 32):
through Actions › Change Budget and Actions › Cancel a Planned Effect, and from the decision
queue, where a run whose budget ran out waits on a person. Each test selects, opens, types
and clicks as a reviewer does, and reads the store's record afterwards. A limit changed by
another process (the real `boris` CLI) shows as a conflict in the open dialog, on both
engines."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, armed, done, open_window, settle

from store import Actor, Store
from store import commands as c
from store.api import Conflict
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="drafter-7", name="Drafting agent")
LEFT = Qt.MouseButton.LeftButton


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _viewed(qtbot, d) -> None:
    qtbot.waitUntil(lambda: d.view is not None, timeout=WAIT_MS)


def _type_number(qtbot, spin, text: str) -> None:
    """Select what the spin box holds and type over it, as a person does."""
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, text)


def _exhausted(store: Store, ws: Path) -> None:
    """Task t: a file write waiting for approval, and its 20 tool calls spent (22): the run
    is budget_exhausted. (The demo's runs are outcome_unknown, which a charge leaves be.)"""
    from store.commands import approvals as ap
    from store.commands import effects as lg

    (ws / "report.md").write_text("draft\n")
    store.execute(
        c.CreateTask(task_id="t", title="Write the report", owner="o", objective="x",
                     scope_paths=[str(ws)]),
        AGENT,
    )  # fmt: skip
    store.execute(
        lg.PlanEffect(task_id="t", effect_id="save", kind="file_write",
                      target=str(ws / "report.md"), consequence="Save the report",
                      content=c.Content(text="final\n"), requires_approval=True, policy="owner"),
        AGENT,
    )  # fmt: skip
    store.execute(
        ap.RequestApproval(task_id="t", approval_id="apr-save", effect_id="save", policy="owner"),
        AGENT,
    )
    store.execute_all(
        [
            c.SetBudget(task_id="t", counter="tool_calls", limit=20),
            c.ChargeBudget(task_id="t", counter="tool_calls", amount=22),
        ],
        AGENT,
    )
    assert store.task("t")["status"] == "budget_exhausted"


def _select_budget(qtbot, w, counter: str) -> None:
    tv = w.task_view
    panel = tv.panels["Budgets"]
    tv.tabs.setCurrentWidget(panel)
    settle(qtbot, w)
    qtbot.waitUntil(lambda: counter in panel.rows, timeout=WAIT_MS)
    qtbot.mouseClick(panel.rows[counter][1], LEFT)
    assert w.current_key("Budgets") == counter


# --- Actions › Change Budget ---------------------------------------------------------------


def test_raising_an_exhausted_limit_from_the_menu_lets_the_run_go_on(
    qtbot, store: Store, ws: Path
) -> None:
    _exhausted(store, ws)
    w = open_window(qtbot, store, "t")
    _select_budget(qtbot, w, "tool_calls")
    w.menu_actions.update()
    assert w.menu_actions.budget_action.isEnabled()
    w.menu_actions.budget_action.trigger()
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    _viewed(qtbot, d)
    assert d.counter == "tool_calls"
    assert "22 used · 0 reserved · limit 20 · exhausted" in d.now.text(), d.now.text()
    assert "The run is budget exhausted" in d.now.text()
    assert d.or_resume.isVisible()
    assert not d.ok.isEnabled()  # nothing changes yet
    qtbot.mouseClick(d.set_limit, LEFT, pos=d.set_limit.rect().bottomLeft() + _nudge())
    assert d.set_limit.isChecked() and d.limit.isEnabled()
    _type_number(qtbot, d.limit, "40")
    what = d.what.text()
    assert "Limit: 20 → 40" in what
    assert "Standing: exhausted → within" in what
    # The store's rule says where the run goes once its budget no longer binds: back to
    # waiting for the approval it asked for.
    assert "The run goes on: budget exhausted → awaiting approval" in what
    assert "apr-save is pending" in what
    armed(qtbot, d.ok)
    qtbot.mouseClick(d.ok, LEFT)
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()
    task = store.task("t")
    tools = next(b for b in task["budgets"] if b["counter"] == "tool_calls")
    assert tools["limit_value"] == 40
    assert task["status"] == d.plan.status_after == "awaiting_approval"
    limit_set = [e for e in store.events("t") if e["type"] == "budget.limit_set"][-1]
    assert limit_set["actor"]["id"] == "rita"
    assert _payload(limit_set)["based_on"] == 1
    w.close()


def _nudge() -> Any:
    from PySide6.QtCore import QPoint

    return QPoint(4, -4)


def _payload(event: dict[str, Any]) -> dict[str, Any]:
    p = event["payload"]
    return json.loads(p) if isinstance(p, str) else p


def test_releasing_a_reservation_needs_the_persons_reason(qtbot, store: Store, ws: Path) -> None:
    store.execute(
        c.CreateTask(task_id="t", title="Upload the report", owner="o", objective="x",
                     scope_paths=[str(ws)]),
        AGENT,
    )  # fmt: skip
    store.execute_all(
        [
            c.SetBudget(task_id="t", counter="tool_calls", limit=10),
            c.ReserveBudget(task_id="t", counter="tool_calls", amount=8),
        ],
        AGENT,
    )
    w = open_window(qtbot, store, "t")
    d = w.menu_actions.change_budget()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    _viewed(qtbot, d)
    assert d.counter == "tool_calls"  # the most pressing: near its limit
    assert d.release.isEnabled() and d.release.maximum() == 8
    _type_number(qtbot, d.release, "5")
    assert "Reserved: 8 → 3" in d.what.text()
    assert d.why_not.isVisible() and "give a reason" in d.why_not.text()
    assert not d.ok.isEnabled()
    qtbot.keyClicks(d.reason, "the upload was called off")
    qtbot.waitUntil(d.ok.isEnabled, timeout=WAIT_MS)
    assert not d.why_not.isVisible()
    qtbot.mouseClick(d.ok, LEFT)
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()
    assert store.task("t")["budgets"][0]["reserved"] == 3
    released = [e for e in store.events("t") if e["type"] == "budget.released"][-1]
    assert _payload(released)["reason"] == "the upload was called off"
    assert released["actor"]["id"] == "rita"
    w.close()


def test_the_spin_boxes_take_no_negative_or_non_finite_number(qtbot, store: Store) -> None:
    fill_demo(store)
    w = open_window(qtbot, store, "note")
    d = w.menu_actions.change_budget("tool_calls")
    qtbot.waitExposed(d, timeout=WAIT_MS)
    _viewed(qtbot, d)
    d.set_limit.setChecked(True)
    for typed in ("-5", "inf", "nan", "1e400", "-inf"):
        _type_number(qtbot, d.limit, typed)
        value = d.limit.value()
        assert math.isfinite(value) and value >= 0, (typed, value)
    assert d.limit.minimum() == 0 and math.isfinite(d.limit.maximum())
    assert d.release.minimum() == 0 and d.release.maximum() == 0  # nothing reserved
    d.reject()
    w.close()


# --- a stale limit, changed by another process -------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def raced(
    qtbot, tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> Iterator[tuple[Store, list[str]]]:
    url = str(request.getfixturevalue("pg_url")) if engine == "postgresql" else None
    directory = tmp_path / "reviewer"
    s = Store.open(directory, url=url)
    fill_demo(s)
    where = ["--store", str(directory)] + (["--url", url] if url else [])
    yield s, where
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    s.close()


def _boris(where: list[str], *args: str) -> str:
    """The real `boris` command line, in another process, as the agent."""
    exe = Path(sys.executable).with_name("boris")
    run = subprocess.run(
        [str(exe), *where, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "BORIS_ACTOR": "agent:drafter-7:Drafting agent"},
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_a_limit_changed_by_another_process_is_a_conflict_in_the_open_dialog(
    qtbot, raced: tuple[Store, list[str]]
) -> None:
    store, where = raced
    w = open_window(qtbot, store, "note")
    d = w.menu_actions.change_budget("tool_calls")
    qtbot.waitExposed(d, timeout=WAIT_MS)
    _viewed(qtbot, d)
    assert d.based_on == 1
    d.set_limit.setChecked(True)
    _type_number(qtbot, d.limit, "30")
    qtbot.waitUntil(d.ok.isEnabled, timeout=WAIT_MS)
    # The dialog stops following the store, so the click is what meets the change.
    d.follower.stop()
    _boris(where, "set-budget", "note", "tool_calls", "18")
    qtbot.mouseClick(d.ok, LEFT)
    done(qtbot, w, d)
    assert d.isVisible()
    assert isinstance(d.last_error, Conflict)
    assert d.error.isVisible()
    assert d.changed.isVisible()
    assert "Drafting agent" in d.changed.text() and "set its limit to 18" in d.changed.text()
    assert not d.ok.isEnabled() and d.rebase.isVisible()
    tools = next(b for b in store.task("note")["budgets"] if b["counter"] == "tool_calls")
    assert tools["limit_value"] == 18  # nothing overwritten
    # Looking at what is there now keeps the number typed, and then it may be sent.
    qtbot.waitUntil(lambda: d.newest is not None and d.newest.limit_rev == 2, timeout=WAIT_MS)
    qtbot.mouseClick(d.rebase, LEFT)
    assert d.based_on == 2 and d.limit.value() == 30
    assert "Limit: 18 → 30" in d.what.text()
    qtbot.waitUntil(d.ok.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(d.ok, LEFT)
    done(qtbot, w, d)
    assert not d.isVisible()
    tools = next(b for b in store.task("note")["budgets"] if b["counter"] == "tool_calls")
    assert tools["limit_value"] == 30
    w.close()


def test_an_open_dialog_shows_another_processs_change_before_the_click(
    qtbot, raced: tuple[Store, list[str]]
) -> None:
    store, where = raced
    w = open_window(qtbot, store, "note")
    d = w.menu_actions.change_budget("tool_calls")
    qtbot.waitExposed(d, timeout=WAIT_MS)
    _viewed(qtbot, d)
    d.set_limit.setChecked(True)
    _type_number(qtbot, d.limit, "30")
    _boris(where, "set-budget", "note", "tool_calls", "15")
    qtbot.waitUntil(d.changed.isVisible, timeout=WAIT_MS)
    assert "set its limit to 15" in d.changed.text()
    assert not d.ok.isEnabled()
    d.reject()
    w.close()


# --- Actions › Cancel a Planned Effect ---------------------------------------------------------


def test_cancelling_the_selected_planned_effect_revokes_its_approval(qtbot, store: Store) -> None:
    fill_demo(store)
    w = open_window(qtbot, store, "note")
    tv = w.task_view
    panel = tv.panels["Effects"]
    tv.tabs.setCurrentWidget(panel)
    settle(qtbot, w)
    qtbot.waitUntil(lambda: panel.tree.index_at(("mail-note",)).isValid(), timeout=WAIT_MS)
    panel.tree.setCurrentIndex(panel.tree.index_at(("mail-note",)))
    w.menu_actions.update()
    assert w.menu_actions.cancel_effect_action.isEnabled()
    w.menu_actions.cancel_effect_action.trigger()
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    _viewed(qtbot, d)
    assert d.effect_id == "mail-note"
    assert "Email this week's project note" in d.consequence.text()
    assert "planned → cancelled" in d.what.text()
    assert "Approvals revoked with it: apr-note-mail (pending)" in d.what.text()
    assert "Status stays outcome unknown" in d.what.text()
    assert "prepared object sha256:" in d.prepared.text()
    qtbot.waitUntil(lambda: d.content.result is not None, timeout=WAIT_MS)
    assert "project note" in d.content.pane.toPlainText().lower()
    qtbot.keyClicks(d.reason, "the owner sends it himself")
    qtbot.wait(50)
    assert not d.ok.isEnabled()  # not without the effect id typed
    qtbot.keyClicks(d.confirm, "mail-note")
    armed(qtbot, d.ok)
    qtbot.mouseClick(d.ok, LEFT)
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()
    task = store.task("note")
    mail = next(e for e in task["effects"] if e["effect_id"] == "mail-note")
    assert mail["stage"] == "cancelled"
    approval = next(a for a in task["approvals"] if a["approval_id"] == "apr-note-mail")
    assert approval["state"] == "revoked"
    cancelled = [e for e in store.events("note") if e["type"] == "effect.cancelled"][-1]
    assert cancelled["actor"]["id"] == "rita"
    assert _payload(cancelled)["reason"] == "the owner sends it himself"
    w.menu_actions.update()
    assert not w.menu_actions.cancel_effect_action.isEnabled()  # nothing left to cancel
    w.close()


def test_an_effect_sent_while_the_dialog_is_open_can_no_longer_be_cancelled(
    qtbot, store: Store
) -> None:
    from store.commands import approvals as ap
    from store.commands import effects as lg

    fill_demo(store)
    w = open_window(qtbot, store, "note")
    d = w.menu_actions.cancel_effect()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    _viewed(qtbot, d)
    qtbot.keyClicks(d.reason, "r")
    qtbot.keyClicks(d.confirm, "cancel")
    armed(qtbot, d.ok)
    ben = Actor(kind="person", id="ben", name="Ben")
    store.execute(
        ap.DecideApproval(task_id="note", approval_id="apr-note-mail", decision="approved"), ben
    )
    store.execute(
        lg.DispatchEffect(task_id="note", effect_id="mail-note", executor="mailer"), AGENT
    )
    store.execute(
        lg.RecordResponse(task_id="note", effect_id="mail-note", reported="timeout"), AGENT
    )
    # The dialog may show the approval's decision first (a read between the writes): it is
    # the last state, the effect sent with no answer, that it must end on.
    qtbot.waitUntil(
        lambda: d.changed.isVisible() and "reconciled, not cancelled" in d.changed.text(),
        timeout=WAIT_MS,
    )
    assert d.why_not.isVisible()
    assert not d.ok.isEnabled()
    d.reject()
    w.close()


# --- the decision queue ------------------------------------------------------------------------


def test_the_queues_budget_exhausted_run_opens_the_budget_dialog(
    qtbot, store: Store, ws: Path
) -> None:
    from test_queue_pane import _ctrl_d, _row_of, _window

    from boris_desktop.decide.budget import BudgetDialog

    _exhausted(store, ws)
    w = _window(qtbot, store)
    q = w.queue
    _ctrl_d(qtbot, w)
    qtbot.waitUntil(lambda: any(r["kind"] == "resume" for r in q.model.rows), timeout=WAIT_MS)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "resume", "t"), 0))
    qtbot.keyClick(q.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: isinstance(q.dialog, BudgetDialog), timeout=WAIT_MS)
    d = q.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    _viewed(qtbot, d)
    assert d.counter == "tool_calls"  # the store's word: the exhausted counter
    assert d.set_limit.isChecked() and d.limit.hasFocus()
    _type_number(qtbot, d.limit, "25")
    assert "Limit: 20 → 25" in d.what.text()
    assert "The run goes on: budget exhausted → awaiting approval" in d.what.text()
    qtbot.waitUntil(d.ok.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(d.ok, LEFT)
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()
    task = store.task("t")
    assert task["status"] == "awaiting_approval"
    assert next(b for b in task["budgets"] if b["counter"] == "tool_calls")["limit_value"] == 25
    qtbot.waitUntil(
        lambda: not [r for r in q.model.rows if r["kind"] == "resume" and r["task_id"] == "t"],
        timeout=WAIT_MS,
    )
    w.close()
