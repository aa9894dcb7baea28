"""Timeline: the event history, newest first, filterable by type and actor.

A task may hold hundreds of thousands of events, so the timeline is read a page at a time
on a worker (`jobs.timeline_page`): the newest page comes with the task, older pages as the
reviewer scrolls to the end (or asks for them), and a filter asks the store for the events
it matches. New events from a live agent are put on top without dropping what was loaded.
The GUI thread only makes a row per event; the payload's one-line gist is made on the worker
and its full JSON when the row is selected.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QPushButton, QVBoxLayout

from boris_desktop.runtime import jobs
from boris_desktop.signers import signer_words
from boris_desktop.task.bundle import Filter, TaskBundle, TimelineEvent, TimelinePage
from boris_desktop.task.panels.base import TreePanel
from boris_desktop.ui import text as t
from boris_desktop.ui.records import Node, RecordTable
from boris_desktop.ui.widgets import plain_label, pretty_json

SIGNER = 4  # the column that says who signed the event


class TimelinePanel(TreePanel):
    title = "Timeline"
    headers = ("Seq", "At", "Type", "Actor", "Signed by", "Payload")
    expand_all = False
    view_class = RecordTable

    def extra_top(self, layout: QVBoxLayout) -> None:
        self._task_id: str | None = None
        self._events: list[TimelineEvent] = []  # loaded, newest first
        self._more = False  # older events than the last loaded remain
        self._total = 0
        # A row per event, made once: events never change, and rebuilding thousands of rows
        # for each page or live update held the GUI thread for 200 ms at 6,000 rows.
        self._rows: dict[int, Node] = {}
        # What the unfiltered view had loaded, kept while a filter is shown.
        self._unfiltered: tuple[list[TimelineEvent], bool] | None = None
        self.type_filter = QComboBox()
        self.type_filter.setAccessibleName("Filter events by type")
        self.actor_filter = QComboBox()
        self.actor_filter.setAccessibleName("Filter events by actor")
        for box in (self.type_filter, self.actor_filter):
            box.addItem("(all)", None)
            box.setMinimumContentsLength(18)
            box.currentIndexChanged.connect(self._refilter)
        self.older = QPushButton("Load older events")
        self.older.setAccessibleName("Load older events")
        self.older.clicked.connect(self.load_older)
        row = QHBoxLayout()
        row.addWidget(plain_label("Type:", wrap=False))
        row.addWidget(self.type_filter)
        row.addSpacing(12)
        row.addWidget(plain_label("Actor:", wrap=False))
        row.addWidget(self.actor_filter)
        row.addStretch(1)
        row.addWidget(self.older)
        layout.addLayout(row)
        # Fixed widths: the rows change page by page, and measuring them costs the GUI thread.
        for col, width in enumerate((60, 150, 170, 170, 190)):
            self.tree.setColumnWidth(col, width)
        bar = self.tree.verticalScrollBar()
        bar.valueChanged.connect(lambda v: self.load_older() if v and v == bar.maximum() else None)

    # --- the task's newest page, with the record -----------------------------------------

    def show_task(self, bundle: TaskBundle) -> None:
        task_id = bundle.task.id
        self._total = bundle.task.last_seq
        facets = bundle.event_facets
        self._set_items(self.type_filter, [(x, x) for x in facets.types])
        self._set_items(
            self.actor_filter, [(t.actor_short(a), (a.kind, a.id)) for a in facets.actors]
        )
        page = bundle.timeline
        if task_id != self._task_id:
            self._task_id, self._events, self._more = task_id, [], False
            self._unfiltered = None
            self._rows = {}
            self.tree.set_nodes([])
        if self._current_filter() == page.filter:
            self._take(page)
        else:
            self._ask(before_seq=None)  # a filtered view asks for its own newest page
        super().show_task(bundle)

    @staticmethod
    def _set_items(box: QComboBox, items: list[tuple[str, Any]]) -> None:
        have = [(box.itemText(i), box.itemData(i)) for i in range(1, box.count())]
        if have == items:
            return
        keep = box.currentData()
        box.blockSignals(True)
        box.clear()
        box.addItem("(all)", None)
        for label, data in items:
            box.addItem(label, data)
        box.setCurrentIndex(max(box.findData(keep), 0) if keep is not None else 0)
        box.blockSignals(False)

    def _current_filter(self) -> Filter:
        actor = self.actor_filter.currentData()
        return (self.type_filter.currentData(), tuple(actor) if actor else None)

    def _take(self, page: TimelinePage, replace: bool = False) -> None:
        """Merge a page: the newest page puts new events on top, an older one goes below;
        `replace`: the page is what the view shows now (a filter's first answer)."""
        if replace:
            self._events, self._more = list(page.events), page.more
        elif page.before_seq is None:
            newest = _seq(self._events[0]) if self._events else 0
            fresh = [e for e in page.events if _seq(e) > newest]
            # A later signature covers events that were an unsigned tail: their signer is
            # the page's, newer than the one loaded with them.
            now = {_seq(e): e.signer for e in page.events}
            self._events = [
                dataclasses.replace(e, signer=now[_seq(e)])
                if _seq(e) in now and e.signer != now[_seq(e)]
                else e
                for e in self._events
            ]
            if self._events and len(fresh) == len(page.events):
                # More new events than a page: what was loaded is no longer contiguous.
                self._events, self._more = fresh, page.more
            else:
                self._events = fresh + self._events
                self._more = self._more if len(self._events) > len(fresh) else page.more
        else:
            oldest = _seq(self._events[-1]) if self._events else page.before_seq
            self._events += [e for e in page.events if _seq(e) < oldest]
            self._more = page.more
        self.older.setEnabled(self._more)

    # --- older pages and filters, on the worker ------------------------------------------

    def load_older(self) -> None:
        if self._more and self._events and not self.loader.busy("timeline"):
            self._ask(before_seq=_seq(self._events[-1]))

    def _ask(self, before_seq: int | None) -> None:
        store, task_id = self.store, self._task_id
        if store is None or task_id is None:
            return
        event_type, actor = self._current_filter()
        self.loader.submit(
            "timeline",
            lambda: jobs.timeline_page(
                store, task_id, before_seq=before_seq, event_type=event_type, actor=actor
            ),
            self._arrived,
        )

    def _arrived(self, page: TimelinePage) -> None:
        if page.task_id != self._task_id or page.filter != self._current_filter():
            return  # the reviewer moved on
        self._take(page, replace=page.before_seq is None)
        self._show()

    def _refilter(self) -> None:
        """A new filter: show what the loaded events say now, then ask the store."""
        event_type, actor = self._current_filter()
        if self._unfiltered is None:  # leaving the unfiltered view: keep what it loaded
            self._unfiltered = (self._events, self._more)
        base, more = self._unfiltered
        if (event_type, actor) == (None, None):
            self._events, self._more, self._unfiltered = base, more, None
            self._show()
            return
        self._events = [
            e
            for e in base
            if event_type in (None, e.event.type)
            and actor in (None, (e.event.actor.kind, e.event.actor.id))
        ]
        self._more = more
        self._show()
        self._ask(before_seq=None)

    def _show(self) -> None:
        self.tree.set_nodes(self._nodes())
        self.caption.setText(self._summary())

    # --- rows ----------------------------------------------------------------------------

    def summary(self, bundle: TaskBundle) -> str:
        return self._summary()

    def _summary(self) -> str:
        filtered = self._current_filter() != (None, None)
        one, many = ("matching event", "matching events") if filtered else ("event", "events")
        more = "; scroll down for older ones" if self._more else ""
        shown = t.count(len(self._events), one, many)
        return f"{shown} shown of {self._total:,}, newest first{more}."

    def nodes(self, bundle: TaskBundle) -> list[Node]:
        return self._nodes()

    def _nodes(self) -> list[Node]:
        return [self._row(e) for e in self._events]

    def _row(self, row: TimelineEvent) -> Node:
        e, seq = row.event, _seq(row)
        node = self._rows.get(seq)
        if node is None or node.detail.signer != row.signer:
            signed, mark, why = signer_words(row.signer)
            node = self._rows[seq] = Node(
                key=str(seq),
                cells=(
                    str(seq),
                    t.when(e.at),
                    e.type,
                    t.actor_short(e.actor),
                    signed,
                    row.gist,
                ),
                tip=t.actor(e.actor),
                cell_icons=((SIGNER, mark),) if mark else (),
                cell_tips=((SIGNER, why),) if why else (),
                detail=row,
            )
        return node

    def show_detail(self, node: Node) -> None:
        # The full event as JSON, made when the row is selected: not for every row shown.
        row: TimelineEvent = node.detail
        signer = row.signer.to_json() if row.signer else None
        self.detail.show_text(pretty_json({**row.event.to_json(), "signer": signer}), "json")


def _seq(row: TimelineEvent) -> int:
    return row.event.seq
