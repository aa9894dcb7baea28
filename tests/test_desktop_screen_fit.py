"""The window and its dialogs fit a 1024×700 screen (and a 1366×768 one).

A dialog as tall as its content (Approve 760 px, Reconcile 720 px) put its decision buttons
below a 700-high screen; the main window opened at 1280×780 put its status bar below a
768-high one; the lineage graph was given 25 px. The screen's available room is injected
(a QRect), as a 1024×700 laptop's would be.

No dialog grows with the length of a path (nor of a URL, a digest, an id): the store and the
demo's workspace live under a deliberately long base path here. A non-root user's pytest
temp dir (/tmp/pytest-of-newbie/pytest-3/popen-gw0/…) made the Reconcile dialog, which named
its target in one unbroken line, 1,149 px wide.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QPushButton
from test_desktop_actions import WAIT_MS, open_window, select_task

from store import Actor, Store, api
from store import commands as c
from store.commands import approvals as ap
from store.commands import effects as lg
from store.services.demo import fill_demo

#: A 1024×700 screen less a 40 px panel, as QScreen.availableGeometry gives it.
SMALL = QRect(0, 0, 1024, 700)
#: A 1366×768 screen less its panel.
LAPTOP = QRect(0, 0, 1366, 728)
#: A directory name longer than any temp dir's: every path a dialog shows goes through it.
LONG = "a-deliberately-long-base-path-" + "x" * 120


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """The store, and the demo's workspace inside it, under a long base path."""
    return tmp_path / LONG / "store"


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _file_approval(store: Store) -> None:
    """A file write that needs approval: the Approve dialog with a diff, its tallest."""
    agent = Actor(kind="agent", id="drafter-7", name="Drafting agent")
    note = Path(
        next(e for e in store.task("note")["effects"] if e["kind"] == "file_write")["target"]
    )
    store.execute(
        lg.PlanEffect(task_id="note", effect_id="tidy-note", kind="file_write", target=str(note),
                      consequence="Tidy the project note's heading",
                      content=c.Content(text=note.read_text().replace("# Project note",
                                                                      "# Project note (week 49)")),
                      requires_approval=True, policy="edits to shared notes need the owner"),
        agent,
    )  # fmt: skip
    store.execute(ap.RequestApproval(task_id="note", approval_id="apr-tidy", effect_id="tidy-note",
                                     policy="edits to shared notes need the owner",
                                     expires_in_seconds=3600), agent)  # fmt: skip


def _dialogs(w: Any, store: Store) -> list[tuple[str, Any]]:
    from boris_desktop.decide.approve import ApproveDialog
    from boris_desktop.decide.budget import BudgetDialog
    from boris_desktop.decide.cancel_effect import CancelEffectDialog
    from boris_desktop.decide.checkpoint import CheckpointDialog
    from boris_desktop.decide.delete_task import DeleteTaskDialog
    from boris_desktop.decide.edits import AmendDialog, CriterionDialog, EditArtifactDialog
    from boris_desktop.decide.evidence import AttachEvidenceDialog
    from boris_desktop.decide.judge import JudgeDialog
    from boris_desktop.decide.late import LateChangesDialog
    from boris_desktop.decide.phase import CompletePhaseDialog
    from boris_desktop.decide.reconcile import ReconcileDialog
    from boris_desktop.decide.stop import StopDialog
    from boris_desktop.decide.takeover import CancelWaitDialog, TakeOverDialog

    if not store.task("note")["waits"]:
        agent = Actor(kind="agent", id="drafter-7")
        store.execute(c.AcquireLease(task_id="guide", session_id="run-1", ttl_seconds=600), agent)
        store.execute(
            c.RecordWait(task_id="note", kind="rate_limit", ref="api.example.org",
                         after_seconds=300, wait_id="quota", cancel_if="the quota is raised"),
            agent,
        )  # fmt: skip
    note, guide = store.task("note"), store.task("guide")
    mail = next(a for a in note["approvals"] if a["approval_id"] == "apr-note-mail")
    mail_effect = next(e for e in note["effects"] if e["effect_id"] == "mail-note")
    tidy = next(a for a in note["approvals"] if a["approval_id"] == "apr-tidy")
    save = next(e for e in note["effects"] if e["effect_id"] == "save-note")
    upload = next(e for e in guide["effects"] if e["effect_id"] == "upload-guide")
    crit = next(x for x in guide["criteria"] if x["evidence"])
    text = next(a for a in guide["artifacts"] if a.get("current") is not None)
    evidence_file = str(text["current"]["path"])
    return [
        ("approve an email", lambda: ApproveDialog(w, "note", mail, note["now"])),
        ("approve a file write", lambda: ApproveDialog(w, "note", tidy, note["now"])),
        ("reconcile", lambda: ReconcileDialog(w, "note", save)),
        ("reconcile a destination", lambda: ReconcileDialog(w, "guide", upload)),
        ("checkpoint", lambda: CheckpointDialog(w, note)),
        ("stop", lambda: StopDialog(w, guide)),
        ("judge", lambda: JudgeDialog(w, guide, crit)),
        ("add a criterion", lambda: CriterionDialog(w, guide)),
        ("amend", lambda: AmendDialog(w, guide)),
        ("edit an artifact", lambda: EditArtifactDialog(w, guide, text, "line\n" * 200)),
        ("change a budget", lambda: BudgetDialog(w, note, "tool_calls", raise_limit=True)),
        ("cancel a planned effect", lambda: CancelEffectDialog(w, note, mail_effect)),
        ("complete a phase", lambda: CompletePhaseDialog(w, guide, "review")),
        ("attach evidence", lambda: AttachEvidenceDialog(w, guide, crit, evidence_file)),
        ("take over", lambda: TakeOverDialog(w, guide)),
        ("cancel a wait", lambda: CancelWaitDialog(w, note, note["waits"][0])),
        ("delete a task", lambda: DeleteTaskDialog(w, guide)),
        ("changed after completion", lambda: LateChangesDialog(w, _late(guide))),
    ]


