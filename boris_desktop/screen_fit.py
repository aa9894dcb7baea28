"""Windows that fit the screen they open on: 1024×700 laptops and 1366×768 panels included.

The main window opens at its preferred size only where the screen has room for it (a fixed
1280×780 put the status bar below a 768-high screen); a window the reviewer placed opens
where they left it, pulled back onto the screen when that screen is gone or smaller.
Dialogs are capped to the screen's available height (see decide/base.py: their content
scrolls and the decision buttons stay in sight).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

#: The main window's size where the screen has room.
PREFERRED = QSize(1280, 780)
#: Room the window manager's title bar and frame take beyond a window's own size.
FRAME = QSize(16, 40)


def available(widget: QWidget | None = None) -> QRect:
    """The available geometry (the screen less its panels) of the screen `widget` is on,
    or of the primary screen."""
    screen = widget.screen() if widget is not None else None
    if screen is None:
        screen = QGuiApplication.primaryScreen()
    if screen is None:  # no screen at all (a headless start): the preferred size's room
        return QRect(0, 0, PREFERRED.width() + FRAME.width(), PREFERRED.height() + FRAME.height())
    return screen.availableGeometry()


def fitting(room: QRect, preferred: QSize = PREFERRED) -> QSize:
    """`preferred`, made no larger than what `room` holds with the window's frame."""
    return QSize(
        min(preferred.width(), room.width() - FRAME.width()),
        min(preferred.height(), room.height() - FRAME.height()),
    )


def place(window: QWidget, room: QRect, saved: QRect | None = None) -> None:
    """Size and place `window` inside `room`: where it was saved when that fits, else at
    its preferred size (or less), centred."""
    if saved is not None and saved.isValid():
        size = fitting(room, saved.size())
        x = min(max(saved.x(), room.left()), room.right() - size.width() - FRAME.width())
        y = min(max(saved.y(), room.top()), room.bottom() - size.height() - FRAME.height())
        window.resize(size)
        window.move(max(x, room.left()), max(y, room.top()))
        return
    size = fitting(room)
    window.resize(size)
    window.move(
        room.left() + (room.width() - size.width() - FRAME.width()) // 2,
        room.top() + (room.height() - size.height() - FRAME.height()) // 2,
    )


def cap_height(widget: QWidget, room: QRect | None = None) -> None:
    """No taller (nor wider) than the screen's available room, with the window's frame."""
    room = room if room is not None else available(widget)
    widget.setMaximumSize(
        max(200, room.width() - FRAME.width()), max(200, room.height() - FRAME.height())
    )
