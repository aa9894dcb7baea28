"""The decision queue on a big store (not part of the tests): the GUI thread while the queue
of 2,000 open decisions across 10,000 tasks fills, and follows a new one.

    .venv/bin/python benchmarks/bench_queue.py [--tasks 10000] [--decisions 2000] [--runs 3]

The store is made once per run in a temporary directory: `--tasks` tasks, one in every
tasks/decisions of them with an approval requested (the open decisions). In one process,
offscreen, a heartbeat beats every 5 ms on the GUI thread while the Decisions tab of an open
window fills (read on a worker, the rows set on the GUI thread), while it is read again, and
while another process requests one more approval and the queue shows it (the "arrived" time
includes that process's start, about half a second; it is started with subprocess, whose
vfork costs the GUI thread nothing). A stall is the longest gap between two beats less the
5 ms; goal: at most 50 ms. Above MainWindow.PAGED_FROM tasks (the default 10,000 are) the
window reads its queue in pages (issue 36 part B): it is filled when its first page is in;
`--whole` reads it whole, as before paging.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from heartbeat import Heartbeat  # noqa: E402


def make_store(root: Path, tasks: int, decisions: int) -> float:
    from store import Actor, Store
    from store import commands as c
    from store.commands import approvals as ap

    agent = Actor(kind="agent", id="a")
    every = max(tasks // decisions, 1)
    t0 = time.perf_counter()
    with Store.open(root) as s:
        batch: list[c.Command] = []
        for i in range(tasks):
            tid = f"t{i:05d}"
            batch.append(c.CreateTask(task_id=tid, title=f"Task {i}", owner="o", objective="x"))
            if i % every == 0:
                batch.append(
                    ap.RequestApproval(
                        task_id=tid,
                        approval_id=f"ap{i}",
                        payload={"n": i},
                        consequence=f"send message {i}",
                        policy="p",
                        expires_in_seconds=3600 + i,
                    )
                )
            if len(batch) >= 500:
                s.execute_all(batch, agent)
                batch = []
        if batch:
            s.execute_all(batch, agent)
    return time.perf_counter() - t0


def _request(root: str, approval_id: str) -> None:
    """Another process (an agent elsewhere) asks for one more approval."""
    from store import Actor, Store
    from store.commands import approvals as ap

    with Store.open(root) as other:
        other.execute(
            ap.RequestApproval(task_id="t00001", approval_id=approval_id, payload={"n": -1},
                               consequence="one more", policy="p", expires_in_seconds=60),
            Actor(kind="agent", id="a"),
        )  # fmt: skip


def run_once(root: Path, app: object, decisions: int, n: int) -> dict[str, float]:
    from boris_desktop.main_window import MainWindow
    from store import Store

    store = Store.open(root)
    hb = Heartbeat(app)
    # The window is built and painted first (its start-up is bench_desktop's to measure),
    # its task view too: unstaged, it would be built on the first task's arrival, ~40 ms of
    # start-up inside the fill (the app builds it in a turn of its own, staged).
    w = MainWindow(store)
    w.task_view  # noqa: B018
    # As boris-desktop does once its first task is shown (runtime.freeze_startup), in every
    # run: each stands for a fresh process (the flag that makes the app freeze only once
    # would leave runs 2-5 scanning a whole window's start-up in every full collection).
    frozen: list[bool] = []

    def freeze_once() -> None:
        if not frozen:
            frozen.append(True)
            gc.freeze()

    w.loaded.connect(freeze_once)
    w.resize(1280, 800)
    w.show()
    w.show_queue()
    hb.start()
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    # On a store above MainWindow.PAGED_FROM tasks the queue is read in pages (issue 36
    # part B): filled when its first page is in (`--whole`: every decision, read whole).
    from boris_desktop.queue.decisions import PAGE

    def filled() -> bool:
        held = min(decisions, PAGE) if w.queue.paged else decisions
        return w.queue.loaded and len(w.queue.model.rows) >= held

    hb.spin(filled)
    out["queue fills (window open)"] = max(hb.gaps, default=0.0)
    out["queue filled, s"] = time.perf_counter() - t0
    reads = [0]
    w.queue.updated.connect(lambda *_: reads.__setitem__(0, reads[0] + 1))
    before = reads[0]
    out["queue read again"] = hb.longest_stall(w.queue.refresh, lambda: reads[0] > before)
    late = f"late-{n}-{os.getpid()}"
    writer: list[subprocess.Popen[bytes]] = []
    # subprocess starts the writer with vfork: multiprocessing's spawn forks this whole
    # process on the GUI thread first (100 ms of the bench's own, not the window's).
    argv = [sys.executable, __file__, "--request", str(root), late]
    t0 = time.perf_counter()
    out["one more decision arrives"] = hb.longest_stall(
        lambda: writer.append(subprocess.Popen(argv)),
        lambda: any(r["key"] == late for r in w.queue.model.rows),
    )
    out["arrived -> shown, s"] = time.perf_counter() - t0
    writer[0].wait()
    hb.stop()
    w.close()
    # Gone before the next run, as when the app quits: a closed window left behind kept its
    # models, timers and caches, and every later run in this process paid for them.
    from PySide6.QtCore import QEvent, QThreadPool

    w.deleteLater()
    QThreadPool.globalInstance().waitForDone(10_000)  # its jobs deliver to nobody
    app.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)  # type: ignore[attr-defined]
    gc.unfreeze()  # what this run froze is collected as a process exiting would free it
    gc.collect()
    store.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=10_000)
    p.add_argument("--decisions", type=int, default=2_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument(
        "--whole",
        action="store_true",
        help="read the inbox and queue whole, as below MainWindow.PAGED_FROM tasks",
    )
    p.add_argument("--request", nargs=2, metavar=("STORE", "APPROVAL"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.request:  # the other process
        _request(*args.request)
        return
    from PySide6.QtWidgets import QApplication

    from boris_desktop.runtime.interpreter import share_the_gil

    share_the_gil()
    if args.whole:
        os.environ["BORIS_DESKTOP_PAGED_INBOX"] = "never"
    app = QApplication([])
    os.environ["BORIS_DESKTOP_SETTINGS"] = str(Path(tempfile.mkdtemp()) / "settings.ini")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        made = make_store(root, args.tasks, args.decisions)
        print(f"{args.tasks} tasks, {args.decisions} open approvals, made in {made:.0f} s")
        runs = [run_once(root, app, args.decisions, n) for n in range(args.runs)]
    how = "read whole" if args.whole else "as the window reads it (in pages above 5,000 tasks)"
    print(f"the decision queue, {how}, {args.runs} runs (median, max):")
    for key in runs[0]:
        values = [r[key] for r in runs]
        unit = "" if key.endswith(", s") else " ms longest GUI stall"
        print(f"  {key:<36}{statistics.median(values):>9.3f}{max(values):>9.3f}{unit}")
    worst = max(v for r in runs for k, v in r.items() if not k.endswith(", s"))
    print(f"longest GUI pause: {worst:.1f} ms (goal <= 50 ms)")


if __name__ == "__main__":
    main()
