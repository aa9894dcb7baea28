"""The crash drill (issue 34): an agent killed with a lease and a wait open, and the next
session resuming from the record alone, on both engines.

A real agent process (the script below, on the store's API) acquires a short lease, records a
rate-limit wait with a reservation, plans a file write with an idempotency key, requests an
approval (a person approves it with the real `boris approve`), settles the wait, dispatches,
writes the file, records the response and reconciles. It is SIGKILLed at a boundary chosen by
a seeded draw. Then the record is checked as the next session finds it (the wait is open and
listed, or absent, never half; an effect whose outcome is unknown is to be reconciled, never
dispatched again; a due wait is to be re-evaluated), and a NEW process, the same script,
acquires the lease once the dead one's expired and finishes from the record. Per run: `boris
verify` passes, the file was written exactly once, and an effect has one attempt unless its
first was reconciled absent.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_args import store_args

from store import Actor, Store
from store import commands as c
from store.services.resume import resume_brief

ROOT = Path(__file__).resolve().parent.parent
RITA = Actor(kind="person", id="rita")

#: The boundaries of the agent's work, in order: the script prints `MARK <step>` after each.
STEPS = (
    "leased", "waited", "planned", "asked", "settled", "dispatched", "wrote", "responded",
    "reconciled",
)  # fmt: skip
#: Drawn each run: the boundaries where the outcome is in doubt are always among them.
ALWAYS = ("dispatched", "wrote")
RUNS = 5

_AGENT = r"""
import json, sys, time
from pathlib import Path
from store import Actor, Store
from store import commands as c
from store.commands.approvals import RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.commands.effects import DispatchEffect, PlanEffect, ReconcileEffect, RecordResponse
from store.errors import LeaseHeld

store_dir, url, tid, ws, session, kill = sys.argv[1:7]
s = Store.open(store_dir, url=url or None)
AGENT = Actor(kind="agent", id="drafter-7")
TARGET = str(Path(ws) / "report.md")
SENT = Path(ws) / "sent.log"  # the executor's own log: one line per real write


def mark(step, **info):
    print("MARK", step, json.dumps(info), flush=True)
    if step == kill:
        time.sleep(120)  # the test's SIGKILL lands here


def run(cmd):
    return s.execute(cmd, AGENT)


give_up = time.monotonic() + 30
while True:  # the dead session's lease runs out on its own (ttl 1 s)
    try:
        token = run(c.AcquireLease(task_id=tid, session_id=session, ttl_seconds=1))["token"]
        break
    except LeaseHeld:
        if time.monotonic() > give_up:
            raise
        time.sleep(0.1)
mark("leased", token=token)


def task():
    return s.task(tid)


def effect():
    return next((e for e in task()["effects"] if e["effect_id"] == "upload"), None)


def wait_open():
    return any(w["wait_id"] == "quota" and w["state"] == "open" for w in task()["waits"])


if not any(w["wait_id"] == "quota" for w in task()["waits"]):
    run(c.RecordWait(task_id=tid, kind="rate_limit", ref="api.example.org", after_seconds=0.2,
                     wait_id="quota", reserve={"counter": "tool_calls", "amount": 1},
                     lease_token=token))
    mark("waited")
if effect() is None:
    run(PlanEffect(task_id=tid, effect_id="upload", kind="file_write", target=TARGET,
                   consequence="the report is uploaded", content=c.Content(text="report\n"),
                   requires_approval=True, policy="writes", idempotency_key="upload-report-1",
                   lease_token=token))
    mark("planned")
while True:
    e = effect()
    if e["stage"] == "reconciled" and e["outcome"] == "succeeded":
        break
    if e["stage"] in ("dispatched", "observed"):  # sent, or maybe: look, never send again
        verdict = run(ReconcileEffect(task_id=tid, effect_id="upload", lease_token=token))
        mark("reconciled", verdict=verdict)
        continue
    mine = [a for a in task()["approvals"] if a["effect_id"] == "upload"]
    if not any(a["state"] == "approved" for a in mine):
        pending = [a["approval_id"] for a in mine if a["state"] == "pending"]
        aid = pending[0] if pending else run(RequestApproval(
            task_id=tid, effect_id="upload", policy="writes", lease_token=token))
        mark("asked", approval_id=aid)
        until = time.monotonic() + 60
        while not any(a["approval_id"] == aid and a["state"] == "approved"
                      for a in task()["approvals"]):
            assert time.monotonic() < until, "nobody approved"
            time.sleep(0.05)
        continue
    if wait_open():  # the rate limit passed: done waiting, then send
        run(c.SettleWait(task_id=tid, wait_id="quota", result="done", lease_token=token))
        mark("settled")
    n = run(DispatchEffect(task_id=tid, effect_id="upload", executor="tool:save",
                           lease_token=token))
    mark("dispatched", attempt=n)
    Path(TARGET).write_text("report\n")
    with SENT.open("a") as log:
        log.write(f"{session} attempt {n}\n")
    mark("wrote")
    run(RecordResponse(task_id=tid, effect_id="upload", reported="reported_success",
                       lease_token=token))
    mark("responded")
if wait_open():
    run(c.SettleWait(task_id=tid, wait_id="quota", result="done", lease_token=token))
