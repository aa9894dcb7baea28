"""`boris decisions`: the window's decision queue from the command line, by the same rules.

The rows are the store's read (`store.reads.decisions`), and `--mine` is the rule the
window's "Mine" filter asks (`store.rules.may_decide`): both are checked against the window's
own code, on both engines."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from cli_args import store_args

from store import Actor, Store
from store import commands as c
from store.cli import main as cli
from store.cli.shapes import Decisions
from store.commands import approvals as ap
from store.commands.checkpoints import StopRun
from store.reads.decisions import decisions
from store.services.demo import fill_demo

ROOT = Path(__file__).resolve().parent.parent
AGENT = Actor(kind="agent", id="drafter-7")
ANA = Actor(kind="person", id="ana")
OLGA = Actor(kind="person", id="olga")


def _queue(store: Store) -> None:
    """A pending approval an agent asked for and one a person asked for, an effect to
    reconcile, a criterion to judge (the demo's), and a run stopped by its owner."""
    fill_demo(store)
    store.execute(
        ap.RequestApproval(
            task_id="note", approval_id="apr-by-ana", payload={"kind": "send", "n": 1},
            consequence="send message 1", policy="test", expires_in_seconds=600,
        ),
        ANA,
    )  # fmt: skip
    store.execute(
        c.CreateTask(task_id="halted", title="Halted run", owner="olga", objective="x"), AGENT
    )
    store.execute(StopRun(task_id="halted", reason="owner's call"), OLGA)


def _json(capsys: pytest.CaptureFixture[str], args: list[str]) -> dict:
    assert cli(args) == 0, capsys.readouterr().err
    answer = json.loads(capsys.readouterr().out)
    assert answer["ok"] is True
    # The documented shape (boris schema: x-outputs.decisions), no field more or less.
    Decisions.model_validate(answer["result"])
    return answer["result"]


def _keys(rows: list[dict]) -> list[tuple[str, str, str]]:
    return [(r["kind"], r["task_id"], r["key"]) for r in rows]


def test_the_queue_is_the_stores_read_in_its_order(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    _queue(store)
    got = _json(capsys, [*store_args(store), "decisions", "--json"])
    want = decisions(store)["decisions"]
    assert _keys(got["decisions"]) == _keys(want)
    assert {r["kind"] for r in got["decisions"]} == {"approval", "reconcile", "judge", "resume"}
    # Approvals first, soonest expiry first (ana's request runs out in 10 minutes).
    assert [r["key"] for r in got["decisions"][:2]] == ["apr-by-ana", "apr-note-mail"]
    assert got["decider"] is None and got["now"]
    first = got["decisions"][0]
    assert first["id"] == "approval:note:apr-by-ana"
    assert first["requester"]["id"] == "ana" and first["expires_at"] > got["now"]


def test_mine_is_the_windows_rule_for_a_person_and_the_authority_table_for_an_agent(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    from boris_desktop.queue.decisions import may_decide

    _queue(store)
    every = decisions(store)["decisions"]
    # A person: what the window's "Mine (I may decide)" shows this reviewer.
    ana = _json(
        capsys, [*store_args(store), "decisions", "--mine", "--actor", "person:ana", "--json"]
    )
    assert ana["decider"] == "person:ana"
    assert _keys(ana["decisions"]) == _keys([d for d in every if may_decide(d, "ana")])
    assert ("approval", "note", "apr-by-ana") not in _keys(ana["decisions"])  # her own request
    assert ("approval", "note", "apr-note-mail") in _keys(ana["decisions"])
    assert ("resume", "halted", "halted") in _keys(ana["decisions"])

    # An agent: no approval and no resume (a person's), but an effect to reconcile by
    # observing it and a criterion to judge on evidence are an agent's too.
    bot = _json(
        capsys, [*store_args(store), "decisions", "--mine", "--actor", "agent:bot", "--json"]
    )
    assert bot["decider"] == "agent:bot"
    assert {r["kind"] for r in bot["decisions"]} == {"reconcile", "judge"}
    assert _keys(bot["decisions"]) == _keys(
        [d for d in every if d["kind"] in {"reconcile", "judge"}]
    )

    # --mine says who asks; without anyone named it refuses in one line (usage, exit 2).
    assert cli([*store_args(store), "decisions", "--mine"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--actor" in err


def test_kind_and_task_filter_as_the_windows_filters_do(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    _queue(store)
    every = decisions(store)["decisions"]
    args = [*store_args(store), "decisions", "--json"]
    judge = _json(capsys, [*args, "--kind", "judge"])
    assert _keys(judge["decisions"]) == _keys([d for d in every if d["kind"] == "judge"])
    two = _json(capsys, [*args, "--kind", "approval", "--kind", "resume"])
    assert {r["kind"] for r in two["decisions"]} == {"approval", "resume"}
    note = _json(capsys, [*args, "--task", "note", "--kind", "approval"])
    assert _keys(note["decisions"]) == [
        ("approval", "note", "apr-by-ana"),
        ("approval", "note", "apr-note-mail"),
    ]
    # A kind that is none, and a task that does not exist: refused, not an empty queue.
    assert cli([*args, "--kind", "approve"]) == 2
    capsys.readouterr()
    assert cli([*args, "--task", "nosuch"]) == 4
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["code"] == "unknown_task"
    assert err == "boris: no task with id 'nosuch'\n"


def test_the_table_a_person_reads(store: Store, tmp_path: Path) -> None:
    """Through the installed `boris`: one line per decision with its kind, task, key, what,
    since when it waits and when it expires."""
    _queue(store)
    boris = str(ROOT / ".venv" / "bin" / "boris")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    out = subprocess.run(
        [boris, *store_args(store), "decisions"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert out[0].split() == ["KIND", "TASK", "KEY", "WHAT", "WAITING", "SINCE", "EXPIRES"]
    rows = {tuple(line.split()[:3]): line for line in out[1:]}
    assert set(rows) == set(_keys(decisions(store)["decisions"]))
    approval = rows[("approval", "note", "apr-by-ana")]
    assert "send message 1" in approval and approval.rstrip().endswith("Z")
    assert rows[("resume", "halted", "halted")].rstrip().endswith("-")  # no expiry

    empty = subprocess.run(
        [boris, *store_args(store), "decisions", "--task", "halted", "--kind", "judge"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    assert empty.stdout == "(no open decisions)\n"
