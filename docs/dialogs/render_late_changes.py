"""Render the Changed-after-completion dialog to docs/dialogs/late-changes.png (offscreen, at
1024x700): a completed task that an observation, an evaluator's revision and a stale source
changed afterwards; the follow-up chosen, its draft edited, a newer fact arrived meanwhile.

QT_QPA_PLATFORM=offscreen .venv/bin/python docs/dialogs/render_late_changes.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE.parent.parent / "tests"))


def main() -> None:
    tmp = tempfile.mkdtemp()
    os.environ["BORIS_DESKTOP_SETTINGS"] = os.path.join(tmp, "settings.ini")
    from PySide6.QtWidgets import QApplication
    from test_late_changes import AGENT, EVAL, completed_task

    from boris_desktop import settings
    from boris_desktop.decide.late import LateChangesDialog
    from boris_desktop.main_window import MainWindow
    from store import Store
    from store import commands as c
    from store.commands.effects import ObserveEffect

    app = QApplication.instance() or QApplication([])
    settings.set_reviewer("Rita Reviewer", "rita")
    store = Store.open(os.path.join(tmp, "store"))
    ws = Path(tmp) / "ws"
    ws.mkdir()
    ids = completed_task(store, ws)
    (ws / "report.md").write_text("someone rewrote it\n")
    store.execute(ObserveEffect(task_id="t", effect_id=ids["effect"], purpose="watch"), AGENT)
    store.execute(
        c.RecordArtifact(task_id="t", artifact_id=ids["source"], name="source.txt",
                         role="source", content=c.Content(text="figures v2")),
        AGENT,
    )  # fmt: skip

    def spin(ms: int) -> None:
        end = time.monotonic() + ms / 1000
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    w = MainWindow(store)
    w.resize(1024, 700)
    w.show()
    w.reload_now()
    spin(500)
    d = LateChangesDialog(w, store.task("t"))
    d.show()
    d.setMaximumSize(1024 - 16, 700 - 80)
    spin(300)
    d.choices["follow_up"].setChecked(True)
    d.title_field.setText("Redo the report from the new figures")
    d.note.setPlainText("the source changed under the finished report")
    store.execute(
        c.JudgeCriterion(task_id="t", criterion_id=ids["criterion"], status="failed",
                         note="evaluator v2"),
        EVAL,
    )  # fmt: skip
    spin(2500)
    d.grab().save(str(HERE / "late-changes.png"))
    print("late-changes", d.width(), "x", d.height(), "|", d.ok.text(), "|", d.ok.isEnabled())
    d.reject()
    w.close()
    store.close()


if __name__ == "__main__":
    main()
