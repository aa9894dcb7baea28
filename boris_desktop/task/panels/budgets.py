"""Budgets: each counter against its limit and reservation, as bars with numbers.

A counter is selected by clicking its row or moving focus to its bar (Tab): Actions › Change
Budget is about the selected counter (`current_key`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QGridLayout, QLabel, QProgressBar, QScrollArea, QVBoxLayout, QWidget

from boris_desktop.runtime.loader import Loader
from boris_desktop.task.bundle import TaskBundle
from boris_desktop.task.panels.base import Panel
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import icon
from boris_desktop.ui.widgets import heading, is_dark, plain_label
from store import api

if TYPE_CHECKING:
    from store.api import Budget, TaskState

STEPS = 1000


def standing(b: Budget) -> api.BudgetStanding:
    return api.budget_standing(b.used, b.reserved, b.limit_value)


#: What each standing adds to the counter's sentence, and its icon.
SAID = {
    api.BudgetStanding.EXHAUSTED: (" — exhausted", "failed"),
    api.BudgetStanding.FULLY_RESERVED: (" — nothing left to reserve", "failed"),
    api.BudgetStanding.NEAR_LIMIT: (" — near its limit", "attention"),
    api.BudgetStanding.WITHIN: ("", "ok"),
}


def budget_words(b: Budget) -> tuple[str, str]:
    """(sentence, icon name) for one counter."""
    used, reserved, limit = b.used, b.reserved, b.limit_value
    if limit is None:
        return f"{t.number(used)} used, {t.number(reserved)} reserved; no limit", "running"
    left = max(api.budget_left(used, reserved, limit), 0)
    line = f"{t.number(used)} used + {t.number(reserved)} reserved of {t.number(limit)}; {t.number(left)} left"
    said, icon_name = SAID[standing(b)]
    return line + said, icon_name


class BudgetsPanel(Panel):
    title = "Budgets"

    def __init__(self, loader: Loader) -> None:
        super().__init__(loader)
        self.rows: dict[str, tuple[QLabel, QProgressBar, QLabel, QLabel]] = {}
        #: The counter selected (clicked, or its bar focused): what a budget change is about.
        self.selected: str | None = None
        self._row_of: dict[QObject, str] = {}
        self.body = QWidget()
        self.grid = QGridLayout(self.body)
        self.grid.setColumnStretch(2, 1)
        self.grid.setHorizontalSpacing(12)
        self.grid.setVerticalSpacing(10)
        self.empty = plain_label("No budget counters yet.")
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.body)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(
            plain_label(
                "Each counter against its limit: the bar fills with what is used and reserved."
            )
        )
        layout.addWidget(self.empty)
        layout.addWidget(scroll, 1)

    def tab_note(self, task: TaskState) -> str:
        standings = [standing(b) for b in task.budgets]
        at_limit = ", ".join(
            f"{n} {said}"
            for n, said in (
                (standings.count(api.BudgetStanding.EXHAUSTED), "exhausted"),
                (standings.count(api.BudgetStanding.FULLY_RESERVED), "fully reserved"),
            )
            if n
        )
        return at_limit or ("exhausted" if task.status == api.RunStatus.BUDGET_EXHAUSTED else "")

    def show_task(self, bundle: TaskBundle) -> None:
        budgets = bundle.task.budgets
        self.empty.setVisible(not budgets)
        names = [b.counter for b in budgets]
        if list(self.rows) != names:
            while self.grid.count():
                item = self.grid.takeAt(0)
                if item is not None and (w := item.widget()) is not None:
                    w.hide()  # at once: deleted later, it would show until then
                    w.deleteLater()
            self.rows = {}
            self._row_of = {}
            for r, name in enumerate(names):
                mark = QLabel()
                label = heading(name.replace("_", " "))
                bar = QProgressBar()
                bar.setRange(0, STEPS)
                bar.setAccessibleName(f"{name} budget")
                bar.setMinimumWidth(220)
                words_ = plain_label(name=f"{name} budget in words")
                # The words go under their bar.
                self.grid.addWidget(mark, 2 * r, 0)
                self.grid.addWidget(label, 2 * r, 1)
                self.grid.addWidget(bar, 2 * r, 2)
                self.grid.addWidget(words_, 2 * r + 1, 2)
                self.rows[name] = (mark, bar, words_, label)
                bar.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
                for w in (mark, label, bar, words_):
                    self._row_of[w] = name
                    w.installEventFilter(self)
            self.grid.setRowStretch(2 * len(names), 1)
            self._mark()
        for b in budgets:
            mark, bar, words_, _ = self.rows[b.counter]
            sentence, icon_name = budget_words(b)
            limit = b.limit_value
            self._alarm(bar, words_, standing(b) in api.BUDGET_AT_LIMIT)
            if limit:
                frac = (b.used + b.reserved) / limit
                bar.setEnabled(True)
                bar.setValue(round(min(frac, 1.0) * STEPS))
                bar.setFormat(f"{t.number(b.used)} / {t.number(limit)}  ({frac * 100:.0f}%)")
            else:
                bar.setEnabled(False)
                bar.setValue(0)
                bar.setFormat(f"{t.number(b.used)} (no limit)")
            bar.setAccessibleDescription(sentence)
            words_.setText(sentence)
            mark.setPixmap(icon(icon_name).pixmap(16, 16))
            mark.setToolTip(t.tip(sentence))

    def current_key(self) -> str | None:
        """The selected counter, while the task still has it."""
        return self.selected if self.selected in self.rows else None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.MouseButtonPress, QEvent.Type.FocusIn):
            name = self._row_of.get(watched)
            if name is not None and name != self.selected:
                self.select(name)
        return False

    def select(self, counter: str) -> None:
        """Select a counter's row: its name is marked, and its bar takes focus."""
        self.selected = counter
        self._mark()
        row = self.rows.get(counter)
        if row is not None and not row[1].hasFocus():
            row[1].setFocus(Qt.FocusReason.OtherFocusReason)

    def _mark(self) -> None:
        for name, (_, bar, _, label) in self.rows.items():
            mine = name == self.selected
            label.setText(("▸ " if mine else "") + name.replace("_", " "))
            bar.setAccessibleName(f"{name} budget" + (", selected" if mine else ""))

    @staticmethod
    def _alarm(bar: QProgressBar, words_: QLabel, exhausted: bool) -> None:
        """A counter at its limit (spent or all reserved): a red bar and red, bold words
        (with the "failed" icon)."""
        red = QColor("#ff8a80" if is_dark(bar) else "#c62828")
        palette = QPalette()  # nothing set: the inherited palette
        if exhausted:
            palette.setColor(QPalette.ColorRole.Highlight, red)
        bar.setPalette(palette)
        bar.setProperty("exhausted", exhausted)
        words_.setStyleSheet(f"color: {red.name()}; font-weight: bold;" if exhausted else "")
