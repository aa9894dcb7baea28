"""Render docs/holder-and-wait.png (the main window at 1366x768: the reference guide held by
an agent, with a wait open, its task header and Waits part in sight) and the Take Over and
Cancel Wait dialogs at 1024x700 (docs/dialogs/take-over.png, docs/dialogs/cancel-wait.png).

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/render_holder.py

A demo store in a temporary directory; the agent's lease and wait are recorded as the `boris`
CLI records them (the same commands).
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
    from PySide6.QtWidgets import QApplication

    from store import Actor, Store
    from store import commands as c
    from store.services.demo import fill_demo

    app = QApplication.instance() or QApplication(sys.argv)
    tmp = tempfile.TemporaryDirectory()
    os.environ["BORIS_DESKTOP_SETTINGS"] = os.path.join(tmp.name, "settings.ini")
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")
    store = Store.open(os.path.join(tmp.name, "store"))
    fill_demo(store)
    agent = Actor(kind="agent", id="drafter-7", name="Drafting agent")
    store.execute(c.AcquireLease(task_id="guide", session_id="run-1", ttl_seconds=600), agent)
    store.execute(
        c.RecordWait(task_id="guide", kind="rate_limit", ref="api.example.org", after_seconds=300,
                     wait_id="quota", reserve={"counter": "tool_calls", "amount": 1},  # type: ignore[arg-type]
                     cancel_if="the quota is raised", lease_token=1),
        agent,
    )  # fmt: skip
    from boris_desktop.main_window import MainWindow

    def spin(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    w = MainWindow(store)
    w.resize(1366, 768)
    w.show()
    w.reload_now()
    spin(1.0)
    w.selected = "guide"
    w._select_row()
    w.reload_now()
    spin(1.0)
    w.task_view.show_part("Waits", "quota")
    spin(3.0)  # "last heard" counts on a few seconds
    w.grab().save(str(DOCS / "holder-and-wait.png"))
    task = w.shown_task()
    assert task is not None and task["id"] == "guide"
    from boris_desktop.decide.takeover import CancelWaitDialog, TakeOverDialog

    for name, d in (
        ("take-over", TakeOverDialog(w, task)),
        ("cancel-wait", CancelWaitDialog(w, task, task["waits"][0])),
    ):
        d.show()
        d.setMaximumSize(1024 - 16, 700 - 80)
        d.fit_screen()
        d.reason.setText("the outline needs a person" if name == "take-over" else
                         "the quota was raised by hand")  # fmt: skip
        spin(1.5)
        d.grab().save(str(DOCS / "dialogs" / f"{name}.png"))
        print(name, d.width(), "x", d.height())
        d.reject()
    w.close()
    store.close()
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
