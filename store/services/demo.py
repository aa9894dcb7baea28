"""Demo tasks on real files, in a workspace folder beside the store.

The reference-guide job from the seeds: six source documents (two revised), a guide with two
versions, one criterion satisfied against the older guide (so it shows stale), one never
verified, and a build log whose blob has gone missing. Its upload to the docs site was approved
by the owner and dispatched, then timed out: the outcome is unknown. Its model-call budget is
close to the limit, and its checkpoints have forked (a handoff written from the initial
checkpoint beside the milestone).

Plus a small project-note task: the save that the file tool reported as successful while the
note on disk is unchanged (observed, waiting for a reviewer to reconcile it), and an email of
the note waiting for the owner's approval, which expires in a few hours.
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import commands as c
from ..commands import approvals as a
from ..commands import checkpoints as k
from ..commands import effects as e
from ..events import FileState
from ..model import Actor, PhaseInput
from ..signing.trust import decline
from ..store import Store
from .demo_keys import DemoWriter, blank, demo_writer, sign_blank_store

AGENT = Actor(kind="agent", id="drafter-7", name="Drafting agent")
# A later session of the same job that resumed from the initial checkpoint, not the newest.
RESUMED = Actor(kind="agent", id="drafter-7b", name="Drafting agent (resumed session)")
OWNER = Actor(kind="person", id="maria", name="Maria Keller")

DOCS_SITE = "https://docs.example.org/upload/"
MAIL = "smtp://mail.example.org/"

SOURCES = {
    "01-install.md": [
        "# Installing\n\nRun the installer as an administrator.\n",
        "# Installing\n\nRun the installer as an administrator.\nReboot once.\n",
    ],
    "02-config.md": ["# Configuration\n\nSettings live in `config.toml`.\n"],
    "03-backup.md": [
        "# Backups\n\nNightly at 02:00; kept 30 days.\n",
        "# Backups\n\nNightly at 02:00; kept 90 days since policy P-12.\n",
    ],
    "04-restore.md": ["# Restoring\n\nUse `restore --point` with a timestamp.\n"],
    "05-limits.md": ["# Limits\n\nAt most 500 users per site.\n"],
    "06-support.md": ["# Support\n\nTickets are answered within one business day.\n"],
}

GUIDE_V1 = """# Reference guide

1. Install as administrator (01-install).
2. Settings are in config.toml (02-config).
3. Backups run nightly and are kept 30 days (03-backup).
"""

GUIDE_V2 = GUIDE_V1.replace("kept 30 days", "kept 90 days [citation needed: policy P-12]") + (
    "4. Restore with `restore --point` (04-restore).\n"
    "5. At most 500 users per site (05-limits).\n"
    "6. Support answers within one business day (06-support).\n"
)

#: The drafting agent's renderer, left in the workspace: the build log the store lost is
#: made again by running it (`sh render.sh`), then recorded by the agent (README, step 5).
RENDER_SH = """#!/bin/sh
# The drafting agent's renderer, as the demo has it: out/guide.md becomes out/guide.html, and
# what it did is written to out/build.log, the log the agent records with
# `boris record-artifact`. Runs from any directory.
set -eu
cd "$(dirname "$0")/out"
{
  echo '<!doctype html><meta charset="utf-8"><title>Reference guide</title><pre>'
  sed -e 's/&/\\&amp;/g' -e 's/</\\&lt;/g' -e 's/>/\\&gt;/g' guide.md
  echo '</pre>'
} > guide.html
{
  echo "render guide.md -> guide.html"
  echo "$(grep -c '^[0-9][0-9]*\\. ' guide.md) numbered sections, $(wc -c < guide.html) bytes"
  echo "OK"
} > build.log
"""

NOTE_V1 = "# Project note\n\nKick-off on Monday.\n"

NOTE_V2 = NOTE_V1 + (
    "\n## Decisions this week\n\n"
    "- Backups are kept 90 days (policy P-12).\n"
    "- The reference guide goes to the auditors for a preview.\n"
)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def fill_demo_store(
    store: Store, person: Actor | None, *, require_signatures: bool = True
) -> list[str]:
    """`boris demo` and the window's demo store: a blank store is first made as `boris init`
    makes one, as `person` (demo_keys.sign_blank_store; with `require_signatures` False, as
    `boris init --no-require-signatures` does: unsigned, said so), then filled (`fill_demo`),
    `person` vouching for the demo actors' keys where the store is signed."""
    if not require_signatures:
        if blank(store):
            decline(store)
    else:
        sign_blank_store(store, person)
    return fill_demo(store)


