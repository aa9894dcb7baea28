"""A checkpoint's generated id: unique in its task by construction, in the order written (the
lineage table's key, so a large task's next checkpoint goes to the end of its range), and
never one an agent gave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_respond import BOT as AGENT
from test_respond import Signed

from store import CommandRejected
from store import commands as c
from store.commands.checkpoints import WriteCheckpoint


def _task(signed: Signed) -> str:
    tid: str = signed.store.execute(
        c.CreateTask(title="report", owner="rita", objective="draft it"), AGENT
    )
    return tid


def test_generated_ids_are_distinct_and_in_the_order_written(
    signed: Signed, tmp_path: Path
) -> None:
    s = signed.store
    tid = _task(signed)
    ids = [s.execute(WriteCheckpoint(task_id=tid, reason="milestone"), AGENT) for _ in range(150)]
    # The agent's CLI, on the signed store as `boris init` made it, prints the next one.
    key = str(tmp_path / "agent.pem")
    rc, out, err = signed.run(
        "--actor", "agent:bot", "--key", key, "checkpoint", tid, "milestone", "--json"
    )
    assert rc == 0, err or out
    ids.append(json.loads(out)["result"])
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)  # random ids: sorted with probability 1/151!
    lineage = signed.ok("checkpoints", tid)["result"]
    assert [c["checkpoint_id"] for c in lineage["checkpoints"]][-len(ids) :] == ids
    assert lineage["heads"] == ids[-1:]
    rc, out, _ = signed.run("verify", "--json")
    assert rc == 0, out


@pytest.mark.parametrize("given", ["ckpt-00000a3f", "ckpt-fb4cedae", "ckpt-0123456789"])
def test_an_id_of_the_generated_form_is_refused_and_nothing_written(
    signed: Signed, given: str
) -> None:
    s = signed.store
    tid = _task(signed)
    before = len(s.events(tid))
    with pytest.raises(CommandRejected, match="form of the ids Boris generates"):
        s.execute(WriteCheckpoint(task_id=tid, reason="milestone", checkpoint_id=given), AGENT)
    assert len(s.events(tid)) == before
    # Any other id an agent gives is kept as given (a framework's own, say).
    mine = s.execute(
        WriteCheckpoint(task_id=tid, reason="milestone", checkpoint_id="ckpt-step-7"), AGENT
    )
    assert mine == "ckpt-step-7"


def test_the_cli_refuses_such_an_id_in_one_line(signed: Signed, tmp_path: Path) -> None:
    tid = _task(signed)
    key = str(tmp_path / "agent.pem")
    argv = ("--actor", "agent:bot", "--key", key, "checkpoint", tid, "milestone")
    rc, out, err = signed.run(*argv, "--id", "ckpt-0000ab12")
    assert rc != 0 and out == ""
    assert err.strip().count("\n") == 0 and "form of the ids Boris generates" in err
    rc, out, err = signed.run(*argv, "--id", "nightly-1")
    assert rc == 0 and out.strip() == "nightly-1", err
