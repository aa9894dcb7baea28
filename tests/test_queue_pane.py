"""The Decisions tab's pane is the selected decision's task, on the part that decision
concerns; a task shown after another never keeps the other's rows in a part it lacks.

Driven as a reviewer drives it: Ctrl+D, a click on the tab, the arrow keys, Enter and the
dialog's own button; read back from what the window shows."""

from __future__ import annotations

import os
import threading
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, armed, done, settle

from store import Actor, Store
from store import commands as c
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")
#: What the window shows of a read, not how either engine reads: as the queue's other window
#: tests (test_decision_queue), on SQLite.
pytestmark = pytest.mark.sqlite_only
#: The part of the task each kind of decision is about.
PART = {
    "approval": "Approvals",
    "reconcile": "Effects",
    "conflict": "Effects",
    "judge": "Criteria",
    "resume": "Brief",
}
CTRL = Qt.KeyboardModifier.ControlModifier


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _window(qtbot, store: Store):
    """The window as a reviewer has it: shown, active (so its shortcuts work), read."""
    from boris_desktop.main_window import MainWindow

    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1280, 780)
    w.show()
    qtbot.waitExposed(w, timeout=WAIT_MS)
    w.activateWindow()
    qtbot.waitActive(w, timeout=WAIT_MS)
    w.reload_now()
    settle(qtbot, w)
    qtbot.waitUntil(lambda: w.queue.loaded, timeout=WAIT_MS)
    return w


@pytest.fixture
def demo(qtbot, store: Store):
    fill_demo(store)
    w = _window(qtbot, store)
    yield w
    w.close()


def _pane(w) -> tuple[str | None, str | None, str | None]:
    """(task id, title on screen, part in front) of the task pane; Nones when it shows no
    task."""
    tv = w._task_view
    if tv is None or w.right.currentWidget() is not tv:
        return (None, None, None)
    return (tv.task_id, tv.header.title.text(), tv.tabs.currentWidget().title)


def _wanted(w) -> tuple[str | None, str | None, str | None]:
    d = w.queue.current()
    if d is None:
        return (None, None, None)
    return (d["task_id"], d["task_title"], PART[d["kind"]])


def _agree(qtbot, w) -> None:
    """The pane shows the selected decision's task, on its part, with its row current."""
    try:
        qtbot.waitUntil(lambda: _pane(w) == _wanted(w), timeout=WAIT_MS)
    except AssertionError:
        raise AssertionError(
            f"the queue selects {_wanted(w)} but the pane shows {_pane(w)}"
        ) from None
    d = w.queue.current()
    if d is not None and d["kind"] != "resume":
        node = w.task_view.panels[PART[d["kind"]]].tree.current_node()
        while node is not None and node.parent is not None:
            node = node.parent
        assert node is not None and node.key == d["key"], "the decision's own row is current"


def _ctrl_d(qtbot, w) -> None:
    qtbot.keyClick(w.table if w.views.currentIndex() == 0 else w, Qt.Key.Key_D, CTRL)


def _row_of(w, kind: str, task_id: str) -> int:
    q = w.queue
    for row in range(q.proxy.rowCount()):
        d = q.model.rows[q.proxy.mapToSource(q.proxy.index(row, 0)).row()]
        if d["kind"] == kind and d["task_id"] == task_id:
            return row
    raise AssertionError(f"no {kind} decision of {task_id} in the queue")


def _dialog_task(dialog) -> str:
    return getattr(dialog, "task_id", None) or dialog.task["id"]


def test_ctrl_d_shows_the_selected_decisions_task_not_the_inbox_one(qtbot, demo) -> None:
    """The reviewer's report: a decision of the guide selected in the queue, the note picked
    in the task list meanwhile; Ctrl+D came back to the guide's decision over the note."""
    w, q = demo, demo.queue
    _ctrl_d(qtbot, w)
    assert w.views.currentWidget() is q
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "judge", "guide"), 0))
    _agree(qtbot, w)
    w.views.setCurrentIndex(0)  # back to the task list, where the note is picked
    row = w.inbox.row_of("note")
    w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
    qtbot.waitUntil(lambda: w.task_view.task_id == "note", timeout=WAIT_MS)
    settle(qtbot, w)
    _ctrl_d(qtbot, w)
    assert w.views.currentWidget() is q
    assert q.current()["kind"] == "judge" and q.current()["task_id"] == "guide"
    _agree(qtbot, w)
    assert _pane(w) == ("guide", "Reference guide from six source documents", "Criteria")