def fill_demo(store: Store) -> list[str]:
    """Create the demo tasks (again, under fresh ids if they already exist)."""
    workspace = store.location.directory / "demo-workspace"
    existing = set(store.task_ids())
    suffix = "" if "guide" not in existing else f"-{len(existing)}"
    # In a signed store each demo actor signs with a key of its own (demo_keys).
    writer = demo_writer(store, (AGENT, RESUMED, OWNER), workspace)
    ids = [
        _reference_guide(writer, workspace / f"reference-guide{suffix}", f"guide{suffix}"),
        _project_note(writer, workspace / f"project-note{suffix}", f"note{suffix}"),
    ]
    return ids


def _reference_guide(store: DemoWriter, ws: Path, task_id: str) -> str:
    """The reference guide's story: opened by its owner, drafted and reviewed by an agent,
    revised and sent to the docs site with no answer, handed off on a fork by a resumed
    session whose summary is stale, and its build log's retained copy lost."""
    _guide_opened(store, ws, task_id)
    _guide_planned(store, task_id)
    guide = _guide_drafted(store, ws / "out", task_id)
    log, log_digest = _guide_revised(store, ws / "out", task_id, guide)
    # The log's retained copy is lost, as happens when a blob directory is pruned by hand:
    # loading the task must name it rather than pretend it is there.
    store.blobs.remove(log_digest)
    log.unlink()
    # What makes it again: the agent's renderer (RENDER_SH), left beside its sources.
    render = _write(ws / "render.sh", RENDER_SH)
    render.chmod(0o755)
    return task_id


def _guide_opened(store: DemoWriter, ws: Path, task_id: str) -> None:
    """The owner opens the task, amends its objective and records the six sources (some
    revised)."""
    src_dir = ws / "sources"
    store.execute(
        c.CreateTask(
            task_id=task_id,
            title="Reference guide from six source documents",
            owner=OWNER.id,
            objective="Write a reference guide for site administrators from the six supplied documents.",
            scope_paths=[str(ws.resolve()) if ws.exists() else str(_mk(ws))],
            destinations=[DOCS_SITE],
        ),
        OWNER,
    )
    store.execute(
        c.AmendObjective(
            task_id=task_id,
            reason="the audience includes auditors",
            text="Write a reference guide for site administrators and auditors from the six "
            "supplied documents; every retention figure cites its policy.",
        ),
        OWNER,
    )
    for name, versions in SOURCES.items():
        for i, text in enumerate(versions):
            _write(src_dir / name, text)
            store.execute(
                c.RecordArtifact(
                    task_id=task_id,
                    artifact_id=Path(name).stem,
                    name=name,
                    role="source",
                    content=c.Content(path=str(src_dir / name)),
                    note="supplied by the owner" if i == 0 else "revised by the owner",
                ),
                OWNER,
            )


def _guide_planned(store: DemoWriter, task_id: str) -> None:
    """The agent sets its budgets, criteria and phases (the draft on the sources, the review
    on the draft and the guide), charges its reading, and writes the initial checkpoint."""
    cmds: list[c.Command] = []
    for counter, limit in (
        ("model_calls", 180),
        ("tool_calls", 400),
        ("artifact_bytes", 5_000_000),
    ):
        cmds.append(c.SetBudget(task_id=task_id, counter=counter, limit=limit))
    cmds += [
        c.AddCriterion(
            task_id=task_id,
            criterion_id="structure",
            text="The guide has one numbered section per source document.",
        ),
        c.AddCriterion(
            task_id=task_id,
            criterion_id="citations",
            text="Every retention figure cites the policy it comes from.",
        ),
        c.AddPhase(
            task_id=task_id,
            phase_id="draft",
            name="Draft the guide",
            inputs=[PhaseInput(kind="artifact", ref=Path(n).stem) for n in SOURCES],
        ),
        c.AddPhase(
            task_id=task_id,
            phase_id="review",
            name="Structural review",
            inputs=[
                PhaseInput(kind="phase", ref="draft"),
                PhaseInput(kind="artifact", ref="guide"),
            ],
        ),
        c.ChargeBudget(
            task_id=task_id, counter="model_calls", amount=162, note="reading and drafting"
        ),
        c.ChargeBudget(task_id=task_id, counter="tool_calls", amount=95),
    ]
    store.execute_all(cmds, AGENT)
    store.execute(
        k.WriteCheckpoint(
            task_id=task_id,
            checkpoint_id="ckpt-initial",
            reason="initial",
            note="sources recorded, criteria and phases laid out",
        ),
        AGENT,
    )


