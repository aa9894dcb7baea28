"""Render the Approve dialog of a request that needs two people to docs/dialogs/approve-quorum.png
(offscreen, at 1024x700): maria approved it already, the reviewer on screen would be the 2nd.

QT_QPA_PLATFORM=offscreen .venv/bin/python docs/dialogs/render_quorum.py
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
    from boris_desktop.decide.approve import ApproveDialog
    from boris_desktop.main_window import MainWindow
    from store import Actor, Store
    from store.commands.approvals import DecideApproval, SetApprovalPolicy
    from store.services.demo import fill_demo

    app = QApplication.instance() or QApplication([])
    settings.set_reviewer("Rita Reviewer", "rita")
    store = Store.open(os.path.join(tmp, "store"))
    fill_demo(store)
    mail = next(a for a in store.task("note")["approvals"] if a["approval_id"] == "apr-note-mail")
    # The store's owner says the policy needs two people; maria approves first.
    store.execute(
        SetApprovalPolicy(policy=mail["policy"], approvers=2), Actor.parse("person:owner")
    )
    store.execute(
        DecideApproval(task_id="note", approval_id="apr-note-mail", decision="approved"),
        Actor(kind="person", id="maria", name="Maria Rossi"),
    )

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
    d = ApproveDialog(w, "note", "apr-note-mail")
    d.show()
    d.setMaximumSize(1024 - 16, 700 - 80)
    d.resize(d.maximumSize())
    spin(1800)
    d.grab().save(str(HERE / "approve-quorum.png"))
    print("approve-quorum", d.width(), "x", d.height(), "|", d.ok.text(), "|", d.ok.isEnabled())
    d.reject()
    w.close()
    store.close()


if __name__ == "__main__":
    main()
