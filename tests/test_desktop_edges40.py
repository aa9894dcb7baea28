"""The window's edges (issue 40): what a person sees is what the record and the disk hold now,
and nothing they typed or decided slips away unseen.

The tests drive the window as a person does (the menus, clicks, keys typed) and read the
result off the screen and the store; another Store object on the same directory stands in
for a colleague in another process. This module holds what the edges40 tests share, and the
keys' tests (Reconcile and Reload each have keys of their own on every desktop).
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import json
import shutil
import subprocess
import sys
import textwrap

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QWidget
from test_desktop_actions import WAIT_MS, open_window

from store import Actor, Store
from store import commands as c
from store.commands import approvals as ap
from store.commands import effects as lg
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="a")
OWNER = Actor(kind="person", id="olga", name="Olga Owner")
MARIA = Actor(kind="person", id="maria", name="Maria Keller")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture
def demo(qtbot, store: Store) -> Store:
    fill_demo(store)
    return store


def colleague(store: Store) -> Store:
    """Another process's store on the same directory."""
    return Store.open(store.location.directory)


def make_task(store: Store, ws: Path, task_id: str = "t") -> None:
    store.execute(
        c.CreateTask(task_id=task_id, title="T", owner="olga", objective="x",
                     scope_paths=[str(ws)]),
        OWNER,
    )  # fmt: skip


def write_for_approval(store: Store, target: Path, text: str, eid: str, aid: str) -> None:
    store.execute(
        lg.PlanEffect(task_id="t", effect_id=eid, kind="file_write", target=str(target),
                      consequence=f"Rewrite {target.name}", content=c.Content(text=text),
                      requires_approval=True, policy="p"),
        AGENT,
    )  # fmt: skip
    store.execute(
        ap.RequestApproval(task_id="t", approval_id=aid, effect_id=eid, policy="p",
                           expires_in_seconds=3600),
        AGENT,
    )  # fmt: skip


def open_from_menu(qtbot, w, action):
    before = w.menu_actions.dialog
    action.trigger()
    qtbot.waitUntil(lambda: w.menu_actions.dialog not in (None, before), timeout=WAIT_MS)
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    return d


def edit_note_artifact(qtbot, w):
    from boris_desktop.decide.edits import EditArtifactDialog

    w.menu_actions.edit_artifact_action.trigger()
    qtbot.waitUntil(lambda: isinstance(w.menu_actions.dialog, EditArtifactDialog), timeout=WAIT_MS)
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    return d


def texts(dialog: QWidget) -> str:
    """Every text the dialog shows: labels, panes and fields."""
    out = [x.text() for x in dialog.findChildren(QLabel) if x.isVisible()]
    out += [x.toPlainText() for x in dialog.findChildren(QPlainTextEdit) if x.isVisible()]
    return "\n".join(out)


# --- 7. Reconcile and Reload have keys of their own on every desktop -------------------------


def test_every_key_belongs_to_one_action_and_reload_is_f5(qtbot, demo: Store) -> None:
    from PySide6.QtGui import QAction

    w = open_window(qtbot, demo, "note")
    owners: dict[str, list[str]] = {}
    for act in w.findChildren(QAction):
        for key in act.shortcuts():
            owners.setdefault(key.toString(), []).append(act.text())
    assert {k: v for k, v in owners.items() if len(v) > 1} == {}
    reload_ = next(a for a in w.findChildren(QAction) if a.text().replace("&", "") == "Reload")
    assert reload_.shortcut().toString() == "F5"
    assert w.menu_actions.reconcile_action.shortcut().toString() == "Ctrl+R"
    # The menu says the keys, and Ctrl+R opens the Reconcile dialog.
    assert "Ctrl+R" in w.menu_actions.reconcile_action.toolTip()
    qtbot.keyClick(w, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: w.menu_actions.dialog is not None, timeout=WAIT_MS)
    assert type(w.menu_actions.dialog).__name__ == "ReconcileDialog"
    w.menu_actions.dialog.reject()


_GNOME_SCENE = """
import json, os, sys
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from boris_desktop import settings
from boris_desktop.main_window import MainWindow
from store import Store
from store.services.demo import fill_demo

app = QApplication(sys.argv)
settings.set_reviewer("Rita Reviewer", "rita")
store = Store.open(sys.argv[1])
fill_demo(store)
w = MainWindow(store)
w.resize(1200, 760)
w.show()
w.reload_now()
def wait(cond, ms=20000):
    import time
    end = time.monotonic() + ms / 1000
    while not cond() and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)
    return cond()
wait(lambda: w.inbox.rowCount() > 0 and not w.loader._pending)
row = w.inbox.row_of("note")
w.table.setCurrentIndex(w.proxy.mapFromSource(w.inbox.index(row, 0)))
wait(lambda: w.task_view.task_id == "note" and not w.loader._pending)
w.activateWindow()
w.table.setFocus()
app.processEvents()
refresh = [k.toString() for k in QKeySequence.keyBindings(QKeySequence.StandardKey.Refresh)]
QTest.keyClick(w.table, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
opened = wait(lambda: w.menu_actions.dialog is not None, 5000)
print(json.dumps({"refresh": refresh, "dialog": type(w.menu_actions.dialog).__name__ if opened else None}))
sys.stdout.flush()
os._exit(0)
"""


@pytest.mark.skipif(
    shutil.which("xvfb-run") is None and os.environ.get("CI") != "true",
    reason="needs xvfb-run (apt-get install xvfb)",
)
def test_ctrl_r_opens_reconcile_on_a_gnome_desktop(tmp_path: Path) -> None:
    """On GNOME, Qt's Refresh key is Ctrl+R as well as F5: Reload must not take Ctrl+R, or
    the key is ambiguous and opens nothing. The window runs under Xvfb with GNOME's keys."""
    assert shutil.which("xvfb-run"), "CI installs xvfb"
    scene = tmp_path / "scene.py"
    scene.write_text(textwrap.dedent(_GNOME_SCENE), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY")}
    env |= {
        "QT_QPA_PLATFORM": "xcb",
        "XDG_CURRENT_DESKTOP": "GNOME",
        "BORIS_DESKTOP_SETTINGS": str(tmp_path / "settings.ini"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT),
    }
    out = subprocess.run(
        ["xvfb-run", "-a", sys.executable, str(scene), str(tmp_path / "store")],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    told = json.loads(out.stdout.strip().splitlines()[-1])
    assert "Ctrl+R" in told["refresh"]  # GNOME's keys are in force
    assert told["dialog"] == "ReconcileDialog"
