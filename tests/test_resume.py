"""The resume brief, from the record alone (DESIGN scenarios 1, 2, 3 and 6).

Each test builds the situation with real files in a temp workspace, withholds every
narrative, and checks what the brief's JSON tells the next actor to do and not to do.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from blob_damage import lose_blob

from store import Actor, Store
from store import commands as c
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.commands.effects import DispatchEffect, PlanEffect, RecordResponse
from store.commands.narrative import ClaimIn, RecordNarrative
from store.services.narratives import narratives, record_summary
from store.services.resume import brief_markdown, resume_brief

AGENT = Actor(kind="agent", id="drafter")
MARIA = Actor(kind="person", id="maria", name="Maria Keller")
FIXTURE = Path(__file__).parent / "fixtures" / "store-0001"


def guide_job(s: Store, ws: Path) -> dict[str, Any]:
    """Six sources, a guide in two versions, a criterion checked against v1, one open."""
    (ws / "sources").mkdir()
    (ws / "out").mkdir()
    tid = s.execute(
        c.CreateTask(
            title="Reference guide",
            owner="maria",
            objective="Write the reference guide from the six sources",
            scope_paths=[str(ws)],
            destinations=["https://docs.example.org/"],
        ),
        AGENT,
    )
    for i in range(1, 7):
        (ws / "sources" / f"doc{i}.md").write_text(f"source {i}\n")
        s.execute(
            c.RecordArtifact(
                task_id=tid,
                name=f"doc{i}",
                role="source",
                content=c.Content(path=f"sources/doc{i}.md"),
            ),
            AGENT,
        )
    guide = ws / "out" / "guide.md"
    guide.write_text("# Guide v1\n")
    s.execute(
        c.RecordArtifact(task_id=tid, name="guide", content=c.Content(path="out/guide.md")), AGENT
    )
    s.execute(c.AddCriterion(task_id=tid, text="structure", criterion_id="structure"), AGENT)
    s.execute(c.AddCriterion(task_id=tid, text="citations", criterion_id="citations"), AGENT)
    s.execute(
        c.AttachEvidence(
            task_id=tid,
            criterion_id="structure",
            kind="review",
            content=c.Content(text="structure reviewed"),
            evidence_id="review-1",
        ),
        MARIA,
    )
    s.execute(
        c.JudgeCriterion(
            task_id=tid,
            criterion_id="structure",
            status="satisfied",
            artifact_id="guide",
            artifact_version=1,
            evidence_ids=["review-1"],
        ),
        MARIA,
    )
    guide.write_text("# Guide v2\n")
    s.execute(
        c.RecordArtifact(task_id=tid, name="guide", content=c.Content(path="out/guide.md")), AGENT
    )
    s.execute(WriteCheckpoint(task_id=tid, reason="milestone", note=""), AGENT)
    return {"tid": tid, "guide": guide}


def plan_upload(s: Store, tid: str) -> str:
    eid: str = s.execute(
        PlanEffect(
            task_id=tid,
            kind="upload",
            target="https://docs.example.org/guide.md",
            consequence="publish guide v2 to the docs site",
            intended={"exists": True, "digest": s.task(tid)["artifacts"][-1]["current"]["digest"]},
            pre_state={"exists": False},
            requires_approval=True,
            policy="publishing needs review",
            effect_id="upload",
        ),
        AGENT,
    )
    return eid


def test_interrupted_job_names_versions_and_only_planned_delivery(s: Store, ws: Path) -> None:
    job = guide_job(s, ws)
    tid = job["tid"]
    plan_upload(s, tid)
    aid = s.execute(RequestApproval(task_id=tid, effect_id="upload", policy="publishing"), AGENT)
    s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved", note="ok"), MARIA)
    b = resume_brief(s, tid)
    arts = {a["artifact_id"]: a for a in b["artifacts"]}
    assert [arts[f"doc{i}"]["version"] for i in range(1, 7)] == [1] * 6
    assert arts["guide"]["version"] == 2 and arts["guide"]["changed_on_disk"] is False
    assert b["objective"] == {"rev": 1, "text": "Write the reference guide from the six sources"}
    assert b["checkpoint"]["reason"] == "milestone"
    crit = {x["id"]: x for x in b["criteria"]}
    assert crit["structure"]["status"] == "stale" and "v1" in crit["structure"]["reason"]
    upload = next(e for e in b["effects"] if e["id"] == "upload")
    assert upload["dispatched"] is False and "only planned" in upload["meaning"]
    dispatch = next(a for a in b["next_actions"] if "dispatch effect upload" in a["action"])
    assert {(x["kind"], x["id"]) for x in dispatch["evidence"]} == {
        ("intent", "upload"),
        ("approval", aid),
    }
    assert any(a["id"] == aid and a["authorizes_now"] for a in b["approvals"])
    recheck = next(a for a in b["next_actions"] if "re-check criterion structure" in a["action"])
    assert recheck["evidence"][0] == {
        "kind": "artifact_version",
        "id": "guide v2",
        "digest": arts["guide"]["digest"],
    }
    # Nothing about the delivery is forbidden; only what is a person's (waivers, completing
    # with open criteria) is named as forbidden to the agent.
    assert not [f for f in b["forbidden"] if f["command"]["type"] == "dispatch_effect"]


def test_dispatched_delivery_forbids_a_second_upload(s: Store, ws: Path) -> None:
    tid = guide_job(s, ws)["tid"]
    plan_upload(s, tid)
    aid = s.execute(RequestApproval(task_id=tid, effect_id="upload", policy="publishing"), AGENT)
    s.execute(DecideApproval(task_id=tid, approval_id=aid, decision="approved", note="ok"), MARIA)
    s.execute(DispatchEffect(task_id=tid, effect_id="upload", executor="uploader"), AGENT)
    s.execute(RecordResponse(task_id=tid, effect_id="upload", reported="timeout"), AGENT)
    b = resume_brief(s, tid)
    upload = next(e for e in b["effects"] if e["id"] == "upload")
    assert upload["dispatched"] is True and "inspect the destination" in upload["meaning"]
    assert {
        "action": "dispatch effect upload again",
        "reason": "the last attempt's outcome is unknown; inspect "
        "https://docs.example.org/guide.md first",
    } in [{"action": f["action"], "reason": f["reason"]} for f in b["forbidden"]]
    block = next(x for x in b["blockers"] if x["kind"] == "effect_to_reconcile")
    assert block["inspect"] == "https://docs.example.org/guide.md"
    # The used approval is history: it authorizes nothing now.
    assert [(a["state"], a["authorizes_now"]) for a in b["approvals"]] == [("consumed", False)]
    assert not any("dispatch effect upload" in a["action"] for a in b["next_actions"])
    md = brief_markdown(b)
    forbidden = md.split("## Forbidden\n", 1)[1]
    assert "- dispatch effect upload again: the last attempt's outcome" in forbidden


def test_stale_narrative_is_reported_and_the_record_wins(s: Store, ws: Path) -> None:
    tid = guide_job(s, ws)["tid"]
    s.execute(
        RecordNarrative(
            task_id=tid,
            text="Nearly done: structure and citations are complete, one upload left.",
            claims=[
                ClaimIn(criterion_id="structure", status="satisfied"),
                ClaimIn(criterion_id="citations", status="satisfied"),
            ],
        ),
        AGENT,
    )
    b = resume_brief(s, tid)
    assert {x["id"]: x["status"] for x in b["criteria"]} == {
        "structure": "stale",
        "citations": "unverified",
    }
    assert "Nearly done" not in str(b)  # the brief never reads a narrative
    found = narratives(s, tid)[0]["discrepancies"]
    assert [(d["criterion_id"], d["claimed"], d["record"]) for d in found] == [
        ("structure", "satisfied", "stale"),
        ("citations", "satisfied", "unverified"),
    ]
    summary = record_summary(s, tid)
    again = record_summary(s, tid)
    assert (summary["version"], again["version"]) == (1, 2)
    text = s.blobs.read(s.task(tid)["artifacts"][-1]["current"]["digest"]).decode()
    assert "the narrative claims structure is satisfied; the record says stale" in text
    assert f"at event seq {s.task(tid)['last_seq'] - 1}" in text


def test_missing_log_and_changed_file_are_named(s: Store, ws: Path) -> None:
    job = guide_job(s, ws)
    tid = job["tid"]
    log = ws / "out" / "build.log"
    log.write_text("build ok\n")
    s.execute(
        c.RecordArtifact(
            task_id=tid, name="build-log", role="log", content=c.Content(path="out/build.log")
        ),
        AGENT,
    )
    digest = s.task(tid)["artifacts"][-1]["current"]["digest"]
    log.unlink()
    lose_blob(s, digest)
    # Citations are checked against guide v2; then someone edits the file on disk.
    s.execute(
        c.AttachEvidence(
            task_id=tid,
            criterion_id="citations",
            kind="review",
            content=c.Content(text="every figure cites its policy"),
            evidence_id="review-2",
        ),
        MARIA,
    )
    s.execute(
        c.JudgeCriterion(
            task_id=tid,
            criterion_id="citations",
            status="satisfied",
            artifact_id="guide",
            artifact_version=2,
            evidence_ids=["review-2"],
        ),
        MARIA,
    )
    job["guide"].write_text("# Guide v2, edited by hand\n")
    b = resume_brief(s, tid)
    kinds = {x["kind"] for x in b["blockers"]}
    assert {"artifact_file_missing", "artifact_version_blob_missing"} <= kinds
    missing = next(x for x in b["blockers"] if x["kind"] == "artifact_version_blob_missing")
    assert missing["digest"] == digest and missing["id"] == "build-log v1"
    crit = {x["id"]: x for x in b["criteria"]}
    assert crit["citations"]["status"] == "stale"
    assert "changed on disk since v2" in crit["citations"]["reason"]
    guide = next(a for a in b["artifacts"] if a["artifact_id"] == "guide")
    assert guide["changed_on_disk"] is True and guide["version"] == 2  # no invented v3


def test_a_store_from_the_first_schema_resumes(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path / "old")
    with Store.open(tmp_path / "old") as s:
        for tid in s.task_ids():
            b = resume_brief(s, tid)
            assert b["task_id"] == tid and b["objective"]["text"]
            assert any(x["kind"] == "no_checkpoint" for x in b["blockers"])
