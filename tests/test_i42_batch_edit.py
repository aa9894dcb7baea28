"""A batch item approved with the person's own words (issue 42: "each item approved, rejected,
edited or sent back"), in the window's batch table and in `boris decide-batch`.

The batch table offers Edit… for a row whose message the store offers for editing (the
decision view's `editable`, what the Approve dialog's Edit offers): the reviewer changes the
subject, Use these words sets the row to Approve with them, Apply then Confirm records it as
her revision (the approval binds the edited message's digest), beside a tool call rejected in
the same pass, which offers no Edit. `boris decide-batch` takes the same as `edited_message`.
On a signed store as `boris init` makes it, on both engines; pytest-qt as the reviewer clicks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, open_window
from test_desktop_batch import _open_batch
from test_respond import BOT, Signed

from store import Store
from store import commands as c
from store.commands import approvals as ap
from store.commands import effects as lg
from store.events import ApprovalDecided
from store.reads.decision_views import ApprovalVerdict

MAIL = "smtp://mail.example.org/"
MESSAGE = "Subject: Release 4.2 tonight\n\nThe release goes out at 20:00.\n"


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def mail(signed: Signed, task_id: str) -> str:
    """The agent asks to send a message (kind `send`, its RFC 822 text), as the demo's."""
    signed.store.execute(
        c.CreateTask(
            task_id=task_id, title="Announce", owner="rita", objective="x",
            destinations=[MAIL, "langgraph://tools/"],
        ),
        BOT,
    )  # fmt: skip
    signed.store.execute(
        lg.PlanEffect(
            task_id=task_id, effect_id="mail-1", kind="send", target=MAIL + "team@example.org",
            consequence="Email the release note to team@example.org",
            content=c.Content(text=MESSAGE), requires_approval=True, policy="mail",
        ),
        BOT,
    )  # fmt: skip
    signed.store.execute(
        ap.RequestApproval(
            task_id=task_id, approval_id="apr-mail", effect_id="mail-1", policy="mail"
        ),
        BOT,
    )
    return "apr-mail"


def test_a_row_approved_with_the_reviewers_words_from_the_batch_table(
    qtbot, signed: Signed, window_store: Store
) -> None:
    from boris_desktop.queue.batch import APPROVAL, WHAT

    tid = "t-mail"
    message = mail(signed, tid)
    call = signed.ask(tid, "deploy", {"env": "prod"})
    asked_digest = signed.approval(tid, message)["payload_digest"]
    w = open_window(qtbot, window_store)
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == 2, timeout=WAIT_MS)
    d = _open_batch(qtbot, w)
    by_id = {d.table.item(r, APPROVAL).text(): r for r in range(2)}

    # The tool call offers no Edit (the store lists nothing of it as editable); the mail does.
    d.table.setCurrentCell(by_id[call], 0)
    assert not d.edit_button.isEnabled()
    d.table.setCurrentCell(by_id[message], 0)
    assert d.edit_button.isEnabled()
    qtbot.mouseClick(d.edit_button, Qt.MouseButton.LeftButton)
    editor = d.editor
    assert editor is not None and editor.isVisible()
    assert editor.edits.subject.text() == "Release 4.2 tonight"
    editor.edits.subject.setText("Release 4.2 tomorrow")
    qtbot.mouseClick(editor.use_button, Qt.MouseButton.LeftButton)
    assert not editor.isVisible()
    assert d.verdict_box(by_id[message]).currentData() == ApprovalVerdict.APPROVE
    assert d.table.item(by_id[message], WHAT).text().endswith("— with your subject")
    assert signed.approval(tid, message)["state"] == "pending"  # nothing decided yet

    d.set_verdict(by_id[call], ApprovalVerdict.REJECT)
    qtbot.mouseClick(d.apply_button, Qt.MouseButton.LeftButton)
    assert "Approve edited 1" in d.confirm_text.text() and "Reject 1" in d.confirm_text.text()
    assert not d.edit_button.isEnabled()  # while confirming, nothing changes
    qtbot.mouseClick(d.confirm_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.result_text(by_id[message]) != "", timeout=WAIT_MS)
    assert d.result_text(by_id[message]) == "Recorded: approved"
    assert d.result_text(by_id[call]) == "Recorded: rejected"

    # Her revision: the approval binds the edited message, which is what the store shows now.
    decided = signed.approval(tid, message)
    assert decided["state"] == "approved" and decided["payload_digest"] != asked_digest
    view = signed.store.approval_decision(tid, message)
    assert (view.change.subject, view.change.body) == (
        "Release 4.2 tomorrow",
        "The release goes out at 20:00.\n",
    )
    events = [e for e in signed.store.events(tid) if e["type"] == ApprovalDecided.TYPE]
    assert {e["actor"]["id"] for e in events} == {"rita"}
    rc, problems = signed.verify()
    assert rc == 0 and problems == [], problems
    d.close()
    w.close()


def test_decide_batch_takes_a_messages_words(signed: Signed, tmp_path: Path) -> None:
    tid = "t-mail"
    message = mail(signed, tid)
    asked_digest = signed.approval(tid, message)["payload_digest"]
    line = {
        "task_id": tid,
        "approval_id": message,
        "verdict": "approve",
        "based_on": asked_digest,
        "edited_message": {"body": "The release goes out tomorrow at 09:00.\n"},
    }
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps(line) + "\n", encoding="utf-8")
    answer = signed.ok("--actor", "person:rita", "decide-batch", str(batch))
    assert (answer["recorded"], answer["refused"]) == (1, 0), answer
    view = signed.store.approval_decision(tid, message)
    assert view.change.subject == "Release 4.2 tonight"
    assert view.change.body == "The release goes out tomorrow at 09:00.\n"
    assert signed.approval(tid, message)["payload_digest"] != asked_digest
    # A field no message has is refused before anything is written.
    line2 = dict(line, edited_message={"to": "all@example.org"})
    batch.write_text(json.dumps(line2) + "\n", encoding="utf-8")
    rc, out, _ = signed.run("--actor", "person:rita", "decide-batch", str(batch), "--json")
    assert rc != 0 and json.loads(out)["ok"] is False
    assert signed.verify()[0] == 0
