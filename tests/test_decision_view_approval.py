"""What an approval decides is the store's word: a message is a message, never a deletion.

The store classifies the prepared object into a typed change (store.reads.changes) and the
Approve dialog renders that and nothing else. Store tests run on both engines; the window
test runs the README's own `boris request-approval` form through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS

from store import Actor, CommandRejected, Store
from store import commands as c
from store.api import (
    ApprovalDecision,
    ApprovalState,
    ApprovalVerdict,
    Delete,
    Opaque,
    Replace,
    Send,
    UnknownApproval,
    Upload,
    Write,
    write_diff,
)
from store.commands import approvals as ap
from store.commands import effects as lg
from store.events import FileState

AGENT = Actor(kind="agent", id="writer-7")
ANA = Actor(kind="person", id="ana", name="Ana Lind")
SITE = "https://docs.example.org/"
MAIL = "smtp://mail.example.org/"

#: The README's form: `boris request-approval T --payload-json … --consequence …`.
README_PAYLOAD = {"to": "a@b.c", "subject": "Weekly note", "body": "Hello"}


@pytest.fixture
def tid(s: Store, ws: Path) -> str:
    s.execute(
        c.CreateTask(task_id="t", title="T", owner="ana", objective="x", scope_paths=[str(ws)],
                     destinations=[SITE, MAIL, "mailto:team@example.org"]),
        AGENT,
    )  # fmt: skip
    return "t"


def ask(s: Store, tid: str, payload: dict, aid: str = "ap") -> ApprovalDecision:
    s.execute(
        ap.RequestApproval(task_id=tid, approval_id=aid, payload=payload,
                           consequence="do what it says", policy="p"),
        AGENT,
    )  # fmt: skip
    return s.approval_decision(tid, aid)


def ask_effect(s: Store, tid: str, eid: str, aid: str = "ap", **plan: object) -> ApprovalDecision:
    s.execute(
        lg.PlanEffect(task_id=tid, effect_id=eid, consequence="do it", requires_approval=True,
                      policy="p", **plan),  # type: ignore[arg-type]
        AGENT,
    )  # fmt: skip
    s.execute(ap.RequestApproval(task_id=tid, approval_id=aid, effect_id=eid, policy="p"), AGENT)
    return s.approval_decision(tid, aid)


# --- the variants, on both engines -----------------------------------------------------------


def test_the_readmes_payload_is_a_message(s: Store, tid: str) -> None:
    d = ask(s, tid, README_PAYLOAD)
    assert isinstance(d.change, Send)
    assert d.change.to == ("a@b.c",)
    assert d.change.subject == "Weekly note" and d.change.body == "Hello"
    assert d.state is ApprovalState.PENDING and d.why_not is None
    assert d.verdicts == (
        ApprovalVerdict.APPROVE,
        ApprovalVerdict.REJECT,
        ApprovalVerdict.SEND_BACK,
    )
    assert json.loads(d.prepared_json) == README_PAYLOAD
    assert d.consequence == "do what it says" and d.requester == AGENT


def test_a_message_with_recipients_and_headers(s: Store, tid: str) -> None:
    d = ask(s, tid, {"to": ["Bo <bo@x.org>", "cy@x.org"], "cc": "dee@x.org", "subject": "S",
                     "html": "<b>hi</b>", "headers": {"Reply-To": "ana@x.org"}})  # fmt: skip
    assert isinstance(d.change, Send)
    assert d.change.to == ("Bo <bo@x.org>", "cy@x.org") and d.change.cc == ("dee@x.org",)
    assert d.change.body == "<b>hi</b>"  # the HTML's source: text, never rendered
    assert "the body is HTML, shown as its source" in d.change.notes
    assert d.change.headers == (("Reply-To", "ana@x.org"),)


def test_a_mailto_target_is_a_message_to_its_recipient(s: Store, tid: str) -> None:
    d = ask(s, tid, {"target": "mailto:bo@x.org?subject=Hi%20there", "body": "b"})
    assert isinstance(d.change, Send)
    assert d.change.to == ("bo@x.org",) and d.change.subject == "Hi there"


def test_a_mail_effect_shows_its_rfc822_blob(s: Store, tid: str) -> None:
    text = "Subject: Project note\nCc: boss@example.org\n\nBackups are kept 90 days.\n"
    d = ask_effect(s, tid, "mail", kind="send", target=MAIL + "team@example.org",
                   content=c.Content(text=text))  # fmt: skip
    assert isinstance(d.change, Send)
    assert d.change.to == ("team@example.org",)  # no To header: the authorized target
    assert "To is the authorized target" in d.change.notes
    assert d.change.cc == ("boss@example.org",) and d.change.subject == "Project note"
    assert d.change.body == "Backups are kept 90 days.\n"
    assert d.change.digest is not None and d.change.digest.startswith("sha256:")
    assert d.effect_id == "mail"


def test_a_mail_effect_to_a_mailto_target_shows_its_message_blob(s: Store, tid: str) -> None:
    """`boris plan-effect --kind send --target mailto:… --text MESSAGE`: the message is what
    is sent, so its Subject and body are shown, To from the target (no To header)."""
    text = "Subject: Week 49\n\nAll green.\n"
    d = ask_effect(s, tid, "mail2", kind="send", target="mailto:team@example.org",
                   content=c.Content(text=text))  # fmt: skip
    assert isinstance(d.change, Send)
    assert d.change.to == ("team@example.org",)
    assert d.change.subject == "Week 49" and d.change.body == "All green.\n"
    assert d.change.digest is not None


def test_a_file_write_is_a_write_with_the_intended_digest(s: Store, tid: str, ws: Path) -> None:
    f = ws / "notes.md"
    f.write_text("one\ntwo\n", encoding="utf-8")
    d = ask_effect(s, tid, "w", kind="file_write", target=str(f),
                   content=c.Content(text="one\nTWO\n"))  # fmt: skip
    assert isinstance(d.change, Write)
    assert d.change.target == str(f.resolve()) and d.change.size == 8
    assert d.change.before is not None and d.change.before.exists
    assert d.change.media_type == "text/markdown"
    f.write_text("one\ntwo\nthree\n", encoding="utf-8")  # changed since it was planned
    diff = write_diff(s.blobs, d.change)
    assert "-two\n" in diff.text and "+TWO\n" in diff.text and "-three\n" in diff.text
    assert diff.moved and diff.now is not None and diff.now.exists
    assert "notes.md as it is now" in diff.text


def test_a_payload_naming_an_intended_digest_is_a_write(s: Store, tid: str, ws: Path) -> None:
    digest, size = s.blobs.put_bytes(b"new text\n")
    target = str(ws / "new.txt")
    d = ask(s, tid, {"target": target, "intended": {"exists": True, "digest": digest,
                                                     "size": size}})  # fmt: skip
    assert d.change == Write(target, digest, size, "text/plain", None)
    diff = write_diff(s.blobs, d.change)
    assert diff.new_file and "(no file there now)" in diff.text and "+new text" in diff.text


def test_only_an_explicit_removal_is_a_delete(s: Store, tid: str, ws: Path) -> None:
    (ws / "old.md").write_text("x", encoding="utf-8")
    d = ask_effect(s, tid, "rm", kind="file_write", target=str(ws / "old.md"),
                   intended=FileState(exists=False))  # fmt: skip
    assert isinstance(d.change, Delete) and d.change.target == str((ws / "old.md").resolve())
    assert d.change.before is not None and d.change.before.exists
    p = ask(s, tid, {"target": "/x/y", "intended": {"exists": False}}, aid="ap2")
    assert p.change == Delete("/x/y", None)


def test_anything_else_is_opaque_json_never_a_deletion(s: Store, tid: str) -> None:
    payload = {"amount": 12, "currency": "EUR", "to_account": "DE00 1234"}
    d = ask(s, tid, payload)
    assert isinstance(d.change, Opaque)
    assert json.loads(d.change.payload_json) == payload
    assert "names no target" in d.change.why
    named = ask(s, tid, {"target": "/tmp/x", "note": "no content"}, aid="ap2")
    assert isinstance(named.change, Opaque) and "not the content" in named.change.why
    # A "send" naming no recipient, no text and no message is not shown as an empty email.
    empty = ask(s, tid, {"kind": "send", "n": 3}, aid="ap3")
    assert isinstance(empty.change, Opaque)


def test_uploads_and_replacements(s: Store, tid: str, ws: Path) -> None:
    (ws / "guide.md").write_text("# Guide\n", encoding="utf-8")
    up = ask_effect(s, tid, "up", kind="upload", target=SITE + "guide.md",
                    content=c.Content(path=str(ws / "guide.md")),
                    pre_state=FileState(exists=False))  # fmt: skip
    assert isinstance(up.change, Upload)
    assert up.change.target == SITE + "guide.md" and up.change.size == 8
    assert up.change.media_type == "text/markdown"
    old, _ = s.blobs.put_bytes(b"old")
    rep = ask_effect(s, tid, "rep", aid="ap2", kind="other", target=SITE + "index.html",
                     content=c.Content(text="<p>new</p>"),
                     pre_state=FileState(exists=True, digest=old, size=3))  # fmt: skip
    assert isinstance(rep.change, Replace) and rep.change.before is not None
    assert rep.change.before.digest == old and rep.change.media_type == "text/html"


def test_the_view_names_its_version_and_what_may_be_done(s: Store, tid: str) -> None:
    d = ask(s, tid, README_PAYLOAD)
    assert d.seq > 0 and d.task_seq >= d.seq and d.now
    s.execute(ap.DecideApproval(task_id=tid, approval_id="ap", decision=ApprovalVerdict.APPROVE,
                                note="fine"), ANA)  # fmt: skip
    after = s.approval_decision(tid, "ap")
    assert after.seq > d.seq and after.task_seq > d.task_seq
    assert after.state is ApprovalState.APPROVED and after.decided_by == ANA
    assert after.why_not == "it was already approved by ana" and after.verdicts == ()
    assert after.note == "fine"
    with pytest.raises(UnknownApproval):
        s.approval_decision(tid, "nope")


def test_the_command_refuses_with_the_views_words(s: Store, tid: str) -> None:
    ask(s, tid, README_PAYLOAD)
    s.execute(ap.DecideApproval(task_id=tid, approval_id="ap", decision="rejected"), ANA)
    why = s.approval_decision(tid, "ap").why_not
    with pytest.raises(CommandRejected) as refused:
        s.execute(ap.DecideApproval(task_id=tid, approval_id="ap", decision="approved"), ANA)
    assert str(refused.value) == f"approval ap cannot be decided: {why}"
    with pytest.raises(UnknownApproval):
        s.execute(ap.DecideApproval(task_id=tid, approval_id="nope", decision="approved"), ANA)


# --- the window ------------------------------------------------------------------------------


def boris(store_dir: Path, *args: str) -> str:
    """The real `boris` command line, in another process."""
    exe = Path(sys.executable).with_name("boris")
    done = subprocess.run(
        [str(exe), "--store", str(store_dir), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "BORIS_ACTOR": "agent:writer-7"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def test_the_readmes_approval_opens_as_the_email_it_is(
    qtbot, tmp_path: Path, ws: Path, reviewer: None
) -> None:
    from test_desktop_actions import open_window

    where = tmp_path / "store"
    boris(where, "create-task", "--id", "T", "--title", "Weekly note", "--owner", "ana",
          "--objective", "send the weekly note", "--scope", str(ws))  # fmt: skip
    aid = boris(where, "request-approval", "T", "--payload-json", json.dumps(README_PAYLOAD),
                "--consequence", "send the weekly note", "--policy", "mail needs a person")  # fmt: skip
    store = Store.open(where)
    try:
        w = open_window(qtbot, store, "T")
        w.menu_actions.approve_action.trigger()
        d = w.menu_actions.dialog
        qtbot.waitExposed(d, timeout=WAIT_MS)
        qtbot.waitUntil(lambda: d.content.result is not None and not d.content.loading(),
                        timeout=WAIT_MS)  # fmt: skip
        shown = d.content.pane.toPlainText()
        assert "To: a@b.c" in shown
        assert "Subject: Weekly note" in shown
        assert "Hello" in shown
        assert d.content.title.text().startswith("Email to a@b.c")
        everything = "\n".join(
            [shown, d.content.title.text(), d.content.note.text(), d.windowTitle()]
        )
        assert "Remove" not in everything and "removed" not in everything
        assert d.decision is not None and d.decision.approval_id == aid
        d.reject()
    finally:
        store.close()
