"""No silent overwrite: a decision names the version it was based on, and a stale one is a
`Conflict` naming who changed the subject and when; "satisfied" on evidence made on an older
artifact version is refused unless the person says why. Both engines (the `store` fixture)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from store import Actor, Store
from store import commands as c
from store.api import Conflict, CriterionState, OlderEvidence
from store.services import answers

AGENT = Actor(kind="agent", id="agent-1", name="Writer")
ANA = Actor(kind="person", id="ana", name="Ana")
BEN = Actor(kind="person", id="ben", name="Ben")


def _guide_task(s: Store, ws: Path) -> str:
    """A task whose criterion C1 was satisfied against guide v1 on evidence made on v1,
    and whose guide is now v2 (so C1 is stale)."""
    tid = s.execute(
        c.CreateTask(title="Guide", owner="ana", objective="a guide", scope_paths=[str(ws)]),
        AGENT,
    )
    s.execute(c.AddCriterion(task_id=tid, text="The guide builds"), AGENT)
    s.execute(
        c.RecordArtifact(
            task_id=tid, artifact_id="guide", name="guide.md", content=c.Content(text="v1")
        ),
        AGENT,
    )
    s.execute(
        c.AttachEvidence(
            task_id=tid,
            criterion_id="C1",
            kind="command_output",
            evidence_id="e1",
            content=c.Content(text="build ok (v1)"),
        ),
        AGENT,
    )
    s.execute(
        c.JudgeCriterion(
            task_id=tid,
            criterion_id="C1",
            status="satisfied",
            artifact_id="guide",
            evidence_ids=["e1"],
        ),
        AGENT,
    )
    s.execute(
        c.RecordArtifact(
            task_id=tid, artifact_id="guide", name="guide.md", content=c.Content(text="v2")
        ),
        AGENT,
    )
    return tid


def _events(s: Store, tid: str, type_: str) -> list[dict]:
    return [e for e in s.events(tid) if e["type"] == type_]


def test_a_stale_criterion_is_not_satisfied_on_old_evidence_in_one_click(
    store: Store, ws: Path
) -> None:
    tid = _guide_task(store, ws)
    d = store.judge_decision(tid, "C1")
    assert d.state == CriterionState.STALE
    (e1,) = d.evidence
    origin = e1.origin("guide")
    assert origin is not None and (origin.made_on, origin.current) == (1, False)
    assert origin.words == "made on guide v1; the guide is now v2"
    assert not e1.current_for("guide")
    assert d.missing(None, artifact_id="guide", evidence_ids=[], note="") == "choose a verdict"
    assert "older version" in (
        d.missing(CriterionState.SATISFIED, artifact_id="guide", evidence_ids=["e1"], note="") or ""
    )
    one_click = c.JudgeCriterion(
        task_id=tid,
        criterion_id="C1",
        status="satisfied",
        artifact_id="guide",
        evidence_ids=["e1"],
        based_on=d.rev,
    )
    with pytest.raises(OlderEvidence) as info:
        store.execute(one_click, ANA)
    assert info.value.evidence_ids == ["e1"]
    assert store.judge_decision(tid, "C1").state == CriterionState.STALE

    # With the person's reason it is taken, and the event keeps the reason and the base.
    store.execute(
        one_click.model_copy(update={"older_evidence_reason": "v2 only fixed a typo"}), ANA
    )
    judged = _events(store, tid, "criterion.judged")[-1]["payload"]
    assert judged["older_evidence_reason"] == "v2 only fixed a typo"
    assert (judged["based_on"], judged["artifact_version"]) == (d.rev, 2)


def test_evidence_made_on_the_current_version_needs_no_reason(store: Store, ws: Path) -> None:
    tid = _guide_task(store, ws)
    store.execute(
        c.AttachEvidence(
            task_id=tid,
            criterion_id="C1",
            kind="command_output",
            evidence_id="e2",
            content=c.Content(text="build ok (v2)"),
        ),
        AGENT,
    )
    # Stated explicitly: made on v1, though attached while v2 is current.
    store.execute(
        c.AttachEvidence(
            task_id=tid,
            criterion_id="C1",
            kind="review",
            evidence_id="e3",
            content=c.Content(text="review of v1"),
            artifact_id="guide",
            artifact_version=1,
        ),
        AGENT,
    )
    d = store.judge_decision(tid, "C1")
    by_id = {e.evidence_id: e for e in d.evidence}
    assert by_id["e2"].current_for("guide") and not by_id["e3"].current_for("guide")
    with pytest.raises(OlderEvidence):
        store.execute(
            c.JudgeCriterion(
                task_id=tid,
                criterion_id="C1",
                status="satisfied",
                artifact_id="guide",
                evidence_ids=["e2", "e3"],
            ),
            ANA,
        )
    store.execute(
        c.JudgeCriterion(
            task_id=tid,
            criterion_id="C1",
            status="satisfied",
            artifact_id="guide",
            evidence_ids=["e2"],
            based_on=d.rev,
        ),
        ANA,
    )
    judged = _events(store, tid, "criterion.judged")[-1]["payload"]
    assert "older_evidence_reason" not in judged


def test_a_judgement_raced_by_another_reviewer_is_a_conflict(
    store: Store, open_store: Callable[..., Store], ws: Path
) -> None:
    tid = _guide_task(store, ws)
    seen = store.judge_decision(tid, "C1").rev
    other = open_store()  # another process
    try:
        other.execute(
            c.JudgeCriterion(task_id=tid, criterion_id="C1", status="failed", note="broken"),
            BEN,
        )
    finally:
        other.close()
    with pytest.raises(Conflict) as info:
        store.execute(
            c.JudgeCriterion(
                task_id=tid,
                criterion_id="C1",
                status="waived",
                note="not needed",
                based_on=seen,
            ),
            ANA,
        )
    err = info.value
    assert (err.subject_kind, err.subject_id, err.based_on, err.current) == (
        "criterion",
        "C1",
        seen,
        seen + 1,
    )
    assert err.changed_by == BEN.label() and err.changed_at
    assert err.change == "judged it failed"
    assert "ben" in str(err) and "judged it failed" in str(err)
    assert store.task(tid)["criteria"][0]["status"] == "failed"  # nothing overwritten
    refusal = answers.refusal(err)["error"]
    assert refusal["code"] == "conflict"
    assert refusal["details"]["changed_by"] == BEN.label()


def test_every_event_touching_a_criterion_moves_its_rev(store: Store, ws: Path) -> None:
    tid = _guide_task(store, ws)
    # added 1, evidence 2, judged 3, made stale 4
    assert store.judge_decision(tid, "C1").rev == 4
    change = store.judge_decision(tid, "C1").last_change
    assert (change.by, change.what) == (AGENT.label(), "recorded guide v2")
    store.execute(
        c.ChangeCriterion(
            task_id=tid,
            criterion_id="C1",
            text="The guide builds cleanly",
            reason="sharper",
            based_on=4,
        ),
        ANA,
    )
    assert _events(store, tid, "criterion.changed")[-1]["payload"]["based_on"] == 4
    with pytest.raises(Conflict):
        store.execute(
            c.ChangeCriterion(task_id=tid, criterion_id="C1", text="again", reason="r", based_on=4),
            ANA,
        )


def test_an_artifact_edit_on_an_old_version_is_a_conflict(
    store: Store, open_store: Callable[..., Store], ws: Path
) -> None:
    tid = _guide_task(store, ws)
    other = open_store()
    try:
        other.execute(
            c.RecordArtifact(
                task_id=tid,
                artifact_id="guide",
                name="guide.md",
                content=c.Content(text="v3"),
                based_on=2,
            ),
            AGENT,
        )
    finally:
        other.close()
    with pytest.raises(Conflict) as info:
        store.execute(
            c.RecordArtifact(
                task_id=tid,
                artifact_id="guide",
                name="guide.md",
                content=c.Content(text="v2 edited by a person"),
                based_on=2,
            ),
            ANA,
        )
    assert (info.value.current, info.value.changed_by) == (3, AGENT.label())
    (art,) = store.task(tid)["artifacts"]
    assert art["current_version"] == 3
    recorded = _events(store, tid, "artifact.version_recorded")
    assert recorded[-1]["payload"]["based_on"] == 2
    assert "based_on" not in recorded[0]["payload"]  # left out when not given


def test_objective_and_budget_limit_conflicts(store: Store, ws: Path) -> None:
    tid = _guide_task(store, ws)
    store.execute(c.AmendObjective(task_id=tid, text="a short guide", reason="r", based_on=1), ANA)
    with pytest.raises(Conflict) as info:
        store.execute(
            c.AmendObjective(task_id=tid, text="a long guide", reason="r", based_on=1), BEN
        )
    assert (info.value.subject_kind, info.value.current) == ("objective", 2)
    assert info.value.changed_by == ANA.label()

    store.execute(c.SetBudget(task_id=tid, counter="model_calls", limit=10, based_on=0), ANA)
    with pytest.raises(Conflict) as info:
        store.execute(c.SetBudget(task_id=tid, counter="model_calls", limit=50, based_on=0), BEN)
    assert (info.value.subject_kind, info.value.subject_id) == ("budget", "model_calls")
    assert info.value.change == "set its limit to 10"
    store.execute(c.SetBudget(task_id=tid, counter="model_calls", limit=50, based_on=1), BEN)
    limits = _events(store, tid, "budget.limit_set")
    assert [e["payload"].get("based_on") for e in limits] == [0, 1]


def test_writers_that_name_no_version_store_the_same_bytes_as_before(
    store: Store, ws: Path
) -> None:
    """Old writers (and old events) have no `based_on`: the payload leaves it out, so the
    stored JSON, and the chain hash over it, are what they were."""
    tid = _guide_task(store, ws)
    for e in store.events(tid):
        assert "based_on" not in e["payload"], e["type"]
        assert "older_evidence_reason" not in e["payload"]
        assert "artifact_version" not in e["payload"] or e["type"] != "evidence.attached"


def test_cli_based_on_refuses_as_a_conflict(
    store: Store,
    ws: Path,
    store_dir: Path,
    store_url: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from store.cli.app import main

    tid = _guide_task(store, ws)
    where = ["--store", str(store_dir), "--actor", "person:ben:Ben"]
    where += ["--url", store_url] if store_url else []
    code = main([*where, "--json", "judge", tid, "C1", "failed", "--based-on", "3"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["error"]["code"] == "conflict"
    assert out["error"]["details"]["current"] == 4
    code = main([*where, "--json", "judge", tid, "C1", "failed", "--based-on", "4"])
    assert code == 0, capsys.readouterr()


def test_an_old_store_migrates_with_criterion_revs_and_dated_evidence(tmp_path: Path) -> None:
    """The store written by schema 0001 (tests/fixtures/store-0001) opens at 0009: each
    criterion has the rev a replay gives, evidence is dated by its event, and a judgement
    based on that rev is taken (one on an older rev is a conflict)."""
    import shutil

    fixture = Path(__file__).parent / "fixtures" / "store-0001"
    shutil.copytree(fixture, tmp_path / "store")
    with Store.open(tmp_path / "store", create=False) as s:
        steps = s.judge_decision("guide", "steps")
        # added, evidence attached, judged satisfied against guide v2
        assert (steps.rev, steps.state) == (3, CriterionState.SATISFIED)
        (check,) = steps.evidence
        origin = check.origin("guide")
        assert origin is not None and (origin.made_on, origin.current) == (2, True)
        assert s.judge_decision("guide", "reboot").rev == 1
        before = s.projection_dump("guide")
        s.rebuild("guide")
        assert s.projection_dump("guide") == before
        with pytest.raises(Conflict):
            s.execute(
                c.JudgeCriterion(
                    task_id="guide", criterion_id="steps", status="failed", based_on=2
                ),
                ANA,
            )
        s.execute(
            c.JudgeCriterion(task_id="guide", criterion_id="steps", status="failed", based_on=3),
            ANA,
        )


def test_an_agent_passes_the_same_guard_through_mcp(store: Store, ws: Path) -> None:
    import anyio

    from store.mcp.server import BorisServer

    tid = _guide_task(store, ws)
    server = BorisServer(store, AGENT)

    def call(tool: str, **arguments: object) -> dict:
        return anyio.run(server.call, tool, arguments)

    stale = call(
        "record_artifact",
        task_id=tid,
        artifact_id="guide",
        name="guide.md",
        content={"text": "the agent's v3"},
        based_on=1,
    )
    assert stale["ok"] is False and stale["error"]["code"] == "conflict"
    assert stale["error"]["details"]["current"] == 2
    assert call(
        "record_artifact",
        task_id=tid,
        artifact_id="guide",
        name="guide.md",
        content={"text": "the agent's v3"},
        based_on=2,
    )["ok"]
    old = call(
        "judge_criterion",
        task_id=tid,
        criterion_id="C1",
        status="satisfied",
        artifact_id="guide",
        evidence_ids=["e1"],
    )
    assert old["ok"] is False and old["error"]["code"] == "older_evidence"
    assert old["error"]["details"]["evidence_ids"] == ["e1"]


def test_a_reconcile_verdict_names_the_reconciliation_it_saw(store: Store, ws: Path) -> None:
    """Ben records "conflict" (a person must decide) while Ana's dialog is open: Ana's
    verdict, based on no reconciliation yet, is refused naming Ben; based on his, it is taken."""
    from store.commands import effects as fx

    tid = _guide_task(store, ws)
    target = ws / "out.txt"
    eff = store.execute(
        fx.PlanEffect(
            task_id=tid,
            target=str(target),
            consequence="write out.txt",
            content=c.Content(text="hello"),
        ),
        AGENT,
    )
    store.execute(fx.DispatchEffect(task_id=tid, effect_id=eff, executor="writer"), AGENT)
    store.execute(fx.RecordResponse(task_id=tid, effect_id=eff, reported="timeout"), AGENT)
    target.write_text("something else", encoding="utf-8")  # neither intent nor pre-state
    store.execute(
        fx.ReconcileEffect(task_id=tid, effect_id=eff, based_on=0), BEN
    )  # computes a conflict: waits for a person
    with pytest.raises(Conflict) as info:
        store.execute(
            fx.ReconcileEffect(
                task_id=tid, effect_id=eff, decision="absent", note="not ours", based_on=0
            ),
            ANA,
        )
    seen = info.value.current
    assert info.value.subject_kind == "effect" and seen > 0
    assert info.value.changed_by == BEN.label() and "conflict" in info.value.change
    store.execute(
        fx.ReconcileEffect(
            task_id=tid, effect_id=eff, decision="absent", note="not ours", based_on=seen
        ),
        ANA,
    )
    last = _events(store, tid, "effect.reconciled")[-1]["payload"]
    assert (last["verdict"], last["based_on"]) == ("absent", seen)
