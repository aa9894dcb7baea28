"""Live windows on a team store (not part of the test run): how soon a commit from another
machine is heard and shown, and what announcing commits costs a writer.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_live.py

Without --url (or BORIS_TEST_PG_URL) it starts a throw-away server (tests/pg_server.py) with
fsync on. "Another machine" is a second Store object on its own directory (its own engine and
connections), as in the tests.

- heard: `execute` returns on the writer → the listener's `wait` returns naming the task;
- shown: `execute` returns → the open window's objective label shows the new text (the
  notification, the worker's reads, the GUI thread's update);
- cost: appends/s with and without the NOTIFY in each write transaction, interleaved rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from pg_server import PgServer  # noqa: E402

from store import Actor, Store, notify  # noqa: E402
from store import commands as c  # noqa: E402

AGENT = Actor(kind="agent", id="bench")


def _figures(ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return f"median {statistics.median(ms):6.1f} ms   p95 {p95:6.1f} ms   max {ms[-1]:6.1f} ms"


def heard(url: str, tmp: Path, n: int) -> list[float]:
    with Store.open(tmp / "a", url=url) as mine, Store.open(tmp / "b", url=url) as other:
        other.execute(c.CreateTask(task_id="h", title="t", owner="o", objective="x"), AGENT)
        listener = mine.listener()
        assert listener is not None
        assert listener.wait(5) is not None  # connected
        out: list[float] = []
        for i in range(n):
            other.execute(c.AmendObjective(task_id="h", text=f"v{i}", reason="r"), AGENT)
            t0 = time.perf_counter()
            changes = listener.wait(2.0)
            out.append((time.perf_counter() - t0) * 1000)
            assert changes is not None and "h" in changes.task_ids
        listener.close()
    return out


def shown(url: str, tmp: Path, n: int) -> list[float]:
    from PySide6.QtWidgets import QApplication

    from boris_desktop.main_window import MainWindow
    from boris_desktop.runtime import live

    app = QApplication.instance() or QApplication([])
    out: list[float] = []
    with Store.open(tmp / "c", url=url) as mine, Store.open(tmp / "d", url=url) as other:
        other.execute(c.CreateTask(task_id="w", title="t", owner="o", objective="x"), AGENT)
        w = MainWindow(mine)
        w.show()

        def until(ok, limit: float = 5.0) -> None:
            end = time.perf_counter() + limit
            while not ok():
                if time.perf_counter() > end:
                    raise TimeoutError(
                        f"{w.live.state!r} {w.selected!r} {w.statusBar().currentMessage()!r}"
                    )
                app.processEvents()
                time.sleep(0.001)

        until(lambda: w.live.state == live.LIVE and w.selected is not None)
        until(lambda: not w.loader.busy("load") and w._task_view is not None)
        task_id = w.selected  # the task on screen (the inbox picks it)
        for i in range(n):
            text = f"objective number {i}"
            other.execute(c.AmendObjective(task_id=task_id, text=text, reason="r"), AGENT)
            t0 = time.perf_counter()
            until(lambda t=text: t in w.task_view.header.objective.text())
            out.append((time.perf_counter() - t0) * 1000)
            until(lambda: not w.loader.busy("load"), 30.0)
        w.close()
        w.live.join()
        from PySide6.QtCore import QThreadPool

        QThreadPool.globalInstance().waitForDone(10_000)
        w.deleteLater()
    return out


def appends(url: str, tmp: Path, n: int, announcing: bool) -> float:
    real = notify.announce
    if not announcing:
        notify.announce = lambda conn, ids: None  # type: ignore[assignment]
    try:
        with Store.open(tmp / f"e{announcing}", url=url) as s:
            tid = f"a{time.monotonic_ns()}"
            s.execute(c.CreateTask(task_id=tid, title="t", owner="o", objective="x"), AGENT)
            t0 = time.perf_counter()
            for i in range(n):
                s.execute(c.AmendObjective(task_id=tid, text=f"v{i}", reason="r"), AGENT)
            return n / (time.perf_counter() - t0)
    finally:
        notify.announce = real


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--heard", type=int, default=200)
    p.add_argument("--shown", type=int, default=30)
    p.add_argument("--writes", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--url", default=os.environ.get("BORIS_TEST_PG_URL"))
    args = p.parse_args()
    server = None
    url = args.url
    if not url:
        server = PgServer.start(durable=True)
        url = server.url()
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            Store.open(tmp / "init", url=url).close()
            print(f"PostgreSQL at {url.split('@')[-1]}")
            print(
                f"  commit -> listener hears it ({args.heard}x):  {_figures(heard(url, tmp, args.heard))}"
            )
            print(
                f"  commit -> window shows it   ({args.shown}x):   {_figures(shown(url, tmp, args.shown))}"
            )
            best = {True: 0.0, False: 0.0}
            for r in range(args.rounds):
                for announcing in (True, False) if r % 2 else (False, True):
                    best[announcing] = max(
                        best[announcing], appends(url, tmp, args.writes, announcing)
                    )
            print(
                f"  appends/s, best of {args.rounds}x{args.writes}: with NOTIFY {best[True]:.0f}/s, "
                f"without {best[False]:.0f}/s"
            )
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
