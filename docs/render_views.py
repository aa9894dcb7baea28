"""Render docs/decisions.png (the Decisions tab), docs/history.png (What I Decided),
docs/lineage.png (the lineage graph) and docs/finished.png (the reference guide finished).

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/render_views.py [decisions|history ...]

A demo store in a temporary directory; the queue is grabbed first, then Rita approves the
mail, reconciles the save, waives a criterion and merges the guide's forked lineage; then the
other two views are grabbed offscreen. The finished guide is a demo store of its own, where
docs/reviewing.md's walkthrough is recorded on a signed demo store, as the window makes it
(the Stop bullet, Resume, then "Finishing the reference guide"; tests/test_walkthrough.py
clicks through it in the window), grabbed at 1366x768. Named pictures only, when any are
named.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
DOCS = Path(__file__).resolve().parent


def main() -> int:
    wanted = set(sys.argv[1:]) or {"decisions", "history", "lineage", "finished"}
    from PySide6.QtWidgets import QApplication

    from store import Actor, Store
    from store.commands import approvals as ap
    from store.commands import checkpoints as ck
    from store.commands import core
    from store.commands import effects as ef
    from store.services.demo import fill_demo

    app = QApplication.instance() or QApplication(sys.argv)
    tmp = tempfile.TemporaryDirectory()
    os.environ["BORIS_DESKTOP_SETTINGS"] = os.path.join(tmp.name, "settings.ini")
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")
    store = Store.open(os.path.join(tmp.name, "store"))
    fill_demo(store)
    from boris_desktop.main_window import MainWindow

    def settle(w: MainWindow, seconds: float = 1.5) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    if "finished" in wanted:
        finished(app, settle)
    if not wanted & {"decisions", "history", "lineage"}:
        store.close()
        tmp.cleanup()
        return 0
    if "decisions" in wanted:
        # The Decisions tab before Rita decides anything: the first decision (the mail's
        # approval) selected, its task below on the Approvals part.
        w = MainWindow(store)
        w.resize(1280, 780)
        w.reload_now()
        w.show()
        settle(w)
        w.show_queue()
        w.queue.table.setCurrentIndex(w.queue.proxy.index(0, 0))
        settle(w)
        w.grab().save(str(DOCS / "decisions.png"))
        w.close()

    rita = Actor(kind="person", id="rita", name="Rita Reviewer")
    for cmd in (
        ap.DecideApproval(task_id="note", approval_id="apr-note-mail", decision="approved",
                          note="the summary matches the note; send it"),
        ef.ReconcileEffect(task_id="note", effect_id="save-note", decision="absent",
                           note="NOTE.md is unchanged on disk: the tool's 'saved' was wrong"),
        core.JudgeCriterion(task_id="guide", criterion_id="citations", status="waived",
                            note="the figures are ours; no external sources to cite"),
        ck.WriteCheckpoint(task_id="guide", reason="handoff", supersedes=["ckpt-handoff"],
                           merge=["ckpt-milestone"], checkpoint_id="ckpt-merged",
                           note="merged the milestone and the handoff: continue from here"),
    ):  # fmt: skip
        store.execute(cmd, rita)

    w = MainWindow(store)
    w.resize(1280, 780)
    w.reload_now()
    w.show()
    settle(w)
    w.show_history()
    settle(w)  # read when first shown
    w.history.table.setCurrentIndex(w.history.proxy.index(1, 0))
    settle(w, 0.5)
    if "history" in wanted:
        w.grab().save(str(DOCS / "history.png"))

    w.resize(1280, 900)  # the lineage needs the task's half of the window to be tall
    w.show_task("guide")
    settle(w)
    panel = w.task_view.panel("Checkpoints")
    w.task_view.tabs.setCurrentWidget(panel)
    panel.select_checkpoint("ckpt-merged")
    settle(w)
    if "lineage" in wanted:
        w.grab().save(str(DOCS / "lineage.png"))
    w.close()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(5000)
    store.close()
    tmp.cleanup()
    return 0


def finished(app: Any, settle: Callable[[Any], None]) -> None:
    """docs/reviewing.md's walkthrough recorded as Rita on a signed demo store (the stop
    that leaves a third head, the resume, the steps, the agent's build log made again and
    signed with its key, Final merging every head), then the window at 1366x768 on the
    completed guide, its Criteria tab: both satisfied on guide v3."""
    import subprocess

    from store import Actor, Store, api
    from store import commands as c
    from store.commands import checkpoints as ck
    from store.services.demo import AGENT
    from store.signing.keys import load_key

    tmp = tempfile.TemporaryDirectory()
    config = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = os.path.join(tmp.name, "config")  # Rita's key, not yours
    store = Store.open(os.path.join(tmp.name, "store"))
    rita = Actor(kind="person", id="rita", name="Rita Reviewer")
    api.fill_demo_store(store, rita)  # signed, Rita's key its root: as the window makes it
    stopped = store.execute(
        ck.StopRun(task_id="guide", reason="the owner looks at the docs site first"), rita
    )
    store.execute(c.SetStatus(task_id="guide", status="running",
                              reason="the upload is reconciled next"), rita)  # fmt: skip
    out = store.location.directory / "demo-workspace/reference-guide/out"
    api.reconcile_by_hand(store, rita, "guide", "upload-guide", api.Verdict.PRESENT,
                          "guide v2 is on docs.example.org/upload/reference-guide.md")  # fmt: skip
    guide = (out / "guide.md").read_text(encoding="utf-8")  # v2, as the agent left it
    store.execute(
        c.RecordArtifact(task_id="guide", artifact_id="guide", name="guide.md", based_on=2,
                         content=c.Content(text=guide.replace("[citation needed: policy P-12]",
                                                              "(policy P-12)"),
                                           media_type="text/markdown"),
                         note="edited by the reviewer"),
        rita,
    )  # fmt: skip
    store.execute(c.CompletePhase(task_id="guide", phase_id="review",
                                  summary="read v3 section by section: one per source"), rita)  # fmt: skip
    notes = out / "review.txt"
    notes.write_text("guide v3: six numbered sections, one per source; the one retention "
                     "figure (90 days) cites policy P-12.\n", encoding="utf-8")  # fmt: skip
    for cid in ("structure", "citations"):
        ev = f"review-{cid}"
        store.execute(
            c.AttachEvidence(task_id="guide", criterion_id=cid, evidence_id=ev, kind="review",
                             content=c.Content(path=str(notes)), artifact_id="guide",
                             artifact_version=3, description="the reviewer read guide v3"),
            rita,
        )  # fmt: skip
        store.execute(
            c.JudgeCriterion(task_id="guide", criterion_id=cid, status="satisfied",
                             artifact_id="guide", artifact_version=3, evidence_ids=[ev]),
            rita,
        )  # fmt: skip
    here = store.location.directory
    subprocess.run(["sh", "demo-workspace/reference-guide/render.sh"], cwd=here, check=True)
    key = load_key(here / "demo-workspace/keys/agent-drafter-7.pem")
    with Store.open(here, signer=key) as agent:  # the agent's own key, as step 5 gives it
        agent.execute(c.RecordArtifact(task_id="guide", artifact_id="build-log",
                                       name="build.log", role="log",
                                       content=c.Content(path=str(out / "build.log"))),
                      AGENT)  # fmt: skip
    store.execute(
        ck.WriteCheckpoint(task_id="guide", reason="final", supersedes=["ckpt-milestone"],
                           merge=["ckpt-handoff", stopped],
                           note="finished: upload checked, citation fixed, both criteria on v3"),
        rita,
    )  # fmt: skip
    assert store.task("guide")["status"] == "completed"
    assert len(store.task("guide")["checkpoints"]["heads"]) == 1
    from boris_desktop.main_window import MainWindow

    w = MainWindow(store)
    w.resize(1366, 768)
    w.reload_now()
    w.show()
    settle(w)
    w.show_task("guide")
    settle(w)
    w.task_view.show_part("Criteria", "citations")
    settle(w)
    w.grab().save(str(DOCS / "finished.png"))
    w.close()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(5000)
    store.close()
    tmp.cleanup()
    if config is None:
        del os.environ["XDG_CONFIG_HOME"]
    else:
        os.environ["XDG_CONFIG_HOME"] = config


if __name__ == "__main__":
    sys.exit(main())
