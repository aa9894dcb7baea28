"""The decision queue: the store's read of every open decision, and the window's view of it."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, armed, open_window

from store import Actor, Store
from store.commands import approvals as ap
from store.reads.decisions import open_decisions
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="drafter-7")
ANA = Actor(kind="person", id="ana", name="Ana")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _request(store: Store, task: str, n: int, expires_in: int) -> str:
    aid = f"apr-{task}-{n}"
    store.execute(
        ap.RequestApproval(
            task_id=task, approval_id=aid, payload={"kind": "send", "n": n},
            consequence=f"send message {n}", policy="test", expires_in_seconds=expires_in,
        ),
        AGENT,
    )  # fmt: skip
    return aid


def test_open_decisions_lists_every_kind_approvals_by_expiry(store: Store) -> None:
    fill_demo(store)
    late = _request(store, "note", 1, 7200)
    soon = _request(store, "note", 2, 600)
    with store.read() as conn:
        from store import db

        rows = open_decisions(conn, db.database_now(conn), store.blobs)
    kinds = {r["kind"] for r in rows}
    assert {"approval", "reconcile", "judge"} <= kinds
    approvals = [r["key"] for r in rows if r["kind"] == "approval"]
    # Soonest expiry first: 10 minutes, 2 hours, then the demo's request (4 hours).
    assert approvals == [soon, late, "apr-note-mail"]
    # Approvals lead, the rest follow.
    first_other = next(i for i, r in enumerate(rows) if r["kind"] != "approval")
    assert all(r["kind"] != "approval" for r in rows[first_other:])
    assert all(r["task_title"] and r["why"] and r["since"] for r in rows)


def test_a_stopped_run_is_a_decision_named_by_its_task(store: Store) -> None:
    """Only runs awaiting a person are read from the tasks table; each carries its task's
    title, owner and how long it has waited."""
    from store import commands as c
    from store import db
    from store.commands.checkpoints import StopRun

    store.execute_all(
        [
            c.CreateTask(task_id="halted", title="Halted run", owner="olga", objective="x"),
            c.CreateTask(task_id="busy", title="Busy run", owner="olga", objective="y"),
        ],
        AGENT,
    )
    store.execute(StopRun(task_id="halted", reason="owner's call"), Actor(kind="person", id="olga"))
    with store.read() as conn:
        rows = open_decisions(conn, db.database_now(conn), store.blobs)
    assert [(r["kind"], r["task_id"]) for r in rows] == [("resume", "halted")]
    (row,) = rows
    assert row["task_title"] == "Halted run" and row["owner"] == "olga"
    assert "owner's call" in row["why"] and row["since"] == store.task("halted")["updated_at"]


@pytest.mark.parametrize("damage", ["delete", "replace"])
def test_a_criterion_whose_evidence_is_gone_waits_on_a_person(
    store: Store, tmp_path: Path, damage: str
) -> None:
    """Judged satisfied, then its evidence lost or overwritten: the task's state says
    "evidence missing" (rules.criterion_state), and the queue lists it for a person as the
    same rule says, with why; an intact one is not listed."""
    from blob_damage import damage_blob, lose_blob
    from test_authority import new_task, satisfied_criterion

    from store import commands as c
    from store import db

    tid = new_task(store, tmp_path)
    cid = satisfied_criterion(store, tid)
    other = new_task(store, tmp_path)
    intact = store.execute(c.AddCriterion(task_id=other, text="also right"), AGENT)
    eid = store.execute(
        c.AttachEvidence(  # other words: a blob of its own (blobs are shared by content)
            task_id=other, criterion_id=intact, kind="command_output",
            content=c.Content(text="also ok"),
        ),
        AGENT,
    )  # fmt: skip
    store.execute(
        c.RecordArtifact(task_id=other, artifact_id="r", name="r", content=c.Content(text="r")),
        AGENT,
    )
    store.execute(
        c.JudgeCriterion(
            task_id=other, criterion_id=intact, status="satisfied", artifact_id="r",
            evidence_ids=[eid],
        ),
        AGENT,
    )  # fmt: skip
    with store.read() as conn:
        assert open_decisions(conn, db.database_now(conn), store.blobs) == []
    ev = store.task(tid)["criteria"][0]["evidence"][0]
    if damage == "delete":
        lose_blob(store, ev["digest"])
    else:
        damage_blob(store, ev["digest"], b"not what was judged")
    assert store.task(tid)["criteria"][0]["state"] == "evidence_missing"
    with store.read() as conn:
        rows = open_decisions(conn, db.database_now(conn), store.blobs)
    assert [(r["kind"], r["task_id"], r["key"]) for r in rows] == [("judge", tid, cid)]
    assert "evidence can no longer be read" in rows[0]["why"]
    assert other not in {r["task_id"] for r in rows}
    # Once the record is closed nobody can judge it: the queue no longer offers it.
    store.execute(c.SetStatus(task_id=tid, status="superseded", reason="replaced"), ANA)
    with store.read() as conn:
        assert open_decisions(conn, db.database_now(conn), store.blobs) == []


@pytest.mark.sqlite_only
def test_the_queue_follows_another_process_and_clears_from_the_keyboard(qtbot, store: Store):
    fill_demo(store)
    w = open_window(qtbot, store)
    q = w.queue
    qtbot.waitUntil(lambda: q.loaded, timeout=WAIT_MS)
    before = len(q.model.rows)
    other = Store.open(store.location.directory)
    try:
        ids = [_request(other, "note", n, 3600 + n) for n in range(3)]
    finally:
        other.close()
    qtbot.waitUntil(lambda: len(q.model.rows) == before + 3, timeout=WAIT_MS)
    w.show_queue()
    q.kind.setCurrentIndex(q.kind.findData("approval"))
    assert q.proxy.rowCount() == 4
    q.table.setCurrentIndex(q.proxy.index(0, 0))
    from PySide6.QtCore import Qt

    qtbot.keyClick(q.table, Qt.Key.Key_Return)
    decided = []
    for _ in range(4):
        qtbot.waitUntil(lambda: q.dialog is not None and q.dialog.isVisible(), timeout=WAIT_MS)
        d = q.dialog
        armed(qtbot, d.ok)
        d.note.setPlainText("ok")
        d.ok.setFocus()
        qtbot.keyClick(d.ok, Qt.Key.Key_Space)
        qtbot.waitUntil(lambda d=d: not d.isVisible(), timeout=WAIT_MS)
        decided.append(d.approval_id)
    assert set(ids) <= set(decided)
    qtbot.waitUntil(lambda: q.proxy.rowCount() == 0, timeout=WAIT_MS)
    states = {a["approval_id"]: a["state"] for a in store.task("note")["approvals"]}
    assert all(states[i] == "approved" for i in ids)


@pytest.mark.sqlite_only
def test_the_selected_decision_shows_its_task_and_the_counts_read_right(qtbot, store: Store):
    fill_demo(store)
    w = open_window(qtbot, store)
    q = w.queue
    qtbot.waitUntil(lambda: q.loaded, timeout=WAIT_MS)
    w.show_queue()
    assert "(1 approval)" in q.summary.text()
    for row in range(q.proxy.rowCount()):
        q.table.setCurrentIndex(q.proxy.index(row, 0))
        task = q.current()
        assert task is not None
        qtbot.waitUntil(lambda task=task: w.task_view.task_id == task["task_id"], timeout=WAIT_MS)
    assert w.views.currentWidget() is q  # the queue stays in front


def test_a_read_that_finds_nothing_new_keeps_the_rows_and_moves_the_clock(qtbot) -> None:
    from boris_desktop.queue.decisions import WAITING, DecisionModel
    from store.api import Decision

    rows = [
        Decision(id="a", kind="approval", task_id="t", task_title="T", owner="o", key="ap",
                 what="send", why="approve or reject", since="2026-12-04T10:00:00Z",
                 expires_at=None, requester=None)
    ]  # fmt: skip
    model = DecisionModel()
    resets: list[int] = []
    changed: list[tuple[int, int]] = []
    model.modelReset.connect(lambda: resets.append(1))
    model.dataChanged.connect(lambda a, b, *_: changed.append((a.column(), b.column())))
    model.set_rows(rows, "2026-12-04T10:00:05Z")
    assert resets == [] and model.rowCount() == 1  # inserted, not reset
    changed.clear()
    model.set_rows([r.model_copy() for r in rows], "2026-12-04T10:00:09Z")  # the same, again
    assert resets == [] and model.now == "2026-12-04T10:00:09Z"
    assert changed == [(WAITING, model.columnCount() - 1)]
    model.set_rows([*rows, rows[0].model_copy(update={"id": "b"})], "2026-12-04T10:00:10Z")
    assert resets == [] and model.rowCount() == 2
