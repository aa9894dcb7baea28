"""The checkpoint lineage as a picture, like `git log --graph`: newest first, one row per
checkpoint, a lane per line of descent; a fork is two heads side by side, a merge a node
with lines from both. Heads are ringed and named; a click selects the checkpoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QMouseEvent, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from boris_desktop.ui import text as t

if TYPE_CHECKING:
    from store.api import Checkpoint

#: Lane colours (distinct, readable on light and dark backgrounds); the head is also ringed
#: and named, never marked by colour alone.
LANE_COLOURS = ("#2f7ed8", "#d9822b", "#3a9d5d", "#a05ac8", "#c8464b", "#6b8e23")


@dataclass
class Row:
    checkpoint: Checkpoint
    lane: int
    #: Segments from this row down to the next: (lane here, lane there).
    down: list[tuple[int, int]] = field(default_factory=list)


def parents_of(c: Checkpoint, known: set[str]) -> list[str]:
    """What a checkpoint continues from: what it supersedes and merges, each once."""
    seen: list[str] = []
    for p in [*c.supersedes, *c.merged]:
        if p in known and p not in seen:
            seen.append(p)
    return seen


def layout(checkpoints: list[Checkpoint]) -> list[Row]:
    """Rows newest first with their lanes and the segments joining them (git log --graph's
    walk: a lane waits for the checkpoint it leads to; children of one parent converge
    on it, a merge opens a lane for each further parent)."""
    order = sorted(checkpoints, key=lambda c: (c.seq, c.at), reverse=True)
    known = {c.checkpoint_id for c in order}
    lanes: list[str | None] = []  # the checkpoint each lane leads down to
    starts: list[list[int]] = []  # per lane: the lanes in the row above its line starts from
    rows: list[Row] = []
    for c in order:
        cid = c.checkpoint_id
        waiting = [i for i, x in enumerate(lanes) if x == cid]
        if waiting:
            lane = waiting[0]
        else:
            lane = next((i for i, x in enumerate(lanes) if x is None), len(lanes))
            if lane == len(lanes):
                lanes.append(None)
                starts.append([])
        if rows:  # the segments from the row above down to this one
            above = rows[-1]
            for i, x in enumerate(lanes):
                if x is None:
                    continue
                for s in starts[i]:
                    above.down.append((s, lane if x == cid else i))
        for i in waiting:
            lanes[i], starts[i] = None, []
        for i, x in enumerate(lanes):  # lines passing this row go straight on
            if x is not None:
                starts[i] = [i]
        for n, p in enumerate(parents_of(c, known)):
            have = next((i for i, x in enumerate(lanes) if x == p), None)
            if have is not None:  # already awaited by another line: join it
                starts[have].append(lane)
            elif n == 0:
                lanes[lane], starts[lane] = p, [lane]
            else:  # a merge: a lane of its own for each further parent
                free = next((i for i, x in enumerate(lanes) if x is None and i != lane), None)
                if free is None:
                    free = len(lanes)
                    lanes.append(None)
                    starts.append([])
                lanes[free], starts[free] = p, [lane]
        rows.append(Row(c, lane))
    return rows


class LineageGraph(QWidget):
    """Paints `layout`'s rows; `selected(checkpoint_id)` on a click."""

    selected = Signal(str)

    ROW = 24
    LANE = 18
    DOT = 5

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Checkpoint lineage graph")
        self.rows: list[Row] = []
        self.heads: list[str] = []
        self.current: str | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(False)

    def set_lineage(self, checkpoints: list[Checkpoint], heads: list[str]) -> None:
        self.rows = layout(checkpoints)
        self.heads = list(heads)
        self.setToolTip(
            t.tip(f"{t.count(len(self.heads), 'head', 'heads')}: {', '.join(self.heads)}")
            if self.heads
            else ""
        )
        self.updateGeometry()
        self.update()

    def set_current(self, checkpoint_id: str | None) -> None:
        self.current = checkpoint_id
        self.update()

    def lanes(self) -> int:
        return (
            max((max([r.lane, *(x for s in r.down for x in s)]) for r in self.rows), default=0) + 1
        )

    def sizeHint(self) -> QSize:
        return QSize(480, max(1, len(self.rows)) * self.ROW + 4)

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()

    def row_at(self, y: float) -> int:
        return int((y - 2) // self.ROW)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        row = self.row_at(event.position().y())
        if 0 <= row < len(self.rows):
            cid = self.rows[row].checkpoint.checkpoint_id
            self.set_current(cid)
            self.selected.emit(cid)
        super().mousePressEvent(event)

    def _x(self, lane: int) -> float:
        return 12 + lane * self.LANE

    def _y(self, row: int) -> float:
        return 2 + row * self.ROW + self.ROW / 2

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text_x = self._x(self.lanes()) + 8
        for n, r in enumerate(self.rows):
            cid = r.checkpoint.checkpoint_id
            if cid == self.current:
                band = QRectF(0, self._y(n) - self.ROW / 2, self.width(), self.ROW)
                p.fillRect(band, pal.color(QPalette.ColorRole.Highlight).lighter(170))
        for n, r in enumerate(self.rows):  # the lines first, the dots over them
            for a, b in r.down:
                colour = QColor(LANE_COLOURS[b % len(LANE_COLOURS)])
                p.setPen(QPen(colour, 2))
                y0, y1 = self._y(n), self._y(n + 1)
                if a == b:
                    p.drawLine(QPointF(self._x(a), y0), QPointF(self._x(b), y1))
                else:  # a bend: down half a row, across, down (as git draws / and \)
                    mid = (y0 + y1) / 2
                    p.drawLine(QPointF(self._x(a), y0), QPointF(self._x(a), mid - 4))
                    p.drawLine(QPointF(self._x(a), mid - 4), QPointF(self._x(b), mid + 4))
                    p.drawLine(QPointF(self._x(b), mid + 4), QPointF(self._x(b), y1))
        bold = QFont(self.font())
        bold.setBold(True)
        fm = self.fontMetrics()
        for n, r in enumerate(self.rows):
            c = r.checkpoint
            cid = c.checkpoint_id
            is_head = cid in self.heads
            centre = QPointF(self._x(r.lane), self._y(n))
            colour = QColor(LANE_COLOURS[r.lane % len(LANE_COLOURS)])
            p.setPen(QPen(colour.darker(130), 1.5))
            p.setBrush(colour)
            p.drawEllipse(centre, self.DOT, self.DOT)
            if is_head:  # ringed: the head is marked by shape, not colour alone
                p.setBrush(Qt.BrushStyle.NoBrush)
                p.setPen(QPen(pal.color(QPalette.ColorRole.Text), 1.5))
                p.drawEllipse(centre, self.DOT + 3, self.DOT + 3)
            x = text_x
            y = self._y(n) + fm.ascent() / 2 - 1
            p.setPen(pal.color(QPalette.ColorRole.Text))
            p.setFont(bold if is_head else self.font())
            p.drawText(QPointF(x, y), cid)
            x += p.fontMetrics().horizontalAdvance(cid) + 8
            if is_head:
                word = "HEAD (fork)" if len(self.heads) > 1 else "HEAD"
                w = p.fontMetrics().horizontalAdvance(word) + 10
                tag = QRectF(x, self._y(n) - fm.height() / 2 - 1, w, fm.height() + 2)
                p.setPen(QPen(colour.darker(140), 1))
                p.setBrush(colour.lighter(175))
                p.drawRoundedRect(tag, 4, 4)
                p.setPen(QColor("#1a1a1a"))
                p.drawText(tag, Qt.AlignmentFlag.AlignCenter, word)
                x += w + 8
            p.setFont(self.font())
            p.setPen(pal.color(QPalette.ColorRole.PlaceholderText))
            merged = len(parents_of(c, {x.checkpoint.checkpoint_id for x in self.rows})) > 1
            rest = f"{c.reason}{' (merge)' if merged else ''} · {t.actor_short(c.author)}"
            rest += f" · event {c.seq} · {t.when(c.at)}"
            note = c.note.splitlines()[0] if c.note else ""
            if note:
                rest += f" · {note}"
            rest = fm.elidedText(
                rest, Qt.TextElideMode.ElideRight, max(0, int(self.width() - x - 6))
            )
            p.drawText(QPointF(x, y), rest)
        p.end()
