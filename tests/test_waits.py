"""Scheduled waits (issue 34): waiting is state, not suspended memory.

A wait is recorded with what it waits for, the next time to consider it on the database's
clock, a reservation and a cancellation condition; it survives a new Store and a new
process; it comes due on the database's clock; the resume brief lists it to *re-evaluate*,
never to execute; stop retires it and releases its reservation; a person cancels it; bad
input is refused with nothing written; and a rebuild gives the rows the writes made. Every
test runs on SQLite and PostgreSQL (the `store` fixture).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_args import store_args
from mcp import ClientSession, StdioServerParameters, stdio_client
from pydantic import ValidationError
from test_desktop_actions import WAIT_MS

from store import Actor, Store, rules
from store import commands as c
from store.commands import approvals as ap
from store.errors import AuthorityRefused, CommandRejected, UnknownWait, WaitOver
from store.reads.decisions import decisions
from store.services.resume import brief_markdown, resume_brief

ROOT = Path(__file__).resolve().parent.parent
AGENT = Actor(kind="agent", id="drafter-7")
OTHER = Actor(kind="agent", id="helper-2")
RITA = Actor(kind="person", id="rita")
TID = "upload"


@pytest.fixture
def tid(store: Store, ws: Path) -> str:
    store.execute(
        c.CreateTask(
            task_id=TID, title="Upload the report", owner="rita", objective="Upload it",
            scope_paths=[str(ws)],
        ),
        AGENT,
    )  # fmt: skip
    store.execute(c.SetBudget(task_id=TID, counter="tool_calls", limit=10), RITA)
    return TID


def _wait(store: Store, wait_id: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [x for x in store.task(TID)["waits"] if x["wait_id"] == wait_id]
    (w,) = found
    return w


def _reserved(store: Store, counter: str = "tool_calls") -> float:
    (b,) = [x for x in store.task(TID)["budgets"] if x["counter"] == counter]
    return float(b["reserved"])


def _until_due(store: Store, wait_id: str, within_s: float = 10.0) -> dict[str, Any]:
    give_up = time.monotonic() + within_s
    while time.monotonic() < give_up:
        w = _wait(store, wait_id)
        if w["due"]:
            return w
        time.sleep(0.05)
    raise AssertionError(f"wait {wait_id} never came due")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _boris(store: Store, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real `boris`, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *store_args(store)],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


# --- recorded, durable, due --------------------------------------------------------------------


def test_a_wait_is_recorded_and_survives_a_new_store_and_a_new_process(
    store: Store, tid: str, open_store: Callable[..., Store]
) -> None:
    wid = store.execute(
        c.RecordWait(
            task_id=tid, kind="rate_limit", ref="api.example.org", after_seconds=3600,
            reserve={"counter": "tool_calls", "amount": 2},  # type: ignore[arg-type]
            cancel_if="the quota is raised", wait_id="quota", note="429 from the API",
        ),
        AGENT,
    )  # fmt: skip
    assert wid == "quota"
    first = _wait(store, wid)
    store.close()

    with open_store() as again:  # a new Store object: nothing held in memory
        w = _wait(again, wid)
        assert w == first
        assert (w["state"], w["due"], w["clock"], w["kind"]) == (
            "open",
            False,
            "database",
            "rate_limit",
        )
        assert w["waiting_for"] == "rate limit api.example.org"
        assert w["reservation"] == {"counter": "tool_calls", "amount": 2.0, "held": True}
        assert w["condition"]["kind"] == "text"
        assert w["condition"]["text"] == "the quota is raised"
        assert w["recorded_by"]["id"] == "drafter-7"
        assert _reserved(again) == 2.0

        # A new process reads the same wait from the record alone.
        done = _boris(again, "waits", tid, "--json")
        assert done.returncode == 0, done.stderr
        read = json.loads(done.stdout)["result"]
        assert [x["wait_id"] for x in read["waits"]] == ["quota"]
        assert read["waits"][0]["not_before"] == first["not_before"]
        assert read["waits"][0]["state"] == "open"


_KILLED_WRITER = """
import os, signal, sys
from store import Actor, Store
from store import commands as c
from store.commands import execute

