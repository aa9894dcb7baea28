"""The app's settings (reviewer identity, recent stores), kept in QSettings.

`BORIS_DESKTOP_SETTINGS` names an INI file instead of the user's settings: tests and
benchmarks never touch the reviewer's own.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QByteArray, QSettings

RECENT_MAX = 8


def settings() -> QSettings:
    path = os.environ.get("BORIS_DESKTOP_SETTINGS")
    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings("Boris", "Boris Desktop")


def reviewer() -> tuple[str, str] | None:
    """(name, id) of the reviewer, or None before they have said who they are."""
    s = settings()
    name, rid = s.value("reviewer/name", ""), s.value("reviewer/id", "")
    return (str(name), str(rid)) if name and rid else None


def set_reviewer(name: str, reviewer_id: str) -> None:
    s = settings()
    s.setValue("reviewer/name", name)
    s.setValue("reviewer/id", reviewer_id)
    s.sync()


def recent_stores() -> list[str]:
    value = settings().value("stores/recent", [])
    if isinstance(value, str):  # QSettings returns a lone entry as a string
        value = [value]
    return [str(v) for v in value or []]  # type: ignore[attr-defined]


def remember_store(directory: str) -> None:
    stores = [directory, *(d for d in recent_stores() if d != directory)][:RECENT_MAX]
    s = settings()
    s.setValue("stores/recent", stores)
    s.sync()


def layout(key: str) -> QByteArray | None:
    """A saved splitter or header state (`layout/<key>`), or None."""
    value = settings().value(f"layout/{key}")
    return value if isinstance(value, QByteArray) and not value.isEmpty() else None


def set_layouts(states: dict[str, QByteArray]) -> None:
    s = settings()
    for key, value in states.items():
        s.setValue(f"layout/{key}", value)
    s.sync()
