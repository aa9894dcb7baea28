"""The checkpoint lineage as a graph: the demo's fork shows two heads, a merge makes one."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import QPoint, Qt
from test_desktop_actions import WAIT_MS, open_window, settle

from store import Actor, Store
from store.commands import checkpoints as ck
from store.services.demo import fill_demo

RITA = Actor(kind="person", id="rita", name="Rita Reviewer")


@pytest.fixture(autouse=True)
def _settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


def _panel(qtbot, w):
    panel = w.task_view.panel("Checkpoints")
    w.task_view.tabs.setCurrentWidget(panel)
    settle(qtbot, w)
    return panel


def _row_of(graph, checkpoint_id: str) -> int:
    return next(i for i, r in enumerate(graph.rows) if r.checkpoint.checkpoint_id == checkpoint_id)


def test_the_fork_shows_two_heads_and_a_merge_one(qtbot, store: Store) -> None:
    fill_demo(store)
    w = open_window(qtbot, store, "guide")
    panel = _panel(qtbot, w)
    g = panel.graph
    heads = store.task("guide")["checkpoints"]["heads"]
    assert sorted(heads) == ["ckpt-handoff", "ckpt-milestone"]
    assert sorted(g.heads) == sorted(heads)
    # Two heads side by side: each in a lane of its own, both lines ending on the initial one.
    lanes = {r.checkpoint.checkpoint_id: r.lane for r in g.rows}
    assert lanes["ckpt-handoff"] != lanes["ckpt-milestone"]
    assert g.rows[-1].checkpoint.checkpoint_id == "ckpt-initial"
    assert g.lanes() == 2
    into_initial = [seg for seg in g.rows[-2].down if seg[1] == lanes["ckpt-initial"]]
    assert len(into_initial) == 2  # the fork: two lines converge on the initial checkpoint
    assert panel.graph_box.isVisible()

    # A click on a row selects that checkpoint in the list and shows it below.
    row = _row_of(g, "ckpt-milestone")
    qtbot.mouseClick(g, Qt.MouseButton.LeftButton, pos=QPoint(40, int(g._y(row))))
    node = panel.tree.current_node()
    assert node is not None and node.key == "ckpt-milestone"
    assert g.current == "ckpt-milestone"

    # A merge checkpoint from another process: one head, and the graph says so.
    other = Store.open(store.location.directory)
    try:
        other.execute(
            ck.WriteCheckpoint(task_id="guide", reason="handoff", note="merged the two lines",
                               supersedes=["ckpt-handoff"], merge=["ckpt-milestone"],
                               checkpoint_id="ckpt-merge"),
            RITA,
        )  # fmt: skip
    finally:
        other.close()
    qtbot.waitUntil(lambda: g.heads == ["ckpt-merge"], timeout=WAIT_MS)
    top = g.rows[0]
    assert top.checkpoint.checkpoint_id == "ckpt-merge"
    # The merge node has a line down to each of the two it joins.
    assert len(top.down) == 2
    lanes = {r.checkpoint.checkpoint_id: r.lane for r in g.rows}
    assert {b for _a, b in top.down} == {lanes["ckpt-handoff"], lanes["ckpt-milestone"]}
    assert all(a == top.lane for a, _b in top.down)
    # The selection survives the update.
    assert panel.tree.current_node().key == "ckpt-milestone"


def test_layout_of_a_straight_line_is_one_lane() -> None:
    from boris_desktop.task.panels.lineage import layout
    from store.api import ActorKind, ActorRef, Checkpoint

    def c(cid: str, seq: int, *sup: str) -> Checkpoint:
        return Checkpoint(
            task_id="t", checkpoint_id=cid, id=cid, reason="milestone", supersedes=list(sup),
            merged=[], seq=seq, chain_hash="", state_digest="", note="", at="", state={},
            author=ActorRef(ActorKind.AGENT, "a"), superseded=False,
        )  # fmt: skip

    rows = layout([c("a", 1), c("b", 2, "a"), c("c", 3, "b")])
    assert [r.checkpoint.checkpoint_id for r in rows] == ["c", "b", "a"]
    assert {r.lane for r in rows} == {0}
    assert [r.down for r in rows] == [[(0, 0)], [(0, 0)], []]
