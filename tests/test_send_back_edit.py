"""Send back with feedback, and edit then approve (issue 32).

A reviewer answers a pending approval with changes requested and a note (neither approved
nor rejected): the agent sees the note where it looks (the approval, the resume brief, the
CLI) and asks again under a new digest. Or the reviewer edits the prepared object and
approves their version: recorded as theirs, the agent's kept, and only it dispatches.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from store import Actor, CommandRejected, Store
from store import commands as c
from store.canonical import digest_of
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.effects import DispatchEffect, PlanEffect, ReviseEffect
from store.reads.decision_views import ApprovalVerdict
from store.services.resume import resume_brief
from store.services.verify import verify

AGENT = Actor(kind="agent", id="writer-7")
ANA = Actor(kind="person", id="ana", name="Ana Lind")
ROOT = Path(__file__).resolve().parent.parent

EMAIL = {
    "to": ["team@example.org"],
    "subject": "Weekly note",
    "body": "All green this week.",
}


@pytest.fixture
def tid(s: Store, ws: Path) -> str:
    task: str = s.execute(
        c.CreateTask(
            title="send",
            owner="ana",
            objective="ship it",
            scope_paths=[str(ws)],
            destinations=["mailto:team@example.org"],
        ),
        AGENT,
    )
    return task


def _mail(s: Store, tid: str, payload: dict[str, Any] = EMAIL) -> str:
    eid: str = s.execute(
        PlanEffect(
            task_id=tid,
            kind="send",
            target="mailto:team@example.org",
            consequence="send the weekly note to the team",
            intended={"exists": True},
            prepared=payload,
            requires_approval=True,
            policy="mail is reviewed",
        ),
        AGENT,
    )
    return eid


def _ask(s: Store, tid: str, eid: str) -> str:
    aid: str = s.execute(RequestApproval(task_id=tid, effect_id=eid, policy="review"), AGENT)
    return aid


def _approval(s: Store, tid: str, aid: str) -> dict[str, Any]:
    return next(a for a in s.task(tid)["approvals"] if a["approval_id"] == aid)


def test_send_back_is_neither_approved_nor_rejected_and_needs_a_note(s: Store, tid: str) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid)
    assert ApprovalVerdict.SEND_BACK in s.approval_decision(tid, aid).verdicts
    with pytest.raises(CommandRejected, match="needs a note"):
        s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="sent_back"), ANA)
    with pytest.raises(CommandRejected, match="named person"):
        s.execute(
            DecideApproval(task_id=tid, approval_id=aid, decision="sent_back", note="x"), AGENT
        )
    s.execute(
        DecideApproval(
            task_id=tid, approval_id=aid, decision="sent_back", note="Mention the outage"
        ),
        ANA,
    )
    a = _approval(s, tid, aid)
    assert (a["state"], a["decided_by"]["id"], a["note"]) == (
        "sent_back",
        "ana",
        "Mention the outage",
    )
    task = s.task(tid)
    assert task["effects"][0]["stage"] == "planned"  # nothing approved
    assert task["status"] != "awaiting_approval"  # the agent's move now
    with pytest.raises(CommandRejected, match="no usable approval"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="smtp"), AGENT)
    with pytest.raises(CommandRejected, match="already sent_back by ana"):
        s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved"), ANA)

    # The resume brief says what was asked, in the reviewer's words, and what to do.
    brief = resume_brief(s, tid)
    asked = [b for b in brief["blockers"] if b["kind"] == "changes_requested"]
    assert len(asked) == 1 and asked[0]["note"] == "Mention the outage"
    assert "sent back by ana" in asked[0]["message"]
    assert any(x["command"]["type"] == "revise_effect" for x in brief["next_actions"])

    # The agent revises; the revised payload asks again under a new digest.
    revised = {**EMAIL, "body": "All green this week, after Tuesday's outage."}
    new_digest = s.execute(
        ReviseEffect(task_id=tid, effect_id=eid, reason="as asked", prepared=revised), AGENT
    )
    aid2 = _ask(s, tid, eid)
    assert aid2 != aid
    assert _approval(s, tid, aid2)["payload_digest"] == new_digest != a["payload_digest"]
    assert not [b for b in resume_brief(s, tid)["blockers"] if b["kind"] == "changes_requested"]
    s.execute(DecideApproval(task_id=tid, approval_id=aid2, decision="approved"), ANA)
    assert s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="smtp"), AGENT) == 1
    before = s.projection_dump(tid)
    s.rebuild(tid)
    assert s.projection_dump(tid) == before
    assert verify(s, tid).problems == []


def test_edit_then_approve_binds_the_persons_version(s: Store, tid: str) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid)
    agents = _approval(s, tid, aid)["payload_digest"]
    assert s.approval_decision(tid, aid).editable == ("subject", "body")
    edited = {**EMAIL, "subject": "Weekly note (week 49)"}
    with pytest.raises(CommandRejected, match="send it back instead"):
        s.execute(
            DecideApproval(task_id=tid, approval_id=aid, decision="rejected", edited=edited), ANA
        )
    s.execute(
        DecideApproval(
            task_id=tid, approval_id=aid, decision="approved", edited=edited, note="dated it"
        ),
        ANA,
    )
    a = _approval(s, tid, aid)
    assert a["state"] == "approved" and a["payload"] == edited
    assert a["payload_digest"] == digest_of(edited) != agents
    effect = s.task(tid)["effects"][0]
    assert effect["intent"]["prepared"] == edited and effect["stage"] == "approved"
    # The person's revision is in the log, attributed to them; the agent's version kept.
    events = s.events(tid)
    print(events[-1])
    planned = next(e for e in events if e["type"] == "effect.planned")
    assert planned["payload"]["prepared"] == EMAIL and planned["actor"]["id"] == "writer-7"
    revised = next(e for e in events if e["type"] == "effect.revised")
    assert revised["actor"]["id"] == "ana"
    assert revised["payload"]["prepared_digest"] == digest_of(edited)
    decided = next(e for e in events if e["type"] == "approval.decided")
    assert decided["payload"]["edited_digest"] == digest_of(edited)
    # The old digest is refused; exactly the edited payload dispatches.
    with pytest.raises(CommandRejected, match="differ from effect"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="smtp", inputs=EMAIL), AGENT)
    n = s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="smtp", inputs=edited), AGENT)
    attempt = s.task(tid)["effects"][0]["attempts"][0]
    assert n == 1 and attempt["inputs"]["prepared_digest"] == digest_of(edited)
    assert attempt["approval_id"] == aid
    assert _approval(s, tid, aid)["state"] == "consumed"
    # The log alone gives the same record, and verify finds nothing wrong with it.
    before = s.projection_dump(tid)
    s.rebuild(tid)
    assert s.projection_dump(tid) == before
    report = verify(s, tid)
    assert report.problems == [], [p.line() for p in report.problems]


def test_edit_then_approve_a_files_new_content(s: Store, tid: str, ws: Path) -> None:
    eid: str = s.execute(
        PlanEffect(
            task_id=tid,
            target=str(ws / "NOTE.md"),
            consequence="write NOTE.md",
            content=c.Content(text="# Week 49\nAll gren.\n"),
            requires_approval=True,
            policy="writes",
        ),
        AGENT,
    )
    aid = _ask(s, tid, eid)
    old = _approval(s, tid, aid)["payload"]
    s.execute(
        DecideApproval(
            task_id=tid,
            approval_id=aid,
            decision="approved",
            edited_content=c.Content(text="# Week 49\nAll green.\n"),
        ),
        ANA,
    )
    new = s.task(tid)["effects"][0]["intent"]
    assert new["prepared_digest"] == _approval(s, tid, aid)["payload_digest"]
    assert new["prepared_digest"] != digest_of(old)
    assert new["intended"]["digest"] == digest_of_text("# Week 49\nAll green.\n")
    with pytest.raises(CommandRejected, match="differ from effect"):
        s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="fs", inputs=old), AGENT)
    assert s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="fs"), AGENT) == 1


def digest_of_text(text: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _boris(store_dir: Path, store_url: str | None, *argv: str) -> subprocess.CompletedProcess[str]:
    where = ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *where],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_send_back_and_approve_edited(
    s: Store, tid: str, store_dir: Path, store_url: str | None
) -> None:
    eid = _mail(s, tid)
    aid = _ask(s, tid, eid)
    refused = _boris(store_dir, store_url, "send-back", tid, aid, "--actor", "person:ana")
    assert refused.returncode != 0 and "--note" in refused.stderr
    sent = _boris(
        store_dir, store_url, "send-back", tid, aid, "--note", "Say when", "--actor", "person:ana"
    )
    assert sent.returncode == 0, sent.stderr
    listed = _boris(store_dir, store_url, "approvals", tid)
    assert "sent_back" in listed.stdout and "Say when" in listed.stdout
    assert "Say when" in _boris(store_dir, store_url, "resume", tid).stdout

    s.execute(
        ReviseEffect(task_id=tid, effect_id=eid, reason="dated", prepared={**EMAIL, "x": 1}), AGENT
    )
    aid2 = _ask(s, tid, eid)
    edited = {**EMAIL, "x": 1, "subject": "Weekly note, Tuesday"}
    ok = _boris(
        store_dir,
        store_url,
        "approve",
        tid,
        aid2,
        "--edited-json",
        json.dumps(edited),
        "--actor",
        "person:ana",
    )
    assert ok.returncode == 0, ok.stderr
    assert _approval(s, tid, aid2)["payload_digest"] == digest_of(edited)


def test_edit_a_mail_messages_words_then_approve(s: Store) -> None:
    from store.services.demo import fill_demo

    fill_demo(s)
    d = s.approval_decision("note", "apr-note-mail")
    assert d.editable == ("subject", "body")
    old = d.payload_digest
    s.execute(
        DecideApproval(
            task_id="note",
            approval_id="apr-note-mail",
            decision="approved",
            edited_message={"subject": "Project note, week 49", "body": "Short and green.\n"},
        ),
        ANA,
    )
    after = s.approval_decision("note", "apr-note-mail")
    assert after.payload_digest != old
    assert after.change.subject == "Project note, week 49"  # type: ignore[union-attr]
    assert after.change.body == "Short and green.\n"  # type: ignore[union-attr]
    effect = next(e for e in s.task("note")["effects"] if e["effect_id"] == "mail-note")
    assert effect["intent"]["prepared_digest"] == after.payload_digest
    assert effect["stage"] == "approved"


def test_edit_a_payloads_subject_keeps_the_rest(s: Store, tid: str) -> None:
    eid = _mail(s, tid, {"to": ["team@example.org"], "subject": "Week 49"})
    aid = _ask(s, tid, eid)
    assert s.approval_decision(tid, aid).editable == ("subject",)
    with pytest.raises(CommandRejected, match="no body field"):
        s.execute(
            DecideApproval(
                task_id=tid, approval_id=aid, decision="approved", edited_message={"body": "x"}
            ),
            ANA,
        )
    s.execute(
        DecideApproval(
            task_id=tid,
            approval_id=aid,
            decision="approved",
            edited_message={"subject": "Week 49, late"},
        ),
        ANA,
    )
    assert _approval(s, tid, aid)["payload"] == {
        "to": ["team@example.org"],
        "subject": "Week 49, late",
    }
