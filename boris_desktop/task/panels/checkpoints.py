"""Checkpoints: the lineage with heads and forks; each checkpoint's reason, author, note,
and a diff of the state between two checkpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QTimer
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
)

from boris_desktop.runtime.loader import Loader
from boris_desktop.signers import signer_words
from boris_desktop.task.bundle import TaskBundle
from boris_desktop.task.panels import manifest
from boris_desktop.task.panels.base import TreePanel, form_detail
from boris_desktop.task.panels.lineage import LineageGraph
from boris_desktop.ui import text as t
from boris_desktop.ui.records import Node
from boris_desktop.ui.widgets import plain_label

if TYPE_CHECKING:
    from store.api import Checkpoint, Signer, TaskState


def state_diff(old: Checkpoint, new: Checkpoint) -> str:
    """A unified diff of two checkpoints' states, as indented JSON (run on a worker)."""
    import difflib
    import json

    from boris_desktop.runtime.interpreter import paused
    from boris_desktop.runtime.preview import capped

    def lines(c: Checkpoint) -> list[str]:
        return json.dumps(c.state, indent=2, sort_keys=True).splitlines(keepends=True)

    with paused():  # difflib makes a container per line: see runtime
        text = "".join(
            x if x.endswith("\n") else x + "\n"
            for x in difflib.unified_diff(
                lines(old), lines(new), old.checkpoint_id, new.checkpoint_id
            )
        )
    text, cut = capped(text)
    if cut:  # said below the diff, where the reader reaches the cut
        text += f"[…{cut.removeprefix(': ')}]\n"
    return text or "(the two states are the same)"


SIGNER = 4  # the column that says who signed the checkpoint


