"""What a dialog needs of the window that opened it: a small protocol, not `MainWindow`.

The action dialogs, the reconcile dialog and the live follower depend on this, so none of
them imports the main window (which imports them): the desktop has no import cycle, and a
dialog can be built in a test or a benchmark over any object with these members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from boris_desktop.runtime.loader import Loader

if TYPE_CHECKING:
    from store.api import TaskState


class Host(Protocol):
    """The window a dialog belongs to (MainWindow is one)."""

    #: Runs reads, hashing and commands off the GUI thread.
    loader: Loader
    #: The open store (`store.Store`), or None before one is open.
    store: Any

    def reload(self) -> None:
        """Read the store again after a write, so every view shows it."""

    def ask_reviewer(self) -> Any:
        """Ask the reviewer who they are (decisions are attributed to them)."""

    def statusBar(self) -> Any:  # Qt's name, which MainWindow has
        """Where a one-line outcome is shown."""

    def stop_task(self) -> Any:
        """Open the stop dialog for the task on screen."""


class Window(Host, Protocol):
    """What the Actions menu needs of the window it acts in: the task on screen, the row
    selected in a part of it, and its menu bar (the shortcuts are read from the menus)."""

    def shown_task(self) -> TaskState | None:
        """The record on screen, when it is the selected task's (else None)."""

    def current_key(self, part: str) -> Any:
        """The selected row's top-level key in a part of the task view (an effect id…)."""

    def menuBar(self) -> Any:  # Qt's name, which MainWindow has
        """The window's menu bar."""
