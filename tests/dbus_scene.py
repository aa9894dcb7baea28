"""Driver for test_desktop_dbus.py, run inside a session bus and Xvfb with dunst as the
freedesktop notification service: the real window, another process requesting one approval
and then a burst of twenty, then one whose words are HTML; then the service invokes the HTML
one's default action (`dunstctl action 0`, a click on it) with the inbox in front; prints what
the notifier says it showed and what the click opened, one JSON object."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REQUEST = """
import sys
from store import Actor, Store
from store.commands import approvals as ap
first, n = int(sys.argv[2]), int(sys.argv[3])
words = sys.argv[4] if len(sys.argv) > 4 else "send message {i}"
with Store.open(sys.argv[1], create=False) as s:
    s.execute_all([ap.RequestApproval(task_id="note", approval_id=f"apr-{i}",
        payload={"n": i}, consequence=words.replace("{i}", str(i)), policy="test",
        expires_in_seconds=3600) for i in range(first, first + n)],
        Actor(kind="agent", id="drafter-7"))
"""


#: A task's words with markup in them: a notification must show them as they are.
HTML = '<b>bold</b> <img src="file:///nonexistent.png"> <a href="https://example.invalid">link</a> & co'


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from store import Store
    from store.services.demo import fill_demo

    app = QApplication(sys.argv[:1])
    tmp = tempfile.TemporaryDirectory()
    os.environ["BORIS_DESKTOP_SETTINGS"] = os.path.join(tmp.name, "settings.ini")
    from boris_desktop import settings
    from boris_desktop.main_window import MainWindow

    settings.set_reviewer("Rita Reviewer", "rita")
    directory = os.path.join(tmp.name, "store")
    store = Store.open(directory)
    fill_demo(store)

    def settle(seconds: float, until: object = None) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (callable(until) and until()):
            app.processEvents()
            time.sleep(0.01)

    w = MainWindow(store)
    w.show()
    settle(10, lambda: w.queue.loaded)
    settle(3)  # what the first read found is known, not news
    shown: list[list[str]] = []
    w.notifier.shown.connect(lambda title, body, _target: shown.append([title, body]))
    for first, n, *words in ((1, 1), (100, 20), (200, 1, HTML)):
        told = len(shown)
        if words:  # the only notification on screen when it is clicked
            subprocess.run(["dunstctl", "close-all"], check=True)
        subprocess.run(
            [sys.executable, "-c", REQUEST, directory, str(first), str(n), *words], check=True
        )
        settle(15, lambda told=told: len(shown) > told)
        settle(3)  # a burst's window and then some: nothing more may come
    # Clicking the last one (the HTML approval): the service invokes its default action.
    desktop = w.notifier.desktop
    settle(5, lambda: desktop is not None and any(desktop.told.values()))
    w.views.setCurrentWidget(w.left)
    subprocess.run(["dunstctl", "action", "0"], check=True)
    q = w.queue
    settle(10, lambda: q.dialog is not None and q.dialog.isVisible())
    opened = {
        "dialog": type(q.dialog).__name__ if q.dialog is not None else None,
        "approval": getattr(q.dialog, "approval_id", None),
        "queue_in_front": w.views.currentWidget() is q,
        "told_after": dict(desktop.told) if desktop is not None else None,
    }
    if q.dialog is not None:
        q.dialog.reject()
    print(
        json.dumps(
            {
                "shown": shown,
                "tray": w.notifier.tray.isVisible(),
                "direct": desktop is not None and desktop.available,
                "opened": opened,
            }
        )
    )
    w.close()
    # A read the window started may still be running: the store closes after it, as the
    # app's own exit does (`boris_desktop.app`), and its directory is removed after that.
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    store.close()
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
