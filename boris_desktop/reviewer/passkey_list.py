"""The reviewer's registered passkeys: a table, and a revocation asked twice."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from boris_desktop.decide.base import no_default
from boris_desktop.ui import text as t
from boris_desktop.ui.widgets import plain_label
from store import api

COLUMNS = ("Passkey", "Made for", "Added", "Now")


def cells(p: api.Passkey, now: str) -> tuple[str, ...]:
    standing = "deciding" if p.active(now) else f"revoked {t.when(p.revoked_at)}"
    return (p.credential_id, p.origin, t.when(p.added_at), standing)


class PasskeyList(QWidget):
    """The passkeys the store's signed entries register for the reviewer."""

    #: The credential id the person confirmed to revoke.
    revoke = Signal(str)

    def __init__(self, read_again: Callable[[], None]) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.summary = plain_label("Reading your passkeys…", name="Passkeys summary")
        layout.addWidget(self.summary)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setAccessibleName("Your passkeys")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in (1, 2, 3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().hide()
        self.table.itemSelectionChanged.connect(self.refresh)
        layout.addWidget(self.table, 1)
        row = QHBoxLayout()
        self.revoke_button = no_default(QPushButton("Re&voke…"))
        self.revoke_button.setAccessibleName("Revoke")
        self.revoke_button.setToolTip("Revoke the selected passkey (you are asked to confirm)")
        self.revoke_button.clicked.connect(self._ask)
        row.addWidget(self.revoke_button)
        self.reload_button = no_default(QPushButton("Re&ad again"))
        self.reload_button.setAccessibleName("Read again")
        self.reload_button.clicked.connect(read_again)
        row.addWidget(self.reload_button)
        row.addStretch(1)
        layout.addLayout(row)
        self.confirm = QWidget()
        confirm = QHBoxLayout(self.confirm)
        confirm.setContentsMargins(0, 0, 0, 0)
        self.confirm_text = plain_label("", name="Confirm the revocation")
        confirm.addWidget(self.confirm_text, 1)
        self.revoke_it = no_default(QPushButton("Revoke &it"))
        self.revoke_it.setAccessibleName("Revoke it")
        self.revoke_it.clicked.connect(self._confirmed)
        confirm.addWidget(self.revoke_it)
        self.keep_it = no_default(QPushButton("&Keep it"))
        self.keep_it.setAccessibleName("Keep it")
        self.keep_it.clicked.connect(self.confirm.hide)
        confirm.addWidget(self.keep_it)
        self.confirm.hide()
        layout.addWidget(self.confirm)
        self.found: api.ReviewerPasskeys | None = None
        self.asked: str | None = None
        self.busy = False
        self.refresh()

    def show_passkeys(self, found: api.ReviewerPasskeys) -> None:
        chosen = self.selected()
        self.found = found
        self.table.setRowCount(len(found.passkeys))
        for n, key in enumerate(found.passkeys):
            for col, text in enumerate(cells(key, found.now)):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.table.setItem(n, col, item)
            if chosen is not None and key.credential_id == chosen.credential_id:
                self.table.selectRow(n)
        active = len(found.active())
        self.summary.setText(
            f"{t.count(len(found.passkeys), 'passkey', 'passkeys')} registered for "
            f"{found.actor.kind}:{found.actor.id}, {active} deciding now."
            if found.passkeys
            else "No passkey registered yet: register one on your phone to decide from there."
        )
        if found.problems:
            self.summary.setText(
                self.summary.text()
                + " Entries that count for nothing: "
                + "; ".join(found.problems)
            )
        self.refresh()

    def selected(self) -> api.Passkey | None:
        rows = self.table.selectionModel().selectedRows()
        if self.found is None or not rows or rows[0].row() >= len(self.found.passkeys):
            return None
        return self.found.passkeys[rows[0].row()]

    def refresh(self) -> None:
        chosen = self.selected()
        live = chosen is not None and self.found is not None and chosen.active(self.found.now)
        self.revoke_button.setEnabled(not self.busy and live)
        self.revoke_it.setEnabled(not self.busy)
        if self.asked is not None and (chosen is None or chosen.credential_id != self.asked):
            self.confirm.hide()

    def _ask(self) -> None:
        chosen = self.selected()
        if chosen is None:
            return
        self.asked = chosen.credential_id
        self.confirm_text.setText(
            f"Revoke passkey {chosen.credential_id} (made for {chosen.origin})? From now on it "
            "decides nothing; what it decided before stays proved. A lost phone: revoke it."
        )
        self.confirm.show()
        self.keep_it.setFocus()

    def _confirmed(self) -> None:
        asked, self.asked = self.asked, None
        self.confirm.hide()
        if asked is not None:
            self.revoke.emit(asked)
