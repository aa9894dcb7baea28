"""Who the reviewer is: asked once, kept in the settings, attributed to their decisions."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLineEdit, QWidget

from boris_desktop import settings
from boris_desktop.ui.widgets import plain_label


class ReviewerDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Who is reviewing?")
        self.setMinimumWidth(440)  # the explanation on two lines, not five
        known = settings.reviewer() or ("", "")
        self.name = QLineEdit(known[0])
        self.name.setAccessibleName("Your name")
        self.name.setPlaceholderText("Maria Keller")
        self.reviewer_id = QLineEdit(known[1])
        self.reviewer_id.setAccessibleName("Your reviewer id")
        self.reviewer_id.setPlaceholderText("maria")
        # Filled in from the name until the reviewer types an id of their own.
        self._id_typed = bool(known[1])
        self.reviewer_id.textEdited.connect(self._id_edited)
        self.name.textEdited.connect(self._suggest_id)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow(
            plain_label(
                "Your decisions (approvals, reconciliations, edits) are recorded under this "
                "name and id."
            )
        )
        form.addRow("Name:", self.name)
        form.addRow("Reviewer id:", self.reviewer_id)
        form.addRow(self.buttons)
        self.name.textChanged.connect(self._valid)
        self.reviewer_id.textChanged.connect(self._valid)
        self._valid()

    def _id_edited(self, text: str) -> None:
        self._id_typed = bool(text)

    def _suggest_id(self, name: str) -> None:
        if not self._id_typed:
            first = name.strip().split(" ")[0] if name.strip() else ""
            self.reviewer_id.setText("".join(ch for ch in first.lower() if ch.isalnum()))

    def _valid(self) -> None:
        ok = bool(self.name.text().strip() and self.reviewer_id.text().strip())
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)

    def accept(self) -> None:
        settings.set_reviewer(self.name.text().strip(), self.reviewer_id.text().strip())
        super().accept()
