"""Choosing a head on a forked lineage: which line of work goes on is the person's choice.

Two heads are a fork, and nothing in the window picks one: the Stop and Checkpoint dialogs
show each head (who wrote it, when, why, its note) and the person chooses the head to continue
from, and separately which other heads to merge. Nothing is merged unless ticked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from boris_desktop.ui import text as t
from boris_desktop.ui.widgets import plain_label

if TYPE_CHECKING:
    from store.api import Checkpoint, TaskState

_NOTE_CHARS = 90
_MERGE_PROMPT = "Merge another head into it — only if you mean to (none otherwise):"


def _mnemonic_safe(text: str) -> str:
    """A button's text shown literally: `&` in an id would otherwise be a mnemonic."""
    return text.replace("&", "&&")


def describe_head(row: Checkpoint | None) -> str:
    """One head in words: why it was written, by whom, when, and the start of its note."""
    if row is None:
        return "not loaded yet"
    words = f"{row.reason} by {t.actor_short(row.author)}, {t.when(row.at)}"
    note = " ".join(row.note.split())
    if note:
        words += f" — “{note[:_NOTE_CHARS]}{'…' if len(note) > _NOTE_CHARS else ''}”"
    return words


def lineage_rows(task: TaskState) -> dict[str, Checkpoint]:
    """The task's checkpoints by id, as loaded."""
    return {r.checkpoint_id: r for r in task.checkpoints.checkpoints}


def _who_why(row: Checkpoint | None) -> str:
    return "not loaded yet" if row is None else f"{row.reason} by {t.actor_short(row.author)}"


def fork_sentence(heads: Sequence[str], rows: Mapping[str, Checkpoint]) -> str:
    """'heads A (milestone by …) and B (handoff by …)': each head in short; the choice
    below says more of each."""
    parts = [f"{h} ({_who_why(rows.get(h))})" for h in heads]
    listed = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)
    return f"heads {listed}"


class HeadChoice(QWidget):
    """A choice of the head to continue from (optionally "none"), and of heads to merge.

    `none_text`: the label of the "choose none" option, or None when a head must be chosen.
    Nothing is preselected when a head must be chosen; otherwise "none" is. Merging is offered
    per head once a head is chosen, each unticked."""

    changed = Signal()

    def __init__(self, none_text: str | None, *, offer_merge: bool = True) -> None:
        super().__init__()
        self.setAccessibleName("Which head to continue from")
        self._none_text = none_text
        self._offer_merge = offer_merge
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._heads: tuple[str, ...] = ()
        self._rows: dict[str, Checkpoint] = {}
        self._group = QButtonGroup(self)
        self.radios: dict[str | None, QRadioButton] = {}
        self.merges: dict[str, QCheckBox] = {}
        self._widgets: list[QWidget] = []
        self._quiet = False  # while showing heads: `changed` is the person's changes only
        self._merge_prompt = _MERGE_PROMPT
        self._merge_label: QWidget | None = None

    @property
    def heads(self) -> tuple[str, ...]:
        return self._heads

    def show_heads(self, heads: Sequence[str], rows: Mapping[str, Checkpoint]) -> bool:
        """Show these heads. Returns True when a choice the person had made is gone (the head
        is no longer a head): the choice is cleared, never moved to another head."""
        heads = tuple(heads)
        if heads == self._heads and all(rows.get(h) == self._rows.get(h) for h in heads):
            return False
        chosen, merged = self.chosen(), self.merged()
        lost = (chosen is not None and chosen not in heads) or any(m not in heads for m in merged)
        self._heads, self._rows = heads, {h: rows[h] for h in heads if h in rows}
        self._quiet = True
        try:
            self._rebuild()
            if not lost:
                if chosen is not None:
                    self.radios[chosen].setChecked(True)
                for m in merged:
                    self.merges[m].setChecked(True)
            self._sync()
        finally:
            self._quiet = False
        return lost

    def _rebuild(self) -> None:
        for w in self._widgets:
            self._layout.removeWidget(w)
            w.deleteLater()
        self._widgets.clear()
        for b in self._group.buttons():
            self._group.removeButton(b)
        self.radios.clear()
        self.merges.clear()
        self._merge_label = None
        if not self._heads:
            return
        if self._none_text is not None:
            self._radio(None, self._none_text, "")  # the caller's words, with its mnemonic
        for h in self._heads:
            label = _mnemonic_safe(f"Continue from {h}")
            self._radio(h, label, describe_head(self._rows.get(h)))
        if self._none_text is not None:
            self.radios[None].setChecked(True)
        if self._offer_merge:
            self._merge_label = plain_label(self._merge_prompt, name="Merging")
            self._place(self._merge_label)
            for h in self._heads:
                box = QCheckBox(_mnemonic_safe(f"Also merge {h}"))
                box.setAccessibleName(f"Merge {h}")
                box.toggled.connect(self._on_change)
                self.merges[h] = box
                self._place(box)

    def set_merge_prompt(self, text: str | None) -> None:
        """The words above the merge boxes (None: the default, merging only if meant)."""
        self._merge_prompt = text or _MERGE_PROMPT
        label = self._merge_label
        if label is not None and hasattr(label, "setText"):
            label.setText(self._merge_prompt)

    def _radio(self, head: str | None, label: str, detail: str) -> None:
        r = QRadioButton(label)
        r.setAccessibleName(label.replace("&&", "\0").replace("&", "").replace("\0", "&"))
        if detail:
            r.setToolTip(t.tip(detail))
        self._group.addButton(r)
        r.toggled.connect(self._on_change)
        self.radios[head] = r
        self._place(r)
        if detail:
            line = plain_label(detail, name=f"About {head}")
            line.setContentsMargins(24, 0, 0, 4)
            self._place(line)

    def _place(self, widget: QWidget) -> None:
        self._layout.addWidget(widget)
        self._widgets.append(widget)

    def _on_change(self, _checked: bool = False) -> None:
        if self._quiet:
            return
        self._sync()
        self.changed.emit()

    def _sync(self) -> None:
        """Merging is offered for the heads other than the chosen one, once one is chosen."""
        chosen = self.chosen()
        for h, box in self.merges.items():
            usable = chosen is not None and h != chosen
            if not usable and box.isChecked():
                box.blockSignals(True)
                box.setChecked(False)
                box.blockSignals(False)
            box.setEnabled(usable)

    def chosen(self) -> str | None:
        """The head the person chose to continue from (None: none, or not yet chosen)."""
        return next((h for h, r in self.radios.items() if h is not None and r.isChecked()), None)

    def decided(self) -> bool:
        """Whether the person has made a choice ("none" is one, where it is offered)."""
        return any(r.isChecked() for r in self.radios.values())

    def merged(self) -> list[str]:
        """The heads ticked to merge, in the lineage's order."""
        return [h for h, box in self.merges.items() if box.isChecked() and box.isEnabled()]
