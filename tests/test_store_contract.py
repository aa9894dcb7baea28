"""Task contract end to end: revisions, criteria, artifacts, evidence, staleness, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from store import Actor, CommandRejected, ScopeViolation, Store, UnknownTask, rules
from store import commands as c
from store import status as st
from store.errors import AuthorityRefused

AGENT = Actor(kind="agent", id="agent-1", name="Tester")
PERSON = Actor(kind="person", id="ana", name="Ana")


def new_task(s: Store, ws: Path) -> str:
    return s.execute(
        c.CreateTask(title="Report", owner="owner", objective="write it", scope_paths=[str(ws)]),
        AGENT,
    )


def criterion(state: dict, cid: str) -> dict:
    (row,) = [x for x in state["criteria"] if x["criterion_id"] == cid]
    return row


# --- 1. the happy path and staleness ------------------------------------------------------


def test_full_contract_then_new_version_makes_criterion_stale(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    rev = s.execute(c.AmendObjective(task_id=tid, text="write it well", reason="owner"), AGENT)
    assert rev == 2
    state = s.task(tid)
    revs = state["objective_revisions"]
    assert len(revs) == 2
    texts = [r["text"] for r in revs]
    assert texts == ["write it", "write it well"]
    assert state["objective"]["text"] == "write it well"

    cid = s.execute(c.AddCriterion(task_id=tid, text="has a summary"), AGENT)
    assert criterion(s.task(tid), cid)["status"] == "unverified"

    (ws / "report.md").write_text("# v1\n")
    r1 = s.execute(
        c.RecordArtifact(
            task_id=tid, artifact_id="report", name="report.md", content=c.Content(path="report.md")
        ),
        AGENT,
    )
    assert r1["version"] == 1 and r1["digest"].startswith("sha256:")
    assert s.blobs.read(r1["digest"]) == b"# v1\n"

    note = s.execute(
        c.RecordArtifact(task_id=tid, name="notes", content=c.Content(text="some notes")), AGENT
    )
    assert s.blobs.read(note["digest"]) == b"some notes"

    eid = s.execute(
        c.AttachEvidence(
            task_id=tid,
            criterion_id=cid,
            kind="review",
            content=c.Content(text="summary present"),
        ),
        AGENT,
    )
    s.execute(
        c.JudgeCriterion(
            task_id=tid,
            criterion_id=cid,
            status="satisfied",
            artifact_id="report",
            evidence_ids=[eid],
        ),
        AGENT,
    )
    crit = criterion(s.task(tid), cid)
    assert crit["status"] == "satisfied"
    assert [e["evidence_id"] for e in crit["evidence"]] == [eid]

    (ws / "report.md").write_text("# v2\n")
    r2 = s.execute(
        c.RecordArtifact(
            task_id=tid, artifact_id="report", name="report.md", content=c.Content(path="report.md")
        ),
        AGENT,
    )
    assert r2["version"] == 2 and r2["digest"] != r1["digest"]
    crit = criterion(s.task(tid), cid)
    assert crit["status"] == "stale"
    assert "report" in crit["stale_reason"]
    # the old version is still readable
    assert s.blobs.read(r1["digest"]) == b"# v1\n"


# --- 2. rejected commands write nothing ----------------------------------------------------


def _setup_criterion(s: Store, ws: Path) -> tuple[str, str]:
    tid = new_task(s, ws)
    cid = s.execute(c.AddCriterion(task_id=tid, text="ok"), AGENT)
    s.execute(
        c.RecordArtifact(task_id=tid, artifact_id="a", name="a.txt", content=c.Content(text="x")),
        AGENT,
    )
    return tid, cid


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            lambda tid, cid: c.JudgeCriterion(
                task_id=tid, criterion_id=cid, status="satisfied", artifact_id="a"
            ),
            id="satisfied-without-evidence",
        ),
        pytest.param(
            lambda tid, cid: c.JudgeCriterion(
                task_id=tid, criterion_id=cid, status="satisfied", evidence_ids=["nope"]
            ),
            id="satisfied-without-artifact",
        ),
        pytest.param(
            lambda tid, cid: c.JudgeCriterion(task_id=tid, criterion_id=cid, status="waived"),
            id="waived-without-note",
        ),
        pytest.param(
            lambda tid, cid: c.JudgeCriterion(
                task_id=tid, criterion_id=cid, status="waived", note="   "
            ),
            id="waived-blank-note",
        ),
        pytest.param(
            lambda tid, cid: c.JudgeCriterion(task_id=tid, criterion_id="C99", status="failed"),
            id="unknown-criterion",
        ),
        pytest.param(
            lambda tid, cid: c.ChargeBudget(task_id=tid, counter="bananas", amount=1),
            id="unknown-counter",
        ),
        pytest.param(
            lambda tid, cid: c.CompletePhase(task_id=tid, phase_id="nope"),
            id="unknown-phase",
        ),
        pytest.param(
            lambda tid, cid: c.RecordArtifact(
                task_id=tid, name="n", content=c.Content(text="a", base64="YQ==")
            ),
            id="two-content-sources",
        ),
        pytest.param(
            lambda tid, cid: c.RecordArtifact(
                task_id=tid, name="n", content=c.Content(base64="!!notbase64!!")
            ),
            id="bad-base64",
        ),
    ],
)
def test_rejected_command_writes_nothing(s: Store, ws: Path, make) -> None:
    tid, cid = _setup_criterion(s, ws)
    before_version = s.data_version()
    before_dump = s.projection_dump(tid)
    with pytest.raises(CommandRejected):
        s.execute(make(tid, cid), AGENT)
    assert s.data_version() == before_version
    assert s.projection_dump(tid) == before_dump


def test_batch_is_all_or_nothing(s: Store, ws: Path) -> None:
    tid, cid = _setup_criterion(s, ws)
    before = s.data_version()
    with pytest.raises(CommandRejected):
        s.execute_all(
            [
                c.AddCriterion(task_id=tid, text="fine"),
                c.JudgeCriterion(task_id=tid, criterion_id=cid, status="waived"),
            ],
            AGENT,
        )
    assert s.data_version() == before
    assert [x["criterion_id"] for x in s.task(tid)["criteria"]] == [cid]


def test_unknown_task_is_rejected(s: Store) -> None:
    before = s.data_version()
    with pytest.raises(UnknownTask) as info:
        s.execute(c.AddCriterion(task_id="no-such-task", text="x"), AGENT)
    assert info.value.task_id == "no-such-task"
    assert isinstance(info.value, CommandRejected)
    assert s.data_version() == before


def test_duplicate_task_id_rejected(s: Store, ws: Path) -> None:
    s.execute(c.CreateTask(task_id="t1", title="a", owner="o", objective="x"), AGENT)
    before = s.data_version()
    with pytest.raises(CommandRejected, match="already exists"):
        s.execute(c.CreateTask(task_id="t1", title="b", owner="o", objective="y"), AGENT)
    assert s.data_version() == before
    assert s.task("t1")["title"] == "a"


# --- 3. scope ----------------------------------------------------------------------------


def test_scope_escapes_are_refused(s: Store, ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (ws / "link.txt").symlink_to(outside)
    (ws / "linkdir").symlink_to(tmp_path)
    tid = new_task(s, ws)
    cid = s.execute(c.AddCriterion(task_id=tid, text="k"), AGENT)
    before = s.data_version()
    for path in ["../outside.txt", "/etc/passwd", str(outside), "link.txt", "linkdir/outside.txt"]:
        with pytest.raises(ScopeViolation):
            s.execute(c.RecordArtifact(task_id=tid, name="x", content=c.Content(path=path)), AGENT)
        with pytest.raises(ScopeViolation):
            s.execute(
                c.AttachEvidence(
                    task_id=tid, criterion_id=cid, kind="other", content=c.Content(path=path)
                ),
                AGENT,
            )
    assert s.data_version() == before
    state = s.task(tid)
    assert state["artifacts"] == []
    assert state["criteria"][0]["evidence"] == []


def test_symlink_inside_scope_to_inside_is_allowed(s: Store, ws: Path) -> None:
    (ws / "real.txt").write_text("inside")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    tid = new_task(s, ws)
    r = s.execute(
        c.RecordArtifact(task_id=tid, name="alias", content=c.Content(path="alias.txt")), AGENT
    )
    assert s.blobs.read(r["digest"]) == b"inside"


def test_relative_scope_path_rejected(s: Store) -> None:
    with pytest.raises(CommandRejected, match="absolute"):
        s.execute(
            c.CreateTask(title="t", owner="o", objective="x", scope_paths=["relative/dir"]), AGENT
        )


# --- 7. run status ---------------------------------------------------------------------------


def test_complete_refused_while_criterion_unverified(s: Store, ws: Path) -> None:
    tid, cid = _setup_criterion(s, ws)
    assert s.task(tid)["status"] == "running"
    before = s.data_version()
    with pytest.raises(CommandRejected, match=cid):
        s.execute(c.SetStatus(task_id=tid, status="completed"), AGENT)
    assert s.data_version() == before
    assert s.task(tid)["status"] == "running"


def test_complete_allowed_after_satisfied(s: Store, ws: Path) -> None:
    tid, cid = _setup_criterion(s, ws)
    eid = s.execute(
        c.AttachEvidence(task_id=tid, criterion_id=cid, kind="review", content=c.Content(text="y")),
        AGENT,
    )
    s.execute(
        c.JudgeCriterion(
            task_id=tid, criterion_id=cid, status="satisfied", artifact_id="a", evidence_ids=[eid]
        ),
        AGENT,
    )
    s.execute(c.SetStatus(task_id=tid, status="completed"), AGENT)
    assert s.task(tid)["status"] == "completed"
    # completed -> running is not in the table and is refused
    assert not st.allowed("completed", "running")
    with pytest.raises(CommandRejected):
        s.execute(c.SetStatus(task_id=tid, status="running"), AGENT)
    assert s.task(tid)["status"] == "completed"
    # and a completed record is closed to further writes
    with pytest.raises(CommandRejected, match="closed"):
        s.execute(c.AddCriterion(task_id=tid, text="late"), AGENT)


def test_complete_allowed_after_waived(s: Store, ws: Path) -> None:
    tid, cid = _setup_criterion(s, ws)
    s.execute(
        c.JudgeCriterion(task_id=tid, criterion_id=cid, status="waived", note="not needed"),
        PERSON,  # a waiver is a person's
    )
    s.execute(c.SetStatus(task_id=tid, status="completed"), AGENT)
    assert s.task(tid)["status"] == "completed"


def test_stale_criterion_blocks_completion(s: Store, ws: Path) -> None:
    tid, cid = _setup_criterion(s, ws)
    eid = s.execute(
        c.AttachEvidence(task_id=tid, criterion_id=cid, kind="review", content=c.Content(text="y")),
        AGENT,
    )
    s.execute(
        c.JudgeCriterion(
            task_id=tid, criterion_id=cid, status="satisfied", artifact_id="a", evidence_ids=[eid]
        ),
        AGENT,
    )
    s.execute(
        c.RecordArtifact(task_id=tid, artifact_id="a", name="a.txt", content=c.Content(text="z")),
        AGENT,
    )
    with pytest.raises(CommandRejected, match="stale"):
        s.execute(c.SetStatus(task_id=tid, status="completed"), AGENT)


def _path_to(target: str) -> list[str] | None:
    """Shortest chain of statuses from running to target through TRANSITIONS (BFS)."""
    from collections import deque

    seen = {"running": ["running"]}
    q = deque(["running"])
    while q:
        cur = q.popleft()
        if cur == target:
            return seen[cur]
        for nxt in sorted(st.TRANSITIONS[cur]):
            if nxt not in seen and nxt not in {"stopped", "completed"}:
                seen[nxt] = seen[cur] + [nxt]
                q.append(nxt)
    return None


@pytest.mark.parametrize(
    "from_status",
    [x for x in st.ALL_STATUSES if x not in {"stopped", "completed", "running"}],
)
def test_transition_table_is_enforced(s: Store, ws: Path, from_status: str) -> None:
    """From each reachable status, every listed move is allowed and every unlisted one refused."""
    path = _path_to(from_status)
    assert path is not None
    for to in st.ALL_STATUSES:
        if to in {"stopped", "completed"} or to == from_status:
            continue
        tid = new_task(s, ws)
        for step in path[1:]:
            s.execute(c.SetStatus(task_id=tid, status=step), AGENT)
        assert s.task(tid)["status"] == from_status
        before = s.data_version()
        if to in st.TRANSITIONS[from_status]:
            actor = AGENT
            if rules.is_reopening(from_status, to):
                # Reopening a run stopped by policy is a person's (the authority table).
                with pytest.raises(AuthorityRefused):
                    s.execute(c.SetStatus(task_id=tid, status=to), AGENT)
                actor = PERSON
            s.execute(c.SetStatus(task_id=tid, status=to), actor)
            assert s.task(tid)["status"] == to
        else:
            with pytest.raises(CommandRejected):
                s.execute(c.SetStatus(task_id=tid, status=to), AGENT)
            assert s.task(tid)["status"] == from_status
            assert s.data_version() == before


def test_set_status_stopped_is_refused(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    with pytest.raises(CommandRejected, match="stop"):
        s.execute(c.SetStatus(task_id=tid, status="stopped"), AGENT)


# --- 8. budget ----------------------------------------------------------------------------


def test_charge_over_limit_exhausts_budget(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    s.execute(c.SetBudget(task_id=tid, counter="model_calls", limit=3), AGENT)
    s.execute(c.ChargeBudget(task_id=tid, counter="model_calls", amount=2), AGENT)
    assert s.task(tid)["status"] == "running"
    s.execute(c.ChargeBudget(task_id=tid, counter="model_calls", amount=5), AGENT)
    state = s.task(tid)
    assert state["status"] == "budget_exhausted"
    (b,) = [b for b in state["budgets"] if b["counter"] == "model_calls"]
    assert b["used"] == 7 and b["limit_value"] == 3 and b["exhausted"] is True
    assert "model_calls" in state["status_reason"]


def test_artifact_bytes_budget(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    s.execute(c.SetBudget(task_id=tid, counter="artifact_bytes", limit=4), AGENT)
    s.execute(c.RecordArtifact(task_id=tid, name="big", content=c.Content(text="12345")), AGENT)
    state = s.task(tid)
    assert state["status"] == "budget_exhausted"
    (b,) = [b for b in state["budgets"] if b["counter"] == "artifact_bytes"]
    assert b["used"] == 5


def test_sibling_directory_with_common_prefix_is_outside(s: Store, ws: Path) -> None:
    sibling = ws.parent / (ws.name + "2")
    sibling.mkdir()
    (sibling / "f.txt").write_text("nope")
    tid = new_task(s, ws)
    with pytest.raises(ScopeViolation):
        s.execute(
            c.RecordArtifact(task_id=tid, name="f", content=c.Content(path=str(sibling / "f.txt"))),
            AGENT,
        )


def test_recording_the_same_bytes_again_is_not_a_new_version(s: Store, ws: Path) -> None:
    tid = new_task(s, ws)
    (ws / "g.md").write_text("same")
    first = s.execute(
        c.RecordArtifact(task_id=tid, artifact_id="g", name="g.md", content=c.Content(path="g.md")),
        AGENT,
    )
    cid = s.execute(c.AddCriterion(task_id=tid, text="ok"), AGENT)
    eid = s.execute(
        c.AttachEvidence(
            task_id=tid, criterion_id=cid, kind="review", content=c.Content(text="ok")
        ),
        AGENT,
    )
    s.execute(
        c.JudgeCriterion(
            task_id=tid, criterion_id=cid, status="satisfied", artifact_id="g", evidence_ids=[eid]
        ),
        AGENT,
    )
    again = s.execute(
        c.RecordArtifact(task_id=tid, artifact_id="g", name="g.md", content=c.Content(path="g.md")),
        AGENT,
    )
    assert (again["version"], again["unchanged"]) == (first["version"], True)
    state = s.task(tid)
    assert state["artifacts"][0]["current_version"] == 1
    assert criterion(state, cid)["status"] == "satisfied"


@pytest.mark.parametrize(
    ("target", "allowed", "inside"),
    [
        ("https://docs.example.org/upload/guide.md", "https://docs.example.org/upload/", True),
        ("https://docs.example.org/upload", "https://docs.example.org/upload/", True),
        ("https://DOCS.example.org/upload/a", "https://docs.example.org/upload/", True),
        ("https://docs.example.org/x", "https://docs.example.org", True),
        # A string prefix would have let these through.
        ("https://docs.example.org.evil.test/x", "https://docs.example.org", False),
        ("https://docs.example.org/uploads-other/x", "https://docs.example.org/upload", False),
        ("https://docs.example.org/upload/../admin", "https://docs.example.org/upload/", False),
        ("https://docs.example.org/upload/%2e%2e/admin", "https://docs.example.org/upload/", False),
        ("http://docs.example.org/upload/a", "https://docs.example.org/upload/", False),
        ("mailto:team@example.org", "mailto:team@example.org", True),
        ("mailto:Team@Example.org", "mailto:team@example.org", True),
        ("mailto:boss@example.org", "mailto:team@example.org", False),
        ("mailto:team@example.org?bcc=all@example.org", "mailto:team@example.org", False),
    ],
)
def test_a_destination_is_inside_its_allowed_destination_by_host_and_whole_segments(
    target: str, allowed: str, inside: bool
) -> None:
    from store.scope import destination_within

    assert destination_within(target, allowed) is inside


def test_a_mailto_target_is_a_destination_not_a_file_in_the_workspace(tmp_path: Path) -> None:
    from store.errors import ScopeViolation
    from store.scope import check_target, is_destination, make_scope

    scope = make_scope([str(tmp_path)], ("mailto:team@example.org",))
    assert is_destination("mailto:boss@example.org") and not is_destination("C:/notes.md")
    assert not is_destination("notes/v2.md") and not is_destination("/abs/path.md")
    assert check_target(scope, "mailto:team@example.org") == "mailto:team@example.org"
    # Once read as a relative file name, inside the workspace, so it was allowed.
    with pytest.raises(ScopeViolation, match="outside the task's scope"):
        check_target(scope, "mailto:boss@example.org")
    assert check_target(scope, "./notes:v2.md") == str(tmp_path / "notes:v2.md")
