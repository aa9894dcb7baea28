"""Late changes: facts that arrive after a task completed (issue 35 part L).

A corrected observation of an effect, an evaluator's revised judgement, a source gone stale:
appended to the completed task, shown (task state, inbox, queue, resume brief), never
reopening it; a person acknowledges them or opens a follow-up task. On both engines,
through the store and the real `boris`.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from store import Actor, Store, events, rules
from store import commands as c
from store import schema as t
from store.commands.checkpoints import WriteCheckpoint
from store.commands.effects import (
    DispatchEffect,
    ObserveEffect,
    PlanEffect,
    ReconcileEffect,
    RecordResponse,
)
from store.commands.late import AcknowledgeLateChanges, OpenFollowup
from store.errors import AuthorityRefused, CommandRejected, Conflict, UnknownEventFormat
from store.reads.decisions import decisions
from store.reads.history import decisions_by
from store.services.resume import brief_markdown, resume_brief

ROOT = Path(__file__).resolve().parent.parent
AGENT = Actor(kind="agent", id="writer-7")
EVAL = Actor(kind="agent", id="evaluator-2")
ANA = Actor(kind="person", id="ana", name="Ana Lind")


def completed_task(s: Store, ws: Path, tid: str = "t") -> dict[str, str]:
    """A task that wrote report.md (reconciled present), checked criterion C1 against its
    source, and completed with a final checkpoint."""
    s.execute(
        c.CreateTask(
            task_id=tid, title="Report", owner="ana", objective="ship the report",
            scope_paths=[str(ws)],
        ),
        AGENT,
    )  # fmt: skip
    eid = s.execute(
        PlanEffect(task_id=tid, target="report.md", consequence="write the report",
                   content=c.Content(text="final\n")),
        AGENT,
    )  # fmt: skip
    s.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="tool:save"), AGENT)
    (ws / "report.md").write_text("final\n")
    s.execute(RecordResponse(task_id=tid, effect_id=eid, reported="reported_success"), AGENT)
    assert s.execute(ReconcileEffect(task_id=tid, effect_id=eid), AGENT) == "present"
    src = s.execute(
        c.RecordArtifact(task_id=tid, name="source.txt", role="source",
                         content=c.Content(text="figures v1")),
        AGENT,
    )  # fmt: skip
    cid = s.execute(c.AddCriterion(task_id=tid, text="figures match the source"), AGENT)
    ev1 = s.execute(
        c.AttachEvidence(task_id=tid, criterion_id=cid, kind="command_output",
                         content=c.Content(text="diff: none")),
        AGENT,
    )  # fmt: skip
    s.execute(
        c.JudgeCriterion(task_id=tid, criterion_id=cid, status="satisfied",
                         artifact_id=src["artifact_id"], evidence_ids=[ev1], note="checked"),
        AGENT,
    )  # fmt: skip
    s.execute(WriteCheckpoint(task_id=tid, reason="final", note="all done"), AGENT)
    assert s.task(tid)["status"] == "completed"
    return {"effect": eid, "criterion": cid, "source": src["artifact_id"]}


def _row(s: Store, tid: str) -> Any:
    with s.read() as conn:
        return conn.execute(
            sa.select(
                t.tasks.c.status, t.tasks.c.late_count, t.tasks.c.late_since_seq,
                t.tasks.c.late_last_seq,
            ).where(t.tasks.c.task_id == tid)
        ).one()  # fmt: skip


def _late_decisions(s: Store) -> list[dict[str, Any]]:
    return [d for d in decisions(s)["decisions"] if d["kind"] == "late_changes"]


# --- 1. late facts are appended, shown, and never reopen ------------------------------------


def test_a_late_observation_is_appended_shown_and_does_not_reopen(s: Store, ws: Path) -> None:
    ids = completed_task(s, ws)
    assert _row(s, "t").late_count == 0 and not _late_decisions(s)
    (ws / "report.md").write_text("someone rewrote it\n")
    s.execute(ObserveEffect(task_id="t", effect_id=ids["effect"], purpose="watch"), AGENT)
    row = _row(s, "t")
    assert row.status == "completed"
    assert row.late_count == 1 and row.late_since_seq == row.late_last_seq
    task = s.task("t")
    assert task["status"] == "completed"
    assert task["late"]["words"].startswith("changed after completion: 1 fact since 20")
    (fact,) = task["late"]["facts"]
    assert fact["type"] == "observation.recorded" and "report.md" in fact["what"]
    inbox = next(x for x in s.tasks() if x["id"] == "t")
    assert inbox["needs"]["late_changes"] == 1 and inbox["attention"] > 0
    (d,) = _late_decisions(s)
    assert d["task_id"] == "t" and "changed after completion: 1 fact" in d["what"]
    assert f"#{row.late_last_seq}" in d["why"]


def test_corrections_judgements_and_staleness_are_accepted_late(s: Store, ws: Path) -> None:
    ids = completed_task(s, ws)
    (ws / "report.md").write_text("truncated\n")
    # A corrected reconciliation of an effect reconciled before completion.
    assert s.execute(ReconcileEffect(task_id="t", effect_id=ids["effect"]), AGENT) == "conflict"
    # An evaluator's revision.
    s.execute(
        c.JudgeCriterion(task_id="t", criterion_id=ids["criterion"], status="failed",
                         note="evaluator v2: figures off by one"),
        EVAL,
    )  # fmt: skip
    # The source went stale: a newer version of an artifact the task had.
    s.execute(
        c.RecordArtifact(task_id="t", artifact_id=ids["source"], name="source.txt",
                         role="source", content=c.Content(text="figures v2")),
        AGENT,
    )  # fmt: skip
    task = s.task("t")
    assert task["status"] == "completed"
    types = [f["type"] for f in task["late"]["facts"]]
    assert types == [
        "observation.recorded", "effect.reconciled", "criterion.judged",
        "artifact.version_recorded",
    ]  # fmt: skip
    assert _row(s, "t").late_count == 4
    # Work is still refused: a closed record takes no new artifact, criterion or plan.
    for work in (
        c.RecordArtifact(task_id="t", name="new.txt", content=c.Content(text="x")),
        c.AddCriterion(task_id="t", text="one more"),
        c.SetStatus(task_id="t", status="running", reason="agent thinks it should"),
    ):
        with pytest.raises(CommandRejected):
            s.execute(work, AGENT)
    assert s.task("t")["status"] == "completed"


# --- 3. a person's answer ----------------------------------------------------------------------


def test_acknowledge_clears_it_and_a_stale_based_on_is_a_conflict(s: Store, ws: Path) -> None:
    ids = completed_task(s, ws)
    s.execute(ObserveEffect(task_id="t", effect_id=ids["effect"]), AGENT)
    seen = int(_row(s, "t").late_last_seq)
    # A newer late fact arrives while the person decides.
    s.execute(
        c.JudgeCriterion(task_id="t", criterion_id=ids["criterion"], status="failed",
                         note="revised"),
        EVAL,
    )  # fmt: skip
    with pytest.raises(Conflict) as conflict:
        s.execute(AcknowledgeLateChanges(task_id="t", through_seq=seen), ANA)
    assert conflict.value.subject_kind == "late_changes"
    assert "evaluator-2" in str(conflict.value) and "judged it failed" in str(conflict.value)
    assert _row(s, "t").late_count == 2  # nothing was written
    last = int(_row(s, "t").late_last_seq)
    assert s.execute(AcknowledgeLateChanges(task_id="t", through_seq=last, note="ok"), ANA) == last
    row = _row(s, "t")
    assert (row.status, row.late_count, row.late_since_seq) == ("completed", 0, None)
    assert not _late_decisions(s)
    assert s.task("t")["late"]["answers"][-1]["type"] == "late_changes.acknowledged"
    with s.read() as conn:  # in the person's history of decisions
        decided = decisions_by(conn, "ana")[0]
    assert decided["kind"] == "late_acknowledged"
    assert decided["what"] == f"acknowledged what changed after completion (through #{last})"
    assert decided["note"] == "ok"
    with pytest.raises(CommandRejected, match="nothing changed after completion"):
        s.execute(AcknowledgeLateChanges(task_id="t", through_seq=last), ANA)
    # A later fact counts again, from itself.
    s.execute(ObserveEffect(task_id="t", effect_id=ids["effect"]), AGENT)
    assert _row(s, "t").late_count == 1 and _row(s, "t").late_since_seq > last


def test_an_agent_cannot_acknowledge_or_open_a_follow_up(s: Store, ws: Path) -> None:
    ids = completed_task(s, ws)
    s.execute(ObserveEffect(task_id="t", effect_id=ids["effect"]), AGENT)
    last = int(_row(s, "t").late_last_seq)
    for cmd in (
        AcknowledgeLateChanges(task_id="t", through_seq=last),
        OpenFollowup(task_id="t", through_seq=last, title="again"),
    ):
        with pytest.raises(AuthorityRefused, match="only a person"):
            s.execute(cmd, AGENT)
    assert _row(s, "t").late_count == 1
    assert "late_changes.acknowledged" in rules.person_only_events()
    assert "followup.opened" in rules.person_only_events()
    assert not rules.may_decide("late_changes", None, "agent", "writer-7")
    assert rules.may_decide("late_changes", None, "person", "ana")


def test_a_follow_up_task_names_its_origin_and_the_old_one_stays_completed(
    s: Store, ws: Path
) -> None:
    ids = completed_task(s, ws)
    s.execute(ObserveEffect(task_id="t", effect_id=ids["effect"]), AGENT)
    last = int(_row(s, "t").late_last_seq)
    new = s.execute(
        OpenFollowup(task_id="t", through_seq=last, title="Fix the report",
                     followup_task_id="t2"),
        ANA,
    )  # fmt: skip
    assert new == "t2"
    old, follow = s.task("t"), s.task("t2")
    assert old["status"] == "completed" and old["late"]["count"] == 0
    assert old["late"]["answers"][-1]["followup_task_id"] == "t2"
    assert follow["status"] == "running" and follow["title"] == "Fix the report"
    assert follow["objective"]["text"] == "ship the report"  # the draft, unedited
    assert follow["scope"] == old["scope"]
    assert follow["late"]["origin"] == {"task_id": "t", "through_seq": last}
    assert not _late_decisions(s)


def test_the_resume_brief_of_a_completed_task_says_it_changed(s: Store, ws: Path) -> None:
    ids = completed_task(s, ws)
    assert resume_brief(s, "t")["late_changes"] is None
    s.execute(ObserveEffect(task_id="t", effect_id=ids["effect"]), AGENT)
    b = resume_brief(s, "t")
    assert b["status"] == "completed"
    assert b["late_changes"]["count"] == 1
    (blocker,) = [x for x in b["blockers"] if x["kind"] == "changed_after_completion"]
    assert "the task stays completed" in blocker["message"]
    acts = [a["command"]["type"] for a in b["next_actions"] if a["actor"] == "person"]
    assert {"acknowledge_late_changes", "open_followup"} <= set(acts)
    assert "## Changed after completion (1 since" in brief_markdown(b)


# --- record format ---------------------------------------------------------------------------


def test_new_events_read_here_and_refused_in_one_line_by_an_older_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ack = {"through_seq": 7, "based_on": 7, "note": ""}
    assert isinstance(
        events.decode("late_changes.acknowledged", 1, ack), events.LateChangesAcknowledged
    )
    with pytest.raises(UnknownEventFormat, match="format 2; this program reads up to format 1"):
        events.decode("late_changes.acknowledged", 2, ack)
    for name in ("late_changes.acknowledged", "followup.opened"):
        monkeypatch.delitem(events._REGISTRY, name)  # the program before late changes
        with pytest.raises(UnknownEventFormat) as refused:
            events.decode(name, 1, ack)
        assert str(refused.value) == f"unknown event type {name!r}"
    # A task created without an origin hashes as it always did; one with an origin is
    # refused by a program whose task.created has no such field.
    plain = {"title": "T", "owner": "o", "objective": "x", "scope": {}, "status": "running"}
    assert events.decode("task.created", 1, plain).model_dump(mode="json") == {
        **plain, "scope": {"paths": [], "destinations": []},
    }  # fmt: skip
    with_origin = {**plain, "origin": {"task_id": "t", "through_seq": 7}}
    assert events.decode("task.created", 1, with_origin).origin is not None

    class OlderTaskCreated(events.Payload):
        title: str
        owner: str
        objective: str
        scope: dict[str, Any]
        status: str = "running"

    monkeypatch.setitem(events._REGISTRY, "task.created", OlderTaskCreated)
    with pytest.raises(UnknownEventFormat, match="does not match its format"):
        events.decode("task.created", 1, with_origin)


def test_a_store_at_schema_0015_migrates_and_counts_what_came_late(
    store: Store, ws: Path, open_store: Callable[..., Store]
) -> None:
    from alembic import command
    from alembic.config import Config

    from store import migrate

    ids = completed_task(store, ws)
    # The older program already took an observation on a completed task.
    store.execute(ObserveEffect(task_id="t", effect_id=ids["effect"]), AGENT)
    cfg = Config()
    cfg.set_main_option("script_location", str(migrate.MIGRATIONS_DIR))
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0015")
        assert "late_count" not in {col["name"] for col in sa.inspect(conn).get_columns("tasks")}
    store.close()
    with open_store() as again:
        assert migrate.current_revision(again.engine) == migrate.HEAD
        row = _row(again, "t")
        assert (row.status, row.late_count) == ("completed", 1)
        assert again.task("t")["late"]["facts"][0]["type"] == "observation.recorded"


# --- the real CLI -------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _boris(store: Store, *argv: str) -> subprocess.CompletedProcess[str]:
    where = ["--store", str(store.location.directory)]
    if not store.location.sqlite_file:
        where += ["--url", store.location.url]
    return subprocess.run(
        [str(ROOT / ".venv" / "bin" / "boris"), *argv, *where],
        env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_cli_shows_acknowledges_and_opens_a_follow_up(store: Store, ws: Path) -> None:
    ids = completed_task(store, ws)
    store.execute(ObserveEffect(task_id="t", effect_id=ids["effect"]), AGENT)
    last = int(_row(store, "t").late_last_seq)
    shown = _boris(store, "late", "t")
    assert shown.returncode == 0, shown.stderr
    assert "changed after completion: 1 fact" in shown.stdout and f"#{last}" in shown.stdout
    queue = _boris(store, "decisions", "--kind", "late_changes", "--json")
    assert queue.returncode == 0, queue.stderr
    assert [d["task_id"] for d in json.loads(queue.stdout)["result"]["decisions"]] == ["t"]
    refused = _boris(store, "acknowledge", "t", "--through", str(last), "--actor", "agent:w")
    assert refused.returncode != 0 and "only a person" in refused.stderr
    stale = _boris(store, "acknowledge", "t", "--through", str(last - 1), "--actor", "person:ana")
    assert stale.returncode != 0 and "changed since you read it" in stale.stderr
    ok = _boris(store, "acknowledge", "t", "--through", str(last), "--actor", "person:ana")
    assert ok.returncode == 0, ok.stderr
    assert _row(store, "t").late_count == 0
    store.execute(ObserveEffect(task_id="t", effect_id=ids["effect"]), AGENT)
    last = int(_row(store, "t").late_last_seq)
    made = _boris(
        store, "follow-up", "t", "--title", "Redo the report", "--through", str(last),
        "--id", "t2", "--actor", "person:ana",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "t2"
    assert store.task("t2")["late"]["origin"]["task_id"] == "t"
    assert store.task("t")["status"] == "completed"
    shown = _boris(store, "late", "t2")
    assert "a follow-up of t" in shown.stdout
