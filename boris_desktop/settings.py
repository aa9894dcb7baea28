"""The app's settings (reviewer identity, recent stores), kept in QSettings.

`BORIS_DESKTOP_SETTINGS` names an INI file instead of the user's settings: tests and
benchmarks never touch the reviewer's own.
"""

from __future__ import annotations

import os
from datetime import time

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
    return [str(v) for v in value] if isinstance(value, list) else []


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


# --- notifications (see notifications.py) ----------------------------------------------------

#: Minutes before an approval expires that its warning is told, unless the reviewer chose.
EXPIRY_WARNING_MINUTES = 15


def _flag(value: object, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, str):  # an INI file gives text back
        return value.lower() in {"true", "1", "yes"}
    return bool(value)


def notifications_enabled() -> bool:
    return _flag(settings().value("notifications/enabled"), True)


def expiry_warning_minutes() -> int:
    value = settings().value("notifications/expiry_warning_minutes")
    try:
        return max(1, int(str(value))) if value is not None else EXPIRY_WARNING_MINUTES
    except ValueError:
        return EXPIRY_WARNING_MINUTES


def quiet_hours() -> tuple[time | None, time | None]:
    """(from, to), local time; (None, None) when there are none."""
    s = settings()
    if not _flag(s.value("notifications/quiet"), False):
        return None, None
    try:
        start = time.fromisoformat(str(s.value("notifications/quiet_from", "")))
        end = time.fromisoformat(str(s.value("notifications/quiet_to", "")))
    except ValueError:
        return None, None
    return start, end


def set_notifications(
    *,
    enabled: bool,
    expiry_warning_minutes: int = EXPIRY_WARNING_MINUTES,
    quiet: tuple[time, time] | None = None,
) -> None:
    s = settings()
    s.setValue("notifications/enabled", enabled)
    s.setValue("notifications/expiry_warning_minutes", int(expiry_warning_minutes))
    s.setValue("notifications/quiet", quiet is not None)
    if quiet is not None:
        s.setValue("notifications/quiet_from", quiet[0].strftime("%H:%M"))
        s.setValue("notifications/quiet_to", quiet[1].strftime("%H:%M"))
    s.sync()


def _store_slot(store_key: str) -> str:
    """A settings key for one store (its location may hold slashes, which QSettings nests)."""
    import hashlib

    return hashlib.sha256(store_key.encode()).hexdigest()[:16]


def warned_expiries(store_key: str) -> set[str]:
    """The open approvals of a store whose expiry the reviewer was already warned of."""
    value = settings().value(f"notifications/warned/{_store_slot(store_key)}", [])
    if isinstance(value, str):  # QSettings returns a lone entry as a string
        value = [value]
    return {str(v) for v in value} if isinstance(value, list) else set()


def set_warned_expiries(store_key: str, ids: set[str]) -> None:
    s = settings()
    s.setValue(f"notifications/warned/{_store_slot(store_key)}", sorted(ids))
    s.sync()


# --- the main window's place (see screen_fit.py) -----------------------------------------------


def window_rect() -> tuple[int, int, int, int] | None:
    """The main window's last (x, y, width, height) when not maximized, or None."""
    value = settings().value("window/rect")
    parts = value if isinstance(value, list) else str(value or "").split(",")
    try:
        x, y, w, h = (int(str(p)) for p in parts)
    except ValueError:
        return None
    return (x, y, w, h) if w > 0 and h > 0 else None


def window_maximized() -> bool:
    return _flag(settings().value("window/maximized"), False)


def set_window_place(rect: tuple[int, int, int, int], maximized: bool) -> None:
    s = settings()
    s.setValue("window/rect", ",".join(str(n) for n in rect))
    s.setValue("window/maximized", maximized)
    s.sync()