def _late(task: api.TaskState) -> api.TaskState:
    """The task as one with five late facts (issue 35 part L): the dialog at its tallest."""
    facts = [
        {"seq": 40 + i, "at": "2026-12-06T12:00:00Z", "by": "agent:evaluator-2",
         "type": "criterion.judged", "what": f"criterion C{i}: judged it failed " + "x" * 60}
        for i in range(5)
    ]  # fmt: skip
    late = {"count": 5, "since_seq": 40, "since_at": "2026-12-06T12:00:00Z", "last_seq": 44,
            "words": "changed after completion: 5 facts since 2026-12-06", "facts": facts,
            "answers": [], "origin": None}  # fmt: skip
    return task.model_copy(
        update={"status": api.RunStatus.COMPLETED, "late": api.LateChanges.model_validate(late)}
    )


def _outside(d: Any) -> list[str]:
    """The dialog's buttons that are not wholly inside what the dialog shows."""
    shown = d.rect()
    return [
        b.text()
        for b in d.findChildren(QPushButton)
        if b.isVisibleTo(d) and not shown.contains(QRect(b.mapTo(d, QPoint(0, 0)), b.size()))
    ]


def test_every_decision_button_is_on_a_1024x700_screen(qtbot, store: Store) -> None:
    fill_demo(store)
    _file_approval(store)
    w = open_window(qtbot, store, "note")
    room = SMALL.adjusted(0, 0, 0, -40)  # less the panel
    for name, make in _dialogs(w, store):
        d = make()
        qtbot.addWidget(d)
        d.show()
        qtbot.waitExposed(d, timeout=WAIT_MS)
        # As the window manager does on that screen: no taller than its room, less the
        # title bar. The dialog's least size must fit too, or the manager cannot comply.
        d.setMaximumSize(room.width() - 16, room.height() - 40)
        d.resize(d.maximumSize())
        qtbot.wait(50)
        assert d.height() <= room.height() - 40, name
        assert d.minimumSizeHint().height() <= room.height() - 40, name
        # Nor wider: no label, however long the path it names, sets a least width past it.
        assert d.width() <= room.width() - 16, name
        assert d.minimumSizeHint().width() <= room.width() - 16, (name, d.minimumSizeHint())
        assert d.buttons.isVisible(), name
        assert d.buttons.geometry().bottom() <= d.rect().bottom(), name
        assert not _outside(d), (name, _outside(d))
        # ...and at its own size, as it opens there (capped to that screen).
        d.fit_screen(room)
        assert d.height() <= room.height() - 40, name
        assert d.width() <= room.width() - 16, name
        assert not _outside(d), (name, _outside(d))
        d.reject()