def test_the_first_ctrl_d_selects_a_decision_and_shows_it(qtbot, demo) -> None:
    w, q = demo, demo.queue
    _ctrl_d(qtbot, w)
    qtbot.waitUntil(lambda: q.current() is not None, timeout=WAIT_MS)
    assert q.table.selectionModel().isRowSelected(q.table.currentIndex().row())
    _agree(qtbot, w)


def test_a_click_on_the_tab_shows_the_selected_decisions_task(qtbot, demo) -> None:
    w, q = demo, demo.queue
    w.views.setCurrentWidget(q)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "reconcile", "guide"), 0))
    _agree(qtbot, w)
    w.views.setCurrentIndex(0)
    row = w.inbox.row_of("note")
    w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
    qtbot.waitUntil(lambda: w.task_view.task_id == "note", timeout=WAIT_MS)
    bar = w.views.tabBar()
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(1).center())
    assert w.views.currentWidget() is q
    _agree(qtbot, w)
    assert _pane(w)[0] == "guide"


def test_the_arrow_keys_move_the_pane_with_the_selection(qtbot, demo) -> None:
    w, q = demo, demo.queue
    _ctrl_d(qtbot, w)
    q.table.setCurrentIndex(q.proxy.index(0, 0))
    _agree(qtbot, w)
    seen = set()
    for _ in range(q.proxy.rowCount() - 1):
        qtbot.keyClick(q.table, Qt.Key.Key_Down)
        _agree(qtbot, w)
        seen.add(_pane(w))
    qtbot.keyClick(q.table, Qt.Key.Key_Up)
    _agree(qtbot, w)
    # Both tasks and several parts went by.
    assert {p[0] for p in seen} == {"guide", "note"}
    assert len({p[2] for p in seen}) >= 2


def test_deciding_one_selects_the_next_and_its_dialog_is_the_panes_task(qtbot, demo) -> None:
    w, q = demo, demo.queue
    _ctrl_d(qtbot, w)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "approval", "note"), 0))
    _agree(qtbot, w)
    qtbot.keyClick(q.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: q.dialog is not None and q.dialog.isVisible(), timeout=WAIT_MS)
    first = q.dialog
    assert _dialog_task(first) == _pane(w)[0] == "note"
    armed(qtbot, first.ok)
    first.note.setPlainText("fine to send")
    qtbot.waitUntil(first.can_decide, timeout=WAIT_MS)  # its decision view read and armed
    first.ok.click()
    done(qtbot, w, first)
    assert first.result() == first.DialogCode.Accepted, first.error.text()
    # The next decision is selected and its dialog opens: over its own task, on its part.
    qtbot.waitUntil(lambda: q.dialog is not first and q.dialog.isVisible(), timeout=WAIT_MS)
    nxt = q.current()
    assert nxt is not None and nxt["kind"] != "approval"
    _agree(qtbot, w)
    assert _dialog_task(q.dialog) == _pane(w)[0] == nxt["task_id"]
    q.dialog.reject()


def test_enter_right_after_moving_opens_the_dialog_over_its_own_task(qtbot, demo) -> None:
    """Enter pressed before the pane has read the new task: the dialog waits for it."""
    w, q = demo, demo.queue
    _ctrl_d(qtbot, w)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "approval", "note"), 0))
    _agree(qtbot, w)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "judge", "guide"), 0))
    qtbot.keyClick(q.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: q.dialog is not None and q.dialog.isVisible(), timeout=WAIT_MS)
    assert _dialog_task(q.dialog) == "guide"
    assert _pane(w)[0] == "guide"
    _agree(qtbot, w)
    q.dialog.reject()


