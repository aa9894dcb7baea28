"""An escalation fires on the database clock and is in the record (issue 42, routing).

On a signed store as `boris init` makes it, on both engines: rita routes `deploys` to the
release group (rita, ben), escalating to olga after 0.02 minutes; the agent asks through the
store's API as an adapter does. Nobody answers. Once the database clock passes the escalation
time, whatever runs records it — here three real `boris route escalate` processes at once,
as cron on several machines would — once, as the store's own action, naming who it now waits
on; `boris decisions --mine` then lists it for olga, and `boris verify` accepts the record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_args import store_args
from test_routing import Team, team  # noqa: F401  (the fixture)
from test_standing_rules import BOT, Signed, signed  # noqa: F401  (the fixture)

from store import Store, db
from store.commands import effects as lg
from store.events import ApprovalEscalated
from store.services import escalations

ROOT = Path(__file__).resolve().parent.parent


def _routed(signed: Signed, minutes: str = "0.02") -> tuple[str, str, str]:  # noqa: F811
    """A request routed to group:release, escalating to olga after `minutes`; its
    escalation time."""
    tid = signed.task("t1")
    signed.rita("route", "group", "release", "--member", "person:rita", "--member", "person:ben")
    signed.rita(
        "route", "set", "deploys", "--decider", "group:release",
        "--escalate-after", minutes, "--escalate-to", "person:olga",
    )  # fmt: skip
    aid = signed.ask(tid, "Deploy", {"env": "prod"}, policy="deploys")
    at = escalations.next_due(signed.store)
    assert at is not None
    return tid, aid, at


def _until(store: Store, at: str) -> None:
    """Until the database clock is past `at` (the store's clock, whichever engine)."""
    give_up = time.monotonic() + 30
    while store.now() <= at:
        assert time.monotonic() < give_up, f"the database clock never passed {at}"
        time.sleep(0.05)


def _escalate_process(store: Store) -> subprocess.Popen[bytes]:
    env = {**os.environ, "BORIS_RESIDENT": "off"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    argv = [*store_args(store), "--actor", "person:rita", "route", "escalate", "--json"]
    return subprocess.Popen(
        [sys.executable, "-m", "store.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _escalations(store: Store, task_id: str) -> list[dict]:
    return [e for e in store.events(task_id) if e["type"] == ApprovalEscalated.TYPE]


def _mine(signed: Signed, who: str) -> list[str]:  # noqa: F811
    read = signed.ok("--actor", f"person:{who}", "decisions", "--mine")
    return [d["key"] for d in read["decisions"]]


def test_three_processes_ticking_at_once_record_the_due_escalation_once(
    signed: Signed,  # noqa: F811
    team: Team,  # noqa: F811
) -> None:
    # A request whose escalation is half an hour away: nothing due, nothing written, it waits on
    # the release group. Then the route is set to escalate sooner: the next request's
    # escalation comes due; the first keeps the route it recorded.
    tid, later, _ = _routed(signed, "30")
    assert escalations.due_now(signed.store)[0] == []
    assert escalations.escalate_due(signed.store, BOT) == []
    assert _escalations(signed.store, tid) == []
    assert _mine(signed, "ben") == [later] and _mine(signed, "olga") == []
    row = signed.ok("decisions")["decisions"][0]
    assert row["waits_on"] == ["rita", "ben"]
    assert row["routing"].startswith("waiting on group:release (rita, ben); escalates to")
    signed.rita(
        "route", "set", "deploys", "--decider", "group:release",
        "--escalate-after", "0.02", "--escalate-to", "person:olga",
    )  # fmt: skip
    aid = signed.ask(tid, "Deploy", {"env": "staging"}, policy="deploys")
    at = escalations.next_due(signed.store)
    assert at is not None

    _until(signed.store, at)
    assert escalations.due_now(signed.store)[0] == [f"{tid}/{aid}"]
    procs = [_escalate_process(signed.store) for _ in range(3)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        results.append(json.loads(out)["result"])
    assert sorted(results, key=len) == [[], [], [f"{tid}/{aid}"]]

    (escalated,) = _escalations(signed.store, tid)
    assert escalated["payload"]["approval_id"] == aid
    assert escalated["payload"]["to"] == ["olga"] and escalated["payload"]["why"] == "unanswered"
    assert escalated["actor"]["kind"] == "system"  # the store's own action, whoever ticked
    assert escalated["at"] >= at  # on the database clock, never before its time
    assert escalations.escalate_due(signed.store, BOT) == []  # and never again
    assert escalations.next_due(signed.store) is not None  # the half-hour one, still to come

    # Olga is told: it is hers to decide now, and the queue says so (the other is not yet).
    assert _mine(signed, "olga") == [aid]
    row = next(d for d in signed.ok("decisions")["decisions"] if d["key"] == aid)
    assert row["waits_on"] == ["rita", "ben", "olga"]
    assert "escalated to person:olga" in row["routing"]
    assert row["why"].startswith("waiting on group:release (rita, ben); escalated to person:olga")
    rc, answer = team.approve("olga", tid, aid)
    assert rc == 0 and answer["result"] == "approved"
    effect = signed.approval(tid, aid)["effect_id"]
    signed.store.execute(lg.DispatchEffect(task_id=tid, effect_id=effect, executor="x"), BOT)
    assert signed.verify()[0] == 0


def test_an_escalation_on_expiry_is_recorded_once_with_its_new_expiry(
    signed: Signed,  # noqa: F811
    team: Team,  # noqa: F811
) -> None:
    tid = signed.task("t1")
    signed.rita(
        "route", "set", "nightly", "--decider", "person:ben",
        "--escalate-to", "person:olga", "--on-expiry", "escalate",
    )  # fmt: skip
    aid = signed.ask(tid, "Restart", {"service": "db"}, policy="nightly", expires_in_seconds=1)
    at = escalations.next_due(signed.store)
    assert at == signed.approval(tid, aid)["expires_at"]
    assert signed.rita("route", "escalate", "--dry-run") == []
    _until(signed.store, at)
    assert signed.rita("route", "escalate", "--dry-run") == [f"{tid}/{aid}"]
    assert _escalations(signed.store, tid) == []  # a dry run records nothing
    # The agent's server ticks (`boris mcp` while it waits), and a second store of its own
    # (another connection) right after: an agent's key signs nothing in the store's name, so
    # the agent's process records it in the agent's.
    other = Store.open(signed.store.location.directory, url=signed.store.location.url)
    try:
        other.signer = signed.store.signer
        assert escalations.escalate_due(signed.store, BOT) == [f"{tid}/{aid}"]
        assert escalations.escalate_due(other, BOT) == []
    finally:
        other.close()
    (escalated,) = _escalations(signed.store, tid)
    assert escalated["payload"]["why"] == "expired" and escalated["payload"]["to"] == ["olga"]
    assert (escalated["actor"]["kind"], escalated["actor"]["id"]) == ("agent", "bot")
    with signed.store.read() as conn:
        now = db.database_now(conn)
    assert signed.approval(tid, aid)["expires_at"] > now
    assert _mine(signed, "olga") == [aid]
    assert signed.verify()[0] == 0


@pytest.mark.parametrize("every", [0.1])
def test_a_ticker_beside_a_server_records_it_without_anyone_asking(
    signed: Signed,  # noqa: F811
    team: Team,  # noqa: F811
    every: float,
) -> None:
    """What `boris serve` and the team's servers run: a thread that ticks until stopped."""
    tid, aid, at = _routed(signed)
    told: list[list[str]] = []
    ticker = escalations.Ticker(signed.store, BOT, every=every, on_escalated=told.append)
    ticker.start()
    try:
        _until(signed.store, at)
        give_up = time.monotonic() + 30
        while not told:
            assert time.monotonic() < give_up, "the ticker recorded nothing"
            time.sleep(0.05)
    finally:
        ticker.close()
    assert told == [[f"{tid}/{aid}"]]
    assert len(_escalations(signed.store, tid)) == 1


def test_an_agents_tick_leaves_a_task_a_person_holds_to_a_persons_tick(
    signed: Signed,  # noqa: F811
    team: Team,  # noqa: F811
) -> None:
    """While a person holds the task (they took it over), every write of the agent's there is
    fenced, an escalation too: the agent's server records nothing, a person's process does."""
    tid, aid, at = _routed(signed)
    rc, _, err = signed.run(
        "--actor", "person:rita", "take-over", tid, "--reason", "I drive this one now"
    )  # fmt: skip
    assert rc == 0, err
    _until(signed.store, at)
    assert escalations.escalate_due(signed.store, BOT) == []
    assert _escalations(signed.store, tid) == []
    assert signed.rita("route", "escalate") == [f"{tid}/{aid}"]
    (escalated,) = _escalations(signed.store, tid)
    assert escalated["actor"]["kind"] == "system"
    assert signed.verify()[0] == 0