def test_a_dialog_opens_no_taller_than_its_screen(qtbot, store: Store) -> None:
    fill_demo(store)
    _file_approval(store)
    w = open_window(qtbot, store, "note")
    room = SMALL.adjusted(0, 0, 0, -40)
    for name, make in _dialogs(w, store)[:4]:
        d = make()
        qtbot.addWidget(d)
        d.resize(860, 760)  # the tallest size a dialog asked for
        d.fit_screen(room)
        d.show()
        d.fit_screen(room)  # shown on that screen
        assert d.height() <= room.height() - 40 and d.width() <= room.width(), name
        assert not _outside(d), (name, _outside(d))
        d.reject()


@pytest.mark.parametrize("room", [SMALL, LAPTOP], ids=["1024x700", "1366x768"])
def test_the_main_window_opens_within_the_available_screen(qtbot, store: Store, room) -> None:
    from boris_desktop.main_window import MainWindow

    fill_demo(store)
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.fit_to_screen(room)
    w.show()
    w.reload_now()
    select_task(qtbot, w, "guide")
    # Within the room with a title bar's worth to spare, and its least size too.
    assert w.width() <= room.width() and w.height() <= room.height() - 30
    assert w.minimumSizeHint().height() <= room.height() - 30
    assert room.contains(QRect(w.pos(), w.size()))
    assert w.statusBar().geometry().bottom() <= w.rect().bottom()


def test_the_window_s_place_is_remembered_and_pulled_onto_a_smaller_screen(
    qtbot, store: Store
) -> None:
    from boris_desktop.main_window import MainWindow

    fill_demo(store)
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.fit_to_screen(LAPTOP)
    w.show()
    w.resize(1100, 640)
    w.move(120, 40)
    qtbot.wait(50)
    w.close()
    again = MainWindow(store)
    qtbot.addWidget(again)
    again.fit_to_screen(LAPTOP)
    assert again.size().toTuple() == (1100, 640)
    # The same place on a 1024×700 screen: pulled in, made smaller.
    third = MainWindow(store)
    qtbot.addWidget(third)
    third.fit_to_screen(SMALL)
    assert third.width() <= SMALL.width() and third.height() <= SMALL.height() - 30
    assert SMALL.contains(QRect(third.pos(), third.size()))


def test_the_lineage_graph_has_room_at_1366x768(qtbot, store: Store) -> None:
    from boris_desktop.main_window import MainWindow

    fill_demo(store)
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.fit_to_screen(LAPTOP)
    w.show()
    w.reload_now()
    select_task(qtbot, w, "guide")
    w.task_view.show_part("Checkpoints")
    panel = w.task_view.panels["Checkpoints"]
    qtbot.waitUntil(lambda: panel.graph_box.isVisible(), timeout=WAIT_MS)
    qtbot.wait(100)
    # The forked lineage's two heads are in sight (a row each).
    assert panel.graph_box.height() >= 2 * panel.graph.ROW
    assert w.statusBar().geometry().bottom() <= w.rect().bottom()


def test_a_part_s_split_is_remembered_across_restarts(qtbot, store: Store) -> None:
    from boris_desktop.main_window import MainWindow

    fill_demo(store)

    def opened() -> tuple[Any, Any]:
        w = MainWindow(store)
        qtbot.addWidget(w)
        w.fit_to_screen(LAPTOP)
        w.show()
        w.reload_now()
        select_task(qtbot, w, "guide")
        w.task_view.show_part("Checkpoints")
        panel = w.task_view.panels["Checkpoints"]
        qtbot.waitUntil(lambda: panel.graph_box.isVisible(), timeout=WAIT_MS)
        qtbot.wait(100)
        return w, panel

    w, panel = opened()
    total = sum(panel.split.sizes())
    dragged = [80, 40, total - 120]
    panel.split.setSizes(dragged)
    panel.split.splitterMoved.emit(80, 1)  # as a drag of the handle says
    dragged = panel.split.sizes()
    w.close()
    again, panel = opened()
    assert panel.split.sizes() == dragged
    again.close()


