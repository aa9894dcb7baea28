"""Render each decision dialog on the demo store to docs/dialogs/*.png (offscreen).

QT_QPA_PLATFORM=offscreen .venv/bin/python docs/dialogs/render.py
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
    from boris_desktop.main_window import MainWindow
    from store import Actor, Store
    from store import commands as c
    from store.commands import approvals as ap
    from store.commands import effects as lg
    from store.services.demo import fill_demo

    app = QApplication.instance() or QApplication([])
    settings.set_reviewer("Rita Reviewer", "rita")
    store = Store.open(os.path.join(tmp, "store"))
    fill_demo(store)
    # A file write that needs approval, for the diff.
    agent = Actor(kind="agent", id="drafter-7", name="Drafting agent")
    note = Path(
        next(e for e in store.task("note")["effects"] if e["kind"] == "file_write")["target"]
    )
    store.execute(
        lg.PlanEffect(task_id="note", effect_id="tidy-note", kind="file_write", target=str(note),
                      consequence="Tidy the project note's heading",
                      content=c.Content(text=note.read_text().replace("# Project note",
                                                                      "# Project note (week 49)")),
                      requires_approval=True, policy="edits to shared notes need the owner"),
        agent,
    )  # fmt: skip
    store.execute(ap.RequestApproval(task_id="note", approval_id="apr-tidy", effect_id="tidy-note",
                                     policy="edits to shared notes need the owner",
                                     expires_in_seconds=3600), agent)  # fmt: skip
    # A message asked for as the README's `boris request-approval --payload-json` form does.
    store.execute(ap.RequestApproval(
        task_id="note", approval_id="apr-reminder",
        payload={"to": "team@example.org", "subject": "Reminder: project note due Friday",
                 "body": "Hello all,\n\nthe weekly note goes out on Friday; please add your "
                         "items to the draft by Thursday noon.\n\nThanks,\nDrafting agent"},
        consequence="Send the reminder to the team", policy="messages to the team need a person",
        expires_in_seconds=3600), agent)  # fmt: skip

    def spin(ms: int) -> None:
        end = time.monotonic() + ms / 1000
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    w = MainWindow(store)
    w.resize(1280, 800)
    w.show()
    w.reload_now()
    spin(500)

    def select(task_id: str) -> None:
        w.selected = task_id
        w.reload_now()
        spin(400)

    def shot(d, name: str, setup=None) -> None:
        d.show()
        spin(400)
        if setup:
            setup(d)
        spin(1300)
        d.grab().save(str(HERE / f"{name}.png"))
        print(name, d.width(), "x", d.height())
        d.reject()

    from boris_desktop.decide.approve import ApproveDialog
    from boris_desktop.decide.checkpoint import CheckpointDialog
    from boris_desktop.decide.edits import AmendDialog, CriterionDialog
    from boris_desktop.decide.judge import JudgeDialog
    from boris_desktop.decide.reconcile import ReconcileDialog
    from boris_desktop.decide.stop import StopDialog

    select("note")
    task = store.task("note")
    mail = next(a for a in task["approvals"] if a["approval_id"] == "apr-note-mail")
    tidy = next(a for a in task["approvals"] if a["approval_id"] == "apr-tidy")
    shot(ApproveDialog(w, "note", mail, task["now"]), "approve-email",
         lambda d: d.note.setPlainText("Checked the recipients and the body."))  # fmt: skip
    shot(ApproveDialog(w, "note", tidy, task["now"]), "approve-file-diff")
    shot(ApproveDialog(w, "note", "apr-reminder"), "approve-message")
    save = next(e for e in task["effects"] if e["effect_id"] == "save-note")
    shot(ReconcileDialog(w, "note", save), "reconcile",
         lambda d: d.note.setText("The file still holds last week's note."))  # fmt: skip
    shot(CheckpointDialog(w, task), "checkpoint")
    select("guide")
    guide = store.task("guide")
    shot(StopDialog(w, guide), "stop", lambda d: d.reason.setText("The owner takes it from here"))
    crit = next(x for x in guide["criteria"] if x["evidence"])
    shot(JudgeDialog(w, guide, crit), "judge")
    stale = next((x for x in guide["criteria"] if x["state"] == "stale"), None)
    if stale is not None:
        shot(JudgeDialog(w, guide, stale), "judge-stale")
    shot(CriterionDialog(w, guide), "add-criterion")
    shot(AmendDialog(w, guide), "amend")
    upload = next(e for e in guide["effects"] if e["effect_id"] == "upload-guide")
    shot(ReconcileDialog(w, "guide", upload), "reconcile-destination")
    # Finishing: the guide stopped by its owner, then resumed or closed (decide/finish.py).
    from boris_desktop.decide.finish import CloseDialog, ResumeDialog
    from store.commands.checkpoints import StopRun

    owner = Actor(kind="person", id="rita", name="Rita Reviewer")
    store.execute(StopRun(task_id="guide", reason="the owner takes it from here"), owner)
    select("guide")
    stopped = store.task("guide")
    shot(ResumeDialog(w, stopped), "resume",
         lambda d: d.reason.setText("The owner is back; the agent goes on"))  # fmt: skip
    shot(CloseDialog(w, stopped), "close",
         lambda d: (d.reason.setText("The guide is replaced by the new handbook"),
                    d.radios["superseded"].setChecked(True), d.confirm.setText("guide")))  # fmt: skip
    # A budget raised on a run whose tool calls ran out; the note's email cancelled.
    from boris_desktop.decide.budget import BudgetDialog
    from boris_desktop.decide.cancel_effect import CancelEffectDialog

    ws = Path(tmp) / "reports"
    ws.mkdir()
    (ws / "report.md").write_text("# Quarterly report\n\ndraft\n")
    store.execute(c.CreateTask(task_id="report", title="Write the quarterly report", owner="rita",
                               objective="A reviewed quarterly report", scope_paths=[str(ws)]),
                  agent)  # fmt: skip
    store.execute(lg.PlanEffect(task_id="report", effect_id="save-report", kind="file_write",
                                target=str(ws / "report.md"), consequence="Save the report",
                                content=c.Content(text="# Quarterly report\n\nfinal\n"),
                                requires_approval=True, policy="owner"), agent)  # fmt: skip
    store.execute(ap.RequestApproval(task_id="report", approval_id="apr-report",
                                     effect_id="save-report", policy="owner"), agent)  # fmt: skip
    store.execute_all([c.SetBudget(task_id="report", counter="tool_calls", limit=200),
                       c.ChargeBudget(task_id="report", counter="tool_calls", amount=203)],
                      agent)  # fmt: skip
    select("report")
    shot(BudgetDialog(w, store.task("report"), "tool_calls", raise_limit=True), "budget",
         lambda d: d.limit.setValue(300))  # fmt: skip
    note_task = store.task("note")
    mail_effect = next(e for e in note_task["effects"] if e["effect_id"] == "mail-note")
    shot(CancelEffectDialog(w, note_task, mail_effect), "cancel-effect",
         lambda d: (d.reason.setText("The owner sends the note himself this week"),
                    d.confirm.setText("mail-note")))  # fmt: skip
    w.close()
    store.close()


if __name__ == "__main__":
    main()