def _guide_drafted(store: DemoWriter, out_dir: Path, task_id: str) -> Path:
    """The agent drafts guide v1, checks its structure, judges the criterion on that
    evidence, completes both phases and writes a milestone. Returns the guide's file."""
    guide = _write(out_dir / "guide.md", GUIDE_V1)
    store.execute(
        c.RecordArtifact(
            task_id=task_id,
            artifact_id="guide",
            name="guide.md",
            role="draft",
            content=c.Content(path=str(guide)),
        ),
        AGENT,
    )
    store.execute(c.CompletePhase(task_id=task_id, phase_id="draft", summary="first draft"), AGENT)
    check = _write(
        out_dir / "structure-check.txt",
        "$ check-structure out/guide.md\n3 sections found, 3 sources cited\nOK\n",
    )
    store.execute(
        c.AttachEvidence(
            task_id=task_id,
            criterion_id="structure",
            evidence_id="check-1",
            kind="command_output",
            content=c.Content(path=str(check)),
            description="check-structure on guide v1",
        ),
        AGENT,
    )
    store.execute(
        c.JudgeCriterion(
            task_id=task_id,
            criterion_id="structure",
            status="satisfied",
            artifact_id="guide",
            artifact_version=1,
            evidence_ids=["check-1"],
            note="structure check passed",
        ),
        AGENT,
    )
    store.execute(
        c.CompletePhase(task_id=task_id, phase_id="review", summary="structure OK on v1"), AGENT
    )
    store.execute(
        k.WriteCheckpoint(
            task_id=task_id,
            checkpoint_id="ckpt-milestone",
            reason="milestone",
            note="guide v1 drafted and structurally reviewed",
        ),
        AGENT,
    )
    return guide


def _guide_revised(store: DemoWriter, out_dir: Path, task_id: str, guide: Path) -> tuple[Path, str]:
    """Guide v2 and its build log; the upload times out; a resumed session hands off from
    the initial checkpoint (a fork) with a stale summary. Returns the build log's file and
    its blob's digest."""
    _write(guide, GUIDE_V2)
    store.execute(
        c.RecordArtifact(
            task_id=task_id,
            artifact_id="guide",
            name="guide.md",
            content=c.Content(path=str(guide)),
            note="all six sections; retention updated",
        ),
        AGENT,
    )
    log = _write(
        out_dir / "build.log", "render guide.md -> guide.pdf\nwarning: 1 unresolved citation\n"
    )
    log_result = store.execute(
        c.RecordArtifact(
            task_id=task_id,
            artifact_id="build-log",
            name="build.log",
            role="log",
            content=c.Content(path=str(log)),
        ),
        AGENT,
    )
    store.execute(
        c.ChargeBudget(
            task_id=task_id, counter="model_calls", amount=9, note="revising for policy P-12"
        ),
        AGENT,
    )
    _upload_timed_out(store, task_id, guide)
    # A new session picked the job up from the initial checkpoint (it never saw the
    # milestone) and handed it off: two heads, a fork for the reviewer to see and merge.
    store.execute(
        k.WriteCheckpoint(
            task_id=task_id,
            checkpoint_id="ckpt-handoff",
            reason="handoff",
            supersedes=["ckpt-initial"],
            note="resumed from the initial checkpoint; the upload's outcome is unknown, "
            "handing over to the owner",
        ),
        RESUMED,
    )
    # The resumed session's summary of where things stand: the seeds' stale narrative. It is
    # kept as a claim; the reviewer sees where it disagrees with the record.
    from ..commands.narrative import ClaimIn, RecordNarrative

    store.execute(
        RecordNarrative(
            task_id=task_id,
            text="Nearly done. The structure was reviewed and every retention figure now cites "
            "its policy; only the upload to the docs site is left.",
            claims=[
                ClaimIn(criterion_id="structure", status="satisfied", text="structure reviewed"),
                ClaimIn(criterion_id="citations", status="satisfied", text="figures cite"),
            ],
        ),
        RESUMED,
    )
    return log, str(log_result["digest"])


