"""What a dialog needs of the window that opened it: a small protocol, not `MainWindow`.

The action dialogs, the reconcile dialog and the live follower depend on this, so none of
them imports the main window (which imports them): the desktop has no import cycle, and a
dialog can be built in a test or a benchmark over any object with these members.
"""

from __future__ import annotations

from typing import Any, Protocol

from .loader import Loader


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
