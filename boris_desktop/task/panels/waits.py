"""Waits: what the task waits for (a rate limit, an approval, a status check, a retry, a
time), when it is next considered on the database clock, the budget it holds and what
cancels it. A due wait is re-evaluated by the agent, never executed: the panel says "due"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer

from boris_desktop.runtime.loader import Loader
from boris_desktop.task.bundle import TaskBundle
from boris_desktop.task.panels.base import TreePanel, form_detail
from boris_desktop.ui import holder
from boris_desktop.ui import text as t
from boris_desktop.ui.records import Node
from store import api

if TYPE_CHECKING:
    from store.api import TaskState, Wait


def reservation_text(w: Wait) -> str:
    r = w.reservation
    if not r:
        return "—"
    held = "held" if r.held else "released"
    return f"{t.number(r.amount)} {r.counter} ({held})"


def condition_text(w: Wait) -> str:
    c = w.condition
    if not c:
        return "—"
    return c.words + (f" (came true: {c.met})" if c.met else "")


class WaitsPanel(TreePanel):
    title = "Waits"
    headers = ("Wait", "Waiting for", "Next consideration", "Reservation", "Condition", "State")
    forms = True

    def __init__(self, loader: Loader) -> None:
        super().__init__(loader)
        self.clock = holder.Clock()
        self._bundle: TaskBundle | None = None
        # "in 5 min" counts down between reads, as the header's line does.
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._tick)
        self._ticker.start()

    def _tick(self) -> None:
        if self._bundle is not None and self.isVisible() and self._bundle.task.waits:
            self.tree.set_nodes(self.nodes(self._bundle), expand_all=self.expand_all)
            self.caption.setText(self.summary(self._bundle))

    def tab_note(self, task: TaskState) -> str:
        n = sum(w.state == api.WaitState.OPEN for w in task.waits)
        return f"{n} open" if n else ""

    def summary(self, bundle: TaskBundle) -> str:
        waits = bundle.task.waits
        if not waits:
            return "No waits recorded: nothing this task waits for outlives a process."
        return (
            holder.waits_line(waits, self.clock.now())
            + ". A due wait is re-evaluated by the agent under current policy, never simply "
            "executed; Actions › Cancel Wait… ends the selected one."
        )

    def show_task(self, bundle: TaskBundle) -> None:
        self._bundle = bundle
        self.clock.set(bundle.task.now)
        super().show_task(bundle)

    def show_clock(self, bundle: TaskBundle) -> None:
        # Only the times move: the rows are redrawn by the tick, and only if there are any.
        self._bundle = bundle
        self.clock.set(bundle.task.now)
        self._tick()

    def nodes(self, bundle: TaskBundle) -> list[Node]:
        now = self.clock.now()
        return [_wait(w, now) for w in bundle.task.waits]


def _wait(w: Wait, now: str) -> Node:
    open_ = w.state == api.WaitState.OPEN
    needs = "a person decides it (the decision queue lists it)" if w.needs_person else ""
    return Node(
        key=w.wait_id,
        cells=(
            f"{w.wait_id} · {w.kind.replace('_', ' ')}",
            w.ref or "—",
            holder.next_consideration(w, now) + (f" ({t.when(w.not_before)})" if open_ else ""),
            reservation_text(w),
            condition_text(w),
            w.state + (f": {w.end_reason}" if w.end_reason else ""),
        ),
        status=None if open_ else w.state,
        icon_name="attention" if needs else "pending" if open_ else None,
        tip=f"recorded by {t.actor(w.recorded_by)} at {t.when(w.recorded_at)}"
        + (f"\n{w.note}" if w.note else ""),
        detail=form_detail(w.to_json(), needs),
    )
