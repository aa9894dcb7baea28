"""`boris resume`, `summary` and `narrative` through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from store.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_resume_summary_and_narrative(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    st = ["--store", str(tmp_path / "s")]
    agent = ["--actor", "agent:drafter"]
    run(
        capsys,
        *st,
        *agent,
        "create-task",
        "--id",
        "t",
        "--title",
        "Guide",
        "--owner",
        "m",
        "--objective",
        "write it",
        "--scope",
        str(ws),
    )
    run(capsys, *st, *agent, "add-criterion", "t", "--id", "done", "--text", "it is done")
    run(
        capsys,
        *st,
        *agent,
        "narrative",
        "t",
        "--text",
        "All complete.",
        "--claim",
        "done=satisfied",
    )
    brief = json.loads(run(capsys, *st, "--json", "resume", "t"))["result"]
    assert brief["objective"] == {"rev": 1, "text": "write it"}
    assert brief["criteria"] == [{"id": "done", "status": "unverified", "reason": ""}]
    assert [a["action"] for a in brief["next_actions"]] == [
        "verify criterion done (unverified): it is done"
    ]
    assert "All complete" not in json.dumps(brief)
    md = run(capsys, *st, "resume", "t")
    assert md.startswith("# Resume brief: Guide (t)")
    listed = json.loads(run(capsys, *st, "--json", "narrative", "t"))["result"]
    assert listed[0]["discrepancies"][0]["record"] == "unverified"
    assert "DISAGREES: the narrative claims done is satisfied" in run(capsys, *st, "narrative", "t")
    summary = run(capsys, *st, "summary", "t")
    assert "the narrative claims done is satisfied; the record says unverified" in summary
    assert run(capsys, *st, *agent, "summary", "t", "--record").startswith("summary v1 recorded")
    assert run(capsys, *st, *agent, "summary", "t", "--record").startswith("summary v2 recorded")
    assert main([*st, "narrative", "t", "--text", "x", "--claim", "nonsense"]) != 0