def _upload_timed_out(store: DemoWriter, task_id: str, guide: Path) -> None:
    """The guide's current version, approved by the owner, sent to the docs site; nothing came
    back, so nobody knows whether it is there: no blind retry until it is reconciled."""
    effect_id = "upload-guide"
    store.execute(
        e.PlanEffect(
            task_id=task_id,
            effect_id=effect_id,
            kind="upload",
            target=DOCS_SITE + "reference-guide.md",
            consequence="Publish guide.md v2 on docs.example.org for the auditors' preview",
            content=c.Content(path=str(guide)),
            pre_state=FileState(exists=False),
            requires_approval=True,
            policy="publishing outside the workspace needs the owner's approval",
        ),
        AGENT,
    )
    approval_id = f"apr-{task_id}-upload"
    store.execute(
        a.RequestApproval(
            task_id=task_id,
            approval_id=approval_id,
            effect_id=effect_id,
            policy="publishing outside the workspace needs the owner's approval",
            expires_in_seconds=8 * 3600,
        ),
        AGENT,
    )
    store.execute(
        a.DecideApproval(
            task_id=task_id,
            approval_id=approval_id,
            decision="approved",
            note="v2 may go out for the auditors' preview",
        ),
        OWNER,
    )
    store.execute_all(
        [
            e.DispatchEffect(
                task_id=task_id,
                effect_id=effect_id,
                executor="docs-uploader",
                approval_id=approval_id,
            ),
            c.ChargeBudget(task_id=task_id, counter="tool_calls", amount=1, note="upload"),
        ],
        AGENT,
    )
    store.execute(
        e.RecordResponse(
            task_id=task_id,
            effect_id=effect_id,
            reported="timeout",
            error="no response from docs.example.org within 30 s",
        ),
        AGENT,
    )


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def _project_note(store: DemoWriter, ws: Path, task_id: str) -> str:
    note = _write(ws / "notes" / "project-note.md", NOTE_V1)
    store.execute(
        c.CreateTask(
            task_id=task_id,
            title="Save the weekly project note",
            owner=OWNER.id,
            objective="Update notes/project-note.md with this week's decisions.",
            scope_paths=[str(ws.resolve())],
            destinations=[MAIL],
        ),
        OWNER,
    )
    store.execute_all(
        [
            c.RecordArtifact(
                task_id=task_id,
                artifact_id="project-note",
                name="project-note.md",
                role="output",
                content=c.Content(path=str(note)),
                note="before the update",
            ),
            c.AddCriterion(
                task_id=task_id,
                criterion_id="saved",
                text="notes/project-note.md contains this week's decisions.",
            ),
            c.SetBudget(task_id=task_id, counter="tool_calls", limit=20),
            c.ChargeBudget(task_id=task_id, counter="tool_calls", amount=17),
        ],
        AGENT,
    )
    _save_claimed_not_done(store, task_id, note)
    _mail_awaiting_approval(store, task_id)
    return task_id


def _save_claimed_not_done(store: DemoWriter, task_id: str, note: Path) -> None:
    """The file tool says it wrote the note; the note on disk still holds its old bytes."""
    target = os.path.realpath(note)
    effect_id = "save-note"
    store.execute(
        e.PlanEffect(
            task_id=task_id,
            effect_id=effect_id,
            kind="file_write",
            target=target,
            consequence="Overwrite notes/project-note.md with this week's decisions",
            content=c.Content(text=NOTE_V2, media_type="text/markdown"),
        ),
        AGENT,
    )
    store.execute(
        e.DispatchEffect(task_id=task_id, effect_id=effect_id, executor="file-tool"), AGENT
    )
    # The tool's word, and nothing written: the file is deliberately left as it was.
    store.execute(
        e.RecordResponse(
            task_id=task_id,
            effect_id=effect_id,
            reported="reported_success",
            response={"bytes_written": len(NOTE_V2.encode("utf-8")), "path": target},
        ),
        AGENT,
    )
    # Observed after dispatch, and deliberately not reconciled: the reviewer is shown a save
    # the tool called a success beside an observation that still holds the pre-state, and
    # makes the reconciliation themselves (it computes `absent`). Reconciled here, it would
    # already read as settled, and the reviewer's decision the scenario is about would be gone.
    store.execute(
        e.ObserveEffect(task_id=task_id, effect_id=effect_id, purpose="post_dispatch"), AGENT
    )


def _mail_awaiting_approval(store: DemoWriter, task_id: str) -> None:
    """An email of the updated note, waiting for the owner; the request expires in hours."""
    effect_id = "mail-note"
    store.execute(
        e.PlanEffect(
            task_id=task_id,
            effect_id=effect_id,
            kind="send",
            target=MAIL + "project-team@example.org",
            consequence="Email this week's project note to project-team@example.org",
            content=c.Content(text="Subject: Project note, this week\n\n" + NOTE_V2),
            requires_approval=True,
            policy="mail to people outside the task needs the owner's approval",
        ),
        AGENT,
    )
    store.execute(
        a.RequestApproval(
            task_id=task_id,
            approval_id=f"apr-{task_id}-mail",
            effect_id=effect_id,
            policy="mail to people outside the task needs the owner's approval",
            expires_in_seconds=4 * 3600,
        ),
        AGENT,
    )