def test_a_slow_read_of_the_previous_task_is_dropped(qtbot, demo, monkeypatch) -> None:
    """The guide's read is slow; the note is selected meanwhile: when the guide's read
    arrives, the pane stays on the note."""
    from boris_desktop import main_window

    w, q = demo, demo.queue
    _ctrl_d(qtbot, w)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "approval", "note"), 0))
    _agree(qtbot, w)
    jobs = main_window.jobs
    fast = jobs.task_only
    released = threading.Event()
    finished = threading.Event()

    def task_only(store, task_id, *a, **kw):
        if task_id == "guide":
            released.wait(5)
            try:
                return fast(store, task_id, *a, **kw)
            finally:
                finished.set()
        return fast(store, task_id, *a, **kw)

    monkeypatch.setattr(jobs, "task_only", task_only)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "judge", "guide"), 0))
    qtbot.wait(50)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "reconcile", "note"), 0))
    _agree(qtbot, w)
    released.set()
    qtbot.waitUntil(finished.is_set, timeout=WAIT_MS)
    qtbot.wait(200)
    settle(qtbot, w)
    assert _pane(w) == ("note", "Save the weekly project note", "Effects")
    _agree(qtbot, w)


def test_no_selection_shows_no_stale_task(qtbot, demo) -> None:
    """Filtered to nothing: the pane says to select a decision, and shows no task."""
    w, q = demo, demo.queue
    _ctrl_d(qtbot, w)
    q.table.setCurrentIndex(q.proxy.index(0, 0))
    _agree(qtbot, w)
    q.kind.setCurrentIndex(q.kind.findData("resume"))  # the demo has no run to resume
    assert q.proxy.rowCount() == 0
    qtbot.waitUntil(lambda: _pane(w) == (None, None, None), timeout=WAIT_MS)
    assert "select a decision" in w.right.currentWidget().accessibleName().lower() or any(
        "select a decision" in lbl.text().lower()
        for lbl in w.right.currentWidget().findChildren(type(w.nothing))
    )
    q.kind.setCurrentIndex(0)
    q.table.setCurrentIndex(q.proxy.index(0, 0))
    _agree(qtbot, w)
    # Back on the task list: its task again.
    w.views.setCurrentIndex(0)
    qtbot.waitUntil(lambda: _pane(w)[0] == w.selected, timeout=WAIT_MS)


def test_a_run_to_resume_shows_its_brief(qtbot, store: Store) -> None:
    from store.commands.checkpoints import StopRun

    fill_demo(store)
    store.execute(
        c.CreateTask(task_id="halted", title="Halted run", owner="olga", objective="x"), AGENT
    )
    store.execute(StopRun(task_id="halted", reason="owner's call"), Actor(kind="person", id="olga"))
    w = _window(qtbot, store)
    q = w.queue
    _ctrl_d(qtbot, w)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "resume", "halted"), 0))
    _agree(qtbot, w)
    assert _pane(w) == ("halted", "Halted run", "Brief")
    w.close()


def test_a_new_decision_above_keeps_the_selection_and_the_pane(qtbot, demo) -> None:
    """A refresh that puts a decision above the selected one: the selection stays with its
    decision and the pane with it."""
    from store.commands import approvals as ap

    w, q = demo, demo.queue
    store = w.store
    _ctrl_d(qtbot, w)
    q.table.setCurrentIndex(q.proxy.index(_row_of(w, "reconcile", "guide"), 0))
    _agree(qtbot, w)
    before = len(q.model.rows)
    store.execute(
        ap.RequestApproval(
            task_id="note", approval_id="apr-soon", payload={"kind": "send", "n": 1},
            consequence="send message 1", policy="test", expires_in_seconds=60,
        ),
        AGENT,
    )  # fmt: skip
    w.reload()
    q.refresh()
    qtbot.waitUntil(lambda: len(q.model.rows) == before + 1, timeout=WAIT_MS)
    assert q.model.rows[0]["key"] == "apr-soon"
    settle(qtbot, w)
    assert (q.current()["kind"], q.current()["task_id"]) == ("reconcile", "guide")
    _agree(qtbot, w)


# --- every part of the task view: a task without that data shows none ------------------


