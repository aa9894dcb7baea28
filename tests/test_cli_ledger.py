"""`boris` subcommands for the effect ledger, approvals, checkpoints and stop, on real files."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from store.canonical import digest_of
from store.cli import main

AGENT = ["--actor", "agent:x"]
ANA = ["--actor", "person:ana:Ana"]


class Cli:
    def __init__(self, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.store = ["--store", str(store)]
        self.capsys = capsys

    def run(self, *args: str) -> tuple[int, str, str]:
        rc = main([*self.store, *args])
        out = self.capsys.readouterr()
        return rc, out.out, out.err

    def ok(self, *args: str) -> str:
        rc, out, err = self.run(*args)
        assert rc == 0, err
        assert err == ""
        return out.strip()

    def refused(self, *args: str) -> str:
        rc, out, err = self.run(*args)
        assert rc != 0 and out == ""
        assert err.startswith("boris: ") and err.count("\n") == 1, err
        return err

    def json(self, *args: str) -> Any:
        answer = json.loads(self.ok(*args, "--json"))
        assert answer["ok"] is True
        return answer["result"]


@pytest.fixture(autouse=True)
def _task(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Relative --file and --target paths are taken from the current directory: the workspace.
    monkeypatch.chdir(ws)
    rc = main(
        [
            "--store",
            str(tmp_path / "s"),
            *AGENT,
            "create-task",
            "--id",
            "t",
            "--title",
            "T",
            "--owner",
            "ana",
            "--objective",
            "keep the note",
            "--scope",
            str(ws),
        ]
    )
    assert rc == 0
    capsys.readouterr()


def _cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(tmp_path / "s", capsys)


def _effect(c: Cli, eid: str) -> dict[str, Any]:
    return next(e for e in c.json("effects", "t") if e["id"] == eid)


def _approval_states(c: Cli, *task: str) -> dict[str, str]:
    return {a["id"]: a["state"] for a in c.json("approvals", *task)}


def test_an_unchanged_file_is_absent_and_a_written_one_present(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = _cli(tmp_path, capsys)
    note = ws / "note.md"
    note.write_text("old\n")
    plan = ["plan-effect", "t", "--target", str(note), "--consequence", "Overwrite  note.md\n"]
    assert (
        c.ok(
            *AGENT,
            *plan,
            "--text",
            "new\n",
            "--requires-approval",
            "--policy",
            "writes",
            "--id",
            "e1",
        )
        == "e1"
    )
    err = c.refused(*AGENT, "dispatch", "t", "e1", "--executor", "fs")
    assert "effect e1 requires an approval and has none" in err
    assert (
        c.ok(*AGENT, "request-approval", "t", "--effect", "e1", "--policy", "writes", "--id", "a1")
        == "a1"
    )
    err = c.refused(*AGENT, "approve", "t", "a1")
    assert "decided by a named person, not an agent" in err
    assert _approval_states(c, "t") == {"a1": "pending"}
    assert c.ok(*ANA, "approve", "t", "a1", "--note", "fine") == "approved"
    assert c.ok(*AGENT, "dispatch", "t", "e1", "--executor", "fs") == "1"
    err = c.refused(*AGENT, "dispatch", "t", "e1", "--executor", "fs")
    assert "its last attempt's outcome is unknown" in err
    response = json.dumps({"path": str(note)})
    assert (
        c.ok(*AGENT, "record-response", "t", "e1", "reported_success", "--response-json", response)
        == "unknown"
    )
    # The executor said it wrote the note; the note on disk is unchanged.
    assert c.ok(*AGENT, "reconcile", "t", "e1") == "absent"
    assert note.read_text() == "old\n"
    e1 = _effect(c, "e1")
    assert (e1["id"], e1["effect_id"], e1["kind"], e1["target"]) == (
        "e1",
        "e1",
        "file_write",
        str(note.resolve()),
    )
    assert (e1["stage"], e1["outcome"], e1["consequence"]) == (
        "reconciled",
        "absent",
        "Overwrite note.md",
    )
    assert [
        (a["attempt_no"], a["approval_id"], a["executor"], a["outcome"]) for a in e1["attempts"]
    ] == [(1, "a1", "fs", "absent")]
    assert e1["attempts"][0]["response"] == {"path": str(note), "reported": "reported_success"}
    assert e1["reconciliation"]["verdict"] == "absent"
    assert _approval_states(c, "t") == {"a1": "consumed"}

    # A second effect: the test itself writes the intended content, then it is observed.
    out = ws / "out.md"
    assert (
        c.ok(
            *AGENT,
            "plan-effect",
            "t",
            "--target",
            "out.md",
            "--consequence",
            "create out.md",
            "--text",
            "# Out\n",
            "--id",
            "e2",
        )
        == "e2"
    )
    assert c.ok(*AGENT, "dispatch", "t", "e2", "--executor", "fs") == "1"
    out.write_text("# Out\n")
    assert c.ok(*AGENT, "record-response", "t", "e2", "reported_success") == "unknown"
    obs = c.ok(*AGENT, "observe", "t", "e2")
    assert obs.startswith("obs-")
    assert c.ok(*AGENT, "reconcile", "t", "e2", "--observation", obs) == "present"
    e2 = _effect(c, "e2")
    assert (e2["stage"], e2["outcome"], e2["target"]) == (
        "reconciled",
        "succeeded",
        str(out.resolve()),
    )
    assert [o["observation_id"] for o in e2["observations"]] == [obs]
    assert e2["reconciliation"]["observation_id"] == obs
    assert [a["outcome"] for a in e2["attempts"]] == ["succeeded"]
    human = c.ok("effects", "t").splitlines()
    assert [line.split()[:4] for line in human] == [
        ["e1", "file_write", "reconciled", "absent"],
        ["e2", "file_write", "reconciled", "succeeded"],
    ]


def test_refusals_are_one_line_and_write_nothing(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = _cli(tmp_path, capsys)
    outside = tmp_path / "elsewhere.txt"
    err = c.refused(
        *AGENT, "plan-effect", "t", "--target", str(outside), "--consequence", "x", "--text", "y"
    )
    assert "outside the task's scope" in err
    assert c.json("effects", "t") == []
    assert (
        c.ok(
            *AGENT,
            "plan-effect",
            "t",
            "--target",
            "a.txt",
            "--consequence",
            "write a",
            "--text",
            "a",
            "--id",
            "e1",
        )
        == "e1"
    )
    err = c.refused(*AGENT, "dispatch", "t", "e1", "--executor", "fs", "--inputs-json", "{nope")
    assert "--inputs-json is not valid JSON" in err
    err = c.refused(*AGENT, "dispatch", "t", "e1", "--executor", "fs", "--inputs-json", "[1]")
    assert "--inputs-json must be a JSON object, not list" in err
    err = c.refused(
        *AGENT,
        "request-approval",
        "t",
        "--payload-json",
        "{",
        "--consequence",
        "c",
        "--policy",
        "p",
    )
    assert "--payload-json is not valid JSON" in err
    err = c.refused(*AGENT, "request-approval", "t", "--policy", "p")
    assert "needs --effect ID or --payload-json JSON" in err
    err = c.refused(*AGENT, "dispatch", "t", "e1", "--executor", "fs", "--inputs-json", '{"a": 1}')
    assert "differ from effect e1's prepared object" in err
    assert c.ok(*AGENT, "dispatch", "t", "e1", "--executor", "fs") == "1"
    err = c.refused(*AGENT, "record-response", "t", "e1", "failed", "--response-json", "nope")
    assert "--response-json is not valid JSON" in err
    err = c.refused(*AGENT, "record-response", "t", "e1", "failed")
    assert "a failed attempt needs its error" in err
    err = c.refused(*AGENT, "observe", "t", "e1", "--state-json", "{")
    assert "--state-json is not valid JSON" in err
    err = c.refused(*AGENT, "reconcile", "t", "e1", "--decision", "present", "--note", "looked")
    assert "only a person decides a reconciliation by hand" in err
    # A usage error is one line too.
    err = c.refused("record-response", "t", "e1", "done")
    assert "invalid choice: 'done'" in err
    e1 = _effect(c, "e1")
    assert (e1["stage"], e1["outcome"], len(e1["attempts"])) == ("dispatched", "unknown", 1)
    assert c.refused("effects", "nope") == "boris: no task with id 'nope'\n"


def test_revise_and_cancel(tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = _cli(tmp_path, capsys)
    c.ok(
        *AGENT,
        "plan-effect",
        "t",
        "--target",
        "a.txt",
        "--consequence",
        "write a",
        "--text",
        "a",
        "--requires-approval",
        "--policy",
        "writes",
        "--id",
        "e1",
    )
    c.ok(*AGENT, "request-approval", "t", "--effect", "e1", "--policy", "writes", "--id", "a1")
    before = _effect(c, "e1")["intent"]["prepared_digest"]
    digest = c.ok(
        *AGENT,
        "revise-effect",
        "t",
        "e1",
        "--reason",
        "typo",
        "--text",
        "b",
        "--consequence",
        "write b",
    )
    e1 = _effect(c, "e1")
    assert digest == e1["intent"]["prepared_digest"] != before
    assert (e1["stage"], e1["consequence"]) == ("planned", "write b")
    assert _approval_states(c, "t") == {"a1": "stale"}
    assert c.ok(*AGENT, "cancel-effect", "t", "e1", "--reason", "not needed") == "ok"
    assert _effect(c, "e1")["stage"] == "cancelled"
    err = c.refused(*AGENT, "dispatch", "t", "e1", "--executor", "fs")
    assert "it was cancelled" in err


def _checkpoints(c: Cli) -> dict[str, Any]:
    value: dict[str, Any] = c.json("checkpoints", "t")
    return value


def test_approvals_lineage_final_and_stop(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = _cli(tmp_path, capsys)
    c.ok(
        *AGENT,
        "plan-effect",
        "t",
        "--target",
        "a.txt",
        "--consequence",
        "write a",
        "--text",
        "a",
        "--requires-approval",
        "--policy",
        "writes",
        "--id",
        "e1",
    )
    c.ok(*AGENT, "request-approval", "t", "--effect", "e1", "--policy", "writes", "--id", "used")
    c.ok(*ANA, "approve", "t", "used")
    c.ok(*AGENT, "dispatch", "t", "e1", "--executor", "fs", "--approval", "used")
    payload = {"to": "auditors@example.org", "subject": "preview"}
    ask = [
        "request-approval",
        "t",
        "--payload-json",
        json.dumps(payload),
        "--consequence",
        "mail the preview to the auditors",
        "--policy",
        "mail",
    ]
    assert c.ok(*AGENT, *ask, "--id", "waiting") == "waiting"
    c.ok(*AGENT, *ask, "--id", "late", "--expires-in", "0.001")
    c.ok(*AGENT, *ask, "--id", "no")
    assert c.ok(*ANA, "reject", "t", "no", "--note", "not yet") == "rejected"
    time.sleep(0.05)
    err = c.refused(*ANA, "approve", "t", "late")
    assert "approval late cannot be decided: it expired at" in err
    err = c.refused(*ANA, "approve", "t", "no")
    assert "it was already rejected by ana" in err
    rows = {a["id"]: a for a in c.json("approvals", "t")}
    assert {k: r["state"] for k, r in rows.items()} == {
        "used": "consumed",
        "waiting": "pending",
        "late": "expired",
        "no": "rejected",
    }
    assert {r["task_id"] for r in rows.values()} == {"t"}
    assert rows["used"]["payload_digest"] == _effect(c, "e1")["intent"]["prepared_digest"]
    assert rows["waiting"]["payload_digest"] == digest_of(payload)
    assert rows["waiting"]["approval_id"] == "waiting"
    assert rows["late"]["expires_at"] < rows["waiting"]["expires_at"]
    assert _approval_states(c) == _approval_states(c, "t")  # every task's: only this one

    # Lineage: a milestone, then a handoff written from the initial checkpoint: a fork.
    m1 = c.ok(*AGENT, "checkpoint", "t", "milestone", "--id", "m1")
    lineage = _checkpoints(c)
    initial = lineage["checkpoints"][0]
    assert (initial["reason"], initial["supersedes"]) == ("initial", [])
    assert (lineage["heads"], lineage["forks"]) == ([m1], [])
    err = c.refused(*ANA, "checkpoint", "t", "handoff", "--supersedes", initial["id"])
    assert "a person's checkpoint carries their note" in err
    h1 = c.ok(
        *ANA,
        "checkpoint",
        "t",
        "handoff",
        "--supersedes",
        initial["id"],
        "--id",
        "h1",
        "--note",
        "Bo takes over",
    )
    lineage = _checkpoints(c)
    assert [(k["id"], k["reason"], k["supersedes"]) for k in lineage["checkpoints"]] == [
        (initial["id"], "initial", []),
        ("m1", "milestone", [initial["id"]]),
        ("h1", "handoff", [initial["id"]]),
    ]
    seqs = [k["seq"] for k in lineage["checkpoints"]]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3
    assert (lineage["heads"], lineage["forks"]) == (["m1", "h1"], [["m1", "h1"]])
    assert c.ok("checkpoints", "t").splitlines()[-1].startswith("FORK: heads m1, h1")
    err = c.refused(*AGENT, "checkpoint", "t", "milestone")
    assert "the lineage has forked (heads m1, h1)" in err

    # Final with pending work is refused and says what to do instead.
    err = c.refused(*AGENT, "checkpoint", "t", "final", "--supersedes", m1, "--merge", h1)
    assert "a final checkpoint needs no pending work" in err
    assert "effect e1 is dispatched (unknown)" in err and "approval waiting is pending" in err
    assert "Write a handoff" in err and "(stopped)" in err
    merged = c.ok(
        *AGENT,
        "checkpoint",
        "t",
        "handoff",
        "--supersedes",
        m1,
        "--merge",
        h1,
        "--note",
        "keep the milestone",
    )
    lineage = _checkpoints(c)
    assert (lineage["heads"], lineage["forks"]) == ([merged], [])
    assert lineage["checkpoints"][-1]["merged"] == ["h1"]

    # Stop: the pending approval is revoked, a stopped checkpoint written, dispatch refused.
    c.ok(
        *AGENT,
        "plan-effect",
        "t",
        "--target",
        "b.txt",
        "--consequence",
        "write b",
        "--text",
        "b",
        "--id",
        "e2",
    )
    stopped = c.ok(*ANA, "stop", "t", "--reason", "client withdrew")
    assert stopped.startswith("ckpt-")
    states = _approval_states(c, "t")
    assert (states["used"], states["waiting"], states["no"]) == ("consumed", "revoked", "rejected")
    lineage = _checkpoints(c)
    assert lineage["heads"] == [stopped]
    last = lineage["checkpoints"][-1]
    assert (last["id"], last["reason"], last["supersedes"]) == (stopped, "stopped", [merged])
    assert "Approvals revoked: " in last["note"] and "waiting" in last["note"]
    assert _effect(c, "e2")["stage"] == "cancelled"
    assert c.json("show", "t")["status"] == "stopped"
    err = c.refused(*AGENT, "dispatch", "t", "e2", "--executor", "fs")
    assert "task t is stopped: nothing may be dispatched" in err
    err = c.refused(*AGENT, "request-approval", "t", "--effect", "e1", "--policy", "writes")
    assert "task t is stopped" in err
    human = c.ok("approvals", "t").splitlines()
    assert [line.split()[:3] for line in human] == [
        ["used", "t", "consumed"],
        ["waiting", "t", "revoked"],
        ["late", "t", states["late"]],
        ["no", "t", "rejected"],
    ]


def test_stop_on_a_forked_lineage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = _cli(tmp_path, capsys)
    c.ok(*AGENT, "checkpoint", "t", "milestone", "--id", "m1")
    initial = _checkpoints(c)["checkpoints"][0]["id"]
    c.ok(*AGENT, "checkpoint", "t", "handoff", "--supersedes", initial, "--id", "h1")
    c.ok(*ANA, "stop", "t", "--reason", "enough")


def test_an_absent_effect_needing_approval_can_be_retried(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = _cli(tmp_path, capsys)
    c.ok(
        *AGENT,
        "plan-effect",
        "t",
        "--target",
        "a.txt",
        "--consequence",
        "write a",
        "--text",
        "a",
        "--requires-approval",
        "--policy",
        "writes",
        "--id",
        "e1",
    )
    c.ok(*AGENT, "request-approval", "t", "--effect", "e1", "--policy", "writes", "--id", "a1")
    c.ok(*ANA, "approve", "t", "a1")
    c.ok(*AGENT, "dispatch", "t", "e1", "--executor", "fs")
    c.ok(*AGENT, "record-response", "t", "e1", "reported_success")
    assert c.ok(*AGENT, "reconcile", "t", "e1") == "absent"
    c.ok(*AGENT, "request-approval", "t", "--effect", "e1", "--policy", "writes", "--id", "a2")
