"""The framework's own "always" answers for a call, in the Approve dialog (issue 42).

Claude Code offers "Yes, and don't ask again for …" with a permission prompt; the store keeps
them beside the call and its decision view carries each as the standing rule it would be
(`ApprovalDecision.offered`: what it would allow, whose calls). The panel lists them; picking
one and pressing "Allow calls like this…" opens the Rules form filled in from it, where the
person reads the rule and grants it with a click of its own. Nothing here decides: no button
is a default, and Return in the dialog never reaches one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from boris_desktop.decide.base import no_default
from boris_desktop.ui.widgets import plain_label

if TYPE_CHECKING:
    from store.api import ApprovalDecision, OfferedRule


class OfferedRules(QWidget):
    """The offered "always" answers of the call on screen, one choice each."""

    #: The rule picked, to be read and granted in the Rules form.
    chosen = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.layout_ = QVBoxLayout(self)
        self.layout_.setContentsMargins(0, 6, 0, 0)  # apart from the content above
        self.title = plain_label("", name="Offered always answers")
        self.layout_.addWidget(self.title)
        self.group = QButtonGroup(self)
        self.choices: list[QRadioButton] = []
        self.lines: list[QWidget] = []
        self.offered: tuple[OfferedRule, ...] = ()
        self.allow_button = no_default(QPushButton("Allow calls like t&his…"))
        self.allow_button.setAccessibleName("Allow calls like this")
        self.allow_button.setToolTip(
            "Open the Rules form filled in from the answer picked: read it, then grant it there"
        )
        self.allow_button.setEnabled(False)
        self.allow_button.clicked.connect(self._allow)
        self.group.buttonToggled.connect(lambda *_: self.refresh())
        row = QHBoxLayout()
        row.addWidget(self.allow_button)
        row.addStretch(1)
        self.layout_.addLayout(row)
        self.decidable = False
        self.hide()

    def show_view(self, d: ApprovalDecision) -> None:
        """The view's offers (read again whenever the store changes); a choice is kept."""
        if d.offered == self.offered:
            self.decidable = bool(d.verdicts)
            self.refresh()
            return
        for old in self.choices:
            self.group.removeButton(old)
        for widget in (*self.choices, *self.lines):
            self.layout_.removeWidget(widget)
            widget.deleteLater()
        self.choices, self.lines = [], []
        self.offered = d.offered
        self.decidable = bool(d.verdicts)
        if not d.offered:
            self.hide()
            return
        host = d.offered[0].host
        self.title.setText(
            f"{host} offered “always” answers with this call. In Boris each is a standing "
            "rule you can revoke; pick one to read it as a rule:"
        )
        for n, rule in enumerate(d.offered):
            choice = QRadioButton(rule.words)
            choice.setAccessibleName(f"Offered answer {n + 1}")
            choice.setToolTip(rule.allows)
            self.group.addButton(choice, n)
            line = plain_label(f"As a Boris rule: {rule.allows}.", name="What it would allow")
            line.setContentsMargins(24, 0, 0, 4)
            self.layout_.insertWidget(1 + 2 * n, choice)
            self.layout_.insertWidget(2 + 2 * n, line)
            self.choices.append(choice)
            self.lines.append(line)
        self.show()
        self.refresh()

    def picked(self) -> OfferedRule | None:
        n = self.group.checkedId()
        return self.offered[n] if 0 <= n < len(self.offered) else None

    def refresh(self) -> None:
        self.allow_button.setEnabled(self.decidable and self.picked() is not None)

    def _allow(self) -> None:
        rule = self.picked()
        if rule is not None:
            self.chosen.emit(rule)