def test_a_drag_right_after_a_resize_stays_where_the_reviewer_left_it(qtbot, store: Store) -> None:
    """The default split is laid out again a turn after each resize; a drag of the handle
    in between (the reviewer's first moments in the window) is theirs, not reset."""
    from boris_desktop.main_window import MainWindow

    fill_demo(store)
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.fit_to_screen(LAPTOP)
    w.show()
    w.reload_now()
    qtbot.wait(50)
    w.resize(w.width(), w.height() - 40)  # the default split is due again next turn
    total = sum(w.split.sizes())
    w.split.setSizes([120, total - 120])
    w.split.splitterMoved.emit(120, 1)  # as a drag of the handle says
    dragged = w.split.sizes()
    qtbot.wait(100)  # the turn the default split was due in has come and gone
    assert w.split.sizes() == dragged
    w.resize(w.width(), w.height() + 40)
    qtbot.wait(100)
    assert w.split.sizes()[0] == dragged[0]  # a resize keeps the reviewer's split too


def test_a_long_path_is_elided_in_the_middle_and_whole_in_its_tooltip(qtbot, store: Store) -> None:
    fill_demo(store)
    _file_approval(store)
    w = open_window(qtbot, store, "note")
    dialogs = dict(_dialogs(w, store))
    save = next(e for e in store.task("note")["effects"] if e["effect_id"] == "save-note")
    target = save["target"]
    assert LONG in target
    d = dialogs["reconcile"]()
    qtbot.addWidget(d)
    d.fit_screen(SMALL.adjusted(0, 0, 0, -40))
    d.show()
    qtbot.waitExposed(d, timeout=WAIT_MS)
    line = d.target_line
    # Elided in the middle: the kind and the file's name are in sight, the rest in the tooltip.
    assert line.elided() and "…" in line.shown()
    assert line.shown().startswith("file_write → /")
    assert line.shown().endswith(os.path.basename(target))
    assert line.fontMetrics().horizontalAdvance(line.shown()) <= line.contentsRect().width()
    assert line.text() == f"file_write → {target}" and target in line.toolTip()
    # Nothing else in it names the path whole, as one word a label must be wide enough for.
    assert target not in d.next_step.text() and target not in d.obs_label.text()
    d.reject()
    e = dialogs["attach evidence"]()
    qtbot.addWidget(e)
    e.show()
    qtbot.waitUntil(lambda: LONG in e.scope.text(), timeout=WAIT_MS)
    for label in (e.file, e.scope):
        assert label.elided() and LONG in label.toolTip()
    e.reject()


def test_an_elided_label_never_asks_for_more_room_and_copies_the_whole_text(qtbot) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication

    from boris_desktop.ui.widgets import ElidedLabel, elided_label

    short, long_ = elided_label("/tmp/a"), elided_label("/tmp/" + "x" * 400 + "/end.md")
    for label in (short, long_):
        qtbot.addWidget(label)
    assert long_.minimumSizeHint() == elided_label("/tmp/" + "y" * 40).minimumSizeHint()
    most = long_.fontMetrics().averageCharWidth() * ElidedLabel.HINT_CHARS
    assert long_.sizeHint().width() <= most + 2
    assert short.sizeHint().width() < long_.sizeHint().width()  # a short text: its own width
    long_.resize(300, long_.sizeHint().height())
    long_.show()
    qtbot.waitExposed(long_, timeout=WAIT_MS)
    shown = long_.shown()
    assert long_.elided() and shown.startswith("/tmp/x") and shown.endswith("x/end.md")
    assert long_.text() == "/tmp/" + "x" * 400 + "/end.md" == long_.toolTip()
    # Selecting what is shown and copying gives the whole text, the elision included...
    clipboard = QGuiApplication.clipboard()
    long_.setSelection(0, len(shown))
    long_.copy()
    assert clipboard.text() == long_.text()
    clipboard.clear()
    qtbot.keyClick(long_, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)  # Ctrl+C
    assert clipboard.text() == long_.text()
    # ...a part of it either side of the elision is copied as it is.
    long_.setSelection(0, 5)
    long_.copy()
    assert clipboard.text() == "/tmp/"
    menu = long_.context_menu()
    actions = {a.text().replace("&", ""): a for a in menu.actions()}
    clipboard.clear()
    actions["Copy the whole text"].trigger()
    assert clipboard.text() == long_.text()
    # Wide enough again, it shows the whole text.
    short.resize(400, short.sizeHint().height())
    short.show()
    assert not short.elided() and short.shown() == "/tmp/a"
    assert isinstance(short, ElidedLabel)
