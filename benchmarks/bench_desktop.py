"""Cold start to first paint: Boris Desktop on the demo store vs an empty QMainWindow.

Both run as fresh subprocesses (offscreen), several times each, alternating; each prints the
wall-clock time of its first paint and the parent subtracts the moment it spawned it. Also
reported: the time until the demo tasks are visible (read with the standard library's sqlite3
while the store's modules load: store.reads.peek), and until the inbox is painted as the open
store lists it (the store opens on a worker after the first paint, so this includes importing
SQLAlchemy and pydantic).

    /tmp/venv/bin/python benchmarks/bench_desktop.py [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASELINE = r"""
import sys, time
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QMainWindow
app = QApplication(sys.argv[:1])
w = QMainWindow()
class Watch(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint:
            print(f"first_paint {time.time():.6f}", flush=True)
            QTimer.singleShot(0, app.quit)
            obj.removeEventFilter(self)
        return False
watch = Watch()
w.installEventFilter(watch)
w.resize(1280, 780)
w.show()
app.exec()
"""


def _run(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    start = time.time()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=True)
    marks = {}
    for line in out.stdout.splitlines():
        name, _, value = line.partition(" ")
        if name in {"first_paint", "tasks_paint", "inbox_paint"}:
            marks[name] = (float(value) - start) * 1000
    return marks


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(root)}
    # As installed: compiled modules cached (the warm-up run writes them). Some shells set
    # PYTHONDONTWRITEBYTECODE, and every start would then compile the app from source.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as tmp:
        env["BORIS_DESKTOP_SETTINGS"] = str(Path(tmp) / "settings.ini")
        store = Path(tmp) / "store"
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"from store import Store; from store.services.demo import fill_demo; "
                f"s = Store.open({str(store)!r}); fill_demo(s); s.close()",
            ],
            env=env,
            check=True,
        )
        app_cmd = [
            sys.executable,
            "-m",
            "boris_desktop",
            "--store",
            str(store),
            "--exit-after-paint",
        ]
        base_cmd = [sys.executable, "-c", BASELINE]
        _run(base_cmd, env), _run(app_cmd, env)  # warm the OS file cache for both
        base, app, tasks, inbox = [], [], [], []
        for _ in range(args.runs):
            base.append(_run(base_cmd, env)["first_paint"])
            marks = _run(app_cmd, env)
            app.append(marks["first_paint"])
            tasks.append(marks["tasks_paint"])
            inbox.append(marks["inbox_paint"])
    b, a, v, i = (statistics.median(x) for x in (base, app, tasks, inbox))
    print(f"empty QMainWindow, first paint:          {b:7.1f} ms (median of {args.runs})")
    print(f"boris-desktop demo store, first paint:   {a:7.1f} ms")
    print(f"boris-desktop demo store, tasks visible: {v:7.1f} ms")
    print(
        f"boris-desktop demo store, store open:    {i:7.1f} ms  (the inbox as the Store lists it)"
    )
    print(f"row: first paint      {a / b:5.2f}x the empty window  (goal <= 1.5x)")
    print(f"row: tasks visible    {v / b:5.2f}x the empty window  (goal <= 3x)")
    print(f"row: store open       {i / b:5.2f}x the empty window  (reported)")
    return 0 if a / b <= 1.5 and v / b <= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
