"""Help › Keyboard Shortcuts: every key the window answers to, in one table."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from boris_desktop.ui.widgets import plain_label

#: Keys that move focus rather than run an action (so no QAction carries them).
FOCUS_KEYS = (
    ("Focus", "Move to the next area: search, inbox, the task's parts, details", "Tab"),
    ("Focus", "Move to the previous area", "Shift+Tab"),
    ("Focus", "From the search, go to the inbox", "Return"),
)


class ShortcutsDialog(QDialog):
    def __init__(self, parent: QWidget | None, actions: list[tuple[str, str, str]]) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard Shortcuts")
        rows = [*actions, *FOCUS_KEYS]
        self.table = QTableWidget(len(rows), 3)
        self.table.setAccessibleName("Keyboard shortcuts")
        self.table.setHorizontalHeaderLabels(["Keys", "What they do", "Menu"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setTabKeyNavigation(False)
        self.table.setWordWrap(False)
        for r, (menu, what, keys) in enumerate(rows):
            for c, text in enumerate((keys, what, menu)):
                self.table.setItem(r, c, QTableWidgetItem(text))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(plain_label("Every shortcut of the window, read from its menus' actions."))
        layout.addWidget(self.table, 1)
        layout.addWidget(buttons)
        self.table.resizeColumnsToContents()
        width = sum(header.sectionSize(c) for c in range(3)) + 60
        height = self.table.verticalHeader().length() + header.height() + 110
        self.resize(max(width, 560), min(max(height, 300), 640))

    def rows(self) -> list[tuple[str, str, str]]:
        """(keys, what, menu) as shown."""
        t = self.table

        def cell(r: int, c: int) -> str:
            item = t.item(r, c)
            return item.text() if item is not None else ""

        return [(cell(r, 0), cell(r, 1), cell(r, 2)) for r in range(t.rowCount())]
