"""Help › About: which program this is, on which Qt and Python, and which store is open."""

from __future__ import annotations

import platform
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget


def about_text(store: Any) -> str:
    import PySide6
    from PySide6.QtCore import qVersion

    from store.api import __version__

    where = store.location.describe() if store is not None else "no store open"
    return (
        f"Boris Desktop {__version__}\n\n"
        "Take over an agent's long-running task safely: inspect its durable record, approve, "
        "reconcile, stop, and write the checkpoint the next actor resumes from.\n\n"
        f"Qt {qVersion()}, PySide6 {PySide6.__version__}, Python {platform.python_version()}\n"
        f"Store: {where}\n"
        "Changes: CHANGELOG.md"
    )


def show_about(parent: QWidget, store: Any) -> QMessageBox:
    box = QMessageBox(
        QMessageBox.Icon.Information, "About Boris Desktop", about_text(store), parent=parent
    )
    box.setTextFormat(Qt.TextFormat.PlainText)  # the store path is text, never markup
    box.setObjectName("about")
    box.open()
    return box