def _bare(store: Store) -> None:
    store.execute(
        c.CreateTask(task_id="bare", title="A bare task", owner="olga", objective="nothing yet"),
        AGENT,
    )


def _texts(panel) -> str:
    """Everything the part shows in words, whatever its widgets."""
    from PySide6.QtWidgets import QAbstractItemView, QComboBox, QLabel, QPlainTextEdit

    out = []
    for lbl in panel.findChildren(QLabel):
        if lbl.isVisibleTo(panel):
            out.append(lbl.text())
    for pane in panel.findChildren(QPlainTextEdit):
        out.append(pane.toPlainText())
    for box in panel.findChildren(QComboBox):
        out += [box.itemText(i) for i in range(box.count())]
    for view in panel.findChildren(QAbstractItemView):
        model = view.model()
        stack = [(r, None) for r in range(model.rowCount())]
        while stack:
            r, parent = stack.pop()
            ix = model.index(r, 0) if parent is None else model.index(r, 0, parent)
            for col in range(model.columnCount(ix.parent())):
                out.append(str(model.index(r, col, ix.parent()).data() or ""))
            stack += [(k, ix) for k in range(model.rowCount(ix))]
    return "\n".join(out)


#: Words only the guide's record has, part by part.
GUIDE_WORDS = {
    "Criteria": ["citations", "structure"],
    "Artifacts": ["guide.md", "build.log"],
    "Approvals": ["apr-guide", "docs.example.org"],
    "Effects": ["upload-guide", "docs.example.org"],
    "Budgets": ["model calls", "tool calls"],
    "Dependencies": ["Draft the guide", "Structural review"],
    "Checkpoints": ["ckpt-"],
    "Timeline": ["guide"],
    "Brief": ["guide"],
}


@pytest.mark.parametrize("part", list(GUIDE_WORDS))
def test_a_task_without_that_data_shows_an_empty_part(qtbot, store: Store, part: str) -> None:
    """Each part shown with the guide (its first row selected, in full below), then the bare
    task: the part shows nothing of the guide's."""
    fill_demo(store)
    _bare(store)
    w = _window(qtbot, store)
    tv = w.task_view
    row = w.inbox.row_of("guide")
    w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
    qtbot.waitUntil(lambda: tv.task_id == "guide", timeout=WAIT_MS)
    panel = tv.panel(part)
    tv.tabs.setCurrentWidget(panel)
    settle(qtbot, w)
    qtbot.wait(100)
    settle(qtbot, w)
    shown = _texts(panel)
    words = [x for x in GUIDE_WORDS[part] if x in shown]
    assert words, f"the guide's {part} shows none of {GUIDE_WORDS[part]}: {shown[:400]}"
    row = w.inbox.row_of("bare")
    w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
    qtbot.waitUntil(lambda: tv.task_id == "bare", timeout=WAIT_MS)
    assert tv.tabs.currentWidget() is panel
    # At once (the brief, read after the record, has not come yet) and once all is in.
    for _ in range(2):
        left = [x for x in words if x in _texts(panel)]
        assert not left, f"{part} still shows the guide's {left}:\n{_texts(panel)}"
        settle(qtbot, w)
        qtbot.wait(100)
        settle(qtbot, w)
    w.close()


def test_the_phases_pane_is_empty_for_a_task_without_phases(qtbot, demo) -> None:
    """The reviewer's report: the note (no phases) kept the guide's phase below the list."""
    w, tv = demo, demo.task_view
    row = w.inbox.row_of("guide")
    w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
    qtbot.waitUntil(lambda: tv.task_id == "guide", timeout=WAIT_MS)
    panel = tv.panel("Dependencies")
    tv.tabs.setCurrentWidget(panel)
    settle(qtbot, w)
    assert panel.tree.current_node() is not None
    assert panel.form.records.roots or panel.detail.toPlainText()
    row = w.inbox.row_of("note")
    w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
    qtbot.waitUntil(lambda: tv.task_id == "note", timeout=WAIT_MS)
    settle(qtbot, w)
    assert panel.tree.records.roots == []
    assert panel.form.records.roots == []
    assert panel.detail.toPlainText() == ""
    assert panel.caption.text() == "No phases."
