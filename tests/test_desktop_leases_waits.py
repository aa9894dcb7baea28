"""Who works on a task now and what it waits for, in the window (issue 34): the Tasks list's
"Working now", the task header, the Waits part, Take Over and Cancel Wait, the queue's
waits and the reviewer's history. The leases and waits are made by the real `boris` CLI in
another process, on both engines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, HeldClock, armed, done, open_window, settle

from store import Actor, Store
from store import commands as c
from store.reads.history import decisions_by

ROOT = Path(__file__).resolve().parents[1]
AGENT = Actor(kind="agent", id="drafter-7")
RITA = Actor(kind="person", id="rita", name="Rita Reviewer")
LEFT = Qt.MouseButton.LeftButton


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _cmd(store_dir: Path, store_url: str | None, *argv: str) -> list[str]:
    where = ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])
    return [sys.executable, "-m", "store.cli", *argv, *where]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _boris(store_dir: Path, store_url: str | None, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _cmd(store_dir, store_url, *argv),
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _boris_while(qtbot, store_dir: Path, store_url: str | None, *argv: str) -> str:
    """The CLI in another process while the window keeps running (its event loop turns)."""
    p = subprocess.Popen(
        _cmd(store_dir, store_url, *argv),
        env=_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    qtbot.waitUntil(lambda: p.poll() is not None, timeout=60000)
    out, err = p.communicate()
    assert p.returncode == 0, err
    return out


def _task(store: Store, task_id: str = "note") -> str:
    store.execute(
        c.CreateTask(
            task_id=task_id, title="Weekly note", owner="rita", objective="Write the weekly note"
        ),
        AGENT,
    )
    return task_id


def _working(w: Any, task_id: str) -> str:
    from boris_desktop.inbox.table import WORKING

    return str(w.inbox.index(w.inbox.row_of(task_id), WORKING).data())


def test_the_tasks_list_and_header_say_who_works_on_it(
    qtbot, store: Store, store_dir: Path, store_url: str | None
) -> None:
    task = _task(store)
    w = open_window(qtbot, store, task)
    assert _working(w, task).startswith("idle since ")  # never leased: since its last write
    assert "nobody holds it" in w.task_view.header.working.text()
    _boris_while(
        qtbot, store_dir, store_url, "lease", "acquire", task, "--ttl", "300",
        "--session", "run-1", "--actor", "agent:drafter-7",
    )  # fmt: skip
    qtbot.waitUntil(lambda: _working(w, task).startswith("drafter-7 · "), timeout=WAIT_MS)
    assert _working(w, task).endswith(" s ago")
    qtbot.waitUntil(lambda: "drafter-7" in w.task_view.header.working.text(), timeout=WAIT_MS)
    line = w.task_view.header.working.text()
    assert "session run-1" in line and "alive, last heard" in line and "token 1" in line
    assert "Waits: no open waits" in line
    w.close()


def test_a_lease_that_expires_without_heartbeat_reads_idle_within_a_tick(
    qtbot, store: Store, store_dir: Path, store_url: str | None, monkeypatch
) -> None:
    """Judged against the clock at each tick, not read again: idle a millisecond after the
    lease's expiry. The clocks are the test's (HeldClock): a lease of one second on a loaded
    machine had expired before the window saw it alive."""
    from store.api import LeaseStanding
    from store.clock import micros_of, system_now

    task = _task(store)
    w = open_window(qtbot, store, task)
    _boris_while(
        qtbot, store_dir, store_url, "lease", "acquire", task, "--ttl", "300",
        "--actor", "agent:drafter-7",
    )  # fmt: skip
    qtbot.waitUntil(lambda: _working(w, task).startswith("drafter-7 · "), timeout=WAIT_MS)
    header = w.task_view.header
    qtbot.waitUntil(lambda: "alive, last heard" in header.working.text(), timeout=WAIT_MS)
    clock = HeldClock(monkeypatch)
    clock.hold()
    seen_alive = w._version
    lease = store.task(task)["lease"]
    assert lease["standing"] == LeaseStanding.ALIVE
    expires = micros_of(lease["expires_at"])
    # The store's clock and the window's two (the Tasks list's, the header's) each read the
    # time of their last reading: they differ by how long a read took, and move together.
    clocks = (system_now, w.inbox.clock.now, header.clock.now)

    def to(target: int, side: Any) -> None:
        """Move the clocks so that the `side` (min or max) of their readings is `target`."""
        clock.move((target - side(micros_of(now()) for now in clocks)) / 1e6)

    def ticked() -> None:
        with qtbot.waitSignal(header._ticker.timeout, timeout=WAIT_MS):
            pass

    to(expires - 1000, max)  # a millisecond before the expiry, by every clock
    ticked()
    assert store.task(task)["lease"]["standing"] == LeaseStanding.ALIVE
    assert _working(w, task).startswith("drafter-7 · ")
    assert "alive, last heard" in header.working.text()
    to(expires + 1000, min)  # a millisecond after it
    assert _working(w, task).startswith("idle")  # the Tasks list judges it at each paint
    ticked()
    assert "lease expired at" in header.working.text()
    # Judged against the clock, not read again: nothing was written since the lease.
    assert w._version == seen_alive
    assert store.task(task)["lease"]["standing"] == LeaseStanding.EXPIRED
    w.close()


def test_take_over_from_the_window_refuses_the_agents_next_write(
    qtbot, store: Store, store_dir: Path, store_url: str | None
) -> None:
    from boris_desktop.decide.takeover import TakeOverDialog

    task = _task(store)
    got = _boris(
        store_dir, store_url, "lease", "acquire", task, "--ttl", "300", "--actor", "agent:drafter-7"
    )
    assert got.returncode == 0, got.stderr
    old = got.stdout.strip()
    w = open_window(qtbot, store, task)
    w.menu_actions.update()
    assert w.menu_actions.take_over_action.isEnabled()
    d = w.menu_actions.take_over()
    assert isinstance(d, TakeOverDialog)
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert "agent drafter-7" in d.holder.text()
    assert f"token {old} stops working" in d.what.text()
    assert not d.ok.isEnabled()  # a reason first, and a moment
    qtbot.keyClicks(d.reason, "the outline needs a person")
    armed(qtbot, d.ok)
    qtbot.mouseClick(d.ok, LEFT)
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()
    lease = store.task(task)["lease"]
    assert lease["holder"]["id"] == "rita" and lease["token"] == int(old) + 1
    qtbot.waitUntil(lambda: _working(w, task) == "you", timeout=WAIT_MS)
    # The agent that wakes up with its old token: refused, exit 7, nothing recorded.
    before = len(store.events(task))
    late = _boris(
        store_dir, store_url, "--lease-token", old, "add-criterion", task, "--text", "Late",
        "--actor", "agent:drafter-7",
    )  # fmt: skip
    assert late.returncode == 7, late.stderr
    assert len(store.events(task)) == before
    # In "What I decided", as its decision.
    with store.read() as conn:
        mine = decisions_by(conn, "rita")
    assert [(d["kind"], d["note"]) for d in mine][:1] == [
        ("takeover", "the outline needs a person")
    ]
    h = w.history
    w.show_history()
    qtbot.waitUntil(lambda: bool(h.loaded and h.model.rows), timeout=WAIT_MS)
    assert h.proxy.index(0, 1).data() == "Took over"
    w.close()


def _record_wait(store: Store, store_dir: Path, store_url: str | None, task: str) -> None:
    store.execute(c.SetBudget(task_id=task, counter="tool_calls", limit=10), RITA)
    got = _boris(
        store_dir, store_url, "wait", task, "--for", "rate_limit", "--ref", "api.example.org",
        "--after", "300", "--reserve", "tool_calls=1", "--cancel-if", "the quota is raised",
        "--id", "quota", "--actor", "agent:drafter-7",
    )  # fmt: skip
    assert got.returncode == 0, got.stderr


def test_a_wait_recorded_by_the_cli_is_shown_and_cancelled_from_the_window(
    qtbot, qtmodeltester, store: Store, store_dir: Path, store_url: str | None
) -> None:
    from boris_desktop.decide.takeover import CancelWaitDialog

    task = _task(store)
    _record_wait(store, store_dir, store_url, task)
    w = open_window(qtbot, store, task)
    header = w.task_view.header.working.text()
    assert "Waits: 1 open wait, next rate limit api.example.org: in 4 min" in header
    w.task_view.show_part("Waits", "quota")
    panel = w.task_view.panels["Waits"]
    row = [panel.tree.records.index(0, col).data() for col in range(6)]
    assert row[0] == "quota · rate limit"
    assert row[1] == "api.example.org"
    assert row[2].startswith("in 4 min")
    assert row[3] == "1 tool_calls (held)"
    assert row[4] == "cancel if the quota is raised (judged by the reader)"
    assert row[5] == "open"
    qtmodeltester.check(panel.tree.records)
    assert "Waits · 1 open" in [
        w.task_view.tabs.tabText(i) for i in range(w.task_view.tabs.count())
    ]
    w.menu_actions.update()
    d = w.menu_actions.cancel_wait()
    assert isinstance(d, CancelWaitDialog)
    qtbot.waitExposed(d, timeout=WAIT_MS)
    assert "Its reservation goes back to the budget: 1 tool_calls" in d.what.text()
    qtbot.keyClicks(d.reason, "the quota was raised by hand")
    armed(qtbot, d.ok)
    qtbot.mouseClick(d.ok, LEFT)
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()
    wait = next(x for x in store.task(task)["waits"] if x["wait_id"] == "quota")
    assert wait["state"] == "cancelled" and wait["end_reason"] == "the quota was raised by hand"
    qtbot.waitUntil(lambda: "no open waits" in w.task_view.header.working.text(), timeout=WAIT_MS)
    with store.read() as conn:
        mine = decisions_by(conn, "rita")
    assert ("cancel_wait", "quota", "the quota was raised by hand") in [
        (x["kind"], x["subject"], x["note"]) for x in mine
    ]
    w.close()


def test_the_queues_wait_opens_the_cancel_wait_dialog(
    qtbot, store: Store, store_dir: Path, store_url: str | None
) -> None:
    from boris_desktop.decide.takeover import CancelWaitDialog

    task = _task(store)
    _record_wait(store, store_dir, store_url, task)
    # The budget the wait reserved from runs out: only a person moves it now.
    store.execute(c.ChargeBudget(task_id=task, counter="tool_calls", amount=10), AGENT)
    w = open_window(qtbot, store)
    q = w.queue
    w.show_queue()
    qtbot.waitUntil(lambda: any(r["kind"] == "wait" for r in q.model.rows), timeout=WAIT_MS)
    settle(qtbot, w)
    row = next(i for i, r in enumerate(q.model.rows) if r["kind"] == "wait")
    assert q.model.index(row, 0).data() == "Cancel a wait"
    q.open_decision(q.model.rows[row]["id"])
    qtbot.waitUntil(lambda: isinstance(q.dialog, CancelWaitDialog), timeout=WAIT_MS)
    d = q.dialog
    assert d.wait["wait_id"] == "quota"
    qtbot.keyClicks(d.reason, "the quota will not come back this week")
    armed(qtbot, d.ok)
    qtbot.mouseClick(d.ok, LEFT)
    done(qtbot, w, d)
    assert not d.error.isVisible(), d.error.text()
    qtbot.waitUntil(lambda: not [r for r in q.model.rows if r["kind"] == "wait"], timeout=WAIT_MS)
    w.close()


def test_working_now_words() -> None:
    from dataclasses import replace

    from boris_desktop.ui import holder
    from store.api import ActorRef, Lease, LeaseStanding
    from store.rules import ActorKind

    now = "2026-12-06T14:30:00.000000Z"
    lease = Lease(
        token=3,
        holder=ActorRef(ActorKind.AGENT, "drafter-7"),
        session_id="s1",
        since="2026-12-06T14:00:00.000000Z",
        ttl_seconds=60,
        expires_at="2026-12-06T14:31:00.000000Z",
        last_heartbeat_at="2026-12-06T14:29:48.000000Z",
        standing=LeaseStanding.ALIVE,
        ended_at=None,
        ended_by=None,
        end_reason=None,
        reason="",
    )
    assert holder.working_now(lease, "2026-12-06T14:20:00Z", now, "rita") == "drafter-7 · 12 s ago"
    later = "2026-12-06T14:32:00.000000Z"  # no heartbeat since: expired, judged at the read
    assert holder.working_now(lease, "2026-12-06T14:20:00Z", later, "rita").startswith(
        "idle since "
    )
    two_days = "2026-12-08T15:00:00.000000Z"
    assert holder.working_now(lease, "2026-12-06T14:20:00Z", two_days, "rita") == "idle 2 d"
    mine = replace(lease, holder=ActorRef(ActorKind.PERSON, "rita"), expires_at=None)
    assert holder.working_now(mine, None, now, "rita") == "you"
