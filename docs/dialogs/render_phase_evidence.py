"""Render the Complete Phase and Attach Evidence dialogs on the demo store to
docs/dialogs/complete-phase.png and docs/dialogs/attach-evidence.png (offscreen), each as it
opens on a 1024x700 screen: the guide's review phase (its Final blocked by it today), and a
citations check attached to the guide's criterion, made on guide v2.

QT_QPA_PLATFORM=offscreen .venv/bin/python docs/dialogs/render_phase_evidence.py
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
    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QApplication

    from boris_desktop import settings
    from boris_desktop.decide.evidence import AttachEvidenceDialog
    from boris_desktop.decide.phase import CompletePhaseDialog
    from boris_desktop.main_window import MainWindow
    from store import Store
    from store.services.demo import fill_demo

    app = QApplication.instance() or QApplication([])
    settings.set_reviewer("Rita Reviewer", "rita")
    store = Store.open(os.path.join(tmp, "store"))
    fill_demo(store)
    guide = store.task("guide")
    check = Path(guide["scope"]["paths"][0]) / "out" / "citations-check.txt"
    check.write_text("$ check-citations out/guide.md\n6 figures, 6 cited\nOK\n", encoding="utf-8")

    def spin(ms: int) -> None:
        end = time.monotonic() + ms / 1000
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    w = MainWindow(store)
    w.resize(1024, 700)
    w.show()
    w.selected = "guide"
    w.reload_now()
    spin(500)
    room = QRect(0, 0, 1024, 700 - 40)  # a 1024x700 screen less its panel

    def shot(d, name: str, setup=None) -> None:
        d.show()
        spin(400)
        if setup:
            setup(d)
        d.fit_screen(room)
        spin(1300)
        d.grab().save(str(HERE / f"{name}.png"))
        print(name, d.width(), "x", d.height())
        d.reject()

    shot(CompletePhaseDialog(w, guide, "review"), "complete-phase",
         lambda d: d.summary.setText("Read v2 section by section: one per source"))  # fmt: skip
    crit = next(x for x in guide["criteria"] if x["criterion_id"] == "citations")
    shot(AttachEvidenceDialog(w, guide, crit, str(check)), "attach-evidence",
         lambda d: (d.set_kind("command_output"),
                    d.description.setText("check-citations on guide v2")))  # fmt: skip
    w.close()
    store.close()


if __name__ == "__main__":
    main()