s = Store.open(sys.argv[1], url=sys.argv[2] or None)
agent = Actor(kind="agent", id="drafter-7")
reserve = {"counter": "tool_calls", "amount": 1}
s.execute(c.RecordWait(task_id=sys.argv[3], kind="retry", after_seconds=0.2, wait_id="kept",
                       reserve=reserve), agent)
with s.transaction() as tx:
    execute(tx, c.RecordWait(task_id=sys.argv[3], kind="retry", after_seconds=0.2,
                             wait_id="lost", reserve=reserve), agent)
    os.kill(os.getpid(), signal.SIGKILL)  # inside the transaction: before its commit
"""


def test_a_writer_killed_leaves_each_wait_whole_or_absent(
    store: Store, tid: str, store_url: str | None
) -> None:
    """SIGKILL after one wait committed and inside the next one's transaction: the first is
    there with its reservation, due on the database's clock for whoever comes next; of the
    second neither the wait nor its reservation is."""
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(store.location.directory), store_url or "", tid],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    assert [w["wait_id"] for w in store.task(tid)["waits"]] == ["kept"]
    assert _reserved(store) == 1.0
    assert _until_due(store, "kept")["state"] == "open"
    assert [i["wait_id"] for i in resume_brief(store, tid)["re_evaluate"]] == ["kept"]
    verified = _boris(store, "verify", tid)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_after_seconds_is_resolved_on_the_database_clock_and_comes_due_on_it(
    store: Store, tid: str
) -> None:
    wid = store.execute(
        c.RecordWait(task_id=tid, kind="status_check", ref="job-7", after_seconds=0.5), AGENT
    )
    (recorded,) = store.events(tid, types=["wait.recorded"])
    # Resolved inside the transaction, against the database's now (the event's own time).
    at = dt.datetime.fromisoformat(recorded["at"])
    assert recorded["payload"]["not_before"] == rules.store_time(at + dt.timedelta(seconds=0.5))
    assert recorded["payload"]["clock"] == "database"
    # Not due before its time, judged at the moment the read was made (the state's `now`):
    # a loaded machine may pass not_before between this read and any later clock reading.
    state = store.task(tid)
    (w,) = [x for x in state.waits if x.wait_id == wid]
    assert w.due == rules.wait_due(w.not_before, state.now)
    assert not rules.wait_due(w.not_before, recorded["at"])
    due = _until_due(store, wid)
    assert due["not_before"] <= store.now()
    assert due["state"] == "open"  # due is not done: it waits to be considered


def test_an_absolute_time_is_kept_in_the_stores_form(store: Store, tid: str) -> None:
    wid = store.execute(
        c.RecordWait(task_id=tid, kind="time", not_before="2030-01-02T03:04:05+02:00"), AGENT
    )
    assert _wait(store, wid)["not_before"] == "2030-01-02T01:04:05.000000Z"
    assert _wait(store, wid)["due"] is False


def test_a_settled_wait_is_rescheduled_or_done(store: Store, tid: str) -> None:
    wid = store.execute(c.RecordWait(task_id=tid, kind="retry", after_seconds=0), AGENT)
    _until_due(store, wid)
    assert (
        store.execute(
            c.SettleWait(task_id=tid, wait_id=wid, result="reschedule", after_seconds=3600),
            AGENT,
        )
        == "open"
    )
    w = _wait(store, wid)
    assert (w["due"], w["considered"]) == (False, 1)
    assert store.execute(c.SettleWait(task_id=tid, wait_id=wid, result="done"), OTHER) == "settled"
    assert _wait(store, wid)["state"] == "settled"
    with pytest.raises(WaitOver):
        store.execute(c.SettleWait(task_id=tid, wait_id=wid, result="done"), AGENT)


# --- the brief: re-evaluate, never execute -------------------------------------------------------

_ACTING_WORDS = ("execute", "dispatch", " do ", "do it", "run it", "send", "perform")


def test_the_brief_lists_a_due_wait_to_re_evaluate_never_to_execute(store: Store, tid: str) -> None:
    later = store.execute(c.RecordWait(task_id=tid, kind="time", after_seconds=3600), AGENT)
    due = store.execute(
        c.RecordWait(
            task_id=tid, kind="retry", ref="upload-1", after_seconds=0.2,
            reserve={"counter": "tool_calls", "amount": 1},  # type: ignore[arg-type]
        ),
        AGENT,
    )  # fmt: skip
    _until_due(store, due)
    b = resume_brief(store, tid)
    (item,) = b["re_evaluate"]
    assert item["wait_id"] == due
    assert item["action"].startswith(f"re-evaluate wait {due}")
    assert item["command"] == {"type": "settle_wait", "task_id": tid, "wait_id": due}
    text = item["action"].lower()
    assert not [w for w in _ACTING_WORDS if w in text], text
    # Not among the things to do, and the wait not yet due is only listed, not to consider.
    said = [json.dumps(a.to_json()) for a in b["next_actions"]]
    assert not [a for a in said if due in a or later in a]
    assert {w["id"]: w["due"] for w in b["waits"]} == {later: False, due: True}

    md = brief_markdown(b)
    section = md.split("## Re-evaluate (due waits)\n", 1)[1].split("\n## ", 1)[0]
    assert f"re-evaluate wait {due}" in section and later not in section
    actions = md.split("## Next actions\n", 1)[1].split("\n## ", 1)[0]
    assert due not in actions and later not in actions
    assert not [w for w in _ACTING_WORDS if w in section.lower()], section


# --- stop, cancel, conditions ---------------------------------------------------------------


def test_stop_retires_every_wait_and_releases_its_reservation_in_one_transaction(
    store: Store, tid: str
) -> None:
    for wid, amount in (("w1", 2.0), ("w2", 3.0)):
        store.execute(
            c.RecordWait(
                task_id=tid, kind="rate_limit", after_seconds=60, wait_id=wid,
                reserve={"counter": "tool_calls", "amount": amount},  # type: ignore[arg-type]
            ),
            AGENT,
        )  # fmt: skip
    settled = store.execute(c.RecordWait(task_id=tid, kind="time", after_seconds=0), AGENT)
    store.execute(c.SettleWait(task_id=tid, wait_id=settled, result="done"), AGENT)
    assert _reserved(store) == 5.0
    stop_seq = store.task(tid)["last_seq"]

    store.execute(c.StopRun(task_id=tid, reason="the owner's call"), RITA)

    assert {w["wait_id"]: w["state"] for w in store.task(tid)["waits"]} == {
        "w1": "retired",
        "w2": "retired",
        settled: "settled",
    }
    assert _wait(store, "w1")["end_reason"] == "stopped: the owner's call"
    assert _wait(store, "w1")["reservation"]["held"] is False
    assert _reserved(store) == 0.0
    after = store.events(tid, after_seq=stop_seq)
    # One transaction: every event of the stop has the same database time.
    assert len({e["at"] for e in after}) == 1
    types = [e["type"] for e in after]
    assert types.count("wait.ended") == 2 and types.count("budget.released") == 2
    assert types.index("run.stopped") > max(i for i, x in enumerate(types) if x == "wait.ended")
    (stopped,) = [e for e in after if e["type"] == "run.stopped"]
    assert "Waits retired (reservations released): w1, w2." in stopped["payload"]["account"]
    assert resume_brief(store, tid)["re_evaluate"] == []
    with pytest.raises(CommandRejected, match="stopped"):
        store.execute(c.RecordWait(task_id=tid, kind="time", after_seconds=1), AGENT)


def test_closing_a_task_retires_its_waits_too(store: Store, tid: str) -> None:
    wid = store.execute(
        c.RecordWait(
            task_id=tid,
            kind="retry",
            after_seconds=60,
            reserve={"counter": "tool_calls", "amount": 1},  # type: ignore[arg-type]
        ),
        AGENT,
    )
    store.execute(c.ChargeBudget(task_id=tid, counter="tool_calls", amount=10), AGENT)
    assert store.task(tid)["status"] == "budget_exhausted"  # closed without a stop
    store.execute(c.CloseTask(task_id=tid, status="failed", reason="not worth it"), RITA)
    w = _wait(store, wid)
    assert (w["state"], w["end_reason"]) == ("retired", "closed as failed: not worth it")
    assert _reserved(store) == 0.0


def test_a_person_cancels_a_wait_with_a_reason_and_another_agent_cannot(
    store: Store, tid: str
) -> None:
    wid = store.execute(
        c.RecordWait(
            task_id=tid, kind="retry", after_seconds=60,
            reserve={"counter": "tool_calls", "amount": 1},  # type: ignore[arg-type]
        ),
        AGENT,
    )  # fmt: skip
    with pytest.raises(AuthorityRefused) as refused:
        store.execute(c.CancelWait(task_id=tid, wait_id=wid, reason="mine now"), OTHER)
    assert refused.value.rule == "wait_cancelled_by_its_recorder_or_a_person"
    with pytest.raises(AuthorityRefused, match="says why"):
        store.execute(c.CancelWait(task_id=tid, wait_id=wid), RITA)
    assert store.execute(c.CancelWait(task_id=tid, wait_id=wid, reason="not needed"), RITA) == (
        "cancelled"
    )
    w = _wait(store, wid)
    assert (w["state"], w["end_reason"], w["ended_by"]["id"]) == ("cancelled", "not needed", "rita")
    assert _reserved(store) == 0.0
    with pytest.raises(WaitOver):
        store.execute(c.CancelWait(task_id=tid, wait_id=wid, reason="again"), RITA)
    with pytest.raises(UnknownWait):
        store.execute(c.CancelWait(task_id=tid, wait_id="nope", reason="x"), RITA)
    # The agent that recorded a wait cancels its own, no reason needed.
    own = store.execute(c.RecordWait(task_id=tid, kind="time", after_seconds=60), AGENT)
    assert store.execute(c.CancelWait(task_id=tid, wait_id=own), AGENT) == "cancelled"


def test_a_rejected_approval_retires_the_wait_it_cancels(store: Store, tid: str) -> None:
    aid = store.execute(
        ap.RequestApproval(
            task_id=tid, payload={"upload": "report.pdf"}, consequence="upload the report",
            policy="uploads", approval_id="apr-1",
        ),
        AGENT,
    )  # fmt: skip
    wid = store.execute(
        c.RecordWait(
            task_id=tid, kind="retry", ref="upload", after_seconds=60,
            reserve={"counter": "tool_calls", "amount": 1},  # type: ignore[arg-type]
            cancel_if=f"approval-rejected:{aid}",
        ),
        AGENT,
    )  # fmt: skip
    assert _wait(store, wid)["condition"]["words"] == f"cancel if approval {aid} is rejected"
    store.execute(ap.DecideApproval(task_id=tid, approval_id=aid, decision="rejected"), RITA)
    # Read: retired at once (judged when read, as an approval's expiry)...
    w = _wait(store, wid)
    assert w["state"] == "retired" and w["end_reason"] == (
        f"its condition came true: approval {aid} was rejected"
    )
    assert w["due"] is False and w["reservation"]["held"] is True
    # ...and written, with the reservation released, by the next wait command on the task.
    store.execute(c.RecordWait(task_id=tid, kind="time", after_seconds=60), AGENT)
    (ended,) = store.events(tid, types=["wait.ended"])
    assert ended["payload"]["wait_id"] == wid and ended["payload"]["state"] == "retired"
    assert _wait(store, wid)["reservation"]["held"] is False
    assert _reserved(store) == 0.0
    # A condition already true would end the wait at once: refused.
    with pytest.raises(CommandRejected, match="over at once"):
        store.execute(
            c.RecordWait(
                task_id=tid, kind="time", after_seconds=1, cancel_if=f"approval-rejected:{aid}"
            ),
            AGENT,
        )
    # A condition on an approval the task does not have would never come true: refused.
    with pytest.raises(CommandRejected, match="no approval"):
        store.execute(
            c.RecordWait(
                task_id=tid, kind="time", after_seconds=1, cancel_if="approval-rejected:nope"
            ),
            AGENT,
        )


# --- refused input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"after_seconds": -1},
        {"after_seconds": float("inf")},
        {"after_seconds": float("nan")},
        {"after_seconds": 1e12},
        {"not_before": "2030-01-01T00:00:00"},  # no zone: which clock?
        {"not_before": "next tuesday"},
        {"not_before": "2030-01-01T00:00:00Z", "after_seconds": 1},
        {},
        {"after_seconds": 1, "ref": "a\x00b"},
        {"after_seconds": 1, "note": "\x00"},
        {"after_seconds": 1, "cancel_if": "approval-rejected:\x00"},
        {"after_seconds": 1, "reserve": {"counter": "tool_calls", "amount": float("inf")}},
        {"after_seconds": 1, "reserve": {"counter": "tool_calls", "amount": -1}},
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    store: Store, tid: str, fields: dict[str, Any]
) -> None:
    before = store.data_version()
    with pytest.raises((ValidationError, CommandRejected)):
        store.execute(
            c.RecordWait.model_validate({"task_id": tid, "kind": "retry", **fields}), AGENT
        )
    assert store.data_version() == before


def test_a_reservation_follows_reserve_budgets_rules(store: Store, tid: str) -> None:
    before = store.data_version()
    with pytest.raises(CommandRejected, match="only 10 left"):
        store.execute(
            c.RecordWait(
                task_id=tid, kind="retry", after_seconds=1,
                reserve={"counter": "tool_calls", "amount": 11},  # type: ignore[arg-type]
            ),
            AGENT,
        )  # fmt: skip
    with pytest.raises(CommandRejected, match="unknown budget counter"):
        store.execute(
            c.RecordWait(
                task_id=tid, kind="retry", after_seconds=1,
                reserve={"counter": "coffee", "amount": 1},  # type: ignore[arg-type]
            ),
            AGENT,
        )  # fmt: skip
    assert store.data_version() == before


# --- the decision queue ----------------------------------------------------------------------


def test_the_queue_lists_a_wait_only_a_person_can_move(store: Store, tid: str) -> None:
    aid = store.execute(
        ap.RequestApproval(
            task_id=tid, payload={"x": 1}, consequence="x", policy="p", approval_id="apr-q"
        ),
        AGENT,
    )
    store.execute(
        c.RecordWait(task_id=tid, kind="approval", ref=aid, after_seconds=0, wait_id="for-apr"),
        AGENT,
    )
    store.execute(
        c.RecordWait(
            task_id=tid, kind="retry", after_seconds=0, wait_id="retry-1",
            reserve={"counter": "tool_calls", "amount": 1},  # type: ignore[arg-type]
        ),
        AGENT,
    )  # fmt: skip
    kinds = [(d["kind"], d["key"]) for d in decisions(store)["decisions"]]
    assert ("approval", aid) in kinds  # the approval is in the queue as itself
    assert not [k for k in kinds if k[0] == "wait"]  # due, but the agent's to re-evaluate
    # The budget the retry waits to spend runs out: only a person raises it, or cancels.
    store.execute(c.ChargeBudget(task_id=tid, counter="tool_calls", amount=10), AGENT)
    waits = [d for d in decisions(store)["decisions"] if d["kind"] == "wait"]
    assert [(d["task_id"], d["key"]) for d in waits] == [(tid, "retry-1")]
    assert "tool_calls budget it reserved from is exhausted" in waits[0]["why"]
    assert rules.may_decide("wait", None, "person", "rita")
    assert not rules.may_decide("wait", None, "agent", "drafter-7")
    store.execute(c.CancelWait(task_id=tid, wait_id="retry-1", reason="give up"), RITA)
    assert not [d for d in decisions(store)["decisions"] if d["kind"] == "wait"]


def test_the_rule_for_a_wait_nobody_came_back_to() -> None:
    now = "2026-12-06T12:00:00.000000Z"
    hour_ago = "2026-12-06T10:59:59.000000Z"
    minute_ago = "2026-12-06T11:59:00.000000Z"
    assert rules.wait_needs_person("retry", "open", hour_ago, now, None) is not None
    assert rules.wait_needs_person("retry", "open", minute_ago, now, None) is None
    assert rules.wait_needs_person("approval", "open", hour_ago, now, "tool_calls") is None
    assert rules.wait_needs_person("time", "settled", hour_ago, now, None) is None
    assert rules.wait_needs_person("time", "open", minute_ago, now, "effects") is not None


# --- rebuild ---------------------------------------------------------------------------------


def test_rebuild_equals_incremental(store: Store, tid: str) -> None:
    aid = store.execute(
        ap.RequestApproval(task_id=tid, payload={"x": 1}, consequence="x", policy="p"), AGENT
    )
    a = store.execute(
        c.RecordWait(
            task_id=tid, kind="retry", after_seconds=0,
            reserve={"counter": "tool_calls", "amount": 2},  # type: ignore[arg-type]
            cancel_if=f"approval-rejected:{aid}",
        ),
        AGENT,
    )  # fmt: skip
    store.execute(c.SettleWait(task_id=tid, wait_id=a, result="reschedule", after_seconds=5), AGENT)
    b = store.execute(c.RecordWait(task_id=tid, kind="time", after_seconds=9), AGENT)
    store.execute(c.CancelWait(task_id=tid, wait_id=b, reason="no"), RITA)
    store.execute(ap.DecideApproval(task_id=tid, approval_id=aid, decision="rejected"), RITA)
    store.execute(c.RecordWait(task_id=tid, kind="status_check", after_seconds=1), AGENT)
    store.execute(c.StopRun(task_id=tid, reason="enough"), RITA)
    incremental = store.projection_dump(tid)
    assert incremental["waits"] and incremental["budgets"]
    store.rebuild(tid)
    assert store.projection_dump(tid) == incremental


# --- CLI and MCP -----------------------------------------------------------------------------


def test_the_cli_records_lists_settles_and_cancels(store: Store, tid: str) -> None:
    agent, person = ["--actor", "agent:drafter-7"], ["--actor", "person:rita"]
    done = _boris(
        store, *agent, "wait", tid, "--for", "rate_limit", "--ref", "api.example.org",
        "--after", "0.2", "--reserve", "tool_calls=1", "--cancel-if", "the quota is raised",
        "--id", "quota",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "quota"
    _until_due(store, "quota")
    listed = _boris(store, "waits", tid)
    assert listed.returncode == 0 and "quota" in listed.stdout and "due since" in listed.stdout
    again = _boris(store, *agent, "settle-wait", tid, "quota", "--after", "3600")
    assert again.returncode == 0, again.stderr
    assert _wait(store, "quota")["due"] is False
    refused = _boris(store, *person, "cancel-wait", tid, "quota")
    assert refused.returncode == 1 and "says why" in refused.stderr
    cancelled = _boris(store, *person, "cancel-wait", tid, "quota", "--reason", "raised", "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["result"] == "cancelled"
    for bad in (["--after", "-5"], ["--after", "nan"], ["--not-before", "2030-01-01T00:00:00"]):
        bad_run = _boris(store, *agent, "wait", tid, "--for", "time", *bad)
        assert bad_run.returncode == 2, bad_run.stderr
    bad_reserve = _boris(
        store, *agent, "wait", tid, "--for", "time", "--after", "1", "--reserve", "x"
    )
    assert bad_reserve.returncode == 2 and "COUNTER=AMOUNT" in bad_reserve.stderr


def test_an_agent_records_lists_and_cancels_a_wait_over_mcp(store: Store, tid: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", *store_args(store), "--actor", "agent:drafter-7"],
        env=_env(),
        cwd=str(ROOT),
    )

    async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
        result = await session.call_tool(tool, arguments)
        return result.structured_content

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"record_wait", "settle_wait", "cancel_wait", "list_waits"} <= names
            recorded = await call(
                session, "record_wait", task_id=tid, kind="status_check", ref="job-7",
                after_seconds=0.2, wait_id="job",
            )  # fmt: skip
            assert recorded == {"ok": True, "result": "job"}
            listed = await call(session, "list_waits", task_id=tid)
            assert [w["wait_id"] for w in listed["result"]["waits"]] == ["job"]
            refused = await call(session, "record_wait", task_id=tid, kind="time", after_seconds=-1)
            assert refused["ok"] is False
            cancelled = await call(session, "cancel_wait", task_id=tid, wait_id="job")
            assert cancelled == {"ok": True, "result": "cancelled"}

    anyio.run(scenario)
    assert _wait(store, "job")["state"] == "cancelled"


# --- an open wait is pending work ------------------------------------------------------------


@pytest.mark.parametrize("end", ["cancel", "settle"])
def test_an_open_wait_blocks_a_final_checkpoint_until_it_ends(
    store: Store, tid: str, end: str
) -> None:
    from store.errors import PendingWork

    store.execute(
        c.RecordWait(task_id=tid, kind="rate_limit", after_seconds=60, wait_id="quota"), AGENT
    )
    words = "wait quota (rate limit) is open: settle or cancel it"
    assert store.task(tid)["pending_work"] == [words]
    count = len(store.events(tid))
    with pytest.raises(PendingWork, match=r"wait quota \(rate limit\) is open"):
        store.execute(c.WriteCheckpoint(task_id=tid, reason="final"), AGENT)
    assert len(store.events(tid)) == count
    # A handoff carries it, as state another process resumes from.
    store.execute(c.WriteCheckpoint(task_id=tid, reason="handoff", checkpoint_id="h1"), AGENT)
    (handoff,) = [e for e in store.events(tid) if e["type"] == "checkpoint.written"][-1:]
    assert handoff["payload"]["state"]["open_waits"] == [
        {"id": "quota", "kind": "rate_limit", "ref": ""}
    ]
    assert words in handoff["payload"]["state"]["pending_work"]
    if end == "cancel":
        store.execute(c.CancelWait(task_id=tid, wait_id="quota", reason="not needed"), RITA)
    else:
        store.execute(c.SettleWait(task_id=tid, wait_id="quota", result="done"), AGENT)
    assert store.task(tid)["pending_work"] == []
    store.execute(c.WriteCheckpoint(task_id=tid, reason="final"), AGENT)
    assert store.task(tid)["status"] == "completed"


def test_the_checkpoint_dialog_lists_an_open_wait(
    qtbot: Any, store: Store, tid: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from test_desktop_actions import open_window

    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")
    store.execute(
        c.RecordWait(task_id=tid, kind="rate_limit", after_seconds=60, wait_id="quota"), AGENT
    )
    w = open_window(qtbot, store, tid)
    w.menu_actions.update()
    w.menu_actions.checkpoint_action.trigger()
    d = w.menu_actions.dialog
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert "wait quota (rate limit) is open: settle or cancel it" in d.pending_label.text()
    assert not d.radios["final"].isEnabled() or not d.radios["final"].isChecked()
    assert d.radios["handoff"].isChecked()
    d.reject()
