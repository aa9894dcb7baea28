"""`boris` for programs: with --json one object per answer, refusals with a stable code, category,
message and rule, an exit code per category; help for every option; no write without an actor;
relative paths from the current directory."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, get_args

import pytest

from store import db
from store.cli import build_parser, main
from store.model import BUDGET_COUNTERS, EvidenceKind
from store.services import answers

PERSON = ["--actor", "person:rita"]
AGENT = ["--actor", "agent:bot"]


class Cli:
    def __init__(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.store = ["--store", str(tmp_path / "s")]
        self.capsys = capsys

    def run(self, *args: str) -> tuple[int, Any, str]:
        """Exit code, the one JSON object on stdout, stderr."""
        rc = main([*self.store, "--json", *args])
        out = self.capsys.readouterr()
        return rc, json.loads(out.out), out.err

    def ok(self, *args: str) -> Any:
        rc, answer, err = self.run(*args)
        assert rc == 0, err
        assert answer["ok"] is True and "result" in answer
        return answer

    def refused(self, *args: str) -> dict[str, Any]:
        rc, answer, err = self.run(*args)
        assert answer["ok"] is False
        error = answer["error"]
        assert set(error) == {"code", "category", "message", "rule", "exit_code", "details"}
        assert rc == error["exit_code"] == answers.EXIT_CODES[error["category"]]
        # The person reading stderr gets the same message on one line.
        assert err.endswith(f"boris: {error['message']}\n")
        return error


@pytest.fixture
def cli(tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    c = Cli(tmp_path, capsys)
    c.ok(*AGENT, "create-task", "--id", "t", "--title", "T", "--owner", "rita", "--objective", "x",
         "--scope", ".")  # fmt: skip
    return c


@pytest.fixture(autouse=True)
def _in_workspace(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws)


def test_every_result_is_one_object(cli: Cli, ws: Path) -> None:
    (ws / "a.txt").write_text("hello\n")
    assert cli.ok(*AGENT, "amend", "t", "--text", "x", "--reason", "r")["result"] == 2
    assert cli.ok(*AGENT, "add-criterion", "t", "--text", "c")["result"] == "C1"
    art = cli.ok(*AGENT, "record-artifact", "t", "a", "--file", "a.txt")["result"]
    assert art["version"] == 1
    planned = cli.ok(
        *AGENT, "plan-effect", "t", "--target", "out.txt", "--consequence", "c", "--text", "x"
    )
    # plan-effect says the prepared digest, as revise-effect does.
    assert planned["effect_id"] == planned["result"]
    assert planned["prepared_digest"].startswith("sha256:")
    revised = cli.ok(
        *AGENT, "revise-effect", "t", planned["result"], "--reason", "r", "--text", "y"
    )
    assert revised["result"] == revised["prepared_digest"] != planned["prepared_digest"]
    for read in (["tasks"], ["show", "t"], ["events", "t"], ["effects", "t"], ["approvals"]):
        cli.ok(*read)
    assert cli.ok("checkpoints", "t")["result"]["heads"] == []
    assert cli.ok("verify")["result"]["ok"] is True
    assert cli.ok("resume", "t")["result"]["task_id"] == "t"


# --- refusals, one per category --------------------------------------------------------


def test_usage(cli: Cli) -> None:
    bad_flag = cli.refused("show", "t", "--colour")
    assert (bad_flag["code"], bad_flag["category"], bad_flag["exit_code"]) == ("usage", "usage", 2)
    not_json = cli.refused(
        *AGENT, "request-approval", "t", "--payload-json", "[1]", "--consequence", "c",
        "--policy", "p",
    )  # fmt: skip
    assert not_json["code"] == "usage" and "must be a JSON object" in not_json["message"]
    invalid = cli.refused(
        *AGENT, "request-approval", "t", "--payload-json", "{}", "--consequence", "c",
        "--policy", "p", "--expires-in", "-1",
    )  # fmt: skip
    assert (invalid["code"], invalid["category"]) == ("invalid_input", "usage")
    assert invalid["details"]["field"] == "expires_in_seconds"
    wrong_kind = cli.refused(*AGENT, "attach-evidence", "t", "C1", "--kind", "vibes", "--text", "x")
    assert wrong_kind["code"] == "usage" and "command_output" in wrong_kind["message"]


def test_refused_carries_the_rule(cli: Cli) -> None:
    outside = cli.refused(*AGENT, "record-artifact", "t", "p", "--file", "/etc/passwd")
    assert (outside["code"], outside["rule"], outside["exit_code"]) == (
        "scope_violation",
        "within_scope",
        1,
    )
    apr = cli.ok(
        *AGENT, "request-approval", "t", "--payload-json", '{"send": 1}', "--consequence", "c",
        "--policy", "p",
    )["result"]  # fmt: skip
    by_agent = cli.refused(*AGENT, "approve", "t", apr)
    assert (by_agent["code"], by_agent["rule"]) == ("authority_refused", "approval_is_a_persons")
    cli.ok(*AGENT, "add-criterion", "t", "--text", "c")
    final = cli.refused(*AGENT, "checkpoint", "t", "final")
    assert (final["code"], final["rule"]) == ("pending_work", "final_has_no_pending_work")
    assert "criterion C1 is unverified" in final["details"]["pending"]


def test_not_found(cli: Cli, tmp_path: Path) -> None:
    nope = cli.refused("show", "nope")
    assert (nope["code"], nope["category"], nope["exit_code"]) == ("unknown_task", "not_found", 4)
    assert nope["details"]["task_id"] == "nope"
    missing = cli.refused("--store", str(tmp_path / "none"), "tasks")
    assert missing["code"] == "store_missing" and missing["exit_code"] == 4
    no_file = cli.refused(*AGENT, "ingest", str(tmp_path / "nothing.jsonl"))
    assert no_file["code"] == "file_not_found" and no_file["exit_code"] == 4
    assert no_file["details"]["where"] == str(tmp_path / "nothing.jsonl")


def test_integrity(cli: Cli, tmp_path: Path) -> None:
    cli.ok(*AGENT, "add-criterion", "t", "--text", "c")
    cli.ok(*AGENT, "attach-evidence", "t", "C1", "--kind", "review", "--text", "looked")
    for blob in (tmp_path / "s" / "blobs").rglob("*"):
        if blob.is_file():
            blob.unlink()
    problems = cli.refused("verify")
    assert (problems["code"], problems["category"], problems["exit_code"]) == (
        "integrity_problems",
        "integrity",
        3,
    )
    assert problems["details"]["report"]["problems"][0]["kind"] == "blob_missing"
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "boris.sqlite").write_bytes(b"not a database at all" * 10)
    bad = cli.refused("--store", str(corrupt), "tasks")
    assert (bad["code"], bad["exit_code"]) == ("store_corrupt", 3)


def test_busy(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 200)
    holder = sqlite3.connect(tmp_path / "s" / "boris.sqlite", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        busy = cli.refused(*AGENT, "add-criterion", "t", "--text", "c")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (busy["code"], busy["category"], busy["exit_code"]) == ("busy", "busy", 5)


def test_internal(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from store.store import Store

    def broken(self: Store) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(Store, "tasks", broken)
    rc = main([*cli.store, "--json", "tasks"])
    out = cli.capsys.readouterr()
    error = json.loads(out.out)["error"]
    assert (rc, error["code"], error["category"]) == (70, "internal", "internal")
    assert "RuntimeError: a bug" in error["message"]
    assert "Traceback" in out.err  # a bug shows where it is


def test_without_json_stdout_stays_empty_on_a_refusal(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*cli.store, "show", "nope"]) == 4
    out = capsys.readouterr()
    assert out.out == "" and out.err == "boris: no task with id 'nope'\n"


# --- the actor is never guessed ------------------------------------------------------------


def test_a_write_without_an_actor_is_refused_with_the_line_to_add(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", "rita")
    before = len(cli.ok("events", "t")["result"])
    nobody = cli.refused("add-criterion", "t", "--text", "c")
    assert (nobody["code"], nobody["category"], nobody["exit_code"]) == (
        "actor_required",
        "usage",
        2,
    )
    assert "--actor person:rita" in nobody["message"] and "BORIS_ACTOR" in nobody["message"]
    assert len(cli.ok("events", "t")["result"]) == before
    # Refused before stdin is read: nothing waits for input that would be thrown away.
    assert cli.refused("record-artifact", "t", "a")["code"] == "actor_required"
    monkeypatch.setenv("BORIS_ACTOR", "agent:from-env")
    cli.ok("add-criterion", "t", "--text", "c")
    assert cli.ok("events", "t")["result"][-1]["actor"] == {
        "kind": "agent",
        "id": "from-env",
        "name": "",
    }
    bogus = cli.refused("--actor", "robot:x", "add-criterion", "t", "--text", "d")
    assert bogus["category"] == "usage" and "kind:id" in bogus["message"]


# --- paths -------------------------------------------------------------------------------


def test_relative_paths_are_taken_from_the_current_directory(
    cli: Cli, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = ws / "docs"
    sub.mkdir()
    (sub / "guide.md").write_text("# Guide\n")
    monkeypatch.chdir(sub)
    art = cli.ok(*AGENT, "record-artifact", "t", "guide", "--file", "guide.md")["result"]
    assert art["version"] == 1
    missing = cli.refused(*AGENT, "record-artifact", "t", "x", "--file", "nope.md")
    assert f"no readable file at {sub / 'nope.md'}" in missing["message"]
    eff = cli.ok(
        *AGENT, "plan-effect", "t", "--target", "out.md", "--consequence", "c", "--text", "x"
    )
    effects = cli.ok("effects", "t")["result"]
    assert [e["target"] for e in effects if e["id"] == eff["result"]] == [str(sub / "out.md")]


# --- help ------------------------------------------------------------------------------------


def test_every_option_has_help_and_choices_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    subs = parser.subcommands
    assert {"mcp", "plan-effect", "attach-evidence", "charge"} <= set(subs)
    for action in parser.options:
        assert action.help, f"boris {action.dest} has no help"
    for name, sub in subs.items():
        for action in sub.options:
            assert action.help, f"boris {name} {action.dest} has no help"
    kinds = next(a for a in subs["attach-evidence"].options if a.dest == "kind")
    assert list(kinds.choices or []) == list(get_args(EvidenceKind))
    for name in ("charge", "set-budget"):
        counter = next(a for a in subs[name].options if a.dest == "counter")
        assert list(counter.choices or []) == list(BUDGET_COUNTERS)
    assert main(["attach-evidence", "--help"]) == 0
    text = capsys.readouterr().out
    assert "command_output" in text and "screenshot" in text
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    assert "exit codes" in top and "70" in top


def test_ingest_keeps_the_refusals_type_and_names_the_command(cli: Cli, tmp_path: Path) -> None:
    lines = tmp_path / "cmds.jsonl"
    lines.write_text(
        json.dumps({"type": "add_criterion", "task_id": "t", "text": "a"})
        + "\n"
        + json.dumps(
            {
                "type": "record_artifact",
                "task_id": "t",
                "name": "p",
                "content": {"path": "/etc/passwd"},
            }
        )
        + "\n"
    )
    error = cli.refused(*AGENT, "ingest", str(lines))
    assert (error["code"], error["rule"], error["exit_code"]) == (
        "scope_violation",
        "within_scope",
        1,
    )
    assert error["message"].startswith("command 2 (record_artifact): ")
    assert error["message"].endswith("nothing was written")
    assert cli.ok("show", "t")["result"]["criteria"] == []
