"""Leases, fencing tokens and taking over (store.commands.leases), on both engines.

Racing sessions (one wins), heartbeats that extend a lease without an event, expiry on the
database's clock, a stale token refused with nothing recorded, a person's takeover and the
old token refused after it, a waiting MCP client told of the takeover, a rebuild equal to
the incremental projections, and the `boris lease` / `boris take-over` round trip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from store import Actor, Store
from store import commands as c
from store.errors import AuthorityRefused, CommandRejected, LeaseHeld, LeaseLost
from store.reads.inbox import Lease
from store.services import answers
from store.services.resume import brief_markdown, resume_brief

ROOT = Path(__file__).resolve().parent.parent
AGENT = Actor(kind="agent", id="drafter-7")
OTHER = Actor(kind="agent", id="drafter-8")
RITA = Actor(kind="person", id="rita", name="Rita")


def _task(store: Store) -> str:
    return str(
        store.execute(c.CreateTask(title="Weekly note", owner="rita", objective="write it"), AGENT)
    )


def _events(store: Store, task_id: str) -> list[dict[str, Any]]:
    return store.events(task_id)


def test_racing_sessions_one_wins(open_store: Callable[..., Store]) -> None:
    """Two sessions in two threads, each with its own Store (its own connections), acquire
    the same lease at once, round after round: exactly one wins each time."""
    first, second = open_store(create=True), open_store()
    try:
        task = _task(first)
        for round_no in range(6):
            barrier = threading.Barrier(2)
            outcome: dict[str, Any] = {}

            def race(
                store: Store,
                actor: Actor,
                name: str,
                n: int = round_no,
                barrier: threading.Barrier = barrier,
                outcome: dict[str, Any] = outcome,
            ) -> None:
                barrier.wait()
                try:
                    outcome[name] = store.execute(
                        c.AcquireLease(task_id=task, session_id=f"{name}-{n}", ttl_seconds=60),
                        actor,
                    )
                except LeaseHeld as exc:
                    outcome[name] = exc

            threads = [
                threading.Thread(target=race, args=(first, AGENT, "a")),
                threading.Thread(target=race, args=(second, OTHER, "b")),
            ]
            for th in threads:
                th.start()
            for th in threads:
                th.join(60)
            won = [v for v in outcome.values() if isinstance(v, Lease)]
            lost = [v for v in outcome.values() if isinstance(v, LeaseHeld)]
            assert len(won) == 1 and len(lost) == 1, outcome
            assert won[0]["token"] == round_no + 1  # one more than any before
            assert lost[0].lease_token == won[0]["token"]
            winner = AGENT if won[0]["holder"]["id"] == AGENT.id else OTHER
            first.execute(c.ReleaseLease(task_id=task, lease_token=won[0]["token"]), winner)
        acquired = [e for e in _events(first, task) if e["type"] == "lease.acquired"]
        assert [e["payload"]["token"] for e in acquired] == [1, 2, 3, 4, 5, 6]
    finally:
        first.close()
        second.close()


def test_renew_extends_without_an_event(store: Store) -> None:
    task = _task(store)
    lease = store.execute(c.AcquireLease(task_id=task, session_id="s1", ttl_seconds=5), AGENT)
    count = len(_events(store, task))
    renewed = store.execute(
        c.RenewLease(task_id=task, lease_token=lease["token"], ttl_seconds=600), AGENT
    )
    assert renewed["expires_at"] > lease["expires_at"]
    assert renewed["last_heartbeat_at"] > lease["last_heartbeat_at"]
    # Heartbeats are not chained: the log did not grow.
    assert len(_events(store, task)) == count
    read = store.task(task)["lease"]
    assert read["expires_at"] == renewed["expires_at"]
    assert read["standing"] == "alive"
    # A token never granted renews nothing.
    with pytest.raises(LeaseLost):
        store.execute(c.RenewLease(task_id=task, lease_token=lease["token"] + 1), AGENT)
    # The inbox row carries the same lease.
    row = next(r for r in store.tasks() if r["id"] == task)
    assert row["lease"]["token"] == lease["token"]
    assert row["lease"]["expires_at"] == renewed["expires_at"]
    assert row["lease"]["holder"]["id"] == AGENT.id


def test_expiry_is_judged_on_the_database_clock(store: Store) -> None:
    task = _task(store)
    # While a lease lives another session is refused: shown on a lease of ten minutes, so
    # that no machine is too slow for it (a lease of one second had run out before the
    # refusal on a loaded one).
    held = _task(store)
    store.execute(c.AcquireLease(task_id=held, session_id="s1", ttl_seconds=600), AGENT)
    with pytest.raises(LeaseHeld):
        store.execute(c.AcquireLease(task_id=held, session_id="s2"), OTHER)
    # A lease of one second, and no heartbeat: expired once the store says so.
    lease = store.execute(c.AcquireLease(task_id=task, session_id="s1", ttl_seconds=1), AGENT)
    deadline = time.monotonic() + 60  # bounds a hang only: the store says when it expired
    while store.task(task)["lease"]["standing"] != "expired":
        assert time.monotonic() < deadline, "the lease never expired"
        time.sleep(0.05)
    read = store.task(task)
    # Expired when the database's clock passed expires_at: never written, judged at read.
    assert read["now"] >= read["lease"]["expires_at"] == lease["expires_at"]
    row = next(r for r in store.tasks() if r["id"] == task)
    assert row["lease"]["standing"] == "expired"
    # Another session may acquire it now; the event records the lease it replaced as expired.
    taken = store.execute(c.AcquireLease(task_id=task, session_id="s2"), OTHER)
    assert taken["token"] == 2
    before = _events(store, task)[-1]["payload"]["before"]
    assert before["standing"] == "expired" and before["token"] == 1
    # And the sleeper's token is stale now.
    with pytest.raises(LeaseLost):
        store.execute(c.RecordNote(task_id=task, text="I woke up", lease_token=1), AGENT)


def test_stale_token_refused_and_nothing_recorded(store: Store) -> None:
    task = _task(store)
    store.execute(c.AddCriterion(task_id=task, text="the note is saved"), AGENT)
    lease = store.execute(c.AcquireLease(task_id=task, session_id="s1"), AGENT)
    token = lease["token"]
    store.execute(c.RecordNote(task_id=task, text="working", lease_token=token), AGENT)
    store.execute(c.TakeOver(task_id=task, reason="the draft is going the wrong way"), RITA)
    before = store.projection_dump(task)
    count = len(_events(store, task))
    writes: list[c.Command] = [
        c.RecordNote(task_id=task, text="still here", lease_token=token),
        c.RecordArtifact(
            task_id=task, name="NOTE.md", content=c.Content(text="# late\n"), lease_token=token
        ),
        c.ChargeBudget(task_id=task, counter="model_calls", amount=1, lease_token=token),
    ]
    for write in writes:
        with pytest.raises(LeaseLost) as refused:
            store.execute(write, AGENT)
        assert refused.value.current_token == token + 1
        assert refused.value.holder is not None and refused.value.holder["id"] == "rita"
        answer = answers.refusal(refused.value)["error"]
        assert answer["code"] == "lease_lost" and answer["exit_code"] == 7
        assert answer["details"]["current_token"] == token + 1
    assert len(_events(store, task)) == count
    assert store.projection_dump(task) == before
    # Without a token an agent cannot write beside the person either; the person can.
    with pytest.raises(LeaseHeld):
        store.execute(c.RecordNote(task_id=task, text="no token"), AGENT)
    store.execute(c.RecordNote(task_id=task, text="the person's own note"), RITA)


def test_takeover_then_hand_back(store: Store) -> None:
    task = _task(store)
    lease = store.execute(c.AcquireLease(task_id=task, session_id="s1"), AGENT)
    # Taking over is a person's decision, with a reason.
    with pytest.raises(AuthorityRefused):
        store.execute(c.TakeOver(task_id=task, reason="mine"), OTHER)
    with pytest.raises(ValueError):
        c.TakeOver(task_id=task, reason="")
    held = store.execute(c.TakeOver(task_id=task, reason="I will finish it"), RITA)
    assert held["token"] == lease["token"] + 1
    assert held["holder"]["id"] == "rita" and held["expires_at"] is None
    event = _events(store, task)[-1]
    assert event["type"] == "lease.taken_over"
    assert event["payload"]["before"]["holder"]["id"] == AGENT.id
    assert event["payload"]["before"]["standing"] == "alive"
    # The person holds it: no agent acquires it, whatever time passes (no expiry).
    with pytest.raises(LeaseHeld):
        store.execute(c.AcquireLease(task_id=task, session_id="s3"), OTHER)
    brief = resume_brief(store, task)
    assert brief["lease"]["holder"] == "person:rita"
    assert any(b["kind"] == "taken_over" for b in brief["blockers"])
    assert "Held by: person:rita" in brief_markdown(brief)
    # Hand back: a handoff checkpoint, then the person releases the lease.
    store.execute(c.WriteCheckpoint(task_id=task, reason="handoff", note="back to you"), RITA)
    released = store.execute(c.ReleaseLease(task_id=task), RITA)
    assert released["standing"] == "ended" and released["end_reason"] == "released"
    # Only the holder releases: a person who holds nothing is told so.
    with pytest.raises(LeaseLost):
        store.execute(c.ReleaseLease(task_id=task), Actor(kind="person", id="sam"))
    again = store.execute(c.AcquireLease(task_id=task, session_id="s4"), AGENT)
    assert again["token"] == held["token"] + 1
    assert resume_brief(store, task)["lease"]["holder"] == f"agent:{AGENT.id}"
    # A released agent lease's token writes nothing more.
    store.execute(c.ReleaseLease(task_id=task, lease_token=again["token"]), AGENT)
    with pytest.raises(LeaseLost):
        store.execute(c.RecordNote(task_id=task, text="x", lease_token=again["token"]), AGENT)
    # With no live lease, a write without a token is as before leases.
    store.execute(c.RecordNote(task_id=task, text="unleased"), AGENT)


def test_same_session_acquiring_again_gets_its_own_lease(store: Store) -> None:
    task = _task(store)
    first = store.execute(c.AcquireLease(task_id=task, session_id="s1"), AGENT)
    count = len(_events(store, task))
    again = store.execute(c.AcquireLease(task_id=task, session_id="s1"), AGENT)
    assert again["token"] == first["token"]
    assert len(_events(store, task)) == count
    with pytest.raises(CommandRejected):
        store.execute(c.RenewLease(task_id=task), AGENT)  # an agent names its token


def test_rebuild_equals_incremental_for_lease_events(store: Store) -> None:
    task = _task(store)
    one = store.execute(c.AcquireLease(task_id=task, session_id="s1", ttl_seconds=30), AGENT)
    store.execute(c.RenewLease(task_id=task, lease_token=one["token"], ttl_seconds=900), AGENT)
    store.execute(c.ReleaseLease(task_id=task, lease_token=one["token"], note="pause"), AGENT)
    two = store.execute(c.AcquireLease(task_id=task, session_id="s2", ttl_seconds=30), OTHER)
    store.execute(c.RenewLease(task_id=task, lease_token=two["token"], ttl_seconds=900), OTHER)
    store.execute(c.TakeOver(task_id=task, reason="review by hand"), RITA)
    store.execute(c.ReleaseLease(task_id=task), RITA)
    three = store.execute(c.AcquireLease(task_id=task, session_id="s3", ttl_seconds=30), AGENT)
    store.execute(c.RenewLease(task_id=task, lease_token=three["token"], ttl_seconds=900), AGENT)
    incremental = store.projection_dump(task)
    read = store.task(task)["lease"]
    store.rebuild(task)
    assert store.projection_dump(task) == incremental
    assert incremental["leases"], "the leases projection is compared"
    # The heartbeat is outside the projections: the rebuilt lease reads the same.
    again = store.task(task).lease
    assert read is not None and again is not None
    assert again.to_json() == {**read.to_json(), "standing": again.standing.value}
    assert store.task(task)["lease"]["expires_at"] == read["expires_at"] > three["expires_at"]
    from store.services.verify import verify

    report = verify(store)
    assert report.ok, report.problems


# --- the command line ---------------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _store_args(store_dir: Path, store_url: str | None) -> list[str]:
    return ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])


def _boris(
    store_dir: Path, store_url: str | None, *argv: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *_store_args(store_dir, store_url)],
        env=_env(**env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_round_trip(store: Store, store_dir: Path, store_url: str | None) -> None:
    task = _task(store)
    got = _boris(
        store_dir, store_url, "lease", "acquire", task, "--ttl", "120", "--actor", "agent:a"
    )
    assert got.returncode == 0, got.stderr
    token = got.stdout.strip()
    assert token == "1"
    # Two CLI processes racing for it now: both refused (held), exit 1 with lease_held.
    raced = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "store.cli",
                "lease",
                "acquire",
                task,
                "--json",
                "--actor",
                f"agent:b{i}",
                *_store_args(store_dir, store_url),
            ],
            env=_env(),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for p in raced:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 1
        assert json.loads(out)["error"]["code"] == "lease_held"
    # Writes carry the token (flag or environment).
    noted = _boris(
        store_dir,
        store_url,
        "add-criterion",
        task,
        "--text",
        "saved",
        "--actor",
        "agent:a",
        BORIS_LEASE_TOKEN=token,
    )
    assert noted.returncode == 0, noted.stderr
    renewed = _boris(
        store_dir,
        store_url,
        "lease",
        "renew",
        task,
        "--lease-token",
        token,
        "--json",
        "--actor",
        "agent:a",
    )
    assert renewed.returncode == 0, renewed.stderr
    assert json.loads(renewed.stdout)["result"]["standing"] == "alive"
    took = _boris(
        store_dir,
        store_url,
        "take-over",
        task,
        "--reason",
        "I finish it",
        "--actor",
        "person:rita",
    )
    assert took.returncode == 0, took.stderr
    assert "person:rita holds token 2" in took.stdout
    count = len(_events(store, task))
    late = _boris(
        store_dir,
        store_url,
        "add-criterion",
        task,
        "--text",
        "late",
        "--json",
        "--lease-token",
        token,
        "--actor",
        "agent:a",
    )
    assert late.returncode == 7, late.stderr
    assert json.loads(late.stdout)["error"]["code"] == "lease_lost"
    lines = store_dir.parent / "late.jsonl"
    lines.write_text(json.dumps({"type": "record_note", "task_id": task, "text": "late"}) + "\n")
    ingested = _boris(
        store_dir, store_url, "ingest", str(lines), "--actor", "agent:a", BORIS_LEASE_TOKEN=token
    )
    assert ingested.returncode == 7, ingested.stderr
    assert len(_events(store, task)) == count
    back = _boris(store_dir, store_url, "lease", "release", task, "--actor", "person:rita")
    assert back.returncode == 0, back.stderr
    shown = _boris(store_dir, store_url, "show", task, "--json")
    lease = json.loads(shown.stdout)["result"]["lease"]
    assert lease["standing"] == "ended" and lease["token"] == 2


# --- a waiting MCP client -----------------------------------------------------------------


def test_takeover_seen_by_a_waiting_mcp_client(
    store_dir: Path, store_url: str | None, ws: Path
) -> None:
    from tests.test_mcp_e2e import Agent, mcp_session

    async def scenario() -> None:
        async with mcp_session(store_dir, store_url, actor="agent:drafter-7") as session:
            agent = Agent(session)
            tools = {t.name for t in (await session.list_tools()).tools}
            assert {"acquire_lease", "renew_lease", "release_lease"} <= tools
            assert "take_over" not in tools  # a person's decision
            task = (
                await agent(
                    "create_task",
                    title="Note",
                    owner="rita",
                    objective="save it",
                    scope_paths=[str(ws)],
                )
            )["result"]
            lease = (await agent("acquire_lease", task_id=task, session_id="mcp-1"))["result"]
            token = lease["token"]
            planned = await agent(
                "plan_effect",
                task_id=task,
                kind="file_write",
                target=str(ws / "NOTE.md"),
                consequence="write NOTE.md",
                content={"text": "hello\n"},
                requires_approval=True,
                policy="review",
                lease_token=token,
            )
            approval = (
                await agent(
                    "request_approval",
                    task_id=task,
                    effect_id=planned["result"],
                    policy="review",
                    lease_token=token,
                )
            )["result"]
            waited: dict[str, Any] = {}

            async def wait() -> None:
                started = time.monotonic()
                waited.update(
                    await agent.refused(
                        "wait_for_approval",
                        task_id=task,
                        approval_id=approval,
                        lease_token=token,
                        timeout_seconds=60,
                    )
                )
                waited["took"] = time.monotonic() - started

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                await anyio.sleep(0.6)
                assert not waited
                took = await anyio.to_thread.run_sync(
                    lambda: _boris(
                        store_dir,
                        store_url,
                        "take-over",
                        task,
                        "--reason",
                        "mine now",
                        "--actor",
                        "person:rita",
                    )
                )
                assert took.returncode == 0, took.stderr
            error = waited["error"]
            assert error["code"] == "lease_lost" and error["category"] == "lease_lost"
            assert error["details"]["current_token"] == token + 1
            assert error["details"]["holder"]["id"] == "rita"
            assert waited["took"] < 30
            # Its later write under the old token: refused, typed, nothing recorded.
            late = await agent.refused(
                "record_note", task_id=task, text="still going", lease_token=token
            )
            assert late["error"]["code"] == "lease_lost"
            renewed = await agent.refused("renew_lease", task_id=task, lease_token=token)
            assert renewed["error"]["code"] == "lease_lost"
            state = (await agent("task_state", task_id=task))["result"]
            assert state["lease"]["holder"]["id"] == "rita"

    anyio.run(scenario)


def test_a_persons_stop_ends_the_agents_lease(
    store: Store, store_dir: Path, store_url: str | None
) -> None:
    """A stop ends the agent's lease in its own transaction (a `lease.released` by the
    person): the stopped agent's next write with its token is lease_lost, exit 7 from
    `boris`, and nothing of it is written. A later session acquires a new token."""
    task = _task(store)
    token = store.execute(c.AcquireLease(task_id=task, session_id="s1", ttl_seconds=60), AGENT)[
        "token"
    ]
    stop_seq = store.task(task)["last_seq"]
    store.execute(c.StopRun(task_id=task, reason="the draft is going the wrong way"), RITA)
    after = store.events(task, after_seq=stop_seq)
    assert len({e["at"] for e in after}) == 1  # one transaction
    (ended,) = [e for e in after if e["type"] == "lease.released"]
    assert ended["payload"]["token"] == token and ended["actor"]["id"] == "rita"
    (stopped,) = [e for e in after if e["type"] == "run.stopped"]
    assert f"The agent's lease (token {token}) ended." in stopped["payload"]["account"]
    assert store.task(task)["lease"]["standing"] == "ended"
    count = len(_events(store, task))
    with pytest.raises(LeaseLost):
        store.execute(c.RecordNote(task_id=task, text="still here", lease_token=token), AGENT)
    late = _boris(
        store_dir, store_url, "add-criterion", task, "--text", "late", "--json",
        "--lease-token", str(token), "--actor", "agent:drafter-7",
    )  # fmt: skip
    assert late.returncode == 7, late.stdout + late.stderr
    assert json.loads(late.stdout)["error"]["code"] == "lease_lost"
    assert len(_events(store, task)) == count


def test_a_stop_leaves_a_persons_lease_theirs(store: Store) -> None:
    task = _task(store)
    store.execute(c.AcquireLease(task_id=task, session_id="s1", ttl_seconds=60), AGENT)
    store.execute(c.TakeOver(task_id=task, reason="I finish it"), RITA)
    store.execute(c.StopRun(task_id=task, reason="paused by me"), RITA)
    lease = store.task(task)["lease"]
    assert lease["standing"] == "alive" and lease["token"] == 2
