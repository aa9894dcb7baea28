"""`boris demo`: what a reviewer finds in the demo store, and that its record is sound."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from test_store_integrity import chain_problems

from store import Actor, CommandRejected, Store
from store.blobs import hash_file
from store.commands import checkpoints as k
from store.commands import effects as e
from store.services.demo import DOCS_SITE, NOTE_V1, NOTE_V2, OWNER, fill_demo

AGENT = Actor(kind="agent", id="drafter-7", name="Drafting agent")


def _ts(iso: str) -> dt.datetime:
    return dt.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)


def _effect(task: dict[str, Any], effect_id: str) -> dict[str, Any]:
    return next(x for x in task["effects"] if x["effect_id"] == effect_id)


@pytest.fixture
def demo(store: Store) -> Store:
    assert fill_demo(store) == ["guide", "note"]
    return store


def test_guide_upload_was_approved_dispatched_and_its_outcome_is_unknown(demo: Store) -> None:
    guide = demo.task("guide")
    assert guide["status"] == "outcome_unknown"
    up = _effect(guide, "upload-guide")
    assert up["kind"] == "upload"
    assert up["target"].startswith(DOCS_SITE)
    assert guide["scope"]["destinations"] == [DOCS_SITE]
    assert (up["stage"], up["outcome"], up["unresolved"]) == ("dispatched", "unknown", True)
    assert len(up["attempts"]) == 1
    attempt = up["attempts"][0]
    assert attempt["response"]["reported"] == "timeout"
    assert attempt["error"]
    # Its intent is the guide's current version, recorded before dispatch.
    current = next(a for a in guide["artifacts"] if a["artifact_id"] == "guide")
    v2 = next(v for v in current["versions"] if v["version"] == current["current_version"])
    assert current["current_version"] == 2
    assert up["intent"]["intended"]["digest"] == v2["digest"]
    assert up["intent"]["pre_state"] == {"exists": False, "digest": None, "size": None}
    # Approved by the owner (a person, not the requesting agent) and used by this attempt.
    (apr,) = guide["approvals"]
    assert apr["state"] == "consumed"
    assert attempt["approval_id"] == apr["approval_id"]
    assert apr["payload_digest"] == up["intent"]["prepared_digest"]
    assert apr["requester"]["kind"] == "agent"
    assert apr["decided_by"]["kind"] == "person" and apr["decided_by"]["id"] == OWNER.id
    # No blind retry while the outcome is unknown.
    with pytest.raises(CommandRejected, match="reconcile"):
        demo.execute(
            e.DispatchEffect(task_id="guide", effect_id="upload-guide", executor="x"), AGENT
        )


def test_guide_checkpoints_have_forked(demo: Store) -> None:
    cps = demo.task("guide")["checkpoints"]
    by_id = {r["checkpoint_id"]: r for r in cps["checkpoints"]}
    assert [by_id[i]["reason"] for i in ("ckpt-initial", "ckpt-milestone", "ckpt-handoff")] == [
        "initial",
        "milestone",
        "handoff",
    ]
    assert len(cps["heads"]) == 2
    assert set(cps["heads"]) == {"ckpt-milestone", "ckpt-handoff"}
    assert cps["forks"] == [cps["heads"]]
    assert by_id["ckpt-handoff"]["supersedes"] == ["ckpt-initial"]
    assert by_id["ckpt-milestone"]["supersedes"] == ["ckpt-initial"]
    # The handoff carries the unknown upload as pending work.
    handoff_state = by_id["ckpt-handoff"]["state"]
    assert any("upload-guide" in w for w in handoff_state["pending_work"])
    # A new checkpoint must name its branch: the fork is never silently picked.
    with pytest.raises(CommandRejected, match="forked"):
        demo.execute(k.WriteCheckpoint(task_id="guide", reason="milestone"), AGENT)


def test_guide_budget_is_near_its_limit_and_the_earlier_facts_hold(demo: Store) -> None:
    guide = demo.task("guide")
    budgets = {b["counter"]: b for b in guide["budgets"]}
    calls = budgets["model_calls"]
    assert calls["used"] / calls["limit_value"] >= 0.9
    assert not calls["exhausted"]
    assert not any(b["exhausted"] for b in guide["budgets"])
    crits = {c["criterion_id"]: c["status"] for c in guide["criteria"]}
    assert crits == {"structure": "stale", "citations": "unverified"}
    assert [(p["id"], p["problem"]) for p in guide["problems"]] == [("build-log v1", "missing")]
    assert [r["rev"] for r in guide["objective_revisions"]] == [1, 2]


def test_note_save_reported_success_but_the_file_is_unchanged(demo: Store) -> None:
    note = demo.task("note")
    assert note["status"] == "outcome_unknown"
    save = _effect(note, "save-note")
    assert save["kind"] == "file_write"
    target = Path(save["target"])
    assert target.read_text(encoding="utf-8") == NOTE_V1
    (attempt,) = save["attempts"]
    assert attempt["response"]["reported"] == "reported_success"
    assert attempt["response"]["bytes_written"] == len(NOTE_V2.encode("utf-8"))
    assert attempt["response"]["path"] == save["target"]
    pre, intended = save["intent"]["pre_state"], save["intent"]["intended"]
    on_disk, _ = hash_file(target)
    assert on_disk == pre["digest"] != intended["digest"]
    # Observed after dispatch, not yet reconciled: the reviewer's decision to make.
    assert (save["stage"], save["outcome"], save["reconciliation"]) == ("observed", "unknown", None)
    (obs,) = save["observations"]
    assert obs["digest"] == pre["digest"] and obs["purpose"] == "post_dispatch"
    # Reconciling it computes `absent`, with the tool's word named as only its word.
    verdict = demo.execute(e.ReconcileEffect(task_id="note", effect_id="save-note"), OWNER)
    assert verdict == "absent"
    after = demo.task("note")
    save = _effect(after, "save-note")
    assert (save["stage"], save["outcome"], save["unresolved"]) == ("reconciled", "absent", True)
    assert any("its word" in r for r in save["reconciliation"]["reasons"])
    # With the upload settled, the pending mail approval is what the run waits for.
    assert after["status"] == "awaiting_approval"


def test_note_mail_awaits_an_approval_that_expires_in_hours(demo: Store) -> None:
    note = demo.task("note")
    mail = _effect(note, "mail-note")
    assert (mail["kind"], mail["stage"], mail["requires_approval"]) == ("send", "planned", True)
    assert any(mail["target"].startswith(d) for d in note["scope"]["destinations"])
    (apr,) = note["approvals"]
    assert apr["state"] == "pending" and apr["effect_id"] == "mail-note"
    assert apr["decided_by"] is None
    ahead = _ts(apr["expires_at"]) - _ts(note["now"])
    assert dt.timedelta(hours=1) < ahead <= dt.timedelta(hours=12)
    budgets = {b["counter"]: b for b in note["budgets"]}
    assert budgets["tool_calls"]["used"] / budgets["tool_calls"]["limit_value"] >= 0.8


def test_demo_chains_verify_and_rebuild_equals_incremental(demo: Store) -> None:
    for tid in ("guide", "note"):
        assert chain_problems(demo, tid) == []
        incremental = demo.projection_dump(tid)
        demo.rebuild(tid)
        assert demo.projection_dump(tid) == incremental


def test_demo_again_adds_fresh_tasks_and_leaves_the_first_alone(demo: Store) -> None:
    before = {tid: demo.projection_dump(tid) for tid in ("guide", "note")}
    assert fill_demo(demo) == ["guide-2", "note-2"]
    assert {tid: demo.projection_dump(tid) for tid in ("guide", "note")} == before
    again = demo.task("guide-2")
    assert again["status"] == "outcome_unknown"
    assert len(again["checkpoints"]["heads"]) == 2
    assert demo.task("note-2")["approvals"][0]["state"] == "pending"


def test_guide_narrative_is_a_claim_the_record_contradicts(demo: Store) -> None:
    from store.services.narratives import narratives

    (narrative,) = narratives(demo, "guide")
    assert narrative["actor"]["id"] == "drafter-7b"
    assert [(d["criterion_id"], d["claimed"], d["record"]) for d in narrative["discrepancies"]] == [
        ("structure", "satisfied", "stale"),
        ("citations", "satisfied", "unverified"),
    ]
