"""The window when an agent asks for an approval, and the desktop notification it raises.

Run by render.sh (under Xvfb, with a session bus, dunst and the stand-in panel): opens the
demo store, waits for the decision queue's first read, has an agent request an approval,
waits for the notification to be shown, and captures the whole screen to OUT.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(out: str) -> int:
    from PySide6.QtWidgets import QApplication

    from store import Actor, Store
    from store.commands import approvals as ap
    from store.services.demo import fill_demo

    app = QApplication(sys.argv[:1])
    tmp = tempfile.TemporaryDirectory()
    os.environ["BORIS_DESKTOP_SETTINGS"] = os.path.join(tmp.name, "settings.ini")
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")
    store = Store.open(os.path.join(tmp.name, "store"))
    fill_demo(store)

    from boris_desktop.main_window import MainWindow

    def settle(seconds: float, until: object = None) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (callable(until) and until()):
            app.processEvents()
            time.sleep(0.01)

    w = MainWindow(store)
    w.resize(1280, 780)
    w.move(0, 0)
    w.reload_now()
    w.show()
    settle(3)  # the queue's first read: what is there already is known, not news
    shown: list[tuple[str, str, str]] = []
    w.notifier.shown.connect(lambda *told: shown.append(told))
    agent = Actor(kind="agent", id="drafter-7", name="Drafter 7")
    store.execute(
        ap.RequestApproval(
            task_id="note",
            approval_id="apr-note-slack",
            payload={"channel": "#team", "text": "The weekly project note is saved."},
            consequence="posts the weekly note to #team on Slack",
            policy="every message that leaves the machine is approved",
            expires_in_seconds=2 * 3600,
        ),
        agent,
    )
    settle(15, lambda: bool(shown))
    if not shown:
        print("no notification was shown", file=sys.stderr)
        return 1
    w.show_queue()  # where the reviewer goes next: the new decision, soonest to expire, on top
    w.queue.table.selectRow(0)
    settle(1.5)  # its task is shown below it, and the notification service draws it
    subprocess.run(
        ["import", "-window", "root", "-crop", "1280x780+0+0", "+repage", out], check=True
    )
    print("shown:", shown[0][:2])
    w.close()
    store.close()
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
