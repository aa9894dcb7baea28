"""The `boris` command line, and replay of a run that exhausted its budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from store import Actor, Store
from store import commands as c

AGENT = Actor(kind="agent", id="a1")


def _task(store: Store, ws: Path) -> str:
    return store.execute(
        c.CreateTask(title="T", owner="me", objective="do it", scope_paths=[str(ws)]), AGENT
    )


def test_rebuild_equals_incremental(store: Store, ws: Path) -> None:
    tid = _task(store, ws)
    store.execute_all(
        [
            c.AddCriterion(task_id=tid, text="a"),
            c.RecordArtifact(task_id=tid, artifact_id="g", name="g", content=c.Content(text="1")),
            c.SetBudget(task_id=tid, counter="tool_calls", limit=3),
            c.ChargeBudget(task_id=tid, counter="tool_calls", amount=4),
            c.RecordArtifact(task_id=tid, artifact_id="g", name="g", content=c.Content(text="2")),
        ],
        AGENT,
    )
    assert store.task(tid)["status"] == "budget_exhausted"
    before = store.projection_dump(tid)
    store.rebuild(tid)
    assert store.projection_dump(tid) == before


def test_cli_ingest_is_all_or_nothing(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from store.cli import main

    st = str(tmp_path / "s")
    assert (
        main(
            [
                "--store",
                st,
                "--actor",
                "agent:a1",
                "create-task",
                "--id",
                "t1",
                "--title",
                "T",
                "--owner",
                "o",
                "--objective",
                "x",
                "--scope",
                str(ws),
            ]
        )
        == 0
    )
    lines = tmp_path / "cmds.jsonl"
    lines.write_text(
        '{"type": "add_criterion", "task_id": "t1", "text": "a"}\n'
        '{"type": "add_criterion", "task_id": "t1"}\n'
    )
    assert main(["--store", st, "--actor", "agent:a1", "ingest", str(lines)]) == 2
    assert "line 2" in capsys.readouterr().err
    assert main(["--store", st, "show", "t1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["criteria"] == []
    assert main(["--store", st, "demo"]) == 0
    capsys.readouterr()
    assert main(["--store", st, "tasks", "--json"]) == 0
    ids = {t["id"] for t in json.loads(capsys.readouterr().out)["result"]}
    assert {"t1", "guide", "note"} <= ids


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from store.cli import main

    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_writes_a_whole_review(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    st = ["--store", str(tmp_path / "s"), "--actor", "agent:a1:Agent"]
    (ws / "guide.md").write_text("# Guide\n")
    assert (
        _cli(
            capsys,
            *st,
            "create-task",
            "--id",
            "t",
            "--title",
            "T",
            "--owner",
            "o",
            "--objective",
            "x",
            "--scope",
            str(ws),
        )[0]
        == 0
    )
    assert (
        _cli(capsys, *st, "amend", "t", "--text", "x, for auditors", "--reason", "owner")[1].strip()
        == "2"
    )
    assert _cli(capsys, *st, "add-criterion", "t", "--text", "has a title", "--id", "title")[0] == 0
    assert (
        _cli(
            capsys,
            *st,
            "record-artifact",
            "t",
            "guide.md",
            "--id",
            "guide",
            "--file",
            str(ws / "guide.md"),
        )[0]
        == 0
    )
    assert (
        _cli(
            capsys,
            *st,
            "attach-evidence",
            "t",
            "title",
            "--kind",
            "review",
            "--id",
            "e1",
            "--text",
            "looked",
        )[0]
        == 0
    )
    assert (
        _cli(
            capsys,
            *st,
            "judge",
            "t",
            "title",
            "satisfied",
            "--artifact",
            "guide",
            "--evidence",
            "e1",
        )[0]
        == 0
    )
    assert _cli(capsys, *st, "set-budget", "t", "tool_calls", "2")[0] == 0
    assert _cli(capsys, *st, "charge", "t", "tool_calls", "1")[0] == 0
    assert _cli(capsys, *st, "set-status", "t", "completed")[0] == 0
    rc, out, _ = _cli(capsys, *st, "show", "t", "--json")
    assert rc == 0
    state = json.loads(out)["result"]
    assert (state["status"], state["objective"]["rev"]) == ("completed", 2)
    assert state["criteria"][0]["status"] == "satisfied"
    assert state["budgets"][0]["used"] == 1
    rc, out, _ = _cli(capsys, *st, "events", "t", "--json")
    actors = [e["actor"]["id"] for e in json.loads(out)["result"]]
    assert rc == 0 and len(actors) >= 9 and set(actors) == {"a1"}


def test_cli_errors_are_one_line_and_nonzero(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    st = ["--store", str(tmp_path / "s"), "--actor", "person:rita"]
    _cli(
        capsys,
        *st,
        "create-task",
        "--id",
        "t",
        "--title",
        "T",
        "--owner",
        "o",
        "--objective",
        "x",
        "--scope",
        str(ws),
    )
    rc, _, err = _cli(capsys, *st, "record-artifact", "t", "p", "--file", "/etc/passwd")
    assert rc == 1 and "outside the task's scope" in err and err.count("\n") == 1
    rc, _, err = _cli(capsys, *st, "show", "nope")
    assert rc == 4 and "no task with id 'nope'" in err


def test_cli_schema_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    from store import commands as c

    rc, out, _ = _cli(capsys, "schema")
    names = set(json.loads(out)["$defs"])
    assert rc == 0 and {cls.__name__ for cls in c.command_classes()} <= names
