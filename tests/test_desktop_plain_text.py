"""Text from a task is shown literally everywhere the window shows it: cells, tooltips,
labels, headers, dialogs, the status bar and the window title. A task whose every text is
markup (bold, an image, a link) is opened in every panel and dialog, and every widget and
every model index is read back as Qt would render it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import QAbstractItemModel, QModelIndex, Qt
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QLabel,
    QTextEdit,
    QWidget,
)
from test_desktop_actions import WAIT_MS

from store import Actor, Store
from store import commands as c
from store.commands import approvals as a
from store.commands import checkpoints as k
from store.commands import effects as e
from store.commands.narrative import ClaimIn, RecordNarrative

AGENT = Actor(kind="agent", id="a")
OWNER = Actor(kind="person", id="owner", name="Owner")
# What a hostile or careless writer may put in any text: rendered as rich text it would show
# bold type, load an image and offer a link.
MARKUP = '<b>bold</b><img src="x.png"><a href="https://e.example/">link</a>'
WORD = "bold"  # any string showing task text contains it
# Shown literally, every place keeps this tag as text (a file path holds only part of MARKUP).
TAG = "<b>bold</b>"


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _fill(store: Store, ws: Path) -> None:
    """A demo-like task whose every free text is MARKUP, written through the commands."""
    x = store.execute
    x(
        c.CreateTask(task_id="t", title=MARKUP, owner="o", objective=MARKUP, scope_paths=[str(ws)]),
        AGENT,
    )
    x(c.AddCriterion(task_id="t", criterion_id="c1", text=MARKUP), AGENT)
    x(c.AddCriterion(task_id="t", criterion_id="c2", text=MARKUP + " (open)"), AGENT)
    source = ws / "source.md"
    source.write_text(MARKUP, encoding="utf-8")
    x(
        c.RecordArtifact(
            task_id="t",
            artifact_id="a1",
            name=MARKUP,
            content=c.Content(text=MARKUP + "\n"),
            note=MARKUP,
        ),
        AGENT,
    )
    x(
        c.AttachEvidence(
            task_id="t",
            criterion_id="c1",
            evidence_id="ev1",
            kind="review",
            content=c.Content(text=MARKUP),
            description=MARKUP,
            locator=MARKUP,
        ),
        AGENT,
    )
    x(
        c.JudgeCriterion(
            task_id="t",
            criterion_id="c1",
            status="satisfied",
            artifact_id="a1",
            artifact_version=1,
            evidence_ids=["ev1"],
            note=MARKUP,
        ),
        AGENT,
    )
    x(
        c.RecordArtifact(
            task_id="t", artifact_id="a1", name=MARKUP, content=c.Content(text="v2\n"), note=MARKUP
        ),
        AGENT,
    )
    x(c.AddPhase(task_id="t", phase_id="p1", name=MARKUP), AGENT)
    x(c.SetBudget(task_id="t", counter="model_calls", limit=10), AGENT)
    x(c.ChargeBudget(task_id="t", counter="model_calls", amount=9, note=MARKUP), AGENT)
    # The path reads .../<b>bold</b><img src=x.png>.txt
    target = ws / "<b>bold<" / "b><img src=x.png>.txt"
    target.parent.mkdir()
    target.write_text("before", encoding="utf-8")
    x(
        e.PlanEffect(
            task_id="t",
            effect_id="e1",
            target=str(target),
            consequence=MARKUP,
            content=c.Content(text=MARKUP),
            requires_approval=True,
            policy=MARKUP,
        ),
        AGENT,
    )
    approval = x(a.RequestApproval(task_id="t", effect_id="e1", policy=MARKUP), AGENT)
    x(
        a.DecideApproval(task_id="t", approval_id=str(approval), decision="approved", note=MARKUP),
        OWNER,
    )
    x(
        e.DispatchEffect(task_id="t", effect_id="e1", executor=MARKUP, approval_id=str(approval)),
        AGENT,
    )
    x(e.RecordResponse(task_id="t", effect_id="e1", reported="timeout", error=MARKUP), AGENT)
    x(e.ObserveEffect(task_id="t", effect_id="e1"), AGENT)
    x(
        e.PlanEffect(
            task_id="t",
            effect_id="e2",
            kind="send",
            target=str(ws / "mail.txt"),
            consequence=MARKUP + " (pending)",
            content=c.Content(text=MARKUP),
            requires_approval=True,
            policy=MARKUP,
        ),
        AGENT,
    )
    x(a.RequestApproval(task_id="t", effect_id="e2", policy=MARKUP), AGENT)
    x(
        a.RequestApproval(
            task_id="t", payload={"text": MARKUP}, consequence=MARKUP + " (payload)", policy=MARKUP
        ),
        AGENT,
    )
    x(c.RecordNote(task_id="t", text=MARKUP), AGENT)
    x(k.WriteCheckpoint(task_id="t", reason="milestone", note=MARKUP), AGENT)
    x(k.WriteCheckpoint(task_id="t", reason="handoff", note=MARKUP + " (handoff)"), AGENT)
    x(
        RecordNarrative(
            task_id="t",
            text=MARKUP,
            claims=[ClaimIn(criterion_id="c2", status="satisfied", text=MARKUP)],
        ),
        AGENT,
    )


def _rendered(tip: str) -> str:
    """What a tooltip shows: Qt renders it as rich text when Qt.mightBeRichText says so."""
    if not GuiQt.mightBeRichText(tip):
        return tip
    doc = QTextDocument()
    doc.setHtml(tip)
    return doc.toPlainText()


def _indexes(model: QAbstractItemModel, parent: QModelIndex | None = None) -> Iterator[QModelIndex]:
    parent = parent or QModelIndex()
    for row in range(model.rowCount(parent)):
        for col in range(model.columnCount(parent)):
            ix = model.index(row, col, parent)
            yield ix
            if col == 0 and model.hasChildren(ix):
                yield from _indexes(model, ix)


class Seen:
    """Every string with task text the user can see, and the ones shown as markup."""

    def __init__(self) -> None:
        self.literal: list[str] = []
        self.wrong: list[str] = []

    def tooltip(self, where: str, tip: object) -> None:
        if not isinstance(tip, str) or WORD not in tip:
            return
        shown = _rendered(tip)
        (self.literal if TAG in shown else self.wrong).append(f"{where} tooltip: {tip!r}")

    def label(self, where: str, label: QLabel) -> None:
        if WORD not in label.text():
            return
        ok = label.textFormat() == Qt.TextFormat.PlainText
        (self.literal if ok else self.wrong).append(f"{where} label {label.text()!r}")

    def model(self, where: str, model: QAbstractItemModel) -> None:
        for section in range(model.columnCount()):
            self.tooltip(f"{where} header", model.headerData(section, Qt.Orientation.Horizontal, 3))
        for ix in _indexes(model):
            self.tooltip(where, ix.data(Qt.ItemDataRole.ToolTipRole))
            shown = ix.data(Qt.ItemDataRole.DisplayRole)
            if isinstance(shown, str) and WORD in shown:
                self.literal.append(f"{where} cell {shown!r}")  # item views paint plain text

    def widget(self, top: QWidget, prefix: str = "") -> None:
        for w in [top, *top.findChildren(QWidget)]:
            where = f"{prefix}{type(w).__name__}({w.accessibleName() or w.objectName()})"
            self.tooltip(where, w.toolTip())
            if isinstance(w, QLabel):
                self.label(where, w)
            if isinstance(w, QTextEdit) and WORD in w.toPlainText():
                # A rich text pane would have turned the markup into formatting.
                ok = MARKUP in w.toPlainText()
                (self.literal if ok else self.wrong).append(f"{where} text")
            if isinstance(w, QAbstractItemView) and w.model() is not None:
                self.model(where, w.model())
            if isinstance(w, QComboBox):
                self.model(where, w.model())
            if WORD in w.windowTitle():
                (self.literal if MARKUP in w.windowTitle() else self.wrong).append(where)


def test_task_text_is_never_rendered_as_rich_text(qtbot, store: Store, ws: Path) -> None:
    from boris_desktop.main_window import MainWindow

    _fill(store, ws)
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1280, 780)
    w.show()
    w.reload_now()
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    w.table.setCurrentIndex(w.proxy.index(0, 0))
    qtbot.waitUntil(lambda: w.task_view.task_id == "t", timeout=WAIT_MS)
    seen = Seen()
    tabs = w.task_view.tabs
    for i in range(tabs.count()):
        tabs.setCurrentIndex(i)
        panel = tabs.widget(i)
        qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
        # Select each row in turn: details below a list show the selected record's texts.
        for view in panel.findChildren(QAbstractItemView):
            model = view.model()
            if model is None or view.selectionModel() is None:
                continue
            for ix in list(_indexes(model))[:40]:
                if ix.column() == 0:
                    view.setCurrentIndex(ix)
                    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
                    seen.widget(panel)
        seen.widget(w)
    # The dialogs that show the task's texts.
    opened = []
    for action in ("approve_action", "reconcile_action", "checkpoint_action", "stop_action"):
        act = getattr(w.menu_actions, action)
        w.menu_actions.update()
        if not act.isEnabled():
            continue
        act.trigger()
        dialog = w.menu_actions.dialog
        qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
        seen.widget(dialog, prefix=f"{action} dialog: ")
        opened.append(action)
        dialog.reject()
    assert not seen.wrong, "\n".join(seen.wrong)
    # The walk did meet the task's texts in every kind of place.
    found = "\n".join(seen.literal)
    for place in ("tooltip", "label", "cell"):
        assert place in found
    assert opened == ["approve_action", "reconcile_action", "checkpoint_action", "stop_action"]
    for action in ("approve_action", "reconcile_action"):  # those two quote the task's texts
        assert f"{action} dialog: QLabel(Consequence) label" in found
    w.close()


@pytest.mark.parametrize(
    "text",
    [
        MARKUP,
        "  two  spaces\n<i>x</i>\n\nend ",
        "&lt;b&gt; typed as entities",
        "a < b > c",
        "plain",
    ],
)
def test_a_tooltip_renders_exactly_its_text(qapp, text: str) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.ui.text import tip

    assert _rendered(tip(text)) == text