class CheckpointsPanel(TreePanel):
    title = "Checkpoints"
    headers = ("Checkpoint", "Reason", "Head?", "Author", "Signed by", "Event seq", "At", "Note")
    forms = True

    #: The graph shows at most this many rows before it scrolls.
    GRAPH_ROWS = 6
    #: ...and at least this many, however short the window.
    GRAPH_LEAST = 2

    def __init__(self, loader: Loader) -> None:
        self.compare = QComboBox()
        self.graph = LineageGraph()
        self.graph_box = QScrollArea()
        super().__init__(loader)
        self.graph.selected.connect(self.select_checkpoint)
        self.tree.selectionModel().currentChanged.connect(
            lambda cur, _prev: self.graph.set_current(
                n.key if (n := self.tree.records.node(cur)) is not None else None
            )
        )
        self.compare.setAccessibleName("Compare the state with checkpoint")
        self.compare.setToolTip("Show how the task's state changed between two checkpoints")
        self.compare.currentIndexChanged.connect(self._refresh_detail)
        self._rows: dict[str, Checkpoint] = {}
        #: Who signed each checkpoint (checkpoint id -> the store's signer words).
        self._signers: dict[str, Signer] = {}
        self._selected: str | None = None
        self._bundle: TaskBundle | None = None

    def extra_top(self, layout: QVBoxLayout) -> None:
        self.graph_box.setWidget(self.graph)
        self.graph_box.setWidgetResizable(True)
        self.graph_box.setFrameShape(QFrame.Shape.StyledPanel)
        self.graph_box.setAccessibleName("Checkpoint lineage as a graph")
        self.graph_box.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.graph_box.setMinimumHeight(1)  # 0 would mean "the scroll area's own minimum"
        # The graph heads the panel's splitter (graph, list, detail): it gets the rows it
        # needs where the window has them, and the reviewer can drag it.
        self.split.insertWidget(0, self.graph_box)
        # The room the graph's least rows take comes out of the detail's least height (its
        # line and a row: the list above names the checkpoint), not out of the inbox's.
        detail = self.split.widget(2)
        if detail is not None:
            detail.setMinimumHeight(40)
        self.split.setStretchFactor(0, 0)
        self.split.setStretchFactor(1, 3)
        self.split.setStretchFactor(2, 2)
        self.split.splitterMoved.connect(self._graph_moved)
        bar = QHBoxLayout()
        bar.addStretch(1)
        bar.addWidget(plain_label("Compare the state with:", wrap=False))
        bar.addWidget(self.compare)
        layout.addLayout(bar)

    def show_task(self, bundle: TaskBundle) -> None:
        rows = bundle.task.checkpoints.checkpoints
        self._rows = {c.checkpoint_id: c for c in rows}
        self.graph.set_lineage(rows, bundle.task.checkpoints.heads)
        # Up to GRAPH_ROWS rows, then it scrolls. It asks for no minimum of its own: the task
        # view's least height decides how much of the window the inbox keeps (test_desktop_room),
        # so in a short window the graph gives way to the list below rather than to the inbox.
        frame = 2 * self.graph_box.frameWidth() + 6
        shown = min(max(len(rows), 1), self.GRAPH_ROWS) * self.graph.ROW + frame
        self.graph_box.setMaximumHeight(shown)
        # ...but never less than GRAPH_LEAST rows (a fork's two heads and where they
        # meet): below that the splitter gave it what the list and detail left, 1 to 25 px.
        least = min(max(len(rows), 1), self.GRAPH_LEAST) * self.graph.ROW + frame
        self.graph_box.setMinimumHeight(least)
        self._graph_wanted = shown
        self.graph_box.setVisible(bool(rows))
        self._signers = bundle.signing.checkpoints
        self._bundle = bundle
        super().show_task(bundle)
        self._size_graph()
        node = self.tree.current_node()
        self.graph.set_current(node.key if node is not None else None)

    _graph_wanted = 0
    _graph_dragged = False

    def _graph_moved(self, _pos: int, _index: int) -> None:
        self._graph_dragged = True

    def keep_graph_height(self) -> None:
        """The split was restored as the reviewer left it: no longer sized to the rows."""
        self._graph_dragged = True

    def _size_graph(self) -> None:
        """The graph its rows (at most half the splitter), the list and detail the rest 3:2."""
        total = sum(self.split.sizes())
        if self._graph_dragged or total <= 0 or self.graph_box.isHidden():
            return
        graph = min(self._graph_wanted, int(total * 0.5))
        rest = total - graph
        self.split.setSizes([graph, rest * 3 // 5, rest - rest * 3 // 5])

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._size_graph_soon()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._size_graph_soon()

    def _size_graph_soon(self) -> None:
        """Once the layout has given the splitter its new height: in the panel's own resize
        the splitter still has the old one, and the graph kept the share of a smaller panel
        (25 px at 1366×768)."""
        self._size_graph()
        QTimer.singleShot(0, self, self._size_graph)

    def path_to(self, checkpoint_id: str) -> tuple[str, ...]:
        """Where a checkpoint is in the tree (under the checkpoints it descends from)."""

        def walk(nodes: list[Node], path: tuple[str, ...]) -> tuple[str, ...]:
            for n in nodes:
                here = (*path, n.key)
                if n.key == checkpoint_id:
                    return here
                found = walk(n.children, here)
                if found:
                    return found
            return ()

        return walk(self.tree.records.roots, ())

    def select_checkpoint(self, checkpoint_id: str) -> None:
        """A click on the graph: that checkpoint is the tree's current row, shown below."""
        path = self.path_to(checkpoint_id)
        ix = self.tree.index_at(path) if path else QModelIndex()
        if ix.isValid():
            self.tree.setCurrentIndex(ix)
            self.tree.scrollTo(ix)

    def show_detail(self, node: Node) -> None:
        if node.key != self._selected:
            self._selected = node.key
            self.compare.blockSignals(True)
            self.compare.clear()
            self.compare.addItem("(none: the checkpoint in full)", None)
            for cid in self._rows:
                if cid != node.key:
                    self.compare.addItem(cid, cid)
            self.compare.blockSignals(False)
        self._refresh_detail()

    def clear_detail(self) -> None:
        super().clear_detail()
        self._selected = None
        self.compare.blockSignals(True)
        self.compare.clear()
        self.compare.blockSignals(False)

    def _refresh_detail(self) -> None:
        chosen = self._rows.get(self._selected or "")
        if chosen is None or self._bundle is None:
            return
        other = self._rows.get(self.compare.currentData() or "")
        if other is None:
            signed, _, why = signer_words(self._signers.get(chosen.checkpoint_id))
            shown = chosen.model_dump(mode="json", exclude={"task_id"}) | {
                "signed_by": f"{signed} — {why}" if why else signed
            }
            # What the model saw and ran under at this checkpoint (issue 35 part M).
            # First: the checkpoint's state below it runs long.
            shown = manifest.section(self._bundle, "checkpoint", chosen.checkpoint_id) | shown
            self.show_form(form_detail(shown))
            return
        old, new = sorted((other, chosen), key=lambda c: (c.seq, c.at))
        self.loader.submit(
            self.detail_job,
            lambda: state_diff(old, new),
            lambda text: self.show_plain(text, "diff"),
        )

    def tab_note(self, task: TaskState) -> str:
        return "forked" if len(task.checkpoints.heads) > 1 else ""

    def summary(self, bundle: TaskBundle) -> str:
        cps = bundle.task.checkpoints
        if not cps.checkpoints:
            return "No checkpoints yet."
        heads = cps.heads
        if len(heads) > 1:
            return (
                f"Forked lineage: {len(heads)} heads ({', '.join(heads)}). "
                "Each branch is shown under the checkpoint it supersedes; neither is picked."
            )
        n = t.count(len(cps.checkpoints), "checkpoint", "checkpoints")
        return f"{n}; head {heads[0] if heads else '—'}."

    def nodes(self, bundle: TaskBundle) -> list[Node]:
        cps = bundle.task.checkpoints
        rows = cps.checkpoints
        heads = set(cps.heads)
        forked = len(heads) > 1
        by_id = {c.checkpoint_id: c for c in rows}
        children: dict[str, list[Checkpoint]] = {}
        roots = []
        for c in rows:
            parents = [p for p in c.supersedes if p in by_id]
            if parents:
                # A merge supersedes several: shown under the first, its others named.
                children.setdefault(parents[0], []).append(c)
            else:
                roots.append(c)

        def node(c: Checkpoint) -> Node:
            cid = c.checkpoint_id
            is_head = cid in heads
            also = c.supersedes[1:] + c.merged
            head_word = ("head (fork)" if forked else "head") if is_head else ""
            signed, mark, why = signer_words(self._signers.get(cid))
            return Node(
                key=cid,
                cells=(
                    cid,
                    c.reason,
                    head_word,
                    t.actor_short(c.author),
                    signed,
                    str(c.seq),
                    t.when(c.at),
                    c.note + (f" (also supersedes {', '.join(also)})" if also else ""),
                ),
                icon_name=("fork" if forked else "ok") if is_head else "stopped",
                tip=f"chain hash {c.chain_hash}\nstate digest {c.state_digest}",
                cell_icons=((SIGNER, mark),) if mark else (),
                cell_tips=((SIGNER, why),) if why else (),
                detail=None,  # shown by show_detail: in full, or diffed with another
                children=[node(k) for k in children.get(cid, [])],
            )

        return [node(c) for c in roots]
