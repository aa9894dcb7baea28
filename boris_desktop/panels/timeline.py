"""Timeline: the event history, filterable by type and actor."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QVBoxLayout

from .. import text as t
from ..records import Node
from ..widgets import plain_label
from .base import Bundle, TreePanel, json_detail

ALL = "(all)"


def _gist(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 160 else text[:157] + "…"


class TimelinePanel(TreePanel):
    title = "Timeline"
    headers = ("Seq", "At", "Type", "Actor", "Payload")
    expand_all = False

    def extra_top(self, layout: QVBoxLayout) -> None:
        self._events: list[dict[str, Any]] = []
        self.type_filter = QComboBox()
        self.type_filter.setAccessibleName("Filter events by type")
        self.actor_filter = QComboBox()
        self.actor_filter.setAccessibleName("Filter events by actor")
        for box in (self.type_filter, self.actor_filter):
            box.addItem(ALL)
            box.setMinimumContentsLength(18)
            box.currentIndexChanged.connect(self._refilter)
        row = QHBoxLayout()
        row.addWidget(plain_label("Type:", wrap=False))
        row.addWidget(self.type_filter)
        row.addSpacing(12)
        row.addWidget(plain_label("Actor:", wrap=False))
        row.addWidget(self.actor_filter)
        row.addStretch(1)
        layout.addLayout(row)

    @staticmethod
    def _actor(e: dict[str, Any]) -> str:
        return t.actor_short(e["actor"])

    def show_task(self, bundle: Bundle) -> None:
        self._events = bundle.get("events") or []
        for box, values in (
            (self.type_filter, sorted({e["type"] for e in self._events})),
            (self.actor_filter, sorted({self._actor(e) for e in self._events})),
        ):
            have = [box.itemText(i) for i in range(1, box.count())]
            if have != values:
                keep = box.currentText()
                box.blockSignals(True)
                box.clear()
                box.addItems([ALL, *values])
                box.setCurrentIndex(max(box.findText(keep), 0))
                box.blockSignals(False)
        super().show_task(bundle)

    def summary(self, bundle: Bundle) -> str:
        shown = len(self.nodes(bundle))
        return f"{shown} of {len(self._events)} events, newest first."

    def nodes(self, bundle: Bundle) -> list[Node]:
        kind, who = self.type_filter.currentText(), self.actor_filter.currentText()
        return [
            Node(
                key=str(e["seq"]),
                cells=(
                    str(e["seq"]),
                    t.when(e["at"]),
                    e["type"],
                    self._actor(e),
                    _gist(e["payload"]),
                ),
                tip=t.actor(e["actor"]),
                detail=json_detail(e),
            )
            for e in reversed(self._events)
            if kind in (ALL, e["type"]) and who in (ALL, self._actor(e))
        ]

    def _refilter(self) -> None:
        self.tree.set_nodes(self.nodes({}))
        self.caption.setText(self.summary({}))
