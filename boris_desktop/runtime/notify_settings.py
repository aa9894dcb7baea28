"""The notifications' settings: on or off, how early an expiry is told, quiet hours."""

from __future__ import annotations

from datetime import time

from PySide6.QtCore import QTime
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QTimeEdit,
    QWidget,
)

from boris_desktop import settings
from boris_desktop.ui.widgets import plain_label


def _qtime(x: time | None, default: QTime) -> QTime:
    return QTime(x.hour, x.minute) if x is not None else default


class NotificationSettingsDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Notifications")
        self.setMinimumWidth(420)
        self.enabled = QCheckBox("Tell me when a decision arrives or an approval will expire")
        self.enabled.setChecked(settings.notifications_enabled())
        self.minutes = QSpinBox()
        self.minutes.setAccessibleName("Warn this many minutes before an approval expires")
        self.minutes.setRange(1, 24 * 60)
        self.minutes.setSuffix(" min")
        self.minutes.setValue(settings.expiry_warning_minutes())
        start, end = settings.quiet_hours()
        self.quiet = QCheckBox("Quiet hours, from")
        self.quiet.setChecked(start is not None)
        self.quiet_from = QTimeEdit(_qtime(start, QTime(20, 0)))
        self.quiet_from.setAccessibleName("Quiet from")
        self.quiet_from.setDisplayFormat("HH:mm")
        self.quiet_to = QTimeEdit(_qtime(end, QTime(8, 0)))
        self.quiet_to.setAccessibleName("Quiet until")
        self.quiet_to.setDisplayFormat("HH:mm")
        hours = QHBoxLayout()
        hours.addWidget(self.quiet)
        hours.addWidget(self.quiet_from)
        hours.addWidget(QLabel("to"))
        hours.addWidget(self.quiet_to)
        hours.addStretch(1)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow(self.enabled)
        form.addRow("Warn before an approval expires:", self.minutes)
        form.addRow(hours)
        form.addRow(
            plain_label(
                "A burst of decisions is told once, with a count. In quiet hours nothing is "
                "told; the queue and the tray icon's count still follow."
            )
        )
        form.addRow(self.buttons)
        self.enabled.toggled.connect(self._enable)
        self.quiet.toggled.connect(self._enable)
        self._enable()

    def _enable(self) -> None:
        on = self.enabled.isChecked()
        self.minutes.setEnabled(on)
        self.quiet.setEnabled(on)
        self.quiet_from.setEnabled(on and self.quiet.isChecked())
        self.quiet_to.setEnabled(on and self.quiet.isChecked())

    def accept(self) -> None:
        a, b = self.quiet_from.time(), self.quiet_to.time()
        settings.set_notifications(
            enabled=self.enabled.isChecked(),
            expiry_warning_minutes=self.minutes.value(),
            quiet=(time(a.hour(), a.minute()), time(b.hour(), b.minute()))
            if self.quiet.isChecked()
            else None,
        )
        super().accept()
