"""Render docs/decisions.png (the Decisions tab), docs/history.png (What I Decided) and
docs/lineage.png (the lineage graph).

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/render_views.py [decisions|history ...]

A demo store in a temporary directory; the queue is grabbed first, then Rita approves the
mail, reconciles the save, waives a criterion and merges the guide's forked lineage; then the
other two views are grabbed offscreen. Named pictures only, when any are named.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
DOCS = Path(__file__).resolve().parent


def main() -> int:
    wanted = set(sys.argv[1:]) or {"decisions", "history", "lineage"}
    from PySide6.QtWidgets import QApplication

    from store import Actor, Store
    from store.commands import approvals as ap
    from store.commands import checkpoints as ck
    from store.commands import core
    from store.commands import effects as ef
    from store.services.demo import fill_demo

    app = QApplication.instance() or QApplication(sys.argv)
    tmp = tempfile.TemporaryDirectory()
    os.environ["BORIS_DESKTOP_SETTINGS"] = os.path.join(tmp.name, "settings.ini")
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")
    store = Store.open(os.path.join(tmp.name, "store"))
    fill_demo(store)
    from boris_desktop.main_window import MainWindow

    def settle(w: MainWindow, seconds: float = 1.5) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    if "decisions" in wanted:
        # The Decisions tab before Rita decides anything: the first decision (the mail's
        # approval) selected, its task below on the Approvals part.
        w = MainWindow(store)
        w.resize(1280, 780)
        w.reload_now()
        w.show()
        settle(w)
        w.show_queue()
        w.queue.table.setCurrentIndex(w.queue.proxy.index(0, 0))
        settle(w)
        w.grab().save(str(DOCS / "decisions.png"))
        w.close()

    rita = Actor(kind="person", id="rita", name="Rita Reviewer")
    for cmd in (
        ap.DecideApproval(task_id="note", approval_id="apr-note-mail", decision="approved",
                          note="the summary matches the note; send it"),
        ef.ReconcileEffect(task_id="note", effect_id="save-note", decision="absent",
                           note="NOTE.md is unchanged on disk: the tool's 'saved' was wrong"),
        core.JudgeCriterion(task_id="guide", criterion_id="citations", status="waived",
                            note="the figures are ours; no external sources to cite"),
        ck.WriteCheckpoint(task_id="guide", reason="handoff", supersedes=["ckpt-handoff"],
                           merge=["ckpt-milestone"], checkpoint_id="ckpt-merged",
                           note="merged the milestone and the handoff: continue from here"),
    ):  # fmt: skip
        store.execute(cmd, rita)

    w = MainWindow(store)
    w.resize(1280, 780)
    w.reload_now()
    w.show()
    settle(w)
    w.show_history()
    settle(w)  # read when first shown
    w.history.table.setCurrentIndex(w.history.proxy.index(1, 0))
    settle(w, 0.5)
    if "history" in wanted:
        w.grab().save(str(DOCS / "history.png"))

    w.resize(1280, 900)  # the lineage needs the task's half of the window to be tall
    w.show_task("guide")
    settle(w)
    panel = w.task_view.panel("Checkpoints")
    w.task_view.tabs.setCurrentWidget(panel)
    panel.select_checkpoint("ckpt-merged")
    settle(w)
    if "lineage" in wanted:
        w.grab().save(str(DOCS / "lineage.png"))
    w.close()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(5000)
    store.close()
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