run(WriteCheckpoint(task_id=tid, reason="final", note="uploaded", lease_token=token))
mark("final")
"""


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


def _session(store: Store, script: Path, tid: str, ws: Path, session: str, kill: str) -> list[str]:
    """Run one agent session; approve (as a person, with `boris approve`) whenever it asks;
    SIGKILL it when it marks `kill`. Returns the marks it printed."""
    url = "" if store.location.sqlite_file else str(store.location.url)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(store.location.directory), url, tid, str(ws),
         session, kill],
        env=_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    marks: list[str] = []
    try:
        for line in proc.stdout:
            if not line.startswith("MARK "):
                continue
            _, step, info = line.rstrip("\n").split(" ", 2)
            marks.append(step)
            if step == kill:
                os.kill(proc.pid, signal.SIGKILL)
                break
            if step == "asked":
                aid = json.loads(info)["approval_id"]
                ok = _boris(store, "approve", tid, aid, "--note", "go", "--actor", "person:rita")
                assert ok.returncode == 0, ok.stdout + ok.stderr
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    if kill == "none":
        assert code == 0, err
        assert marks[-1] == "final", marks
    else:
        assert code == -signal.SIGKILL, err
    return marks


def _as_the_next_session_finds_it(store: Store, tid: str, killed_at: str) -> None:
    """The record after the kill: whole, and saying what to do without repeating anything."""
    task = store.task(tid)
    waits = {w["wait_id"]: w for w in task["waits"]}
    (budget,) = [b for b in task["budgets"] if b["counter"] == "tool_calls"]
    brief = resume_brief(store, tid)
    # The wait: open and listed (pending work, the brief, its reservation held), settled, or
    # absent with nothing reserved; never half.
    if "quota" not in waits:
        assert float(budget["reserved"]) == 0.0
    elif waits["quota"]["state"] == "open":
        assert float(budget["reserved"]) == 1.0
        assert "wait quota (rate limit) is open: settle or cancel it" in task["pending_work"]
        assert [w["id"] for w in brief["waits"]] == ["quota"]
        give_up = time.monotonic() + 10
        while not brief["re_evaluate"]:
            assert time.monotonic() < give_up, "the wait never came due"
            time.sleep(0.05)
            brief = resume_brief(store, tid)
        (due,) = brief["re_evaluate"]
        assert due["action"].startswith("re-evaluate wait quota")
        assert due["command"]["type"] == "settle_wait"
    else:
        assert waits["quota"]["state"] == "settled"
        assert float(budget["reserved"]) == 0.0
    # Nothing the brief proposes sends the effect again while its outcome is unknown.
    effects = {e["effect_id"]: e for e in task["effects"]}
    upload = effects.get("upload")
    sends = [a for a in brief["next_actions"] if a["command"].get("type") == "dispatch_effect"]
    if upload is not None and upload["outcome"] == "unknown":
        assert killed_at in {"dispatched", "wrote"}
        assert sends == []
        assert any(a["action"].startswith("reconcile effect upload") for a in brief["next_actions"])
        assert any(f["action"] == "dispatch effect upload again" for f in brief["forbidden"]), (
            brief["forbidden"]
        )
    if upload is not None:
        assert upload["intent"].get("idempotency_key", "upload-report-1") == "upload-report-1"


def _after_the_next_session(store: Store, tid: str, ws: Path) -> None:
    task = store.task(tid)
    assert task["status"] == "completed"
    (upload,) = task["effects"]
    assert (upload["stage"], upload["outcome"]) == ("reconciled", "succeeded")
    attempts = upload["attempts"]
    # One attempt, or a second only after the first was reconciled absent.
    assert len(attempts) == 1 or (len(attempts) == 2 and attempts[0]["outcome"] == "absent")
    # The world saw the write exactly once.
    assert len((ws / "sent.log").read_text().splitlines()) == 1
    assert [w["state"] for w in task["waits"]] == ["settled"]
    (budget,) = [b for b in task["budgets"] if b["counter"] == "tool_calls"]
    assert float(budget["reserved"]) == 0.0
    verified = _boris(store, "verify", tid)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _kill_points(engine: str) -> list[str]:
    """Five boundaries for this engine: the two in doubt, and three drawn (seeded)."""
    rest = [s for s in STEPS if s not in ALWAYS]
    drawn = random.Random(f"issue-34-{engine}").sample(rest, RUNS - len(ALWAYS))
    return sorted([*ALWAYS, *drawn], key=STEPS.index)


def test_an_agent_killed_at_random_boundaries_is_resumed_with_no_duplicate_effect(
    store: Store, tmp_path: Path, store_engine: str
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(_AGENT)
    for n, kill in enumerate(_kill_points(store_engine)):
        tid, ws = f"drill-{n}", tmp_path / f"ws-{n}"
        ws.mkdir()
        store.execute(
            c.CreateTask(task_id=tid, title="Upload the report", owner="rita",
                         objective="Upload it", scope_paths=[str(ws)]),
            RITA,
        )  # fmt: skip
        store.execute(c.SetBudget(task_id=tid, counter="tool_calls", limit=10), RITA)
        marks = _session(store, script, tid, ws, "first", kill)
        assert marks[-1] == kill
        _as_the_next_session_finds_it(store, tid, kill)
        _session(store, script, tid, ws, "next", "none")
        _after_the_next_session(store, tid, ws)
