"""Render the Delete Task dialog to docs/dialogs/delete-task.png (offscreen, at 1024x700):
a demo task, what deleting it removes counted, the id typed and a reason given.

QT_QPA_PLATFORM=offscreen .venv/bin/python docs/dialogs/render_delete_task.py
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


def main() -> None:
    tmp = tempfile.mkdtemp()
    os.environ["BORIS_DESKTOP_SETTINGS"] = os.path.join(tmp, "settings.ini")
    from PySide6.QtWidgets import QApplication

    from boris_desktop import settings
    from boris_desktop.decide.delete_task import DeleteTaskDialog
    from boris_desktop.main_window import MainWindow
    from store import Store
    from store.services.demo import fill_demo

    app = QApplication.instance() or QApplication([])
    settings.set_reviewer("Rita Reviewer", "rita")
    store = Store.open(os.path.join(tmp, "store"))
    fill_demo(store)

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
    # Both demo tasks have an effect in doubt (the store refuses to delete them): a small
    # task of its own, with a draft, evidence, a checkpoint and a private note.
    from store import Actor
    from store import commands as c

    agent = Actor(kind="agent", id="drafter-7", name="Drafting agent")
    rita = Actor(kind="person", id="rita", name="Rita Reviewer")
    store.execute(
        c.CreateTask(task_id="letter", title="Draft the withdrawn client letter", owner="rita",
                     objective="A letter the client asked for, then withdrew", scope_paths=[tmp]),
        agent,
    )  # fmt: skip
    store.execute(c.AddCriterion(task_id="letter", text="signed off", criterion_id="ok"), agent)
    for n in (1, 2):
        store.execute(
            c.RecordArtifact(task_id="letter", artifact_id="draft", name="letter.md",
                             content=c.Content(text=f"Dear client, draft {n}")),
            agent,
        )  # fmt: skip
    store.execute(
        c.AttachEvidence(task_id="letter", criterion_id="ok", kind="review",
                         content=c.Content(text="looks right")),
        agent,
    )  # fmt: skip
    store.execute(c.WriteCheckpoint(task_id="letter", reason="initial"), agent)
    store.execute(c.RecordNote(task_id="letter", text="their name", visibility="private"), rita)
    w.reload_now()
    spin(300)
    task = store.task("letter")
    d = DeleteTaskDialog(w, task)
    d.show()
    d.setMaximumSize(1024 - 16, 700 - 80)
    spin(300)
    d.reason.setText("the client withdrew the request; their data goes")
    d.confirm.setText(task["id"])
    spin(1800)
    d.grab().save(str(HERE / "delete-task.png"))
    print("delete-task", d.width(), "x", d.height(), "|", d.ok.text(), "|", d.ok.isEnabled())
    d.reject()
    w.close()
    store.close()


if __name__ == "__main__":
    main()
